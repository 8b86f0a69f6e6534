"""Adaptive k, query expansion and references to named parts, without a store."""

from __future__ import annotations

import numpy as np
import pytest

from docsight.document.chunk import Chunk
from docsight.retrieval.adaptive import adaptive_k, high_component
from docsight.retrieval.expand import expand, expansion
from docsight.retrieval.hit import Hit
from docsight.retrieval.locate import NamedRef, mentions_location, named_references
from docsight.retrieval.rerank import feature_names, features, load_weights, page_evidence


def test_gmm_keeps_the_high_cluster() -> None:
    scores = [0.91, 0.89, 0.88, 0.52, 0.51, 0.50, 0.49, 0.48, 0.47, 0.46, 0.45, 0.44]
    assert adaptive_k(scores, 1, 10) == 3
    posterior = high_component(scores)
    assert posterior[:3].min() > 0.5 > posterior[3:].max()


def test_adaptive_k_is_clamped() -> None:
    scores = [0.9, 0.2, 0.19, 0.18, 0.17, 0.16, 0.15]
    assert adaptive_k(scores, 3, 10) == 3  # one clear match, but at least k_min
    flat = [0.5] * 20
    assert adaptive_k(flat, 2, 6) == 6  # nothing to split: all "high", cut at k_max
    assert adaptive_k([0.4, 0.3], 3, 10) == 2  # fewer results than k_min
    with pytest.raises(ValueError):
        adaptive_k(scores, 5, 4)


def test_gmm_is_robust_to_outliers_and_ties() -> None:
    rng = np.random.default_rng(0)
    scores = sorted(np.concatenate([rng.normal(0.8, 0.02, 5), rng.normal(0.3, 0.05, 95)]))[::-1]
    assert 4 <= adaptive_k(list(scores), 1, 20) <= 6
    assert len(high_component([1.0, 1.0, 1.0])) == 3


def test_expansion_adds_line_items_of_financial_metrics() -> None:
    assert "cost of sales" in expansion("What is the FY2021 inventory turnover ratio for Nike?")
    assert "balance sheets" in expansion("What is the current ratio in 2020?")
    assert "total current liabilities" in expansion("What is cash_ratio in FY2021?")
    both = expansion("what is R&D to asset ratio in FY 2019?")
    assert "research and development" in both and "total assets" in both
    assert "purchases of property and equipment" in expansion("capex to revenue ratio for 2019?")
    assert expansion("Who founded the company?") == ""
    assert expand("Who founded the company?") == "Who founded the company?"
    assert expand("What is the ROE?").startswith("What is the ROE? return on equity")
    # Words inside other words are not metrics.
    assert expansion("Describe the roadmap for eps-lon variants") == ""


def test_named_references_in_questions() -> None:
    refs = named_references("In Figure 1, compared with Table 2b and Section 4.1, what changed?")
    assert [r.key for r in refs] == ["figure 1", "table 2b", "section 4.1"]
    assert named_references("How many strengths are mentioned in Appendix E?") == [
        NamedRef("named", "appendix e")
    ]
    assert named_references("What does the second last chart show?") == [
        NamedRef("ordinal", "chart", -2)
    ]
    assert named_references("What is the title of the first figure?") == [
        NamedRef("ordinal", "figure", 1)
    ]
    assert named_references("Fig. 3 and tab. 4") == [
        NamedRef("named", "figure 3"),
        NamedRef("named", "table 4"),
    ]
    assert named_references("Which sections discuss the tables of results?") == []
    assert mentions_location("What is on page 14?")
    assert not mentions_location("What is the revenue?")


def _page_hit(page: int, score: float, ranks: dict[str, int]) -> Hit:
    return Hit(
        unit="page",
        rank=page + 1,
        score=score,
        doc_id="d" * 32,
        doc_name="report.pdf",
        page=page,
        text="",
        ranks=ranks,
    )


def _chunk(page: int, body: str, kind: str = "text") -> Chunk:
    return Chunk(
        id=f"{page:032x}",
        doc_id="d" * 32,
        doc_name="report.pdf",
        text=body,
        body=body,
        kind=kind,
        page=page,
        order=page,
    )


def test_rerank_features_read_the_page_evidence() -> None:
    hits = [_page_hit(0, 0.05, {"bm25": 1}), _page_hit(1, 0.04, {"dense": 2, "locate": 1})]
    evidence = [
        page_evidence([_chunk(0, "Revenue grew in every region during 2021.")]),
        page_evidence([_chunk(1, "| Region | 2021 |\n| North | 120 |", kind="table")]),
    ]
    x = features("Which table shows the 2021 revenue by region?", hits, evidence)
    names = feature_names()
    row0, row1 = dict(zip(names, x[0], strict=True)), dict(zip(names, x[1], strict=True))
    assert row0["fused"] == 1.0 and row1["fused"] == pytest.approx(0.8)
    assert row0["rank_bm25"] == 0.5 and row0["rank_dense"] == 0.0
    assert row1["rank_locate"] == 0.5 and row1["rank_dense"] == pytest.approx(1 / 3)
    assert row1["kind"] == 1.0 and row0["kind"] == 0.0  # the question asks for a table
    assert row0["numbers"] == 1.0 and row1["numbers"] == 1.0  # "2021" on both pages
    assert row0["coverage"] > row1["coverage"]  # "revenue" is only on page 0
    assert row0["neighbour"] == pytest.approx(0.8) and row1["neighbour"] == 1.0


def test_shipped_rerank_weights_match_the_features() -> None:
    weights = load_weights()
    assert len(weights) == len(feature_names())
