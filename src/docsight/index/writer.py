"""A document written in steps (:meth:`LanceStore.begin_document`).

``put_document`` takes a document with its chunks, vectors and graph at once, so its caller holds
all of them while every row is written. A writer takes them as they become ready: the pages,
elements and assets when it starts, then chunks with their vectors (in as many calls as the
caller likes), then the graph and page vectors, and the documents row, the commit point, last.
Nothing is visible before :meth:`DocumentWriter.commit`. :meth:`DocumentWriter.abort` removes
what an uncommitted writer wrote; the rows of a killed process stay invisible until the next
``recover`` removes them, which every ingest runs first.

``put_document`` is the writer used in one go. Ingestion uses it in steps: a new document's
pages and elements window by window as it unpacks them, then its chunks window by window as it
embeds them, then its graph (``docsight.ingest.windows``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from docsight.document.chunk import Chunk
from docsight.document.model import ParsedDocument
from docsight.errors import StoreError
from docsight.graph.build import GraphBundle
from docsight.index import schema as S
from docsight.index.base import DocumentInfo, PageVectors

if TYPE_CHECKING:
    from docsight.index.lance import LanceStore


class DocumentWriter:
    """One pending document of a :class:`~docsight.index.lance.LanceStore`."""

    def __init__(
        self, store: LanceStore, parsed: ParsedDocument, chunker: str, elements: int
    ) -> None:
        self._store = store
        self._parsed = parsed
        self._chunker = chunker
        self.doc_id = parsed.document.id
        #: The elements written by ``begin_document``: the documents row counts them.
        self.elements = elements
        self.chunks = 0
        self.nodes = 0
        self._graph = False
        self._done = False

    def add_chunks(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        """Write chunk rows of this document, one vector each, in one call or several."""
        self._open()
        dim = self._store._dim()
        if len(vectors) and vectors.shape[1] != dim:
            raise StoreError(f"vectors have dim {vectors.shape[1]}, collection expects {dim}")
        if len(chunks) != len(vectors):
            raise StoreError(f"{len(chunks)} chunks but {len(vectors)} vectors")
        for chunk in chunks:
            if chunk.doc_id != self.doc_id:
                raise StoreError(f"chunk {chunk.id} belongs to {chunk.doc_id}, not {self.doc_id}")
        self._store._write_pending(S.chunk_tables(chunks, vectors, dim))
        self.chunks += len(chunks)

    def add_graph(self, graph: GraphBundle) -> None:
        """Write the document's graph: its searchable nodes and the graph itself (once)."""
        self._open()
        if self._graph:
            raise StoreError(f"document {self.doc_id} already has its graph")
        written = 0

        def tables() -> Iterator[tuple[str, pa.Table, pa.Schema]]:
            nonlocal written  # counted as they go: each batch is built as it is written
            for item in S.node_tables(graph, self.doc_id, self._store._dim()):
                written += item[1].num_rows
                yield item
            yield "graphs", S.graph_table(graph.graph), S.GRAPHS

        self._store._write_pending(tables())
        self.nodes += written
        self._graph = True

    def add_page_vectors(self, page_vectors: PageVectors) -> None:
        """Write the vectors of the document's page images (from the bound visual encoder)."""
        self._open()
        self._store._write_page_vectors_pending(self.doc_id, page_vectors)

    def commit(self) -> DocumentInfo:
        """Write the documents row: from here every read sees the document, whole."""
        self._open()
        info = self._store._commit_pending(
            self._parsed, self.chunks, self._chunker, self.nodes, self.elements
        )
        self._done = True
        return info

    def abort(self) -> None:
        """Remove what was written, the kept file too (none of it was ever visible)."""
        if not self._done:
            self._done = True
            self._store._abort_pending(self.doc_id)

    def _open(self) -> None:
        if self._done:
            raise StoreError(f"document {self.doc_id} is already committed or aborted")
