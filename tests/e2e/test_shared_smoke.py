"""Real documents from ../shared/data (skipped when the folder is absent)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from docsight import DocSight

pytestmark = [pytest.mark.shared_data, pytest.mark.slow]


def test_vidoseek_example_question_finds_its_reference_page(
    shared_data: Path, tmp_path: Path
) -> None:
    folder = shared_data / "smoke" / "vidoseek-example"
    example = json.loads((folder / "rag_dataset.json").read_text())["examples"][0]
    pdf = folder / example["meta_info"]["file_name"]
    ds = DocSight(tmp_path / "col")
    report = ds.ingest([pdf])
    assert report.added and report.added[0].pages == 23
    hits = ds.search(example["query"], k=5, unit="page")
    reference = example["meta_info"]["reference_page"][0] - 1  # 1-based in ViDoSeek
    assert reference in [h.page for h in hits]
    answer = ds.ask(example["query"])
    assert answer.answerable and answer.citations
    assert all(c.doc_name == pdf.name for c in answer.citations)


def test_real_manuals_ingest_with_outline_sections(shared_data: Path, tmp_path: Path) -> None:
    folder = shared_data / "smoke" / "slides-and-manuals"
    ds = DocSight(tmp_path / "col")
    report = ds.ingest([folder / "booktabs.pdf", folder / "beamerexample-conference-talk.pdf"])
    assert report.counts()["failed"] == 0 and len(report.added) == 2
    booktabs = ds.document("booktabs.pdf")
    assert booktabs.sections and any(e.kind == "table" for e in booktabs.elements)
    hits = ds.search("rules in tables toprule midrule bottomrule", k=3, doc_names=["booktabs.pdf"])
    assert hits and hits[0].doc_name == "booktabs.pdf"
