"""Hybrid search: run every channel, fuse by reciprocal rank, read out chunks or pages.

Channels rank either chunks (BM25, dense) or pages (page BM25, page references). Fusion is
hierarchical: a page-level channel's vote for a page counts for every chunk on it, and for
page-level results each chunk channel ranks pages by their best chunk. So a page that the
question names, or whose text matches as a whole, lifts its chunks; and a page that several
chunk channels agree on wins even if no single chunk is top.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from docsight.document.chunk import Chunk
from docsight.errors import ConfigurationError
from docsight.index.base import ChannelHit, Store
from docsight.retrieval.adaptive import adaptive_k
from docsight.retrieval.channels import Retriever
from docsight.retrieval.expand import expand
from docsight.retrieval.fusion import reciprocal_rank_fusion, rrf_scores
from docsight.retrieval.hit import Hit
from docsight.retrieval.rerank import NoReranker, Reranker
from docsight.settings import RetrievalSettings

Unit = Literal["chunk", "page"]
PageKey = tuple[str, int]
#: Pages of each page-level channel whose chunks join the candidates of a chunk search.
_PAGES_EXPANDED = 10


@dataclass
class _Fused:
    """One fusion of every channel's candidates for a query."""

    per_channel: dict[str, list[ChannelHit]]
    page_rankings: dict[str, list[PageKey]]
    page_of: dict[str, PageKey]
    #: Chunk id → fused score (its channels' votes plus its page's page-channel votes).
    combined: dict[str, float]
    #: Chunk ids, best first.
    ranked: list[str]
    #: Chunks fetched because a page channel ranked their page (not found by chunk channels).
    extra: list[Chunk] = field(default_factory=list)
    #: Document id → its share of the fused score (``document_prior``; empty within one).
    doc_votes: dict[str, float] = field(default_factory=dict)


