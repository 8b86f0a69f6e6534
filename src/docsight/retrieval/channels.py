"""Retrieval channels: each ranks chunks for a query in its own way."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from docsight.encoders.base import Encoder
from docsight.index.base import ChannelHit, Store


class Retriever(Protocol):
    """One retrieval channel.

    Contract: ``retrieve`` returns at most ``limit`` hits, best first, only from ``doc_ids`` when
    given; scores are comparable within a channel only (fusion works on ranks).
    """

    name: str

    def retrieve(
        self, query: str, limit: int, doc_ids: Sequence[str] | None = None
    ) -> list[ChannelHit]: ...


class BM25Retriever:
    """Lexical search with the store's full-text (BM25) index."""

    name = "bm25"

    def __init__(self, store: Store) -> None:
        self.store = store

    def retrieve(
        self, query: str, limit: int, doc_ids: Sequence[str] | None = None
    ) -> list[ChannelHit]:
        return self.store.text_search(query, limit, doc_ids)


class DenseRetriever:
    """Cosine similarity between the query's and the chunks' text embeddings."""

    name = "dense"

    def __init__(self, store: Store, encoder: Callable[[], Encoder]) -> None:
        self.store = store
        self._encoder = encoder  # resolved lazily: the model loads only when dense search runs

    def retrieve(
        self, query: str, limit: int, doc_ids: Sequence[str] | None = None
    ) -> list[ChannelHit]:
        if not query.strip():
            return []
        vector = self._encoder().encode_queries([query])[0]
        return self.store.vector_search(vector, limit, doc_ids)
