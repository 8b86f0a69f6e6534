"""Hybrid search: run every channel, fuse by reciprocal rank, read out chunks or pages."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from docsight.errors import ConfigurationError
from docsight.index.base import ChannelHit, Store
from docsight.retrieval.channels import Retriever
from docsight.retrieval.fusion import reciprocal_rank_fusion
from docsight.retrieval.hit import Hit
from docsight.settings import RetrievalSettings

Unit = Literal["chunk", "page"]
PageKey = tuple[str, int]


class HybridSearcher:
    def __init__(
        self, store: Store, retrievers: Sequence[Retriever], settings: RetrievalSettings
    ) -> None:
        if not retrievers:
            raise ConfigurationError("search needs at least one retrieval channel")
        self.store = store
        self.retrievers = list(retrievers)
        self.settings = settings

    def candidates(
        self, query: str, doc_ids: Sequence[str] | None, limit: int
    ) -> dict[str, list[ChannelHit]]:
        return {r.name: r.retrieve(query, limit, doc_ids) for r in self.retrievers}

    def search(
        self,
        query: str,
        k: int = 10,
        doc_ids: Sequence[str] | None = None,
        unit: Unit = "chunk",
    ) -> list[Hit]:
        if k < 1:
            raise ValueError("k must be at least 1")
        limit = max(self.settings.candidates, k)
        per_channel = self.candidates(query, doc_ids, limit)
        weights = self.settings.weights or None
        chunk_fused = reciprocal_rank_fusion(
            {name: [h.chunk_id for h in hits] for name, hits in per_channel.items()},
            k=self.settings.rrf_k,
            weights=weights,
        )
        if unit == "chunk":
            chosen = chunk_fused[:k]
            return self._hits(chosen, per_channel, unit)
        if unit != "page":
            raise ValueError(f"unknown unit {unit!r}")

        # Page level: each channel ranks pages by their best chunk, and the page rankings are
        # fused. A page that several channels agree on wins even if no single chunk is top.
        page_rankings: dict[str, list[PageKey]] = {}
        for name, hits in per_channel.items():
            page_rankings[name] = list(dict.fromkeys((h.doc_id, h.page) for h in hits))
        page_fused = reciprocal_rank_fusion(page_rankings, k=self.settings.rrf_k, weights=weights)
        page_of = {h.chunk_id: (h.doc_id, h.page) for hits in per_channel.values() for h in hits}
        best_chunk: dict[PageKey, tuple[str, float]] = {}
        for chunk_id, _score in chunk_fused:  # best first, so the first seen wins
            best_chunk.setdefault(page_of[chunk_id], (chunk_id, _score))
        chosen = [(best_chunk[key][0], score) for key, score in page_fused[:k]]
        return self._hits(chosen, per_channel, unit)

    def _hits(
        self,
        chosen: list[tuple[str, float]],
        per_channel: dict[str, list[ChannelHit]],
        unit: Unit,
    ) -> list[Hit]:
        chunks = {c.id: c for c in self.store.get_chunks([cid for cid, _ in chosen])}
        channel_scores: dict[str, dict[str, tuple[int, float]]] = {
            name: {h.chunk_id: (rank, h.score) for rank, h in enumerate(hits, start=1)}
            for name, hits in per_channel.items()
        }
        results: list[Hit] = []
        for chunk_id, score in chosen:
            chunk = chunks.get(chunk_id)
            if chunk is None:  # deleted between search and read-out
                continue
            scores = {}
            ranks = {}
            for name, table in channel_scores.items():
                if chunk_id in table:
                    ranks[name], scores[name] = table[chunk_id]
            results.append(
                Hit(
                    unit=unit,
                    rank=len(results) + 1,
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
            )
        return results
