"""Dataset readers on small hand-written files in each format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from docsight.errors import ConfigurationError
from docsight.evaluation.datasets import (
    detect_format,
    load_dataset,
    load_jsonl,
    load_mmdocir,
    load_mmlongbench,
    load_mmquery,
    load_vidoseek,
    write_jsonl,
)

SAMPLES: list[dict[str, Any]] = [
    {
        "doc_id": "report.pdf",
        "doc_type": "Financial report",
        "question": "What was the revenue in 2023?",
        "answer": "12.5",
        "evidence_pages": "[5]",
        "evidence_sources": "['Table']",
        "answer_format": "Float",
    },
    {
        "doc_id": "report.pdf",
        "doc_type": "Financial report",
        "question": "Who is the CEO's cat?",
        "answer": "Not answerable",
        "evidence_pages": "[]",
        "evidence_sources": "[]",
        "answer_format": "None",
    },
    {
        "doc_id": "slides.pdf",
        "doc_type": "Tutorial/Workshop",
        "question": "Which steps are shown?",
        "answer": "['a', 'b']",
        # 1 and 3 with a duplicate; 40 lies past the end of the 10-page deck.
        "evidence_pages": "[3, 1, 3, 40]",
        "evidence_sources": "['Chart', 'Pure-text (Plain-text)']",
        "answer_format": "List",
    },
    {
        "doc_id": "slides.pdf",
        "doc_type": "Tutorial/Workshop",
        "question": "How many logos are there?",
        "answer": "15",
        "evidence_pages": "[]",
        "evidence_sources": "['Figure']",
        "answer_format": "Int",
    },
]


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _jsonl(path: Path, rows: list[Any]) -> Path:
    return _write(path, "".join(json.dumps(r) + "\n" for r in rows))


def _samples(tmp_path: Path, name: str = "samples.json") -> Path:
    return _write(tmp_path / "mmlb" / name, json.dumps(SAMPLES))


# --- MMLongBench ---------------------------------------------------------------------------------


def test_mmlongbench_converts_pages_sources_and_notes(tmp_path: Path) -> None:
    evalset = load_mmlongbench(_samples(tmp_path))
    assert (evalset.name, evalset.format, len(evalset.questions)) == ("mmlb", "mmlongbench", 4)
    first, unanswerable, slides, unlabeled = evalset.questions
    assert first.id == "report.pdf#0" and slides.id == "slides.pdf#2"
    assert first.evidence_pages == [4]
    assert first.evidence_sources == ["Table"]
    assert (first.domain, first.answer_format, first.answer) == (
        "Financial report",
        "Float",
        "12.5",
    )
    assert slides.evidence_pages == [0, 2, 39]
    assert slides.evidence_sources == ["Chart", "Pure-text (Plain-text)"]
    assert unanswerable.evidence_pages == [] and not unanswerable.answerable
    assert unlabeled.evidence_pages == [] and unlabeled.answerable
    assert "evidence pages were 1-indexed; converted to 0-based" in evalset.notes
    assert "2 questions have no evidence pages (1 of them 'Not answerable')" in evalset.notes


def test_out_of_range_pages_are_kept_for_restrict_pages(tmp_path: Path) -> None:
    evalset = load_mmlongbench(_samples(tmp_path))
    restricted, dropped = evalset.restrict_pages({"slides.pdf": 10, "report.pdf": 20})
    assert dropped == 1
    assert restricted.questions[2].evidence_pages == [0, 2]
    assert restricted.questions[0].evidence_pages == [4]


def test_mmlongbench_drops_page_zero_and_accepts_real_lists(tmp_path: Path) -> None:
    rows = [dict(SAMPLES[0], evidence_pages=[0, 2], evidence_sources=["Table"])]
    evalset = load_mmlongbench(_write(tmp_path / "s.json", json.dumps(rows)))
    assert evalset.questions[0].evidence_pages == [1]
    assert any("1 page labels below 1" in n for n in evalset.notes)


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        ({**SAMPLES[0], "evidence_pages": "[five]"}, "evidence_pages: '[five]' is not a list"),
        ({**SAMPLES[0], "evidence_pages": "['5']"}, "expected a list of page numbers"),
        ({k: v for k, v in SAMPLES[0].items() if k != "question"}, "missing 'question'"),
        ("a string", "expected an object, got str"),
    ],
)
def test_mmlongbench_bad_items_name_the_item(tmp_path: Path, bad: Any, problem: str) -> None:
    path = _write(tmp_path / "s.json", json.dumps([SAMPLES[0], bad]))
    with pytest.raises(ConfigurationError) as err:
        load_mmlongbench(path)
    assert err.value.message.startswith(f"{path}: item 1: ")
    assert problem in err.value.message


# --- MMDocIR -------------------------------------------------------------------------------------


def _mmdocir(tmp_path: Path) -> Path:
    docs = [
        {
            "doc_name": "report.pdf",
            "domain": "Financial report",
            "questions": [
                {
                    "Q": "Revenue?",
                    "A": "12.5",
                    "page_id": [4],
                    "type": "['Table']",
                    "layout_mapping": [
                        {"page": 4, "page_size": [600.0, 800.0], "bbox": [60, 200, 300, 400]}
                    ],
                },
                {
                    "Q": "Both pages?",
                    "A": "yes",
                    "page_id": [7, 2],
                    "type": "['Figure', 'Chart']",
                    "layout_mapping": [
                        # Overhangs the page on the right and at the top.
                        {"page": 2, "page_size": [600.0, 800.0], "bbox": [300, -5, 612, 80]},
                        # A box on a page page_id does not list.
                        {"page": 9, "page_size": [600.0, 800.0], "bbox": [0, 0, 600, 800]},
                    ],
                },
            ],
        },
        {"doc_name": "empty.pdf", "domain": "Brochure", "questions": []},
    ]
    return _jsonl(tmp_path / "mmdocir.jsonl", docs)


def test_mmdocir_normalises_boxes_and_keeps_0_based_pages(tmp_path: Path) -> None:
    evalset = load_mmdocir(_mmdocir(tmp_path))
    assert evalset.format == "mmdocir" and evalset.name == "mmdocir"
    revenue, both = evalset.questions
    assert revenue.id == "report.pdf#0" and both.id == "report.pdf#1"
    assert revenue.evidence_pages == [4] and both.evidence_pages == [2, 7]
    assert revenue.domain == "Financial report" and both.evidence_sources == ["Figure", "Chart"]
    assert revenue.regions[0].page == 4
    assert revenue.regions[0].bbox.as_tuple() == (0.1, 0.25, 0.5, 0.5)
    assert both.regions[0].bbox.as_tuple() == (0.5, 0.0, 1.0, 0.1)
    for q in evalset.questions:
        for r in q.regions:
            assert all(0.0 <= v <= 1.0 for v in r.bbox.as_tuple())
    assert "1 boxes overhung their page and were clamped to it" in evalset.notes
    assert "1 boxes lie on pages that page_id does not list" in evalset.notes


def test_mmdocir_regions_follow_restrict_pages(tmp_path: Path) -> None:
    restricted, dropped = load_mmdocir(_mmdocir(tmp_path)).restrict_pages({"report.pdf": 5})
    assert dropped == 1
    assert restricted.questions[1].evidence_pages == [2]
    assert [r.page for r in restricted.questions[1].regions] == [2]


def test_mmdocir_bad_region_names_line(tmp_path: Path) -> None:
    question = {"Q": "q", "A": "a", "page_id": [0], "type": "['Table']"}
    mapping = {"page": 0, "page_size": [0, 800], "bbox": [1, 2, 3, 4]}
    path = _jsonl(
        tmp_path / "x.jsonl",
        [
            {"doc_name": "a.pdf", "questions": [question]},
            {"doc_name": "b.pdf", "questions": [{**question, "layout_mapping": [mapping]}]},
        ],
    )
    with pytest.raises(ConfigurationError, match=r"line 2: question 0: layout_mapping: bad region"):
        load_mmdocir(path)


# --- ViDoSeek ------------------------------------------------------------------------------------


def test_vidoseek_converts_reference_pages(tmp_path: Path) -> None:
    data = {
        "examples": [
            {
                "uid": "abc_1",
                "query": "Which areas are on the coast?",
                "reference_answer": "Kent",
                "meta_info": {
                    "file_name": "deck.pdf",
                    "reference_page": [11, 3],
                    "source_type": "2d_layout",
                    "query_type": "content_extraction",
                },
            },
            {
                "query": "A single page?",
                "reference_answer": "yes",
                "meta_info": {"file_name": "deck.pdf", "reference_page": 1},
            },
        ]
    }
    evalset = load_vidoseek(_write(tmp_path / "vs" / "rag_dataset.json", json.dumps(data)))
    assert evalset.name == "vs" and evalset.format == "vidoseek"
    coast, single = evalset.questions
    assert (coast.id, coast.doc, coast.answer) == ("abc_1", "deck.pdf", "Kent")
    assert coast.evidence_pages == [2, 10] and coast.evidence_sources == ["2d_layout"]
    assert single.id == "deck.pdf#1" and single.evidence_pages == [0]
    assert "reference pages were 1-indexed; converted to 0-based" in evalset.notes


# --- mmquery -------------------------------------------------------------------------------------


def _mmquery(tmp_path: Path, qrels: str | None = None) -> Path:
    folder = tmp_path / "mmq"
    (folder / "query_images").mkdir(parents=True)
    (folder / "query_images" / "q0.png").write_bytes(b"\x89PNG")
    queries = [
        {
            "qid": "report__q0",
            "question": "Revenue?",
            "answer": "12.5",
            "type": "Table",
            "image": "query_images/q0.png",
            "relevant_pages": ["report.pdf#p4"],
        },
        {
            "qid": "report__q1",
            "question": "Chart?",
            "answer": "3",
            "type": "Pure-text (Plain-text) Chart",
            "image": "query_images/missing.png",
            # qrels disagrees: it scores page 3 with 0.
            "relevant_pages": ["report.pdf#p2", "report.pdf#p3"],
        },
    ]
    _jsonl(folder / "queries.jsonl", queries)
    if qrels is None:
        qrels = (
            "query-id\tcorpus-id\tscore\n"
            "report__q0\treport.pdf#p4\t1\n"
            "report__q1\treport.pdf#p2\t1\n"
            "report__q1\treport.pdf#p3\t0\n"
        )
    _write(folder / "qrels.tsv", qrels)
    return folder


def test_mmquery_uses_qrels_and_resolves_images(tmp_path: Path) -> None:
    folder = _mmquery(tmp_path)
    evalset = load_mmquery(folder)
    assert (evalset.name, evalset.format, len(evalset.questions)) == ("mmq", "mmquery", 2)
    q0, q1 = evalset.questions
    assert (q0.id, q0.doc, q0.evidence_pages) == ("report__q0", "report.pdf", [4])
    assert q1.evidence_pages == [2]
    assert q0.image == str((folder / "query_images" / "q0.png").resolve())
    assert Path(q0.image).is_absolute() and Path(q0.image).is_file()
    assert q1.evidence_sources == ["Pure-text (Plain-text) Chart"]
    notes = " | ".join(evalset.notes)
    assert "not a published benchmark" in notes
    assert "1 queries list relevant_pages that disagree with qrels" in notes
    assert "1 query images do not exist" in notes
    # The queries file itself reads the same.
    assert load_mmquery(folder / "queries.jsonl").questions == evalset.questions


def test_mmquery_without_qrels_falls_back_to_relevant_pages(tmp_path: Path) -> None:
    folder = _mmquery(tmp_path)
    (folder / "qrels.tsv").unlink()
    evalset = load_mmquery(folder)
    assert evalset.questions[1].evidence_pages == [2, 3]
    assert any("relevance taken from relevant_pages" in n for n in evalset.notes)


def test_mmquery_bad_corpus_id_names_line(tmp_path: Path) -> None:
    folder = _mmquery(tmp_path, "query-id\tcorpus-id\tscore\nreport__q0\treport.pdf-4\t1\n")
    with pytest.raises(ConfigurationError, match=r"qrels.tsv: line 2: 'report.pdf-4'"):
        load_mmquery(folder)


# --- generic JSONL -------------------------------------------------------------------------------


def test_jsonl_reads_the_documented_format(tmp_path: Path) -> None:
    _write(tmp_path / "imgs" / "chart.png", "x")
    path = _write(
        tmp_path / "my.jsonl",
        "# my questions\n"
        '{"id": "q1", "question": "Revenue in 2023?", "answer": "12.5", "doc": "report.pdf",'
        ' "evidence_pages": [4, 4, 2], "answer_format": "Float", "domain": "finance",'
        ' "evidence_sources": ["Table"]}\n'
        "\n"
        '{"id": 7, "question": "What does this chart show?", "answer": null, "doc": null,'
        ' "image": "imgs/chart.png",'
        ' "regions": [{"page": 1, "bbox": [0.1, 0.2, 0.5, 0.6]}]}\n',
    )
    evalset = load_jsonl(path)
    assert (evalset.name, evalset.format) == ("my", "jsonl")
    q1, q7 = evalset.questions
    assert q1.evidence_pages == [2, 4] and q1.domain == "finance" and q1.answer_format == "Float"
    assert q7.id == "7" and q7.doc is None and q7.evidence_pages == []
    assert q7.image == str((tmp_path / "imgs" / "chart.png").resolve())
    assert q7.regions[0].bbox.as_tuple() == (0.1, 0.2, 0.5, 0.6)
    assert evalset.notes == ["1 questions have no evidence pages (0 of them 'Not answerable')"]


GOOD = '{"id": "a", "question": "q?", "answer": "x", "doc": "d.pdf", "evidence_pages": [0]}'


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('{"id": "b", "question": "q?"', "invalid JSON"),
        ('["b", "q?"]', "expected a JSON object"),
        ('{"id": "b", "answer": "x"}', "missing 'question'"),
        ('{"question": "q?"}', "missing 'id'"),
        ('{"id": "b", "question": ""}', "'question' must be a non-empty string"),
        ('{"id": "b", "question": "q?", "doc": "d.pdf", "evidence_pages": [-1]}', "0-based"),
        ('{"id": "b", "question": "q?", "doc": "d.pdf", "evidence_pages": ["3"]}', "0-based"),
        ('{"id": "b", "question": "q?", "doc": "d.pdf", "evidence_pages": 3}', "0-based"),
        ('{"id": "b", "question": "q?", "evidence_pages": [3]}', "needs the 'doc'"),
        ('{"id": "b", "question": "q?", "evidence_page": [3]}', "unknown keys ['evidence_page']"),
        ('{"id": "b", "question": "q?", "doc": 5}', "'doc' must be a file name"),
        ('{"id": "b", "question": "q?", "evidence_sources": "Table"}', "a list of strings"),
        ('{"id": "b", "question": "q?", "regions": [{"page": 0, "bbox": [0, 0, 2, 1]}]}', "region"),
        ('{"id": "a", "question": "again?"}', "duplicate id 'a' (first on line 2)"),
    ],
)
def test_jsonl_bad_line_names_file_and_line(tmp_path: Path, line: str, problem: str) -> None:
    path = _write(tmp_path / "bad.jsonl", f"# header\n{GOOD}\n\n{line}\n")
    with pytest.raises(ConfigurationError) as err:
        load_jsonl(path)
    assert err.value.message.startswith(f"{path}: line 4: ")
    assert problem in err.value.message


# --- detection and load_dataset ------------------------------------------------------------------


def test_detection_by_file_name(tmp_path: Path) -> None:
    assert detect_format(_samples(tmp_path)) == "mmlongbench"
    assert detect_format(_mmdocir(tmp_path)) == "mmdocir"
    assert detect_format(_write(tmp_path / "v" / "rag_dataset.json", '{"examples": []}')) == (
        "vidoseek"
    )
    folder = _mmquery(tmp_path)
    assert detect_format(folder) == detect_format(folder / "queries.jsonl") == "mmquery"


def test_detection_by_content(tmp_path: Path) -> None:
    renamed = tmp_path / "renamed"
    renamed.mkdir()
    _samples(tmp_path).rename(renamed / "mmlb.json")
    _mmdocir(tmp_path).rename(renamed / "docir.txt")
    _write(renamed / "vs.json", json.dumps({"examples": []}, indent=2))
    (_mmquery(tmp_path) / "queries.jsonl").rename(renamed / "q.jsonl")
    _write(renamed / "mine.jsonl", f"# comment\n\n{GOOD}\n")
    expected = {
        "mmlb.json": "mmlongbench",
        "docir.txt": "mmdocir",
        "vs.json": "vidoseek",
        "q.jsonl": "mmquery",
        "mine.jsonl": "jsonl",
    }
    for name, fmt in expected.items():
        assert detect_format(renamed / name) == fmt, name
        assert load_dataset(renamed / name).format == fmt
    assert load_dataset(renamed / "mmlb.json").name == "mmlb"


def test_only_mmquery_is_a_directory(tmp_path: Path) -> None:
    folder = _samples(tmp_path).parent
    with pytest.raises(ConfigurationError, match=r"a directory without queries\.jsonl"):
        load_dataset(folder)
    with pytest.raises(ConfigurationError, match="a directory; give the mmlongbench file"):
        load_dataset(folder, "mmlongbench")
    assert len(load_dataset(_mmquery(tmp_path), "mmquery").questions) == 2


@pytest.mark.parametrize(
    ("name", "text", "problem"),
    [
        ("empty.jsonl", "\n", "empty"),
        ("list.json", "[1, 2]", "a JSON list, but not MMLongBench"),
        ("obj.json", '{\n  "data": []\n}', "a JSON object, but not ViDoSeek"),
        ("junk.txt", "hello", "invalid JSON"),
    ],
)
def test_unknown_content_is_a_configuration_error(
    tmp_path: Path, name: str, text: str, problem: str
) -> None:
    path = _write(tmp_path / name, text)
    with pytest.raises(ConfigurationError) as err:
        load_dataset(path)
    assert str(path) in err.value.message and problem in err.value.message
    assert "expected MMLongBench samples.json" in err.value.message


def test_missing_path_unknown_format_and_wrong_reader(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="no such dataset file"):
        load_dataset(tmp_path / "nope.jsonl")
    with pytest.raises(ConfigurationError, match="no such dataset file"):
        load_dataset(tmp_path / "nope.jsonl", "jsonl")
    with pytest.raises(ConfigurationError, match="unknown dataset format 'squad'; use one of"):
        load_dataset(_samples(tmp_path), "squad")
    # A file read with the wrong reader fails with what that reader expected.
    with pytest.raises(ConfigurationError, match="line 1: expected a JSON object, got list"):
        load_dataset(_samples(tmp_path), "jsonl")
    with pytest.raises(ConfigurationError, match="expected a JSON list of MMLongBench samples"):
        load_dataset(_write(tmp_path / "one.json", GOOD), "mmlongbench")


# --- export --------------------------------------------------------------------------------------


def test_round_trip_mmlongbench_through_jsonl(tmp_path: Path) -> None:
    original = load_dataset(_samples(tmp_path))
    out = write_jsonl(original, tmp_path / "export" / "mmlb.jsonl")
    assert detect_format(out) == "jsonl"
    again = load_dataset(out)
    assert again.questions == original.questions
    first = json.loads(out.read_text().splitlines()[0])
    assert first["evidence_pages"] == [4] and first["id"] == "report.pdf#0"


def test_round_trip_keeps_regions_and_images(tmp_path: Path) -> None:
    for original in (load_mmdocir(_mmdocir(tmp_path)), load_mmquery(_mmquery(tmp_path))):
        out = write_jsonl(original, tmp_path / f"{original.format}.jsonl")
        assert load_jsonl(out).questions == original.questions
    # Images under the export folder are written relative to it.
    rows = [json.loads(line) for line in (tmp_path / "mmquery.jsonl").read_text().splitlines()]
    assert rows[0]["image"] == "mmq/query_images/q0.png"
