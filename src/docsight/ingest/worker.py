"""The worker side of ingestion: what one worker process does with one file.

PDFium aborts the process on some Flate bombs, pdfminer can exhaust memory, regular expressions
and tree walks can run for minutes on pathological input. None of that can be caught in-process,
so the crash-prone, CPU-heavy part of ingestion (read, parse, picture text, descriptions, chunks)
runs in long-lived worker processes, one file at a time, watched by the
:class:`~docsight.ingest.supervisor.Supervisor`; the caller keeps embedding and every store write
(the store has one writer).

A worker sets its own backstops before the first file: no core files, an address-space limit
above the memory cap, death with its parent, Pillow's decompression-bomb warning as an error,
and per file a CPU-time limit (``RLIMIT_CPU``, whose SIGXCPU the supervisor reports). Log records
go to the parent, whose logging configuration decides what is shown.

:func:`run_job` is also what ``ingest.isolation = "none"`` runs in the calling process.
"""

from __future__ import annotations

import dataclasses
import gc
import logging
import os
import resource
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from docsight.document.chunk import Chunk
from docsight.document.ids import bytes_sha256
from docsight.document.model import ParsedDocument
from docsight.errors import DocsightError, IngestError
from docsight.ingest.limits import (
    arm_cpu_limit,
    harden,
    limit_pillow,
    own_peak_rss_mb,
    reset_peak_rss,
)
from docsight.ingest.spool import Spooled, read_once, spool_bytes
from docsight.ingest.timings import StageClock, content_counts, model_timings
from docsight.settings import IngestSettings, Settings

if TYPE_CHECKING:
    from docsight.graph.model import ContentGraph
    from docsight.ingest.streamed import Chunking, StreamedParse
    from docsight.ingest.windows import ParseWindows

log = logging.getLogger(__name__)

# --- what crosses the process boundary -----------------------------------------------------------


@dataclass(frozen=True)
class WorkerSetup:
    """What a worker needs to rebuild the parse context the caller would have used."""

    settings: Settings
    #: The collection's artifact cache (OCR, layout, tables), shared by all workers (SQLite WAL).
    cache_path: Path | None = None
    #: The response cache of the vision model client, when one is configured.
    llm_cache_path: Path | None = None
    #: The parser registry as ``(media type, "module:attr", extra, description)``, filled in by
    #: the supervisor, so parsers registered at run time reach the workers too.
    parsers: tuple[tuple[str, str, str | None, str], ...] = ()
    #: The parent's log levels (see :func:`logging_snapshot`); workers send their records there.
    logging: tuple[int, tuple[tuple[str, int], ...]] | None = None
    #: The parent's ``sys.path``, so workers import what it can.
    sys_path: tuple[str, ...] = ()


@dataclass(frozen=True)
class ParseJob:
    """One file to parse: the parent has read, hashed and sniffed it already."""

    path: str
    sha256: str
    media_type: str
    #: Whether the caller needs the pixels of images that carry a render recipe. ``False``
    #: when its store keeps the source file and stores recipes, not pixels, and it shows no
    #: page to a model of its own: the worker then keeps no page render beyond its id and
    #: recipe while parsing, and returns crops without their bytes once it has read and
    #: described them, so a long document's images never pile up in either process.
    rendered_pixels: bool = True
    #: Above 0: a file of pages (a PDF) with more pages than this is not parsed here; the job
    #: ends with its page count (``JobResult.split_pages``), so the caller can spread its pages
    #: over the workers (:mod:`docsight.ingest.split`). 0: always parse the whole file.
    pages_per_part: int = 0
    #: Only extract pages ``[start, stop)`` (the parser's per-page pass): :func:`run_part`.
    page_range: tuple[int, int] | None = None
    #: What :func:`run_part` made of every page range of the file, in page order: the parse
    #: finishes from them instead of reading the pages again. A list is emptied as the parse
    #: reads it (in the worker, the job's own copy), so the parts are not held beside the
    #: document they became.
    parts: Sequence[bytes | Spooled] = ()
    #: A directory of the caller's (:class:`~docsight.ingest.spool.Spool`) for what the job
    #: returns: its windows or its part go there, and the message says where. ``None``: they
    #: travel in the message.
    spool: str | None = None


