from __future__ import annotations

from dataclasses import dataclass

import pytest

from docsight.document.model import BBox
from docsight.evaluation.runner import aggregate, grouped, index_fingerprint
from docsight.evaluation.scoring import score_chunks, score_pages
from docsight.evaluation.types import EvalQuestion, EvalSet, QuestionResult, Region
from docsight.settings import Settings


@dataclass
class FakeHit:
    doc_name: str
    page: int
    bbox: BBox | None


def _q(**fields: object) -> EvalQuestion:
    base = {"id": "q", "question": "?", "answer": "x", "doc": "d.pdf"}
    return EvalQuestion.model_validate({**base, **fields})


def test_page_scores_and_unscorable_questions() -> None:
    q = _q(evidence_pages=[2, 5])
    scores = score_pages(["d.pdf#5", "d.pdf#1", "d.pdf#2"], q, 10)
    assert scores["recall@1"] == 0.5 and scores["recall@5"] == 1.0 and scores["mrr"] == 1.0
    assert scores["precision@5"] == pytest.approx(0.4)
    assert score_pages(["d.pdf#5"], _q(evidence_pages=[]), 10) == {}
    assert score_pages(["d.pdf#5"], _q(answer="Not answerable", evidence_pages=[5]), 10) == {}


def test_region_recall_needs_half_the_region_inside_a_retrieved_box() -> None:
    region = BBox(x0=0.1, y0=0.1, x1=0.5, y1=0.3)
    q = _q(evidence_pages=[1], regions=[Region(page=1, bbox=region), Region(page=3, bbox=region)])
    covering = FakeHit("d.pdf", 1, BBox(x0=0.0, y0=0.0, x1=0.35, y1=1.0))  # 62.5% of the region
    sliver = FakeHit("d.pdf", 3, BBox(x0=0.45, y0=0.0, x1=1.0, y1=1.0))  # 12.5%
    assert score_chunks([covering, sliver], q) == {"region_recall@5": 0.5}
    wrong_doc = FakeHit("other.pdf", 1, BBox(x0=0, y0=0, x1=1, y1=1))
    assert score_chunks([wrong_doc], q) == {"region_recall@5": 0.0}


def test_aggregate_groups_and_abstention() -> None:
    results = [
        QuestionResult(id="a", question="?", domain="x", evidence_sources=["Table"],
                       metrics={"recall@5": 1.0, "abstained": 0.0, "unanswerable": 0.0}),
        QuestionResult(id="b", question="?", domain="x",
                       metrics={"recall@5": 0.0, "abstained": 1.0, "unanswerable": 1.0}),
        QuestionResult(id="c", question="?", domain="y",
                       metrics={"abstained": 1.0, "unanswerable": 0.0}),
    ]  # fmt: skip
    summary = aggregate(results)
    assert summary["questions"] == 3 and summary["recall@5"] == 0.5  # c has no ranking metric
    assert summary["abstention_precision"] == 0.5 and summary["abstention_recall"] == 1.0
    groups = grouped(results)
    assert (
        groups["by_domain"]["x"]["questions"] == 2
        and groups["by_evidence"]["Table"]["recall@5"] == 1.0
    )


def test_restrict_pages_and_index_fingerprint() -> None:
    evalset = EvalSet(
        name="s", format="jsonl", source="s.jsonl", questions=[_q(evidence_pages=[0, 7, 9])]
    )
    restricted, dropped = evalset.restrict_pages({"d.pdf": 8})
    assert dropped == 1 and restricted.questions[0].evidence_pages == [0, 7]
    base = Settings()
    assert index_fingerprint(base) == index_fingerprint(Settings())
    assert index_fingerprint(base) != index_fingerprint(Settings(chunk={"strategy": "page"}))
    assert index_fingerprint(base) == index_fingerprint(Settings(retrieval={"channels": ["bm25"]}))
