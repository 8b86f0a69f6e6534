from __future__ import annotations

import pytest

from docsight.retrieval.fusion import reciprocal_rank_fusion


def test_rrf_matches_hand_computed_scores() -> None:
    fused = dict(reciprocal_rank_fusion({"bm25": ["a", "b", "c"], "dense": ["b", "d"]}, k=60))
    assert fused["a"] == pytest.approx(1 / 61)
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["c"] == pytest.approx(1 / 63)
    assert fused["d"] == pytest.approx(1 / 62)


def test_rrf_order_and_agreement_wins() -> None:
    ranked = [
        key for key, _ in reciprocal_rank_fusion({"x": ["a", "b"], "y": ["b", "a"], "z": ["b"]})
    ]
    assert ranked == ["b", "a"]


def test_rrf_weights_and_deterministic_ties() -> None:
    ranked = [
        key for key, _ in reciprocal_rank_fusion({"x": ["a"], "y": ["b"]}, weights={"y": 2.0})
    ]
    assert ranked == ["b", "a"]
    # Equal scores: first appearance decides, every time.
    assert [k for k, _ in reciprocal_rank_fusion({"x": ["a"], "y": ["b"]})] == ["a", "b"]


def test_rrf_ignores_duplicates_within_a_channel_and_validates_k() -> None:
    fused = dict(reciprocal_rank_fusion({"x": ["a", "a", "b"]}))
    assert fused["a"] == pytest.approx(1 / 61)
    assert fused["b"] == pytest.approx(1 / 63)
    with pytest.raises(ValueError):
        reciprocal_rank_fusion({"x": ["a"]}, k=0)
    assert reciprocal_rank_fusion({}) == []
