"""Adaptive k, query expansion and references to named parts, without a store."""

from __future__ import annotations

import numpy as np
import pytest

from docsight.retrieval.adaptive import adaptive_k, high_component
from docsight.retrieval.expand import expand, expansion
from docsight.retrieval.locate import NamedRef, mentions_location, named_references


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