@dataclass
class PartOutput:
    """The per-page pass over a page range: the parser's opaque bytes (or where they were
    spooled), and what it cost."""

    data: bytes | Spooled = field(repr=False)
    timings: dict[str, float] = field(default_factory=dict)


@dataclass
class ParseOutput:
    parsed: ParsedDocument
    chunks: list[Chunk]
    timings: dict[str, float] = field(default_factory=dict)
    #: One vector per chunk, when the engine embedded them already (the Ray engine's embedding
    #: actors); ``None``: the caller embeds them.
    vectors: Any = None
    #: The document's content graph before its vectors (``graph.build_skeleton``); ``None``
    #: without chunks.
    graph: ContentGraph | None = None
    #: From a worker process: the document, chunks and graph cut and pickled window by window
    #: (``parsed`` is then their head, without elements, and ``chunks`` is empty).
    windows: ParseWindows | None = None

    def chunk_texts(self) -> list[str]:
        """Every chunk's text, whichever form the output has (the windows are kept)."""
        if self.windows is not None:
            return self.windows.chunk_texts()
        return [c.text for c in self.chunks]


@dataclass
class JobResult:
    """How a job ended: ``output``, or an error code and a reason."""

    key: int
    output: ParseOutput | None = None
    error_code: str | None = None
    reason: str | None = None
    #: Wall seconds from dispatch to the result (or the kill).
    seconds: float = 0.0
    #: Peak resident memory of the worker during the job, in MiB (``None`` when in-process).
    peak_rss_mb: float | None = None
    #: Pages of a file not parsed because it has more than ``ParseJob.pages_per_part``, and
    #: the pages each of its parts should hold (fewer for a scan: ``split.part_size``).
    split_pages: int = 0
    split_part: int = 0
    #: The output of a ``page_range`` job.
    part: PartOutput | None = None

    @classmethod
    def failed(cls, key: int, error: DocsightError, **kw: Any) -> JobResult:
        reason = error.reason if isinstance(error, IngestError) else error.message
        return cls(key, error_code=error.code, reason=reason, **kw)


# --- the work itself (in a worker, or in-process) ------------------------------------------------


class WorkerState:
    """Parse context, chunker and settings of one process, built on the first job."""

    def __init__(self, setup: WorkerSetup) -> None:
        from docsight.cache import JsonCache
        from docsight.ingest.chunking import create_chunker
        from docsight.parsers.base import ParseContext

        self.settings = setup.settings
        self.chunker = create_chunker(setup.settings.chunk)
        vlm = None
        if setup.settings.vlm.enabled:
            from docsight.ingest.vlm import VisionDescriber
            from docsight.llm.client import OpenAIChatClient

            client = OpenAIChatClient(setup.settings.vlm, setup.llm_cache_path)
            vlm = VisionDescriber(client, setup.settings.vlm)
        cache = JsonCache(setup.cache_path) if setup.cache_path is not None else None
        self.context = ParseContext(cache=cache, vlm=vlm)


@dataclass(frozen=True)
class ParseProgress:
    """How far a job has come: ``done`` of ``total`` pages in ``stage`` (``parse`` with the
    page count, then per page; ``describe`` with no count)."""

    key: int
    stage: str
    done: int
    total: int


ProgressListener = Callable[[ParseProgress], None]


class SplitRequested(Exception):
    """Not an error: the file has more pages than ``ParseJob.pages_per_part``."""

    def __init__(self, pages: int, per_part: int = 0) -> None:
        super().__init__(pages)
        self.pages = pages
        self.per_part = per_part


class JobEvents:
    """What a job tells its supervisor while it runs (nothing, in-process)."""

    def pages(self, n: int) -> None:
        """The file has ``n`` pages, or pages plus pictures to read by OCR: the budget grows."""

    def vision(self, waiting: bool) -> None:
        """The job starts or stops waiting for the vision model (the clock pauses)."""

    def progress(self, stage: str, done: int, total: int) -> None:
        """``done`` of ``total`` pages of the file are through ``stage``."""


