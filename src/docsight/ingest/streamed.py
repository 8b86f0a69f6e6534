"""A worker's parse with the elements streaming out: described and spooled as pages are done.

A parser that emits page by page (``streams_elements``, the PDF parser) hands its elements to
an :class:`~docsight.document.stream.ElementSink` when the context has one. In a worker with a
spool, :class:`StreamedParse` is that sink. Each batch (whole pages) gets what the worker did
after the parse before: its pictures' text read by OCR, its tables and pictures described;
then the facts the graph needs and the captions the chunker needs are kept, and the elements
go to the spool in the windows :class:`~docsight.ingest.windows.ParseWindows` reads. No
process holds a long document's elements whole: the parser's builder keeps notes, and the
worker chunks the elements back from the windows one at a time.

The result is the one the worker made from the whole document (the batches are described in
reading order, with the state that crosses them carried along: the picture limit, the
sentence before a picture), and its timings keep parsing and describing apart: the time and
model calls spent in the sink count as ``describe``.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docsight._memory import release_freed_memory
from docsight.document.artifacts import bound_captions
from docsight.document.chunk import Chunk
from docsight.document.model import (
    Document,
    Element,
    ElementKind,
    Layout,
    Page,
    ParsedDocument,
    Section,
)
from docsight.document.model import section_path as section_path_in
from docsight.document.stream import ElementBatch
from docsight.errors import IngestError
from docsight.graph.skeleton import ElementFact, element_facts
from docsight.ingest.chunking import StreamingChunker
from docsight.ingest.describe import Describer
from docsight.ingest.picture_text import MAX_PICTURES, PictureReader, unread_pictures
from docsight.ingest.spool import SpoolWriter
from docsight.ingest.timings import count_timings
from docsight.ingest.windows import (
    CHUNKS_PER_WINDOW,
    PAGES_PER_WINDOW,
    ElementWindow,
    ParseWindows,
    SkeletonWriter,
    window_count,
    window_span,
)
from docsight.parsers.base import ParseContext
from docsight.settings import ParseSettings
from docsight.vision.common import ModelTiming, model_stats, model_stats_since

log = logging.getLogger(__name__)


class StreamedParse:
    """The sink of one file's streamed parse in a worker (see the module). Give it to the
    parse (``ParseContext.elements``), then call :meth:`finish` with what the parse returns,
    or :meth:`discard` if it fails."""

    def __init__(
        self,
        path: Path,
        spool: str,
        *,
        media_type: str,
        settings: ParseSettings,
        context: ParseContext,
        budget: Callable[[int], None],
        vision_wait: Callable[[bool], None],
        pages_per_window: int = PAGES_PER_WINDOW,
    ) -> None:
        self.path = path
        self.spool = spool
        self.media_type = media_type
        self.settings = settings
        #: Told how many pictures OCR may read whenever that grows (the job's budget).
        self.budget = budget
        self.vision_wait = vision_wait
        self.per = max(1, pages_per_window)
        self.writer = SpoolWriter(spool, ".windows")
        self.reader = PictureReader(context, settings)
        self.describer = Describer(context.vlm)
        self.layout: Layout | None = None
        self.warnings: list[str] = []
        self.facts: list[ElementFact] = []
        #: A table's or figure's id → its bound caption (what the chunker labels it with).
        self.captions: dict[str, Element] = {}
        self.windows: list[ElementWindow] = []
        self.hidden = 0
        self.tables = 0
        self.pictures = 0
        self._to_read = 0
        self._pending: list[Element] = []
        self._window = 0
        self._page_count = 0
        self._sections: dict[str, Section] = {}
        self._started = False
        #: Wall and CPU seconds and model costs spent describing (inside the parse's).
        self.wall = 0.0
        self.cpu = 0.0
        self.models: dict[str, ModelTiming] = {}

    # --- the sink ------------------------------------------------------------------------------

    def __call__(self, batch: ElementBatch) -> None:
        with self._describing():
            self._describe(batch)
        self._keep(batch)

    @contextlib.contextmanager
    def _describing(self) -> Iterator[None]:
        """Count the time and model calls inside as describing."""
        wall, cpu, before = time.perf_counter(), time.process_time(), model_stats()
        try:
            yield
        finally:
            self.wall += time.perf_counter() - wall
            self.cpu += time.process_time() - cpu
            for kind, spent in model_stats_since(before).items():
                self.models[kind] = self.models.get(kind, ModelTiming()) + spent

    def _start(self, pages: Sequence[Page], assets: Mapping[str, Any]) -> None:
        if not self._started:
            self._started = True
            with self._vision():
                self.layout = self.describer.start(pages, self.media_type, assets)

    def _describe(self, batch: ElementBatch) -> None:
        self._start(batch.pages, batch.assets)
        to_read = unread_pictures(batch.elements)
        if to_read and self.settings.ocr != "never" and self._to_read < MAX_PICTURES:
            self._to_read = min(MAX_PICTURES, self._to_read + to_read)
            self.budget(self._to_read)
        self.reader.read(batch.elements, batch.assets, self.warnings)
        by_id = {e.id: e for e in batch.elements}
        captions = {
            edge.target: by_id[edge.source]
            for edge in batch.captions
            if edge.target and edge.source in by_id
        }
        self.captions.update(captions)
        for section in batch.sections[len(self._sections) :]:
            self._sections[section.id] = section
        path = functools.partial(section_path_in, self._sections)
        texts = {target: caption.text for target, caption in captions.items()}
        with self._vision():
            self.describer.describe(batch.elements, texts, batch.assets, path)

    @contextlib.contextmanager
    def _vision(self) -> Iterator[None]:
        # The job's clock pauses while it waits for the vision model.
        if self.describer.vision is None:
            yield
            return
        self.vision_wait(True)
        try:
            yield
        finally:
            self.vision_wait(False)

    def _keep(self, batch: ElementBatch) -> None:
        elements = batch.elements
        self.facts.extend(element_facts(elements))
        self._page_count = len(batch.pages)
        for element in elements:
            if element.hidden:
                self.hidden += 1
            if element.kind == ElementKind.TABLE:
                self.tables += 1
            elif element.kind in (ElementKind.FIGURE, ElementKind.CHART):
                self.pictures += 1
            while element.page // self.per > self._window:
                self._write_window()
            self._pending.append(element)

    def _write_window(self) -> None:
        start, stop = window_span(self._window, self.per, self._page_count)
        elements, self._pending = self._pending, []
        try:
            spooled = self.writer.dump(elements)
        except OSError as exc:
            raise unwritable(self.path, self.spool, exc) from exc
        self.windows.append(ElementWindow(start, stop, spooled))
        self._window += 1
        # The window's pages are done with: their renders, crops and OCR working arrays are
        # freed, but the C allocator keeps what lies between live blocks for itself. Given
        # back each window, a long file's parse stays level (a photograph a page grew it by
        # 140 KiB a page). A call takes milliseconds (16 ms over a fragmented GiB), once per
        # 32 pages.
        release_freed_memory()

    # --- the end -------------------------------------------------------------------------------

    def finish(self, parsed: ParsedDocument) -> ParseWindows:
        """The windows of the document ``parsed`` (returned by the parse, without elements):
        its head and the spooled element windows, the chunks to come. Also finishes what
        needs the whole document: the layout, slide pages' descriptions, the warnings."""
        document = parsed.document
        if document.elements:
            raise ValueError("the parse kept its elements: it did not stream them")
        assets: dict[str, Any] = {a.id: a for a in parsed.assets}
        with self._describing():  # a document without elements is started here
            self._start(document.pages, assets)
        self._page_count = document.page_count
        while self._window < window_count(document.page_count, self.per):
            self._write_window()
        if self._pending:  # the builder keeps every element within the pages
            raise ValueError("elements beyond the document's pages")
        self.writer.close()
        windows = ParseWindows(
            head=parsed,
            element_windows=self.windows,
            chunk_windows=[],
            graph=None,
            n_elements=len(self.facts),
            n_chunks=0,
            hidden_elements=self.hidden,
            spool_paths=[self.writer.path],
        )
        document.layout = self.layout or document.layout
        if document.layout == "horizontal":
            with self._describing(), self._vision():
                document.pages = self.describer.describe_pages(
                    document.pages, windows.each_element(), assets
                )
        parsed.warnings.extend(self.warnings)
        self.describer.finish(parsed.warnings)
        return windows

    def move_timings(self, timings: dict[str, float]) -> None:
        """Take the time spent describing out of the ``parse`` stage's into ``describe``."""
        for stage, spent in (("", self.wall), (".cpu", self.cpu)):
            timings[f"parse{stage}"] = round(timings.get(f"parse{stage}", 0.0) - spent, 4)
            timings[f"describe{stage}"] = round(timings.get(f"describe{stage}", 0.0) + spent, 4)

    def counts(self, page_count: int) -> dict[str, float]:
        """What the file held (``timings.content_counts``), counted as it streamed by."""
        return count_timings(page_count, self.tables, self.pictures, self.reader.count)

    def discard(self) -> None:
        """Delete the spool file: the parse failed."""
        self.writer.discard()

    def chunking(self, windows: ParseWindows, chunker: Any) -> Chunking:
        """What :func:`chunk_spooled` needs of the finished windows; the facts are handed
        over (this object keeps none)."""
        facts, self.facts = self.facts, []
        streams = isinstance(chunker, StreamingChunker) and chunker.streams(windows.head.document)
        return Chunking(windows, facts, self.captions if streams else None)


