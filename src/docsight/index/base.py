"""The store contract and the records it returns."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal, Protocol

import numpy as np
from pydantic import BaseModel, Field

from docsight.document.chunk import Chunk
from docsight.document.model import Asset, Document, Element, ParsedDocument
from docsight.graph.build import GraphBundle
from docsight.graph.model import ContentGraph, GraphReferences


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
    #: Searchable nodes of the document's content graph (``docsight.graph``).
    nodes: int = 0
    parser: str
    #: The chunker ("strategy/version") that produced the document's chunks.
    chunker: str
    ingested_at: datetime
    schema_version: int


class VisualBinding(BaseModel):
    """The visual encoder a collection's page-image vectors were made with (``collection.json``).

    Pages embedded by one model are never compared with queries embedded by another, so the
    binding changes only through ``docsight reindex --visual``, which re-embeds every page.
    """

    fingerprint: str
    kind: Literal["single", "multi"]
    dim: int = Field(ge=1)
    #: The registry name (``openai``, ``colpali``) and the model, for ``docsight info``.
    backend: str = ""
    model: str | None = None


@dataclass(frozen=True)
class PageVectors:
    """The page-image vectors of one document: one per page image (``single``) or one matrix of
    token vectors per page (``multi``), in the order of ``pages``."""

    binding: VisualBinding
    pages: list[int]
    vectors: np.ndarray | list[np.ndarray]


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
    #: Bytes on disk per part: each table (``tables/<name>``), ``sources`` (the files kept for
    #: page images), ``cache`` (model outputs) and ``other`` (manifests, backups, locks).
    sizes: dict[str, int] = Field(default_factory=dict)
    #: The visual encoder of the page-image vectors, and how many pages have them.
    visual: VisualBinding | None = None
    page_vectors: int = 0
    #: The local working directory of a collection on object storage (caches, sessions and
    #: local copies of kept files); ``None`` for a local collection, whose directory holds all.
    work_dir: str | None = None


class CheckProblem(BaseModel):
    """One finding of :meth:`Store.check`."""

    #: Stable code: ``count_mismatch``, ``orphan_rows``, ``duplicate_id``, ``missing_asset``,
    #: ``document_status``, ``table_schema``, ``schema_version``, ``encoder_unbound``,
    #: ``encoder_mismatch``, ``vector_dim``, ``bad_vector``, ``text_index_missing``,
    #: ``unindexed_rows``, ``manifest``, ``superseded_version``, ``table_damaged``,
    #: ``data_damaged``, ``index_damaged``, ``missing_source`` (the file a document's page images
    #: are made from is gone or damaged), ``orphan_source`` (a kept file of no document),
    #: ``visual_unbound``, ``visual_mismatch``, ``page_vectors_missing`` (page-image vectors).
    code: str
    #: Errors are damage (or a configuration that cannot read the collection); warnings only cost
    #: speed, such as rows not yet folded into an index.
    severity: Literal["error", "warning"] = "error"
    message: str
    table: str | None = None
    doc_id: str | None = None
    #: Rows (or ids) affected.
    rows: int = 0


class CheckReport(BaseModel):
    """The integrity of a collection: what was counted and what is wrong."""

    path: str
    schema_version: int | None = None
    encoder: str | None = None
    dim: int | None = None
    #: The visual encoder the page-image vectors were made with, if any.
    visual: VisualBinding | None = None
    #: Rows per table, plus ``documents`` (committed) and ``uncommitted`` (other statuses).
    counts: dict[str, int] = Field(default_factory=dict)
    problems: list[CheckProblem] = Field(default_factory=list)
    #: What ``check --repair`` did before checking (empty without ``--repair``).
    repairs: list[str] = Field(default_factory=list)
    #: Files to ingest again: their documents lost rows to damage and ``--repair`` removed them.
    reingest: list[str] = Field(default_factory=list)
    #: The local working directory of a collection on object storage (see CollectionStats).
    work_dir: str | None = None

    @property
    def errors(self) -> list[CheckProblem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def ok(self) -> bool:
        """No errors (warnings allowed)."""
        return not self.errors


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
class NodeHit:
    """A graph node found by a node search: its kind and the pages it spans."""

    node_id: str
    doc_id: str
    kind: str
    page: int
    last_page: int
    parent: str | None
    score: float


@dataclass(frozen=True)
class PageIndex:
    """What page references resolve against: a document's page count and printed labels."""

    doc_id: str
    page_count: int
    labels: dict[str, list[int]]