def run_job(
    job: ParseJob,
    settings: Settings,
    context: Any,
    chunker: Any,
    events: JobEvents | None = None,
) -> ParseOutput:
    """Read, parse, read text in pictures, describe and chunk one file. Raises docsight errors.

    The output's timings hold wall and CPU seconds per stage, what each model cost and what the
    file held (see :func:`model_timings` and :func:`content_counts`).
    """
    from docsight.ingest.streamed import chunk_spooled, spool_whole
    from docsight.parsers import parser_for
    from docsight.parsers.base import PagedParser, SourceFile
    from docsight.vision.common import ModelTiming, model_stats, model_stats_since

    events = events or JobEvents()
    timings: dict[str, float] = {}
    clock = StageClock(timings)
    path = Path(job.path)
    with clock("verify"):
        data = verified_bytes(job)
        counted = _count_pages(job.media_type, data)
        pages = min(counted, settings.parse.max_pages)
    parser = parser_for(job.media_type, path)
    if (
        job.pages_per_part > 0
        and counted <= settings.parse.max_pages
        and not job.parts
        and isinstance(parser, PagedParser)
    ):
        from docsight.ingest.split import part_size

        per_part = part_size(job.pages_per_part, counted, job.media_type, data, settings)
        if per_part < counted:
            raise SplitRequested(counted, per_part)
    if pages:
        events.pages(pages)
    # Parsing from parts, the pages are read already.
    events.progress("parse", pages if job.parts else 0, pages)
    # In a worker with a spool, a parser that can stream hands its elements over page by page:
    # they are described and written to the spool as they come (ingest.streamed).
    stream = _streamed_parse(job, parser, settings, context, events, pages)
    # A vision model looks at page renders while describing: only without one may they go.
    page_pixels = job.rendered_pixels or context.vlm is not None
    source = SourceFile(
        path=path,
        data=data,
        sha256=job.sha256,
        media_type=job.media_type,
        page_pixels=page_pixels,
        # Streamed, the crops are read while their pages are described and not after (their
        # bytes go below): they wait on disk, not in memory, until their pages come.
        crop_pixels=job.rendered_pixels or stream is None,
    )
    # Model costs are deltas of the process's totals, taken around each stage: page OCR, layout
    # and tables run while parsing, picture OCR while describing.
    models_start = model_stats()
    try:
        with clock("parse"):
            # The parsers report each page through the context; the context is the worker's,
            # shared by its jobs, so this job gets a copy that reports to its own events.
            context = dataclasses.replace(context, progress=events.progress, elements=stream)
            if job.parts:
                if not isinstance(parser, PagedParser):
                    raise IngestError(
                        path, f"the {parser.name} parser cannot parse a file in parts"
                    )
                parts = read_once(job.parts)
                parsed = parser.parse_parts(source, settings.parse, context, parts)
            else:
                parsed = parser.parse(source, settings.parse, context)
            del data, source  # the parser's copy of the bytes is not needed any more
        models_parsed = model_stats()
        events.progress("describe", 0, parsed.document.page_count)
        if stream is not None:
            windows = stream.finish(parsed)
            stream.move_timings(timings)
            counts = stream.counts(parsed.document.page_count)
            models_picture = stream.models
            models_parse = {
                kind: spent - models_picture.get(kind, ModelTiming())
                for kind, spent in model_stats_since(models_start, models_parsed).items()
            }
        else:
            with clock("describe"):
                pictures_read = _describe_whole(parsed, context, settings, events, pages)
            counts = content_counts(parsed, pictures_read)
            models_parse = model_stats_since(models_start, models_parsed)
            models_picture = model_stats_since(models_parsed, model_stats())
    except BaseException:
        if stream is not None:
            stream.discard()
        raise
    if not job.rendered_pixels:
        # Picture OCR and the descriptions have read the crops; the caller stores recipes.
        parsed.assets = [
            dataclasses.replace(a, data=b"") if a.render is not None else a for a in parsed.assets
        ]
    timings.update(counts)
    timings.update(model_timings(models_parse))
    timings.update(model_timings(models_picture, prefix="picture_"))
    if job.spool is None:
        return _chunk_whole(parsed, chunker, settings, clock, timings)
    # In a worker with a spool, the elements are there before they are chunked (streamed,
    # or written now): the chunker reads them back one window at a time, and the graph is
    # built from their facts. A long document's elements are never held beside its chunks
    # and graph.
    if stream is not None:
        chunking: Chunking | None = stream.chunking(windows, chunker)
    else:
        chunking = spool_whole(parsed, job.spool, chunker)
    if chunking is None:  # the disk cannot take it: the result travels whole
        return _chunk_whole(parsed, chunker, settings, clock, timings)
    del parsed  # the spool holds the elements now: they can go
    windows = chunk_spooled(
        path, chunking, chunker, job.spool, settings.graph.window, clock, timings
    )
    return ParseOutput(windows.head, [], timings, windows=windows)


