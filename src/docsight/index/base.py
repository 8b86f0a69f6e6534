"""The store contract and the records it returns."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol

import numpy as np
from pydantic import BaseModel

from docsight.document.chunk import Chunk
from docsight.document.model import Asset, Document, Element, ParsedDocument


class DocumentInfo(BaseModel):
    """A committed document as listed by the store."""

    id: str
    name: str
    source: str
    media_type: str
    sha256: str
    size_bytes: int
    title: str | None
    pages: int
    elements: int
    chunks: int
    parser: str
    #: The chunker ("strategy/version") that produced the document's chunks.
    chunker: str
    ingested_at: datetime
    schema_version: int


class CollectionStats(BaseModel):
    path: str
    schema_version: int
    documents: int
    pages: int
    elements: int
    chunks: int
    encoder: str | None
    dim: int | None
    size_bytes: int
    indexes: list[str]


@dataclass(frozen=True)
class ChannelHit:
    """One candidate from one retrieval channel (hot path: a plain frozen dataclass).

    Page-level channels leave ``chunk_id`` empty: they rank pages, not chunks.
    """

    chunk_id: str | None
    doc_id: str
    page: int
    score: float


@dataclass(frozen=True)
class PageIndex:
    """What page references resolve against: a document's page count and printed labels."""

    doc_id: str
    page_count: int
    labels: dict[str, list[int]]


class Store(Protocol):
    """A collection on disk: documents, pages, elements, assets and chunks with vectors.

    Contract:
    - ``put_document`` writes every child row (assets, pages, elements, chunks) before the
      document row, which is the commit point; rows are upserted by their content-hash ids, so a
      retried write never duplicates. ``recover`` removes child rows of uncommitted documents.
    - Reads and searches only ever return rows of committed documents.
    - ``delete_document`` removes the document row first, then its children.
    - Searches take an optional set of document ids as a pre-filter.
    """

    path: Path

    def encoder_fingerprint(self) -> str | None: ...

    def bind_encoder(self, fingerprint: str, dim: int) -> None: ...

    def has_document(self, doc_id: str) -> DocumentInfo | None: ...

    def list_documents(self) -> list[DocumentInfo]: ...

    def documents_by_source(self, source: str) -> list[DocumentInfo]: ...

    def committed_ids(self) -> frozenset[str]: ...

    def put_document(
        self, parsed: ParsedDocument, chunks: Sequence[Chunk], vectors: np.ndarray, chunker: str
    ) -> DocumentInfo: ...

    def delete_document(self, doc_id: str) -> None: ...

    def get_document(self, doc_id: str) -> Document: ...

    def get_asset(self, asset_id: str) -> Asset | None: ...

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]: ...

    def get_elements(self, element_ids: Sequence[str]) -> list[Element]: ...

    def document_chunks(self, doc_id: str) -> list[Chunk]: ...

    def text_search(
        self, query: str, limit: int, doc_ids: Sequence[str] | None = None
    ) -> list[ChannelHit]: ...

    def page_text_search(
        self, query: str, limit: int, doc_ids: Sequence[str] | None = None
    ) -> list[ChannelHit]: ...

    def page_index(self, doc_ids: Sequence[str]) -> list[PageIndex]: ...

    def chunks_on_pages(self, pages: Sequence[tuple[str, int]]) -> list[Chunk]: ...

    def vector_search(
        self, vector: np.ndarray, limit: int, doc_ids: Sequence[str] | None = None
    ) -> list[ChannelHit]: ...

    def recover(self) -> int: ...

    def optimize(self) -> None: ...

    def stats(self) -> CollectionStats: ...
