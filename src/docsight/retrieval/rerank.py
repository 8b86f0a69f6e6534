"""Second-stage rerankers: reorder the best candidates of the fused list.

* ``none``: the fused order.
* ``features`` (offline): a linear model over per-page evidence that fusion does not see —
  which channels agree, how much of the question's rare vocabulary, numbers and phrases the
  page holds, whether the page has the kind of content the question asks about. Its weights are
  fitted on the shared dev data by ``benchmarks/fit_reranker.py`` with leave-documents-out
  cross-validation and shipped in ``rerank_weights.json``.
* ``llm``: a configured chat model orders the candidates listwise (MM-BizRAG: the top 30 in,
  the best 20 out), cached, with a deadline that falls back to the fused order
  (:mod:`.rerank_llm`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from docsight.retrieval.hit import Hit


class Reranker(Protocol):
    """Reorders search results.

    Contract: ``rerank`` returns the same hits it was given (no additions, no losses), best
    first, with ``rank`` renumbered from 1; ``keep`` bounds how many of the reordered ones come
    first (the rest follow in their fused order). It never raises for a model fault: it falls
    back to the given order and says why in ``last_warning``. ``name`` identifies it in
    results and caches.
    """

    name: str
    last_warning: str | None

    def rerank(self, query: str, hits: Sequence[Hit]) -> list[Hit]: ...


def renumber(hits: Sequence[Hit]) -> list[Hit]:
    """Hits with ``rank`` set to their position (1-based)."""
    return [h if h.rank == i else h.model_copy(update={"rank": i}) for i, h in enumerate(hits, 1)]


class NoReranker:
    """The fused order, unchanged."""

    name = "none"
    last_warning: str | None = None

    def rerank(self, query: str, hits: Sequence[Hit]) -> list[Hit]:
        return list(hits)