def _describe_whole(
    parsed: ParsedDocument, context: Any, settings: Settings, events: JobEvents, pages: int
) -> int:
    """Read the pictures' text and describe the document (parsed whole); the pictures read."""
    from docsight.ingest.describe import enrich
    from docsight.ingest.picture_text import read_picture_text

    pictures = _pictures_to_read(parsed, settings)
    if pictures:
        events.pages(max(pages, parsed.document.page_count) + pictures)
    pictures_read = read_picture_text(parsed, context, settings.parse)
    if context.vlm is not None:
        events.vision(True)
        try:
            enrich(parsed, context.vlm)
        finally:
            events.vision(False)
    else:
        enrich(parsed, None)
    return pictures_read


def _chunk_whole(
    parsed: ParsedDocument,
    chunker: Any,
    settings: Settings,
    clock: StageClock,
    timings: dict[str, float],
) -> ParseOutput:
    """Chunk the document parsed whole and build its graph's skeleton: the output whole."""
    from docsight.graph.build import build_skeleton

    with clock("chunk"):
        chunks = chunker.chunk(parsed.document)
    timings["count.chunks"] = len(chunks)
    graph = None
    if chunks:
        # The graph needs the whole document and its chunks, which are here: built beside
        # them, it leaves the caller only the vectors to add (graph.finish_graph), and its
        # cost runs in parallel over the workers.
        with clock("graph_build"):
            graph = build_skeleton(parsed.document, chunks, window=settings.graph.window)
    return ParseOutput(parsed, chunks, timings, graph=graph)


def _streamed_parse(
    job: ParseJob,
    parser: Any,
    settings: Settings,
    context: Any,
    events: JobEvents,
    pages: int,
) -> StreamedParse | None:
    """The sink for a streamed parse (``ingest.streamed``), when the job has a spool and the
    parser can stream; ``None`` otherwise, or when the spool cannot take a file."""
    if job.spool is None or not getattr(parser, "streams_elements", False):
        return None
    from docsight.ingest.streamed import StreamedParse

    try:
        return StreamedParse(
            Path(job.path),
            job.spool,
            media_type=job.media_type,
            settings=settings.parse,
            context=context,
            budget=lambda pictures: events.pages(pages + pictures),
            vision_wait=events.vision,
        )
    except OSError as exc:
        log.warning("could not spool to %s (%s); parsing the document whole", job.spool, exc)
        return None


