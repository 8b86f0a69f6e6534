"""Score fusion across retrieval channels."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

K = TypeVar("K", bound=Hashable)


def _accumulate(
    rankings: Mapping[str, Sequence[K]], k: int, weights: Mapping[str, float] | None
) -> tuple[dict[K, float], dict[K, int], dict[K, int]]:
    if k <= 0:
        raise ValueError("k must be positive")
    scores: dict[K, float] = {}
    best_rank: dict[K, int] = {}
    first_seen: dict[K, int] = {}
    for channel, ranking in rankings.items():
        weight = 1.0 if weights is None else weights.get(channel, 1.0)
        seen: set[K] = set()
        for rank, key in enumerate(ranking, start=1):
            if key in seen:  # a channel may list an item once only
                continue
            seen.add(key)
            scores[key] = scores.get(key, 0.0) + weight / (k + rank)
            best_rank[key] = min(best_rank.get(key, rank), rank)
            first_seen.setdefault(key, len(first_seen))
    return scores, best_rank, first_seen


def rrf_scores(
    rankings: Mapping[str, Sequence[K]],
    k: int = 60,
    weights: Mapping[str, float] | None = None,
) -> dict[K, float]:
    """Reciprocal-rank-fusion scores, unsorted: ``score(d) = Σ_c w_c / (k + rank_c(d))``."""
    return _accumulate(rankings, k, weights)[0]


def reciprocal_rank_fusion(
    rankings: Mapping[str, Sequence[K]],
    k: int = 60,
    weights: Mapping[str, float] | None = None,
) -> list[tuple[K, float]]:
    """Fuse ranked lists: ``score(d) = Σ_c w_c / (k + rank_c(d))`` with 1-based ranks.

    Items missing from a channel contribute nothing for it. Ties are broken by the best single
    rank, then by first appearance, so the result is deterministic.
    """
    scores, best_rank, first_seen = _accumulate(rankings, k, weights)
    return sorted(scores.items(), key=lambda kv: (-kv[1], best_rank[kv[0]], first_seen[kv[0]]))