class HybridSearcher:
    def __init__(
        self,
        store: Store,
        retrievers: Sequence[Retriever],
        settings: RetrievalSettings,
        reranker: Reranker | None = None,
    ) -> None:
        if not retrievers:
            raise ConfigurationError("search needs at least one retrieval channel")
        self.store = store
        self.retrievers = list(retrievers)
        self.settings = settings
        self.reranker = reranker
        #: Why the last search's rerank fell back to the fused order, if it did.
        self.warnings: list[str] = []

    # --- channels ------------------------------------------------------------------------------

    def candidates(
        self, query: str, doc_ids: Sequence[str] | None, limit: int
    ) -> dict[str, list[ChannelHit]]:
        """Every channel's hits. Scoped channels run last, within the filter or the documents
        the other channels found."""
        if self.settings.expand:
            query = expand(query)
        results = {
            r.name: r.retrieve(query, limit, doc_ids) for r in self.retrievers if not r.scoped
        }
        scoped = [r for r in self.retrievers if r.scoped]
        if scoped:
            # With no other channel to choose documents (a scoped channel alone, as in an
            # ablation), a scoped channel searches the filter, or everything.
            scope = (
                list(doc_ids) if doc_ids else (self._top_documents(results) if results else doc_ids)
            )
            for r in scoped:
                results[r.name] = r.retrieve(query, limit, scope)
        return results

    def _top_documents(self, results: dict[str, list[ChannelHit]]) -> list[str]:
        rankings = {name: [h.doc_id for h in hits] for name, hits in results.items()}
        fused = reciprocal_rank_fusion(rankings, k=self.settings.rrf_k)
        return [doc for doc, _ in fused[: self.settings.scope_documents]]

    def _levels(self) -> dict[str, str]:
        return {r.name: r.level for r in self.retrievers}

    # --- search --------------------------------------------------------------------------------

    def _fuse(self, query: str, doc_ids: Sequence[str] | None, unit: Unit, k: int) -> _Fused:
        """Run every channel and fuse: chunk scores get their page's page-channel votes."""
        per_channel = self.candidates(query, doc_ids, max(self.settings.candidates, k))
        levels = self._levels()
        chunk_channels = {n: h for n, h in per_channel.items() if levels[n] == "chunk"}
        page_channels = {n: h for n, h in per_channel.items() if levels[n] == "page"}
        weights = self.settings.weights or None
        rrf_k = self.settings.rrf_k

        # Chunk candidates and the page each sits on.
        page_of: dict[str, PageKey] = {}
        for hits in chunk_channels.values():
            for h in hits:
                if h.chunk_id is not None:
                    page_of.setdefault(h.chunk_id, (h.doc_id, h.page))
        page_rankings = {
            name: list(dict.fromkeys((h.doc_id, h.page) for h in hits))
            for name, hits in per_channel.items()
        }
        extra = self._chunks_of_top_pages(page_channels, page_of) if unit == "chunk" else []
        for chunk in extra:
            page_of.setdefault(chunk.id, (chunk.doc_id, chunk.page))

        chunk_scores = rrf_scores(
            {n: [h.chunk_id for h in hits if h.chunk_id] for n, hits in chunk_channels.items()},
            k=rrf_k,
            weights=weights,
        )
        page_votes = rrf_scores(
            {n: page_rankings[n] for n in page_channels}, k=rrf_k, weights=weights
        )
        doc_votes = self._document_votes(per_channel)
        combined = {
            cid: chunk_scores.get(cid, 0.0)
            + page_votes.get(page, 0.0)
            + doc_votes.get(page[0], 0.0)
            for cid, page in page_of.items()
        }
        order = {cid: i for i, cid in enumerate(page_of)}
        ranked = sorted(combined, key=lambda c: (-combined[c], order[c]))
        return _Fused(per_channel, page_rankings, page_of, combined, ranked, extra, doc_votes)

    def _document_votes(self, per_channel: dict[str, list[ChannelHit]]) -> dict[str, float]:
        """Top-down evidence across a corpus: each channel ranks documents by their first hit,
        and a document's fused score, times ``document_prior``, lifts all of its results."""
        prior = self.settings.document_prior
        if prior <= 0:
            return {}
        rankings = {
            name: list(dict.fromkeys(h.doc_id for h in hits)) for name, hits in per_channel.items()
        }
        if len({d for docs in rankings.values() for d in docs}) < 2:
            return {}
        scores = rrf_scores(rankings, k=self.settings.rrf_k, weights=self.settings.weights or None)
        return {doc: prior * score for doc, score in scores.items()}

    def search(
        self,
        query: str,
        k: int = 10,
        doc_ids: Sequence[str] | None = None,
        unit: Unit = "chunk",
    ) -> list[Hit]:
        if k < 1:
            raise ValueError("k must be at least 1")
        if unit not in ("chunk", "page"):
            raise ValueError(f"unknown unit {unit!r}")
        if self.reranker is None or isinstance(self.reranker, NoReranker):
            return self._search(query, k, doc_ids, unit)
        wide = self._search(query, max(k, self.settings.rerank_candidates), doc_ids, unit)
        return self._rerank(query, wide)[:k]

    def _rerank(self, query: str, hits: list[Hit]) -> list[Hit]:
        assert self.reranker is not None
        self.warnings = []
        reranked = self.reranker.rerank(query, hits)
        if self.reranker.last_warning:
            self.warnings.append(self.reranker.last_warning)
        return reranked

    def _search(self, query: str, k: int, doc_ids: Sequence[str] | None, unit: Unit) -> list[Hit]:
        fused = self._fuse(query, doc_ids, unit, k)
        if unit == "chunk":
            chosen = [(cid, fused.combined[cid]) for cid in fused.ranked[:k]]
            return self._hits(chosen, {}, fused, unit, {c.id: c for c in fused.extra})

        weights = self.settings.weights or None
        page_fused = reciprocal_rank_fusion(
            fused.page_rankings, k=self.settings.rrf_k, weights=weights
        )
        if fused.doc_votes:
            page_fused = sorted(
                ((key, s + fused.doc_votes.get(key[0], 0.0)) for key, s in page_fused),
                key=lambda kv: -kv[1],
            )
        page_fused = page_fused[:k]
        best: dict[PageKey, str] = {}
        for cid in fused.ranked:
            best.setdefault(fused.page_of[cid], cid)
        # Pages found only by page channels are read out by their first chunk, if they have one.
        missing = [key for key, _ in page_fused if key not in best]
        known: dict[str, Chunk] = {}
        for chunk in self.store.chunks_on_pages(missing) if missing else []:
            key = (chunk.doc_id, chunk.page)
            if key not in best:
                best[key] = chunk.id
                known[chunk.id] = chunk
                fused.page_of[chunk.id] = key
        chosen_pages = [(best.get(key), score, key) for key, score in page_fused]
        return self._hits(
            [(cid, score) for cid, score, _ in chosen_pages],
            {i: key for i, (_, _, key) in enumerate(chosen_pages)},
            fused,
            unit,
            known,
        )

    def context(
        self,
        query: str,
        doc_ids: Sequence[str] | None = None,
        *,
        k_min: int = 3,
        k_max: int = 10,
    ) -> list[Hit]:
        """The chunks worth reading for ``query``: per channel, the results in the high
        component of a two-component Gaussian mixture of its scores (adaptive k, clamped to
        ``[k_min, k_max]``); their union, best fused score first. A page channel's pages are
        represented by their best chunk."""
        fused = self._fuse(query, doc_ids, "chunk", k_max)
        best_on_page: dict[PageKey, str] = {}
        for cid in fused.ranked:
            best_on_page.setdefault(fused.page_of[cid], cid)
        selected: dict[str, None] = {}
        for hits in fused.per_channel.values():
            if not hits:
                continue
            keep = adaptive_k([h.score for h in hits], min(k_min, len(hits)), k_max)
            for h in hits[:keep]:
                cid = h.chunk_id or best_on_page.get((h.doc_id, h.page))
                if cid is not None and cid in fused.combined:
                    selected.setdefault(cid, None)
        chosen = sorted(selected, key=lambda c: -fused.combined[c])
        hits = self._hits(
            [(cid, fused.combined[cid]) for cid in chosen],
            {},
            fused,
            "chunk",
            {c.id: c for c in fused.extra},
        )
        if self.reranker is None or isinstance(self.reranker, NoReranker):
            return hits
        return self._rerank(query, hits)

    def _chunks_of_top_pages(
        self, page_channels: dict[str, list[ChannelHit]], page_of: dict[str, PageKey]
    ) -> list[Chunk]:
        """All chunks on the best pages of the page channels that are not candidates yet."""
        wanted: list[PageKey] = []
        for hits in page_channels.values():
            wanted.extend(list(dict.fromkeys((h.doc_id, h.page) for h in hits))[:_PAGES_EXPANDED])
        if not wanted:
            return []
        return [
            c
            for c in self.store.chunks_on_pages(list(dict.fromkeys(wanted)))
            if c.id not in page_of
        ]

    # --- read-out ------------------------------------------------------------------------------

    def _hits(
        self,
        chosen: Sequence[tuple[str | None, float]],
        pages_without_chunks: dict[int, PageKey],
        fused: _Fused,
        unit: Unit,
        known: dict[str, Chunk],
    ) -> list[Hit]:
        per_channel, page_of = fused.per_channel, fused.page_of
        needed = [cid for cid, _ in chosen if cid is not None and cid not in known]
        chunks = {**known, **{c.id: c for c in self.store.get_chunks(needed)}}
        chunk_rank: dict[str, dict[str, tuple[int, float]]] = {}
        page_rank: dict[str, dict[PageKey, tuple[int, float]]] = {}
        for name, hits in per_channel.items():
            chunk_rank[name] = {}
            page_rank[name] = {}
            for rank, h in enumerate(hits, start=1):
                if h.chunk_id is not None:
                    chunk_rank[name].setdefault(h.chunk_id, (rank, h.score))
                else:
                    page_rank[name].setdefault((h.doc_id, h.page), (rank, h.score))

        results: list[Hit] = []
        for position, (cid, score) in enumerate(chosen):
            chunk = chunks.get(cid) if cid is not None else None
            if chunk is None and position not in pages_without_chunks:
                continue  # deleted between search and read-out
            key = page_of[chunk.id] if chunk is not None else pages_without_chunks[position]
            scores: dict[str, float] = {}
            ranks: dict[str, int] = {}
            for name in per_channel:
                entry = chunk_rank[name].get(cid) if cid else None
                entry = entry or page_rank[name].get(key)
                if entry is not None:
                    ranks[name], scores[name] = entry
            results.append(
                _hit(unit, len(results) + 1, score, key, chunk, scores, ranks, self.store)
            )
        return results


def _hit(
    unit: Unit,
    rank: int,
    score: float,
    key: PageKey,
    chunk: Chunk | None,
    scores: dict[str, float],
    ranks: dict[str, int],
    store: Store,
) -> Hit:
    if chunk is not None:
        return Hit(
            unit=unit,
            rank=rank,
            score=score,
            doc_id=chunk.doc_id,
            doc_name=chunk.doc_name,
            page=chunk.page,
            pages=chunk.pages,
            bbox=chunk.bbox,
            section_path=chunk.section_path,
            chunk_id=chunk.id,
            element_ids=chunk.element_ids,
            kind=chunk.kind,
            text=chunk.body,
            scores=scores,
            ranks=ranks,
        )
    # A page without text (an image-only page the question names): cite the page itself.
    info = store.has_document(key[0])
    return Hit(
        unit=unit,
        rank=rank,
        score=score,
        doc_id=key[0],
        doc_name=info.name if info else "",
        page=key[1],
        pages=[key[1]],
        chunk_id=None,
        kind="page",
        text="",
        scores=scores,
        ranks=ranks,
    )