def verified_bytes(job: ParseJob) -> bytes:
    """The file's bytes, if they are still the bytes the caller hashed."""
    path = Path(job.path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise IngestError(path, f"cannot read: {exc.strerror or exc}") from exc
    if bytes_sha256(data) != job.sha256:
        raise IngestError(path, "the file changed while it was being ingested; ingest it again")
    return data


def _count_pages(media_type: str, data: bytes) -> int:
    """Pages of a PDF or frames of an image, cheaply and before parsing; 0 when unknown."""

    try:
        with warnings.catch_warnings():
            # A damaged TIFF makes Pillow warn about every odd tag; the parser reports it.
            warnings.simplefilter("ignore")
            return _count(media_type, data)
    except Exception:  # the parser reports what is wrong with the file
        return 0


def _count(media_type: str, data: bytes) -> int:
    from docsight.parsers import sniff

    if media_type == sniff.PDF:
        import pypdfium2 as pdfium

        doc = pdfium.PdfDocument(data)
        try:
            return len(doc)
        finally:
            doc.close()
    if media_type in (sniff.PNG, sniff.JPEG, sniff.TIFF):
        import io

        from PIL import Image

        fmt = {sniff.PNG: "PNG", sniff.JPEG: "JPEG", sniff.TIFF: "TIFF"}[media_type]
        with Image.open(io.BytesIO(data), formats=[fmt]) as image:
            return max(1, int(getattr(image, "n_frames", 1)))
    return 0


def _pictures_to_read(parsed: ParsedDocument, settings: Settings) -> int:
    """An upper bound of the pictures ``read_picture_text`` may OCR."""
    from docsight.ingest.picture_text import MAX_PICTURES, unread_pictures

    if settings.parse.ocr == "never":
        return 0
    return min(unread_pictures(parsed.document.elements), MAX_PICTURES)


def _run_guarded(
    key: int, job: ParseJob, run: Callable[[], ParseOutput | PartOutput]
) -> tuple[ParseOutput | PartOutput | None, JobResult | None]:
    """``run()`` with every failure turned into a :class:`JobResult`."""
    try:
        return run(), None
    except SplitRequested as split:
        return None, JobResult(key, split_pages=split.pages, split_part=split.per_part)
    except DocsightError as exc:
        return None, JobResult.failed(key, exc)
    except MemoryError:
        return None, JobResult(
            key, error_code="out_of_memory", reason="ran out of memory while parsing the file"
        )
    except RecursionError:
        return None, JobResult(
            key, error_code="parse_error", reason="nested too deeply to parse (recursion limit)"
        )
    except Exception as exc:  # a bug or an unexpected library error must not stop the batch
        log.exception("unexpected error parsing %s", job.path)
        return None, JobResult(
            key, error_code="internal_error", reason=f"unexpected {type(exc).__name__}: {exc}"
        )


class InlineRunner:
    """Runs jobs in the calling process, without limits (``ingest.isolation = "none"``).

    Jobs run when their result is asked for, so progress events stay in step with the work.
    """

    def __init__(self, settings: Settings, context: Any, chunker: Any) -> None:
        self.settings = settings
        self.context = context
        self.chunker = chunker
        self._jobs: dict[int, ParseJob] = {}
        self._listener: ProgressListener | None = None

    def listen(self, listener: ProgressListener) -> None:
        """Call ``listener`` with the progress of every job (in the caller's thread)."""
        self._listener = listener

    def submit(self, key: int, job: ParseJob) -> None:
        self._jobs[key] = job

    def result(self, key: int) -> JobResult:
        job = self._jobs.pop(key)
        started = time.perf_counter()
        events = _InlineEvents(key, self._listener)
        output, failure = _run_guarded(
            key, job, lambda: run_job(job, self.settings, self.context, self.chunker, events)
        )
        if failure is not None:
            result = failure
        else:
            assert isinstance(output, ParseOutput)
            result = JobResult(key, output=output)
        result.seconds = time.perf_counter() - started
        return result

    def ready(self, key: int) -> JobResult | None:
        """Never ready before it is asked for: a job runs in :meth:`result`."""
        return None

    def close(self) -> None:
        self._jobs.clear()


class _InlineEvents(JobEvents):
    def __init__(self, key: int, listener: ProgressListener | None) -> None:
        self.key = key
        self.listener = listener

    def progress(self, stage: str, done: int, total: int) -> None:
        if self.listener is not None:
            self.listener(ParseProgress(self.key, stage, done, total))


# --- the worker process ------------------------------------------------------------------------


class _Channel:
    """The pipe to the parent; log records may be sent from any thread, so sends are locked."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self._lock = threading.Lock()

    def send(self, message: Any) -> None:
        with self._lock:
            self.conn.send(message)

    def send_result(self, result: JobResult, blobs: list[bytes]) -> None:
        """A result and the asset bytes that follow it, with no log record in between."""
        with self._lock:
            self.conn.send(("result", result, [len(b) for b in blobs]))
            for blob in blobs:
                self.conn.send_bytes(blob)


class _ForwardHandler(logging.Handler):
    """Sends log records to the parent, which handles them under its own configuration."""

    def __init__(self, channel: _Channel) -> None:
        super().__init__()
        self.channel = channel

    def emit(self, record: logging.LogRecord) -> None:
        try:
            data = {
                k: v
                for k, v in record.__dict__.items()
                if isinstance(v, str | int | float | bool) or v is None
            }
            data["msg"], data["args"], data["exc_info"] = record.getMessage(), None, None
            if record.exc_info and not record.exc_text:
                data["exc_text"] = logging.Formatter().formatException(record.exc_info)
            self.channel.send(("log", data))
        except Exception:  # logging must never break parsing
            self.handleError(record)


def logging_snapshot() -> tuple[int, tuple[tuple[str, int], ...]]:
    """``(disabled level, ((logger, level), ...))``: what this process logs, for its workers."""
    manager = logging.root.manager
    levels = [("", logging.root.level)]
    levels += [
        (name, logger.level)
        for name, logger in list(manager.loggerDict.items())
        if isinstance(logger, logging.Logger) and logger.level != logging.NOTSET
    ]
    return manager.disable, tuple(levels)


def replay_log_record(data: dict[str, Any]) -> None:
    """Hand a worker's log record to this process's loggers."""
    record = logging.makeLogRecord(data)
    logging.getLogger(record.name or None).handle(record)


def _forward_logging(channel: _Channel, snapshot: tuple[int, tuple[tuple[str, int], ...]]) -> None:
    disabled, levels = snapshot
    root = logging.getLogger()
    root.handlers[:] = [_ForwardHandler(channel)]
    for name, level in levels:
        logging.getLogger(name or None).setLevel(level)
    logging.disable(disabled)


def worker_process() -> None:
    """Entry point of a worker process (``python -c ... FD``): the parent's end of a socket pair
    is file descriptor ``FD``; the :class:`WorkerSetup` is the first message on it."""
    import sys

    conn = Connection(int(sys.argv[1]))
    try:
        setup = conn.recv()
    except (EOFError, OSError):
        return
    # The caller's import path (a test module with a parser, a plugin on PYTHONPATH).
    sys.path[:] = list(dict.fromkeys([*setup.sys_path, *sys.path]))
    worker_main(conn, setup)


def worker_main(conn: Connection, setup: WorkerSetup) -> None:
    """Set limits, then parse jobs until told to stop."""
    channel = _Channel(conn)
    limits = setup.settings.ingest
    harden(limits)
    if setup.logging is not None:
        _forward_logging(channel, setup.logging)
    from docsight.parsers import PARSERS

    for name, target, extra, description in setup.parsers:
        PARSERS.register(name, target, extra=extra, description=description)
    limit_pillow(setup.settings.parse.max_image_pixels)
    from docsight.vision.common import set_model_threads

    # Threads of the model sessions this worker creates (0: onnxruntime's default).
    set_model_threads(setup.settings.ingest.model_thread_count())
    state = WorkerState(setup)
    _tune_gc()
    # glibc's mmap threshold stays glibc's here (the parent holds it, docsight._memory): held,
    # parsing a report took about 16 % more CPU (page bitmaps mapped afresh each time), for
    # 22 MiB off a 1,000-page file's worker peak.
    channel.send(("ready", os.getpid()))
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return  # the parent is gone
        if message is None:
            return
        key, job = message
        try:
            _serve(channel, key, job, state, limits)
        except (EOFError, OSError):
            return


#: Allocations between two young-generation collections in a worker (Python's default: 700).
_GC_YOUNG = 20_000


def _tune_gc() -> None:
    """Fewer cyclic-garbage collections in a worker: a PDF's parse allocates millions of small
    objects (words, lines) that live until the document is emitted, and with Python's default
    thresholds the collector rescanned them about 4,000 times on a 200-page file, 10 % of the
    parse's CPU (0.5 s of 32 s with these settings, 3.5 s of 35 s without). The modules and
    models loaded so far are frozen out of every collection. Parsing creates little cyclic
    garbage, so collecting less often holds little more memory; what is collected is the same."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(_GC_YOUNG, 20, 10)


class _WorkerEvents(JobEvents):
    """Job events of a worker: the CPU limit follows the budget, the supervisor hears of it."""

    def __init__(self, channel: _Channel, key: int, limits: IngestSettings) -> None:
        self.channel = channel
        self.key = key
        self.limits = limits
        usage = resource.getrusage(resource.RUSAGE_SELF)
        self.cpu_at_start = usage.ru_utime + usage.ru_stime
        self._arm(0)

    def _arm(self, pages: int) -> tuple[float, float | None]:
        wall, cpu = self.limits.budget(pages)
        arm_cpu_limit(self.cpu_at_start, cpu)
        return wall, cpu

    def pages(self, n: int) -> None:
        wall, cpu = self._arm(n)
        self.channel.send(("budget", self.key, n, wall, cpu))

    def vision(self, waiting: bool) -> None:
        self.channel.send(("vision", self.key, waiting))

    def progress(self, stage: str, done: int, total: int) -> None:
        self.channel.send(("progress", self.key, stage, done, total))


def _serve(
    channel: _Channel, key: int, job: ParseJob, state: WorkerState, limits: IngestSettings
) -> None:
    reset_peak_rss()
    started = time.perf_counter()
    events = _WorkerEvents(channel, key, limits)

    def run() -> ParseOutput | PartOutput:
        if job.page_range is not None:
            from docsight.ingest.split import run_part

            return run_part(job, state.settings, state.context, events)
        return run_job(job, state.settings, state.context, state.chunker, events)

    output, failure = _run_guarded(key, job, run)
    seconds = time.perf_counter() - started
    peak = own_peak_rss_mb()
    if failure is not None:
        failure.seconds, failure.peak_rss_mb = seconds, peak
        channel.send_result(failure, [])
        return
    if isinstance(output, PartOutput):
        if job.spool is not None:
            output.data = spool_bytes(output.data, job.spool, ".part")
        channel.send_result(JobResult(key, part=output, seconds=seconds, peak_rss_mb=peak), [])
        return
    assert output is not None
    try:
        _send_output(channel, key, output, seconds, peak)
    except (EOFError, OSError):
        raise
    except Exception as exc:  # an unpicklable value somewhere in the parse: report it
        log.exception("could not send the result for %s", job.path)
        error = JobResult(
            key,
            error_code="internal_error",
            reason=f"result could not be returned: {type(exc).__name__}: {exc}",
            seconds=seconds,
            peak_rss_mb=peak,
        )
        channel.send_result(error, [])


def _send_output(
    channel: _Channel, key: int, output: ParseOutput, seconds: float, peak: float | None
) -> None:
    """The result without asset bytes, then each asset's bytes as a message of its own.

    Page renders make up most of a parse result; sending them one by one avoids pickling one
    copy of everything while the worker still holds the original. The document, chunks and
    graph go cut into windows (``ingest.windows``), so the parent unpacks one at a time:
    spooled already by :func:`run_job` when the job has a spool, else pickled here.
    """
    from docsight.ingest.windows import ParseWindows

    windows = output.windows
    if windows is None:
        windows = ParseWindows.pack(output.parsed, output.chunks, output.graph)
    head = windows.head
    assets = head.assets
    head.assets = [dataclasses.replace(a, data=b"") for a in assets]
    result = JobResult(
        key,
        output=ParseOutput(head, [], output.timings, windows=windows),
        seconds=seconds,
        peak_rss_mb=peak,
    )
    channel.send_result(result, [a.data for a in assets])


def registered_parsers() -> tuple[tuple[str, str, str | None, str], ...]:
    """The parser registry of this process, for :attr:`WorkerSetup.parsers`."""
    from docsight.parsers import PARSERS

    entries = (PARSERS.entry(name) for name in PARSERS.names())
    return tuple((e.name, e.target, e.extra, e.description) for e in entries)
