"""Dataset readers on the real evaluation files in ../shared/data (skipped when absent)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pypdfium2 as pdfium
import pytest

from docsight.evaluation.datasets import detect_format, load_dataset, write_jsonl
from docsight.evaluation.types import EvalSet


@pytest.fixture(scope="module")
def mmlb(shared_data: Path) -> Path:
    return shared_data / "mmlongbench-dev"


@pytest.fixture(scope="module")
def page_counts(mmlb: Path) -> dict[str, int]:
    counts = {}
    for pdf_path in sorted((mmlb / "documents").glob("*.pdf")):
        pdf = pdfium.PdfDocument(pdf_path)
        counts[pdf_path.name] = len(pdf)
        pdf.close()
    return counts


@pytest.fixture(scope="module")
def samples(mmlb: Path) -> EvalSet:
    return load_dataset(mmlb / "samples.json")


@pytest.fixture(scope="module")
def mmdocir(mmlb: Path) -> EvalSet:
    return load_dataset(mmlb / "mmdocir.jsonl")


def test_mmlongbench_dev(samples: EvalSet, mmlb: Path) -> None:
    assert (samples.format, samples.name, len(samples.questions)) == (
        "mmlongbench",
        "mmlongbench-dev",
        185,
    )
    raw = json.loads((mmlb / "samples.json").read_text())
    # Known items: "[25]" is the 25th page, 0-based 24; a four-page List question.
    first = samples.questions[0]
    assert (first.doc, raw[0]["evidence_pages"], first.evidence_pages) == (
        "2024.ug.eprospectus.pdf",
        "[25]",
        [24],
    )
    assert first.evidence_sources == ["Table"] and first.domain == "Brochure"
    assert samples.questions[10].evidence_pages == [7, 11, 13, 17]
    for q, item in zip(samples.questions, raw, strict=True):
        assert q.evidence_pages == sorted(p - 1 for p in ast.literal_eval(item["evidence_pages"]))
    unlabeled = [q for q in samples.questions if not q.evidence_pages]
    assert len(unlabeled) == 42
    assert sum(1 for q in samples.questions if not q.answerable) == 42
    assert "42 questions have no evidence pages (40 of them 'Not answerable')" in samples.notes
    assert "evidence pages were 1-indexed; converted to 0-based" in samples.notes


def test_mmlongbench_pages_fit_their_documents(
    samples: EvalSet, page_counts: dict[str, int]
) -> None:
    assert {q.doc for q in samples.questions} <= set(page_counts)
    restricted, dropped = samples.restrict_pages(page_counts)
    assert dropped == 0
    for q in restricted.questions:
        assert all(0 <= p < page_counts[q.doc or ""] for p in q.evidence_pages)
    # Left 1-indexed, the labels on each document's last page would fall off the end.
    shifted = samples.model_copy(
        update={
            "questions": [
                q.model_copy(update={"evidence_pages": [p + 1 for p in q.evidence_pages]})
                for q in samples.questions
            ]
        }
    )
    on_last_page = sum(
        1 for q in samples.questions for p in q.evidence_pages if p == page_counts[q.doc or ""] - 1
    )
    restricted, dropped = shifted.restrict_pages(page_counts)
    assert dropped == on_last_page > 0
    assert (
        sum(len(q.evidence_pages) for q in restricted.questions)
        == sum(len(q.evidence_pages) for q in samples.questions) - dropped
    )


def test_mmdocir(mmdocir: EvalSet, samples: EvalSet, page_counts: dict[str, int]) -> None:
    assert mmdocir.format == "mmdocir" and len(mmdocir.questions) == 131
    assert {q.doc for q in mmdocir.questions} == set(page_counts)
    assert all(q.evidence_pages and q.regions for q in mmdocir.questions)
    for q in mmdocir.questions:
        for r in q.regions:
            x0, y0, x1, y1 = r.bbox.as_tuple()
            assert 0.0 <= x0 <= x1 <= 1.0 and 0.0 <= y0 <= y1 <= 1.0
    # PG_2020 question 0: the West/East Germany chart, bbox [317, 486, 541, 563] on 612 × 792 pt.
    chart = next(q for q in mmdocir.questions if q.id == "PG_2020.03.09_US-Germany_FINAL.pdf#0")
    assert chart.evidence_pages == [14] and chart.evidence_sources == ["Chart"]
    assert chart.regions[0].page == 14
    assert chart.regions[0].bbox.as_tuple() == pytest.approx(
        (317 / 612, 486 / 792, 541 / 612, 563 / 792), abs=1e-5
    )
    assert "1 boxes overhung their page and were clamped to it" in mmdocir.notes
    _, dropped = mmdocir.restrict_pages(page_counts)
    assert dropped == 0
    # MMDocIR relabelled some pages, but most agree with MMLongBench once both are 0-based.
    by_text = {(q.doc, q.question): q.evidence_pages for q in samples.questions}
    pairs = [
        (q.evidence_pages, by_text[(q.doc, q.question)])
        for q in mmdocir.questions
        if (q.doc, q.question) in by_text
    ]
    assert len(pairs) > 120  # three questions are worded differently in the two files
    agree = sum(1 for a, b in pairs if a == b)
    off_by_one = sum(1 for a, b in pairs if a == [p + 1 for p in b])
    assert agree >= 0.8 * len(pairs) and off_by_one < 0.1 * len(pairs)


def test_mmquery_dev(shared_data: Path, mmdocir: EvalSet) -> None:
    folder = shared_data / "mmquery-dev"
    assert detect_format(folder) == "mmquery"
    evalset = load_dataset(folder)
    assert (evalset.format, evalset.name, len(evalset.questions)) == ("mmquery", "mmquery-dev", 95)
    assert all(q.image and Path(q.image).is_absolute() for q in evalset.questions)
    assert all(Path(q.image or "").is_file() for q in evalset.questions)
    assert any("not a published benchmark" in n for n in evalset.notes)
    assert not any("disagree" in n or "do not exist" in n for n in evalset.notes)
    first = evalset.questions[0]
    assert (first.id, first.doc, first.evidence_pages) == (
        "2024.ug.eprospectus__q0",
        "2024.ug.eprospectus.pdf",
        [24],
    )
    # The queries were built from MMDocIR: "<doc>__q<i>" is MMDocIR's "<doc>.pdf#<i>".
    docir = {q.id: q for q in mmdocir.questions}
    for q in evalset.questions:
        stem, _, index = q.id.rpartition("__q")
        assert docir[f"{stem}.pdf#{index}"].evidence_pages == q.evidence_pages


def test_vidoseek_example(shared_data: Path) -> None:
    folder = shared_data / "smoke" / "vidoseek-example"
    evalset = load_dataset(folder / "rag_dataset.json")
    assert (evalset.format, evalset.name, len(evalset.questions)) == (
        "vidoseek",
        "vidoseek-example",
        1,
    )
    q = evalset.questions[0]
    assert q.evidence_pages == [10]  # reference_page 11
    pdf = pdfium.PdfDocument(folder / (q.doc or ""))
    try:
        counts = {q.doc or "": len(pdf)}
    finally:
        pdf.close()
    assert counts[q.doc or ""] == 23
    assert evalset.restrict_pages(counts)[1] == 0


def test_real_sets_round_trip_through_jsonl(
    samples: EvalSet, mmdocir: EvalSet, tmp_path: Path
) -> None:
    for evalset in (samples, mmdocir):
        out = write_jsonl(evalset, tmp_path / f"{evalset.format}-export.jsonl")
        assert load_dataset(out).questions == evalset.questions