@dataclass
class Chunking:
    """A document whose elements wait in the spool, to be chunked and its graph built."""

    windows: ParseWindows
    #: The elements' facts, for the graph (``graph.skeleton.SkeletonBuilder``).
    facts: list[ElementFact]
    #: Bound captions by artifact id, for ``chunker.chunk_elements``; ``None``: the chunker
    #: needs the document whole (it cannot stream it).
    captions: dict[str, Element] | None
    #: The document whole, when it is still held and must be chunked as it is (its elements
    #: are not in page order, which the windows would change); else it is read back.
    whole: Document | None = None


def chunk_spooled(
    path: Path,
    chunking: Chunking,
    chunker: Any,
    spool: str,
    graph_window: int,
    clock: Callable[[str], AbstractContextManager[None]],
    timings: dict[str, float],
    chunks_per_window: int = CHUNKS_PER_WINDOW,
) -> ParseWindows:
    """Chunk the spooled document, build its graph's skeleton and add both to the spool;
    the windows, ready to send. The chunks are written a window at a time as the chunker
    yields them, and the graph is built from them read back twice and written in parts
    (``graph.skeleton.SkeletonBuilder``), so that neither is ever held whole. On failure the
    spool files are deleted."""
    from docsight.graph.skeleton import SkeletonBuilder

    windows = chunking.windows
    head = windows.head.document
    try:
        with SpoolWriter(spool, ".windows") as writer:
            count = 0
            with clock("chunk"):
                batch: list[Chunk] = []
                for chunk in _chunks(chunking, chunker):
                    count += 1
                    batch.append(chunk)
                    if len(batch) >= chunks_per_window:
                        windows.add_chunk_window(batch, writer)
                        batch = []
                if batch:
                    windows.add_chunk_window(batch, writer)
                del batch
            timings["count.chunks"] = count
            if count:
                # The graph needs the whole document and its chunks: built here, it leaves
                # the caller only the vectors to add (graph.finish_graph), and its cost runs
                # in parallel over the workers.
                with clock("graph_build"):
                    writer.flush()
                    builder = SkeletonBuilder(head, chunking.facts, window=graph_window)
                    parts = SkeletonWriter(windows, writer)
                    parts.finish(builder.build(windows.each_chunk, parts))
            else:
                windows.graph = None
    except OSError as exc:  # the disk filled since the elements were written
        windows.discard()
        raise unwritable(path, spool, exc) from exc
    except BaseException:
        windows.discard()
        raise
    return windows


