"""A parse result cut into windows, so that the process that stores it never holds it whole.

A parser builds a document whole, and the graph needs all of its chunks. The process that
embeds and stores them needs one part at a time. :meth:`ParseWindows.cut` cuts them for the
trip: the document without its elements (its pages, sections, edges and assets: the *head*),
its elements by page ranges, its chunks by count, and the graph's skeleton, each part pickled
on its own. The receiver unpickles one window at a time as it writes it
(:meth:`ParseWindows.elements`, :meth:`ParseWindows.chunks`) and drops it as it goes.

Pickled parts matter beyond their size: objects unpickled together are laid out together in
memory, and freeing some of them (the elements, once written) leaves holes that the embedding's
native buffers cannot use. A window's objects are made and freed by themselves.

A worker under a supervisor writes the pickled parts to spool files (:mod:`.spool`) and sends
where they lie, so neither process holds them all as bytes, and the receiver reads one window
at a time from disk. It writes them in two files. The element windows come first: as the
parse goes, for a parser that streams its elements (``ingest.streamed``, built on these
windows' fields), or once the document is parsed and described
(:meth:`ParseWindows.spool_elements`). The worker then chunks them back one window at a time
(:meth:`ParseWindows.each_element`) and writes each chunk window as the chunker finishes it
(:meth:`ParseWindows.add_chunk_window`), then the graph's skeleton in parts, built from the
elements' facts and from the chunk windows read back twice (:class:`SkeletonWriter`,
:meth:`ParseWindows.each_chunk`). Without a spool (a Ray task's result
travels to another machine), the parts are pickled into the message
(:meth:`ParseWindows.pack`).

Parsed in the ingesting process itself (``ingest.isolation = "none"``), the output is cut by
:meth:`ParseWindows.cut` without pickling: the same code path, holding what the parse made
anyway.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from docsight.document.chunk import Chunk
from docsight.document.model import Element, ParsedDocument
from docsight.graph.model import ContentGraph, GraphEdge, GraphNode
from docsight.graph.skeleton import join_skeleton
from docsight.ingest.spool import Spooled, SpoolWriter, remove_file

#: Pages per element window: a report's 32 pages are a few hundred elements.
PAGES_PER_WINDOW = 32
#: Chunks per chunk window (embedded and written together).
CHUNKS_PER_WINDOW = 512


@dataclass
class ElementWindow:
    """The elements of pages ``[start, stop)``, pickled (in memory or spooled) or as objects."""

    start: int
    stop: int
    data: bytes | Spooled | list[Element] = field(repr=False)


@dataclass
class ParseWindows:
    """A document cut into its head, element windows, chunk windows and graph skeleton."""

    #: The document with ``elements == []``, its assets and warnings.
    head: ParsedDocument
    element_windows: list[ElementWindow]
    chunk_windows: list[bytes | Spooled | list[Chunk]]
    #: The graph's skeleton: one part, the graph whole, or the parts a
    #: :class:`~docsight.graph.skeleton.SkeletonBuilder` wrote (:class:`SkeletonWriter`).
    graph: list[bytes | Spooled | Any] | None
    n_elements: int
    n_chunks: int
    #: Elements whose text is hidden on the page (counted before they were cut).
    hidden_elements: int
    #: The spool files the pickled parts lie in (:meth:`spool_elements`,
    #: :meth:`add_chunk_window`), removed by :meth:`discard`.
    spool_paths: list[str] = field(default_factory=list)

    @classmethod
    def cut(
        cls,
        parsed: ParsedDocument,
        chunks: Sequence[Chunk],
        graph: ContentGraph | None,
        *,
        packed: bool = False,
        writer: SpoolWriter | None = None,
        pages_per_window: int = PAGES_PER_WINDOW,
        chunks_per_window: int = CHUNKS_PER_WINDOW,
    ) -> ParseWindows:
        """Cut ``parsed``, ``chunks`` and ``graph``; ``packed`` pickles each part, and with a
        ``writer`` each pickled part goes to its file as soon as it is made."""
        windows = cls.cut_elements(
            parsed, packed=packed, writer=writer, pages_per_window=pages_per_window
        )
        windows.add_chunks(
            chunks, graph, packed=packed, writer=writer, chunks_per_window=chunks_per_window
        )
        return windows

    @classmethod
    def cut_elements(
        cls,
        parsed: ParsedDocument,
        *,
        packed: bool = False,
        writer: SpoolWriter | None = None,
        pages_per_window: int = PAGES_PER_WINDOW,
    ) -> ParseWindows:
        """The head and the element windows of ``parsed``, without chunks or graph yet
        (:meth:`add_chunks`); ``packed`` and ``writer`` as in :meth:`cut`."""
        doc = parsed.document
        per = max(1, pages_per_window)
        last = max(0, doc.page_count - 1)
        by_window: dict[int, list[Element]] = {}
        for element in doc.elements:
            # Elements keep their reading order within a window; one past the last page (none
            # should be) goes with the last page, whose row its text would have joined.
            by_window.setdefault(min(element.page, last) // per, []).append(element)
        windows = []
        for k in range(window_count(doc.page_count, per)):
            start, stop = window_span(k, per, doc.page_count)
            windows.append(ElementWindow(start, stop, _wrap(by_window.pop(k, []), packed, writer)))
        head = ParsedDocument(
            document=doc.model_copy(update={"elements": []}),
            assets=parsed.assets,
            warnings=parsed.warnings,
        )
        return cls(
            head=head,
            element_windows=windows,
            chunk_windows=[],
            graph=None,
            n_elements=len(doc.elements),
            n_chunks=0,
            hidden_elements=sum(1 for e in doc.elements if e.hidden),
            spool_paths=[writer.path] if writer is not None else [],
        )

    def add_chunks(
        self,
        chunks: Sequence[Chunk],
        graph: ContentGraph | None,
        *,
        packed: bool = False,
        writer: SpoolWriter | None = None,
        chunks_per_window: int = CHUNKS_PER_WINDOW,
    ) -> None:
        """The chunk windows and the graph, after :meth:`cut_elements`."""
        size = max(1, chunks_per_window)
        self.n_chunks = len(chunks)
        self.chunk_windows = [
            _wrap(list(chunks[k : k + size]), packed, writer) for k in range(0, len(chunks), size)
        ]
        self.graph = [_wrap(graph, packed, writer)] if graph is not None else None
        if writer is not None:
            self.keep_file(writer)

    def add_chunk_window(self, chunks: list[Chunk], writer: SpoolWriter) -> None:
        """One more chunk window, written to ``writer``: the chunks as the chunker yields them,
        so that they are not all held (the caller lets ``chunks`` go)."""
        self.chunk_windows.append(_wrap(chunks, True, writer))
        self.n_chunks += len(chunks)
        self.keep_file(writer)

    def each_chunk(self) -> Iterator[Chunk]:
        """Every chunk in order, loaded one window at a time; the windows are kept (the worker
        reads them twice to build the graph's skeleton before they are sent). A spooled
        window is read from its file, so its writer must have been flushed."""
        for data in self.chunk_windows:
            yield from _load(data)

    @classmethod
    def pack(
        cls, parsed: ParsedDocument, chunks: Sequence[Chunk], graph: ContentGraph | None
    ) -> ParseWindows:
        """:meth:`cut`, each part pickled: what a worker sends."""
        return cls.cut(parsed, chunks, graph, packed=True)

    @classmethod
    def spool_elements(cls, parsed: ParsedDocument, directory: str) -> ParseWindows:
        """:meth:`cut_elements` into a new file of ``directory``, so that the elements can be
        let go before they are chunked and the graph is built (:meth:`add_chunk_window` and
        :class:`SkeletonWriter` add the rest)."""
        with SpoolWriter(directory, ".windows") as writer:
            return cls.cut_elements(parsed, writer=writer)

    def keep_file(self, writer: SpoolWriter) -> None:
        """Note ``writer``'s file among the windows' spool files (:meth:`discard` removes it)."""
        if writer.path not in self.spool_paths:
            self.spool_paths.append(writer.path)

    def discard(self) -> None:
        """Delete the spool files, if any: the windows are used up or will not be."""
        for path in self.spool_paths:
            remove_file(path)
        self.spool_paths = []

    def elements(self) -> Iterator[tuple[int, int, list[Element]]]:
        """Each window's page range and elements, in page order, once: a window is let go as
        the next is asked for."""
        for window in self.element_windows:
            data, window.data = window.data, []
            elements = _load(data)
            del data
            yield window.start, window.stop, elements
            del elements

    def each_element(self) -> Iterator[Element]:
        """Every element in order, loaded one window at a time; the windows are kept (the
        worker chunks from them before they are sent)."""
        for window in self.element_windows:
            yield from _load(window.data)

    def chunks(self) -> Iterator[list[Chunk]]:
        """Each window's chunks, in order, once (see :meth:`elements`)."""
        for k, data in enumerate(self.chunk_windows):
            self.chunk_windows[k] = []
            chunks = _load(data)
            del data
            yield chunks
            del chunks

    def chunk_texts(self) -> list[str]:
        """Every chunk's text, the windows kept (to embed a small file ahead of its turn)."""
        return [c.text for data in self.chunk_windows for c in _load(data)]

    def skeleton(self) -> ContentGraph | None:
        """The graph's skeleton, once: its parts joined (``graph.skeleton.join_skeleton``)."""
        parts, self.graph = self.graph, None
        if parts is None:
            return None
        head: ContentGraph | None = None
        nodes: list[GraphNode] = []
        edges: list[GraphEdge] = []
        for k in range(len(parts)):
            data, parts[k] = parts[k], None
            value = _load(data)
            del data
            if isinstance(value, ContentGraph):
                head = value
            elif value[0] == _NODES:
                nodes.extend(value[1])
            else:
                edges.extend(value[1])
            del value
        if head is None:
            raise ValueError("the graph's skeleton came without its head")
        return join_skeleton(head, nodes, edges)

    def whole(self) -> tuple[ParsedDocument, list[Chunk]]:
        """The document with its elements and its chunks, the windows used up."""
        elements = [e for _, _, window in self.elements() for e in window]
        chunks = [c for window in self.chunks() for c in window]
        document = self.head.document.model_copy(update={"elements": elements})
        return replace(self.head, document=document), chunks


_NODES, _EDGES = "nodes", "edges"


class SkeletonWriter:
    """Writes a graph's skeleton in parts as a :class:`~docsight.graph.skeleton.SkeletonBuilder`
    hands them on (it is the builder's sink): node and edge batches, then the head. The
    process that builds the graph never holds it whole, and the one that reads it reads one
    part at a time (:meth:`ParseWindows.skeleton`)."""

    def __init__(self, windows: ParseWindows, writer: SpoolWriter) -> None:
        self.windows = windows
        self.writer = writer
        self.parts: list[bytes | Spooled | Any] = []

    def nodes(self, nodes: list[GraphNode]) -> None:
        self.parts.append(self.writer.dump((_NODES, nodes)))

    def edges(self, edges: list[GraphEdge]) -> None:
        self.parts.append(self.writer.dump((_EDGES, edges)))

    def finish(self, head: ContentGraph) -> None:
        """The head, last: the skeleton is complete."""
        self.parts.append(self.writer.dump(head))
        self.windows.graph = self.parts
        self.windows.keep_file(self.writer)


def window_count(page_count: int, per: int) -> int:
    """How many element windows of ``per`` pages a document of ``page_count`` pages has (one,
    even for no pages)."""
    return max(1, -(-page_count // per))


def window_span(k: int, per: int, page_count: int) -> tuple[int, int]:
    """The pages ``[start, stop)`` of element window ``k``."""
    start = k * per
    return start, max(start, min(page_count, start + per))


def _wrap(value: Any, packed: bool, writer: SpoolWriter | None) -> Any:
    if not packed and writer is None:
        return value
    if writer is not None:
        return writer.dump(value)
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def _load(data: Any) -> Any:
    if isinstance(data, Spooled):
        return data.unpickle()
    if isinstance(data, bytes):
        return pickle.loads(data)  # our own workers' output
    return data
