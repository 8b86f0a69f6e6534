"""Ranking metrics with binary relevance.

``ranked`` is a list of item ids best first (duplicates are ignored after their first position);
``relevant`` is the set of ids judged relevant. Questions without relevant items are excluded by
callers, not scored as zero.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence, Set


def _dedup(ranked: Sequence[Hashable]) -> list[Hashable]:
    return list(dict.fromkeys(ranked))


def recall_at_k(ranked: Sequence[Hashable], relevant: Set[Hashable], k: int) -> float:
    if not relevant:
        raise ValueError("recall is undefined without relevant items")
    return len(set(_dedup(ranked)[:k]) & relevant) / len(relevant)


def precision_at_k(ranked: Sequence[Hashable], relevant: Set[Hashable], k: int) -> float:
    return len(set(_dedup(ranked)[:k]) & relevant) / k


def hit_at_k(ranked: Sequence[Hashable], relevant: Set[Hashable], k: int) -> float:
    return 1.0 if set(_dedup(ranked)[:k]) & relevant else 0.0


def mrr(ranked: Sequence[Hashable], relevant: Set[Hashable]) -> float:
    for position, item in enumerate(_dedup(ranked), start=1):
        if item in relevant:
            return 1.0 / position
    return 0.0


def ndcg_at_k(ranked: Sequence[Hashable], relevant: Set[Hashable], k: int) -> float:
    """nDCG with gain 1 for relevant items and the log2(rank + 1) discount."""
    if not relevant:
        raise ValueError("nDCG is undefined without relevant items")
    dcg = sum(
        1.0 / math.log2(position + 1)
        for position, item in enumerate(_dedup(ranked)[:k], start=1)
        if item in relevant
    )
    ideal = sum(1.0 / math.log2(position + 1) for position in range(1, min(k, len(relevant)) + 1))
    return dcg / ideal