class PendingDocument(Protocol):
    """A document being written (:meth:`Store.begin_document`). Its rows go in as the caller has
    them: chunks with their vectors in one or more calls, then the graph
    (once) and page vectors; none of it is visible to any read before ``commit`` writes the
    documents row. ``abort`` removes what was written; rows a killed process left are removed by
    the next ``recover``. After ``commit`` or ``abort`` every call raises ``StoreError``.
    ``begin_document`` writes the pages and elements: from the document, or, given ``windows``,
    from each ``(start, stop, elements)`` of pages ``[start, stop)`` as it comes (the document
    then has none of its own), so that a long document need not be held whole."""

    doc_id: str

    def add_chunks(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None: ...

    def add_graph(self, graph: GraphBundle) -> None: ...

    def add_page_vectors(self, page_vectors: PageVectors) -> None: ...

    def commit(self) -> DocumentInfo: ...

    def abort(self) -> None: ...


class Store(Protocol):
    """A collection on disk: documents, pages, elements, assets and chunks with vectors.

    Contract:
    - ``put_document`` writes every child row (assets, pages, elements, chunks, and the graph's
      nodes and blob when given) before the document row, which is the commit point; whatever
      an earlier write of the same document left, committed or not, is removed first, so a
      retried write never duplicates. ``begin_document`` writes the same rows in steps (see
      :class:`PendingDocument`), so that a caller need not hold them all at once. Given the
      ``source`` file, a store may keep it and keep images that have a render recipe as recipes
      (``get_asset`` then makes them); it removes the file with the document. ``recover`` (run
      before every ingest) removes child rows of uncommitted documents and builds or updates
      indexes an interrupted ingest left behind, so re-running a killed ingest finishes the job.
    - Page-image vectors (``page_vectors``) are child rows like the others, written before the
      document row; every one of them was made by the collection's bound visual encoder
      (``bind_visual``), which only ``docsight reindex --visual`` changes (dropping them first).
    - Reads and searches only ever return rows of committed documents.
    - ``delete_document`` removes the document row first, then its children.
    - Searches take an optional set of document ids as a pre-filter.
    - ``check`` is read-only: it reports counts that disagree with their document row, child
      rows without a committed document, duplicate ids, missing assets, table schemas, the
      encoder binding and vector shape, missing, lagging or damaged indexes (each is probed with a
      query), unreadable tables and data files, and older versions of a re-ingested file left
      beside the new one. It never repairs; ``repair`` does (``docsight check --repair``): it
      rolls damaged tables back or removes their unreadable rows, rebuilds indexes, runs
      ``recover`` and drops documents that lost rows, returning what it did and the files to
      ingest again.
    - Only the newest committed version of a source is visible: an older one left by an
      interrupted replacement is hidden from every read until ``recover`` removes it.
    """

    path: Path

    def encoder_fingerprint(self) -> str | None: ...

    def bind_encoder(self, fingerprint: str, dim: int) -> None: ...

    def visual_binding(self) -> VisualBinding | None: ...

    def bind_visual(self, binding: VisualBinding) -> None: ...

    def has_document(self, doc_id: str) -> DocumentInfo | None: ...

    def list_documents(self) -> list[DocumentInfo]: ...

    def documents_by_source(self, source: str) -> list[DocumentInfo]: ...

    def committed_ids(self) -> frozenset[str]: ...

    def put_document(
        self,
        parsed: ParsedDocument,
        chunks: Sequence[Chunk],
        vectors: np.ndarray,
        chunker: str,
        graph: GraphBundle | None = None,
        source: Path | None = None,
        page_vectors: PageVectors | None = None,
    ) -> DocumentInfo: ...

    def begin_document(
        self,
        parsed: ParsedDocument,
        chunker: str,
        *,
        source: Path | None = None,
        windows: Iterable[tuple[int, int, Sequence[Element]]] | None = None,
    ) -> PendingDocument: ...

    def delete_document(self, doc_id: str) -> None: ...

    def get_document(self, doc_id: str) -> Document: ...

    def get_asset(self, asset_id: str, *, dpi: float | None = None) -> Asset | None:
        """The asset, or ``None``. With ``dpi``, a page or crop made from a kept PDF is
        rendered again at that resolution (a vision model reading small print); images stored
        as pixels come back as they are."""
        ...

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]: ...

    def get_elements(self, element_ids: Sequence[str]) -> list[Element]: ...

    def document_chunks(self, doc_id: str) -> list[Chunk]: ...

    def get_graph(self, doc_id: str) -> ContentGraph | None: ...

    def graph_references(self, doc_ids: Sequence[str]) -> list[GraphReferences]: ...

    def node_text_search(
        self,
        query: str,
        limit: int,
        doc_ids: Sequence[str] | None = None,
        kinds: Sequence[str] = (),
    ) -> list[NodeHit]: ...

    def node_vector_search(
        self,
        vector: np.ndarray,
        limit: int,
        doc_ids: Sequence[str] | None = None,
        kinds: Sequence[str] = (),
    ) -> list[NodeHit]: ...

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

    def page_vector_search(
        self, query: np.ndarray, limit: int, doc_ids: Sequence[str] | None = None
    ) -> list[ChannelHit]: ...

    def recover(self) -> int: ...

    def repair(self) -> tuple[list[str], list[str]]: ...

    def vector_dim(self) -> int | None: ...

    def check(self) -> CheckReport: ...

    def optimize(self, *, indexes: bool = True) -> list[str] | None:
        """Fold new rows into the indexes and compact; returns what was left undone and why
        (``None`` or empty: nothing). ``indexes=False`` asks for the files compacted only
        (many small writes make every read slower): a store may update its indexes anyway."""
        ...

    def stats(self) -> CollectionStats: ...
