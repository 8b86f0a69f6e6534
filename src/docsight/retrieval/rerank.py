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

import itertools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from docsight.document.chunk import Chunk
from docsight.document.text import content_terms, idf_weights
from docsight.errors import ConfigurationError
from docsight.index.base import Store
from docsight.retrieval.hit import Hit
from docsight.settings import RetrievalSettings


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


# --- the offline feature reranker --------------------------------------------------------------

#: Channels whose ranks are features (others are ignored, so the model applies to any channel set).
FEATURE_CHANNELS = ("bm25", "dense", "page_bm25", "locate", "tree")
_ASKS_TABLE = re.compile(r"\btables?\b", re.I)
_ASKS_CHART = re.compile(r"\b(?:chart|graph|plot|bar|pie|diagram|figure|fig\.)s?\b", re.I)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
WEIGHTS_FILE = Path(__file__).with_name("rerank_weights.json")


@dataclass(frozen=True)
class PageEvidence:
    """What the feature reranker reads of a candidate page."""

    terms: frozenset[str]
    bigrams: frozenset[tuple[str, str]]
    numbers: frozenset[str]
    kinds: frozenset[str]


def page_evidence(chunks: Sequence[Chunk]) -> PageEvidence:
    text = "\n".join(c.body for c in chunks)
    terms = content_terms(text)
    return PageEvidence(
        terms=frozenset(terms),
        bigrams=frozenset(itertools.pairwise(terms)),
        numbers=frozenset(n.replace(",", "") for n in _NUMBER.findall(text)),
        kinds=frozenset(c.kind for c in chunks),
    )


def feature_names() -> list[str]:
    return [
        "fused",
        "position",
        *(f"rank_{c}" for c in FEATURE_CHANNELS),
        "coverage",
        "bigrams",
        "numbers",
        "kind",
        "neighbour",
    ]


def features(query: str, hits: Sequence[Hit], evidence: Sequence[PageEvidence]) -> np.ndarray:
    """One row of :func:`feature_names` per hit (pages or chunks on pages)."""
    q_terms = content_terms(query)
    q_set = set(q_terms)
    q_bigrams = set(itertools.pairwise(q_terms))
    q_numbers = {n.replace(",", "") for n in _NUMBER.findall(query)}
    asks_table, asks_chart = bool(_ASKS_TABLE.search(query)), bool(_ASKS_CHART.search(query))
    weights = idf_weights([set(e.terms) for e in evidence], q_set) if q_set else {}
    total = sum(weights.values()) or 1.0
    top = max((h.score for h in hits), default=1.0) or 1.0
    fused = {(h.doc_id, h.page): h.score / top for h in hits}
    rows = []
    for i, (hit, ev) in enumerate(zip(hits, evidence, strict=True)):
        kind = float(
            (asks_table and "table" in ev.kinds)
            or (asks_chart and bool(ev.kinds & {"figure", "chart", "page_image"}))
        )
        neighbour = max(
            fused.get((hit.doc_id, hit.page - 1), 0.0), fused.get((hit.doc_id, hit.page + 1), 0.0)
        )
        rows.append(
            [
                hit.score / top,
                1.0 / (1 + i),
                *(1.0 / (1 + hit.ranks[c]) if c in hit.ranks else 0.0 for c in FEATURE_CHANNELS),
                sum(w for t, w in weights.items() if t in ev.terms) / total,
                len(q_bigrams & ev.bigrams) / len(q_bigrams) if q_bigrams else 0.0,
                len(q_numbers & ev.numbers) / len(q_numbers) if q_numbers else 0.0,
                kind,
                neighbour,
            ]
        )
    return np.asarray(rows, dtype=np.float64).reshape(len(hits), len(feature_names()))


class FeatureReranker:
    """Reorders the top candidates by a linear model over :func:`features` of their pages.

    The model scores pages; a chunk takes its page's score, so chunks of the best pages come
    first and keep their fused order within a page.
    """

    name = "features"
    last_warning: str | None = None

    def __init__(
        self,
        store: Store,
        *,
        candidates: int = 30,
        keep: int = 20,
        weights: Sequence[float] | None = None,
    ) -> None:
        self.store = store
        self.candidates = candidates
        self.keep = keep
        self.weights = np.asarray(weights if weights is not None else load_weights(), np.float64)
        if self.weights.shape != (len(feature_names()),):
            raise ConfigurationError(
                f"rerank weights have {self.weights.shape[0]} values, the features are "
                f"{len(feature_names())}: {WEIGHTS_FILE} does not match this version"
            )

    def rerank(self, query: str, hits: Sequence[Hit]) -> list[Hit]:
        if len(hits) < 2:
            return list(hits)
        head = list(hits[: self.candidates])
        pages = list(dict.fromkeys((h.doc_id, h.page) for h in head))
        by_page: dict[tuple[str, int], list[Chunk]] = {key: [] for key in pages}
        for chunk in self.store.chunks_on_pages(pages):
            by_page.setdefault((chunk.doc_id, chunk.page), []).append(chunk)
        evidence = {key: page_evidence(by_page[key]) for key in pages}
        # Pages are scored once, by the first (best) hit on each.
        first = {}
        for hit in head:
            first.setdefault((hit.doc_id, hit.page), hit)
        page_hits = [first[key] for key in pages]
        scores = features(query, page_hits, [evidence[k] for k in pages]) @ self.weights
        page_score = dict(zip(pages, scores.tolist(), strict=True))
        order = sorted(
            range(len(head)), key=lambda i: (-page_score[(head[i].doc_id, head[i].page)], i)
        )
        chosen = [head[i] for i in order[: self.keep]]
        rest = [h for h in head if h not in chosen] + list(hits[self.candidates :])
        return renumber(chosen + rest)


def load_weights(path: Path = WEIGHTS_FILE) -> list[float]:
    """The shipped weights of the feature reranker, in :func:`feature_names` order."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"cannot read the rerank weights {path}: {exc}") from exc
    if data.get("features") != feature_names():
        raise ConfigurationError(
            f"{path} was fitted for features {data.get('features')}, this version computes "
            f"{feature_names()}: refit with benchmarks/fit_reranker.py"
        )
    return [float(w) for w in data["weights"]]


def create_reranker(settings: RetrievalSettings, store: Store, chat: object | None) -> Reranker:
    """The configured reranker (``llm`` without a chat model falls back to ``none``)."""
    if settings.rerank == "features":
        return FeatureReranker(
            store, candidates=settings.rerank_candidates, keep=settings.rerank_keep
        )
    if settings.rerank == "llm" and chat is not None:
        from docsight.retrieval.rerank_llm import LLMReranker

        return LLMReranker(
            chat,  # type: ignore[arg-type]
            candidates=settings.rerank_candidates,
            keep=settings.rerank_keep,
            timeout=settings.rerank_timeout,
        )
    return NoReranker()