def _chunks(chunking: Chunking, chunker: Any) -> Iterator[Chunk]:
    """The chunks of the spooled document, as the chunker yields them (streaming) or one by
    one from its whole document."""
    windows = chunking.windows
    if chunking.captions is not None:
        indexable = (e for e in windows.each_element() if e.is_indexable)
        yield from chunker.chunk_elements(windows.head.document, indexable, chunking.captions)
        return
    whole = chunking.whole
    chunking.whole = None
    if whole is None:
        head = windows.head.document
        whole = head.model_copy(update={"elements": list(windows.each_element())})
    chunks = chunker.chunk(whole)
    del whole
    chunks.reverse()
    while chunks:  # each goes as it is taken
        yield chunks.pop()


def unwritable(path: Path, spool: str, exc: OSError) -> IngestError:
    """The error of a parse result that the spool directory cannot take."""
    return IngestError(
        path,
        f"the parse result could not be written to the temporary directory {spool} "
        f"({exc.strerror or exc}); free space there or set TMPDIR",
    )


def spool_whole(parsed: ParsedDocument, spool: str, chunker: Any) -> Chunking | None:
    """A document parsed whole (a parser that cannot stream): its head and element windows
    written to ``spool``, with what chunking them needs; ``None`` when they cannot be written
    (the result then travels whole)."""
    try:
        windows = ParseWindows.spool_elements(parsed, spool)
    except OSError as exc:
        log.warning("could not spool the document to %s (%s); sending it whole", spool, exc)
        return None
    document = parsed.document
    captions = streaming_captions(chunker, document)
    whole = document if captions is None else None
    return Chunking(windows, element_facts(document.elements), captions, whole)


def streaming_captions(chunker: Any, document: Document) -> dict[str, Element] | None:
    """The captions ``chunker.chunk_elements`` needs to chunk ``document`` from its spooled
    windows; ``None`` when it must have the document whole: the chunker cannot stream it
    (``StreamingChunker``), or the windows, cut by pages, would not give the elements in the
    document's order."""
    elements = document.elements
    in_order = all(a.page <= b.page for a, b in itertools.pairwise(elements))
    if not (isinstance(chunker, StreamingChunker) and chunker.streams(document) and in_order):
        return None
    return bound_captions(document)
