from __future__ import annotations

import math

import pytest

from docsight.evaluation.metrics import hit_at_k, mrr, ndcg_at_k, precision_at_k, recall_at_k


def test_recall_precision_hit() -> None:
    ranked = ["a", "b", "c", "d"]
    assert recall_at_k(ranked, {"b", "d", "z"}, 2) == pytest.approx(1 / 3)
    assert recall_at_k(ranked, {"b", "d", "z"}, 4) == pytest.approx(2 / 3)
    assert precision_at_k(ranked, {"b", "d"}, 4) == pytest.approx(0.5)
    assert hit_at_k(ranked, {"d"}, 3) == 0.0 and hit_at_k(ranked, {"d"}, 4) == 1.0


def test_mrr_and_duplicates() -> None:
    assert mrr(["x", "x", "y"], {"y"}) == pytest.approx(0.5)
    assert mrr(["x"], {"y"}) == 0.0


def test_ndcg_hand_computed() -> None:
    # relevant at ranks 2 and 3 of 2 relevant items
    dcg = 1 / math.log2(3) + 1 / math.log2(4)
    idcg = 1 + 1 / math.log2(3)
    assert ndcg_at_k(["a", "b", "c"], {"b", "c"}, 10) == pytest.approx(dcg / idcg)
    assert ndcg_at_k(["b", "c"], {"b", "c"}, 10) == pytest.approx(1.0)
    assert ndcg_at_k(["a"], {"b"}, 10) == 0.0
    # k cuts both the ranking and the ideal
    assert ndcg_at_k(["a", "b"], {"b", "c", "d"}, 1) == 0.0
    with pytest.raises(ValueError):
        ndcg_at_k(["a"], set(), 10)


def test_answer_in_context() -> None:
    from docsight.evaluation.metrics import answer_in_context, answer_items

    context = "Accrued liabilities were $6,063 million in FY2021. Revenue grew 12% to 44.5 billion."
    assert answer_in_context("6063", context)
    assert answer_in_context("6,063", context)
    assert answer_in_context("44.5", context) and answer_in_context("12%", context)
    assert not answer_in_context("2", context)  # "2" is inside FY2021, not a token of its own
    assert not answer_in_context("606", context)
    # Numbers compare by value: trailing zeros of a decimal do not make another number.
    assert answer_in_context("6063.00", context) and answer_in_context("12.0%", context)
    assert answer_in_context("18.40%", "rezoned 18.4% of the land")
    assert not answer_in_context("18.41%", "rezoned 18.4% of the land")
    assert not answer_in_context("184", "rezoned 18.4% of the land")
    assert answer_in_context("revenue GREW", context)
    assert answer_in_context("['Accrued liabilities', 'Revenue']", context)
    assert not answer_in_context("['Revenue', 'Profit']", context)  # every item must appear
    assert answer_items("['a', 'b']") == ["a", "b"] and answer_items(["x"]) == ["x"]
    assert answer_items("[unbalanced") == ["[unbalanced"]
    assert not answer_in_context("", context)
    assert answer_in_context("Nike’s “Jordan” brand", 'nike\'s "jordan" brand')


def test_character_error_rate() -> None:
    from docsight.evaluation.metrics import character_error_rate

    assert character_error_rate("kitten", "sitting") == pytest.approx(3 / 6)
    assert character_error_rate("a  b\nc", "a b c") == 0.0  # whitespace runs fold
    assert character_error_rate("", "") == 0.0
