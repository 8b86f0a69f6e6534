"""Retrieval channels: each ranks chunks or pages for a query in its own way."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal, Protocol

from docsight.encoders.base import Encoder
from docsight.index.base import ChannelHit, Store


class Retriever(Protocol):
    """One retrieval channel.

    Contract: ``retrieve`` returns at most ``limit`` hits, best first, only from ``doc_ids`` when
    given; scores are comparable within a channel only (fusion works on ranks). ``level`` says
    whether hits are chunks or pages (page hits have no ``chunk_id``). A ``scoped`` channel only
    works within known documents: the searcher passes it the document filter, or the documents
    the unscoped channels found.
    """

    name: str
    level: Literal["chunk", "page"]
    scoped: bool

    def retrieve(
        self, query: str, limit: int, doc_ids: Sequence[str] | None = None
    ) -> list[ChannelHit]: ...


class BM25Retriever:
    """Lexical search over chunks with the store's full-text (BM25) index."""

    name = "bm25"
    level: Literal["chunk", "page"] = "chunk"
    scoped = False

    def __init__(self, store: Store) -> None:
        self.store = store

    def retrieve(
        self, query: str, limit: int, doc_ids: Sequence[str] | None = None
    ) -> list[ChannelHit]:
        return self.store.text_search(query, limit, doc_ids)


class PageBM25Retriever:
    """BM25 over whole pages: terms spread across a page add up, which chunks cannot see."""

    name = "page_bm25"
    level: Literal["chunk", "page"] = "page"
    scoped = False

    def __init__(self, store: Store) -> None:
        self.store = store

    def retrieve(
        self, query: str, limit: int, doc_ids: Sequence[str] | None = None
    ) -> list[ChannelHit]:
        return self.store.page_text_search(query, limit, doc_ids)


class DenseRetriever:
    """Cosine similarity between the query's and the chunks' text embeddings."""

    name = "dense"
    level: Literal["chunk", "page"] = "chunk"
    scoped = False

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


class GraphRetriever:
    """Cosine similarity between the question and the chunks' evolved vectors (G-Reader).

    Evolution mixes each chunk's vector with its graph neighbours' (``docsight.graph.evolve``),
    so a chunk also matches what its table, caption or referenced section is about.
    """

    name = "graph"
    level: Literal["chunk", "page"] = "chunk"
    scoped = False

    def __init__(self, store: Store, encoder: Callable[[], Encoder]) -> None:
        self.store = store
        self._encoder = encoder

    def retrieve(
        self, query: str, limit: int, doc_ids: Sequence[str] | None = None
    ) -> list[ChannelHit]:
        if not query.strip():
            return []
        vector = self._encoder().encode_queries([query])[0]
        return [
            ChannelHit(h.node_id, h.doc_id, h.page, h.score)
            for h in self.store.node_vector_search(vector, limit, doc_ids, ["chunk"])
        ]
