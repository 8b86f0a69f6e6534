"""Ingestion: read → sniff → (skip if unchanged) → parse → chunk → embed → graph → store.

A file is identified by the hash of its bytes, so an unchanged file is recognised without being
parsed, and only a new parser version makes docsight parse it again. A file that replaces an
earlier version at the same path supersedes it once the new version is committed. One bad file
never stops a batch: it ends as a failed outcome with the reason.

Parsing, picture text, descriptions, chunking and the content graph's skeleton run in worker
processes under per-file limits (:mod:`docsight.ingest.worker`, :mod:`docsight.ingest.supervisor`);
this process reads and sniffs each file, decides whether it changed, and embeds and stores what
the workers return, in input order. What a worker returns comes cut into windows
(:mod:`docsight.ingest.windows`), and a new document is written window by window as this process
unpacks it: pages and elements, then chunks as they are embedded, then the graph, finished from
the chunks' ids and vectors. So a long document is never held here whole.

Files are handed to the workers a few ahead of the one being stored, so the workers stay busy
while this process embeds; and a small next file whose chunks are back is embedded while the
current one is stored (:mod:`docsight.ingest.embedding`).
"""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from docsight._memory import (
    PeakMemory,
    hold_mmap_threshold,
    release_freed_memory,
    system_arrow_pool,
)
from docsight.document.artifacts import strip_placeholders
from docsight.document.chunk import Chunk
from docsight.document.ids import bytes_sha256, document_id_from_sha256
from docsight.document.model import ParsedDocument
from docsight.encoders.base import Encoder
from docsight.encoders.visual import VisualEncoder
from docsight.errors import DocsightError, IngestError, LimitExceededError
from docsight.graph import ContentGraph, GraphBundle, build_skeleton, finish_graph
from docsight.index.base import DocumentInfo, PageVectors, Store
from docsight.index.visual import document_page_vectors
from docsight.ingest.chunking import Chunker
from docsight.ingest.embedding import AHEAD_CHUNKS, IngestEmbedder
from docsight.ingest.progress import ProgressCallback, ProgressTracker
from docsight.ingest.report import FileOutcome, IngestInterrupted, IngestReport
from docsight.ingest.spool import RowSpool
from docsight.ingest.supervisor import Supervisor
from docsight.ingest.windows import ParseWindows
from docsight.ingest.worker import (
    InlineRunner,
    JobResult,
    ParseJob,
    ParseOutput,
    ProgressListener,
    WorkerSetup,
)
from docsight.parsers import parser_for
from docsight.parsers.base import ParseContext, Parser
from docsight.parsers.sniff import check_name, detect_media_type
from docsight.settings import Settings

log = logging.getLogger(__name__)

#: File types picked up when a directory is ingested; files named explicitly are always tried.
DOCUMENT_SUFFIXES = frozenset(
    {".pdf", ".md", ".markdown", ".txt", ".text", ".html", ".htm", ".docx", ".pptx", ".xlsx"}
    | {".png", ".jpg", ".jpeg", ".tif", ".tiff"}
)


class _Runner(Protocol):
    def listen(self, listener: ProgressListener) -> None: ...

    def submit(self, key: int, job: ParseJob) -> None: ...

    def result(self, key: int) -> JobResult: ...

    def ready(self, key: int) -> JobResult | None: ...

    def close(self) -> None: ...


def discover(
    paths: Iterable[str | Path], exclude: Sequence[Path] = ()
) -> tuple[list[Path], list[Path]]:
    """Expand directories (recursively, hidden entries skipped) into the files to ingest and the
    files passed over because their type is not a document type docsight reads."""
    excluded = {p.resolve() for p in exclude}
    found: dict[Path, None] = {}
    passed_over: dict[Path, None] = {}
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for child in sorted(path.rglob("*")):
                rel = child.relative_to(path).parts
                if any(part.startswith(".") for part in rel):
                    continue
                if any(parent in excluded for parent in child.resolve().parents):
                    continue
                if not child.is_file():
                    continue
                if child.suffix.lower() in DOCUMENT_SUFFIXES:
                    found.setdefault(child, None)
                else:
                    passed_over.setdefault(child, None)
        else:
            found.setdefault(path, None)
    return list(found), list(passed_over)


@dataclass
class _Slot:
    """A file between the unchanged-check and its commit."""

    outcome: FileOutcome
    job: ParseJob | None = None
    parser_id: str = ""
    #: The stored document with the same bytes, parsed by another parser or chunker version.
    existing: DocumentInfo | None = None
    #: An earlier file of this batch with the same bytes: this one waits for its outcome.
    duplicate_of: FileOutcome | None = None


@dataclass
class _Turn:
    """A file's turn to be stored: what its steps share."""

    slot: _Slot
    key: int
    output: ParseOutput
    windows: ParseWindows
    emit: Callable[[str], None]
    runner: _Runner
    clock: _Stopwatch
    #: The file, which the store keeps: page images are made from it when they are asked for.
    source: Path | None


class IngestPipeline:
    def __init__(
        self,
        store: Store,
        encoder: Callable[[], Encoder],
        chunker: Chunker,
        settings: Settings,
        context: ParseContext | None = None,
        worker_setup: WorkerSetup | None = None,
        chat: object | None = None,
        visual: Callable[[], VisualEncoder] | None = None,
    ) -> None:
        self.store = store
        #: The chat model that writes graph summaries (``None``: extractive summaries).
        self.chat = chat
        #: The visual encoder that embeds page images (``None``: none configured).
        self._visual = visual
        self._encoder = encoder  # loaded on the first file that needs embedding
        self.chunker = chunker
        self.settings = settings
        self.context = context or ParseContext()
        # Workers rebuild the context from settings: the artifact cache by path, the vision
        # model from settings.vlm (a client object cannot cross the process boundary).
        self.worker_setup = worker_setup or WorkerSetup(
            settings=settings,
            cache_path=self.context.cache.path if self.context.cache is not None else None,
        )
        #: The supervisor of the last run (``None`` in-process), for tests and diagnostics.
        self.supervisor: Supervisor | None = None
        #: Set once a write found the disk full: later files are not even tried.
        self._storage_full: str | None = None
        #: The file between its parse and its outcome (what Ctrl-C may interrupt).
        self._current: _Slot | None = None
        #: Embeds a small next file's chunks on a thread while the current file is stored.
        self._embedder = IngestEmbedder(encoder)

    def run(
        self, paths: Sequence[str | Path], progress: ProgressCallback | None = None
    ) -> IngestReport:
        """Ingest ``paths``; ``progress`` gets :class:`IngestProgress` events in this thread.

        Ctrl-C raises :class:`IngestInterrupted` with a report of what was kept (every file
        committed by then) and what was not; running the same ingest again finishes the job.
        """
        started = time.perf_counter()
        # A remote collection has no local files to pass over but its working directory.
        where = getattr(self.store, "location", None)
        local = self.store.path if where is None or not where.remote else where.work_dir
        files, passed_over = discover(paths, exclude=[local])
        report = IngestReport()
        for path in passed_over:
            kind = path.suffix.lower() or "no extension"
            report.files.append(
                FileOutcome(
                    path=str(path),
                    status="skipped",
                    name=path.name,
                    reason=f"not a document type docsight reads ({kind}); name the file to try it",
                )
            )
        tracker = ProgressTracker([str(f) for f in files], progress)
        current: _Slot | None = None
        try:
            # Large blocks mapped apart, and Arrow rows from the C library's allocator, so that
            # what one file's work frees goes back to the system before the next (_memory).
            hold_mmap_threshold()
            with system_arrow_pool():
                self.store.recover()
                changed = self._run_files(files, report, tracker)
                if changed:
                    tracker.optimizing()
                    report.warnings.extend(self._optimize())
                    release_freed_memory()
        except KeyboardInterrupt:
            current = self._current
            self._interrupted(report, files, current)
            report.seconds = time.perf_counter() - started
            raise IngestInterrupted(report) from None
        report.seconds = time.perf_counter() - started
        return report

    def _run_files(self, files: list[Path], report: IngestReport, tracker: ProgressTracker) -> bool:
        changed = False
        inline = self.settings.ingest.isolation == "none"
        runner: _Runner
        if self.settings.ingest.engine == "ray":
            # Parsing and embedding on a Ray cluster; the rest stays here (ingest.ray_engine).
            from docsight.ingest.ray_engine import RayRunner

            ray_runner = RayRunner(self.worker_setup, lambda: self._encoder().fingerprint)
            runner = ray_runner
            ahead = 2 * ray_runner.size + 1
        elif inline:
            runner = InlineRunner(self.settings, self.context, self.chunker)
            ahead = 1
        else:
            self.supervisor = Supervisor(self.worker_setup)
            runner = self.supervisor
            # Enough files in flight to keep every worker busy while this process embeds.
            ahead = 2 * self.supervisor.size + 1
        runner.listen(tracker.parsed)
        slots: dict[int, _Slot] = {}
        by_sha: dict[str, FileOutcome] = {}
        prepared = 0
        since_compaction = 0
        every = self.settings.ingest.compact_every
        try:
            for index in range(1, len(files) + 1):

                def emit(stage: str, _key: int = index - 1) -> None:
                    tracker.emit(_key, stage)

                emit("read")
                while prepared < min(len(files), index - 1 + ahead):
                    slot = self._prepare(files[prepared], by_sha)
                    slots[prepared] = slot
                    tracker.prepared(prepared, slot.job is not None)
                    if slot.job is not None:
                        runner.submit(prepared, slot.job)
                    prepared += 1
                slot = slots.pop(index - 1)
                self._current = slot
                self._finish(slot, runner, index - 1, emit)
                outcome = slot.outcome
                stored = outcome.status in ("added", "no_text")
                changed = changed or stored
                report.files.append(outcome)
                self._current = None
                since_compaction += stored
                # After the last file, the final optimize compacts anyway.
                if every and since_compaction >= every and index < len(files):
                    # Every read scans each table's files, one more per stored file: compact
                    # them now and then, so a long batch does not slow down file by file.
                    since_compaction = 0
                    for warning in self._optimize(indexes=False):
                        if warning not in report.warnings:
                            report.warnings.append(warning)
                # The file's document, chunks and rows are gone: give their pages back, so a
                # long batch does not grow by what the allocator kept of each (_memory).
                release_freed_memory()
                tracker.finished(index - 1, outcome)
        finally:
            self._embedder.close()
            runner.close()
        return changed

    def _interrupted(self, report: IngestReport, files: list[Path], current: _Slot | None) -> None:
        """Account for a Ctrl-C: the file being stored counts as kept if its commit landed;
        every file after the last one reported was not stored."""
        report.interrupted = True
        self._current = None
        done = {f.path for f in report.files}
        if current is not None and current.outcome.path not in done:
            outcome = current.outcome
            info = self.store.has_document(outcome.doc_id) if outcome.doc_id else None
            if info is not None and outcome.status != "skipped":
                outcome.status = "added" if info.chunks else "no_text"
                outcome.error_code = outcome.reason = None
                outcome.pages, outcome.chunks = info.pages, info.chunks
                report.files.append(outcome)
                done.add(outcome.path)
            elif outcome.status == "skipped":
                report.files.append(outcome)
                done.add(outcome.path)
        report.not_done = [str(f) for f in files if str(f) not in done]
        if not report.not_done and report.files:
            report.warnings.append(
                "the final indexing step was interrupted; every file above is stored and "
                "searchable, and the next ingest or `docsight check --repair` finishes it"
            )

    def _optimize(self, *, indexes: bool = True) -> list[str]:
        """The final indexing step (or, ``indexes=False``, a compaction between files). The
        files are committed by now: a failure here (a full disk) leaves their rows found by a
        slower scan, so it is a warning, not an error."""
        step = "final indexing step" if indexes else "compaction between files"
        try:
            return list(self.store.optimize(indexes=indexes) or [])
        except DocsightError as exc:
            return [
                f"the {step} failed ({exc.code}: {exc.message}); every file stored so far is "
                "searchable, and `docsight check --repair` finishes the indexing"
            ]

    # --- in this process, before parsing ------------------------------------------------------

    def _prepare(self, path: Path, by_sha: dict[str, FileOutcome]) -> _Slot:
        """Read, hash and sniff a file and decide whether it needs parsing."""
        started = time.perf_counter()
        slot = _Slot(FileOutcome(path=str(path), status="failed", name=path.name))
        outcome = slot.outcome
        try:
            with _Stopwatch(outcome.timings)("read"):
                self._check(path, slot, by_sha)
        except Exception as exc:
            _record_failure(outcome, exc, path)
            slot.job = None
        outcome.seconds = round(time.perf_counter() - started, 3)
        return slot

    def _check(self, path: Path, slot: _Slot, by_sha: dict[str, FileOutcome]) -> None:
        outcome = slot.outcome
        data = self._read(path)
        sha256 = bytes_sha256(data)
        outcome.doc_id = document_id_from_sha256(sha256)
        media_type = detect_media_type(data, path)
        warning = check_name(media_type, path, data)
        del data
        if warning is not None:
            outcome.warnings.append(warning)
        parser = parser_for(media_type, path)
        slot.parser_id = self._parser_id(parser)
        first = by_sha.get(sha256)
        if first is not None:
            slot.duplicate_of = first  # decided once the first copy is committed
            return
        by_sha[sha256] = outcome
        job = ParseJob(
            path=str(path.resolve()),
            sha256=sha256,
            media_type=media_type,
            # The store keeps the file and rendered images as recipes (put_document is given
            # the source below); only page vectors, made here, need the pixels themselves.
            rendered_pixels=self._visual is not None,
        )
        existing = self.store.has_document(outcome.doc_id)
        if existing is not None and (existing.parser, existing.chunker) == (
            slot.parser_id,
            self._chunker_id(),
        ):
            _mark_skipped(outcome, existing, job.path)
            return
        slot.existing = existing
        slot.job = job

    def _chunker_id(self) -> str:
        return f"{self.chunker.strategy}/{self.chunker.version}"

    def _parser_id(self, parser: Parser) -> str:
        """The parser and version; for parsers that OCR, whether OCR could run, so a document
        parsed before the ``ocr`` extra was installed is parsed again once it is."""
        parser_id = f"{parser.name}/{parser.version}"
        if getattr(parser, "uses_ocr", False) and self.settings.parse.ocr != "never":
            from docsight.vision.common import ocr_available

            parser_id += "+ocr" if ocr_available() else "-ocr"
        return parser_id

    def _read(self, path: Path) -> bytes:
        if not path.exists():
            raise IngestError(path, "no such file")
        if not path.is_file():
            raise IngestError(path, "not a regular file")
        size = path.stat().st_size
        limit = int(self.settings.parse.max_file_mb * 1024 * 1024)
        if size > limit:
            raise LimitExceededError(
                path,
                f"file is {size / 2**20:.1f} MiB, "
                f"over the {self.settings.parse.max_file_mb:g} MiB limit (parse.max_file_mb)",
            )
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise IngestError(path, f"cannot read: {exc.strerror or exc}") from exc
        if not data:
            raise IngestError(path, "file is empty")
        return data

    # --- after parsing: embed and store -------------------------------------------------------

    def _finish(self, slot: _Slot, runner: _Runner, key: int, emit: Callable[[str], None]) -> None:
        try:
            self._finish_file(slot, runner, key, emit)
        finally:
            self._embedder.forget(key)  # vectors made ahead for a file that did not use them

    def _finish_file(
        self, slot: _Slot, runner: _Runner, key: int, emit: Callable[[str], None]
    ) -> None:
        outcome = slot.outcome
        if slot.duplicate_of is not None:
            self._settle_duplicate(slot)
            return
        if slot.job is None:
            return  # failed or skipped before parsing
        with PeakMemory() as peak:
            self._parsed_and_stored(slot, runner, key, emit)
        outcome.process_peak_memory_mb = None if peak.peak_mb is None else round(peak.peak_mb, 1)

    def _parsed_and_stored(
        self, slot: _Slot, runner: _Runner, key: int, emit: Callable[[str], None]
    ) -> None:
        emit("parse")
        result = runner.result(key)
        windows = result.output.windows if result.output is not None else None
        try:
            self._store_result(slot, result, runner, key, emit)
        finally:
            if windows is not None:
                windows.discard()  # its spool file: stored or failed, it is not read again

    def _store_result(
        self,
        slot: _Slot,
        result: JobResult,
        runner: _Runner,
        key: int,
        emit: Callable[[str], None],
    ) -> None:
        outcome = slot.outcome
        outcome.seconds = round(outcome.seconds + result.seconds, 3)
        outcome.peak_memory_mb = result.peak_rss_mb
        if result.output is None:
            outcome.status = "failed"
            outcome.error_code = result.error_code
            outcome.reason = result.reason
            return
        started = time.perf_counter()
        if self._storage_full is not None:
            outcome.status = "failed"
            outcome.error_code = "storage_full"
            outcome.reason = f"not stored: {self._storage_full}"
            return
        try:
            self._store(slot, key, result.output, emit, runner)
        except Exception as exc:
            _record_failure(outcome, exc, Path(outcome.path))
            if outcome.error_code == "storage_full":
                self._storage_full = outcome.reason or "the disk is full"
        outcome.seconds = round(outcome.seconds + time.perf_counter() - started, 3)

    def _settle_duplicate(self, slot: _Slot) -> None:
        """A second copy of bytes seen earlier in this batch ends as the first copy did."""
        outcome, first = slot.outcome, slot.duplicate_of
        assert first is not None
        outcome.doc_id = first.doc_id
        existing = self.store.has_document(first.doc_id) if first.doc_id else None
        if existing is not None:
            _mark_skipped(outcome, existing, str(Path(outcome.path).resolve()))
            return
        outcome.status = "failed"
        outcome.error_code = first.error_code or "ingest_error"
        outcome.reason = f"same content as {first.path}, which failed: {first.reason}"

    def _look_ahead(self, runner: _Runner, key: int) -> None:
        """Embed file ``key``'s chunks now, while this file is stored, if they are back from
        the workers and few (:mod:`docsight.ingest.embedding`)."""
        result = runner.ready(key)
        if result is None or result.output is None or result.output.vectors is not None:
            return
        output = result.output
        count = output.windows.n_chunks if output.windows is not None else len(output.chunks)
        if 0 < count <= AHEAD_CHUNKS:  # unpacking the texts of a long file is not worth it
            self._embedder.ahead(key, output.chunk_texts())

    def _store(
        self,
        slot: _Slot,
        key: int,
        output: ParseOutput,
        emit: Callable[[str], None],
        runner: _Runner,
    ) -> None:
        outcome = slot.outcome
        outcome.timings.update(output.timings)
        clock = _Stopwatch(outcome.timings)
        windows = output.windows
        if windows is None:  # parsed in this process (isolation "none"): cut, not pickled
            if output.graph is None and output.chunks:
                with clock("graph"):  # a runner that did not build it (run_job does)
                    output.graph = build_skeleton(
                        output.parsed.document, output.chunks, window=self.settings.graph.window
                    )
            windows = ParseWindows.cut(output.parsed, output.chunks, output.graph)
        output.windows, output.chunks, output.graph = None, [], None
        head = windows.head
        # The stored parser id is what the skip check compares (it may name OCR availability).
        head.document.parser = slot.parser_id
        outcome.warnings.extend(head.warnings)
        outcome.hidden_elements = windows.hidden_elements
        source = Path(slot.job.path) if slot.job is not None else None
        turn = _Turn(slot, key, output, windows, emit, runner, clock, source)
        info = self._replace_whole(turn) if slot.existing is not None else self._stepwise(turn)
        outcome.pages, outcome.chunks = info.pages, info.chunks
        if info.chunks:
            outcome.status = "added"
        else:
            outcome.status = "no_text"
            outcome.reason = _no_text_reason(slot.parser_id, self.settings)

    def _stepwise(self, turn: _Turn) -> DocumentInfo:
        """A new document, written as it is unpacked: its pages and elements window by window,
        then its chunks window by window as they are embedded, then its graph, finished from
        the chunks' ids and vectors. This process holds one window as objects at a time
        (``ingest.windows``); nothing is visible before the commit, and a failure on the way
        removes what was written (a killed process leaves it to the next ingest's recover)."""
        outcome, windows, clock = turn.slot.outcome, turn.windows, turn.clock
        head = windows.head
        with clock("embed"):
            encoder = self._encoder()  # loaded with the first file; an encoder that does not
        self.store.bind_encoder(encoder.fingerprint, encoder.dim)  # fit fails before any write
        with clock("store"):
            writer = self.store.begin_document(
                head, self._chunker_id(), source=turn.source, windows=windows.elements()
            )
        spooled = None
        try:
            turn.emit("embed")
            ids: list[str] = []
            # The vectors wait on disk until the graph needs them together, so that the
            # embedding's memory does not grow with the document (ingest.spool.RowSpool).
            with _unspoolable(outcome.path):
                spooled = RowSpool(encoder.dim)
            # Model-written summaries read the chunks' content; nothing after this needs it.
            texts: dict[str, str] | None = {} if self.chat is not None else None
            for chunks in windows.chunks():
                with clock("embed"):
                    vectors = self._window_vectors(turn, chunks, len(ids))
                with clock("store"):
                    writer.add_chunks(chunks, vectors)
                with _unspoolable(outcome.path):
                    spooled.add(vectors)
                ids.extend(c.id for c in chunks)
                if texts is not None:
                    texts.update((c.id, strip_placeholders(c.body)) for c in chunks)
                del chunks, vectors
            if len(ids) != windows.n_chunks:
                raise IngestError(
                    Path(outcome.path), f"{len(ids)} chunks arrived of {windows.n_chunks} made"
                )
            self._look_ahead_safely(turn.runner, turn.key + 1)
            # Each step's working memory is gone once it ends (the texts' token ids, the
            # graph's intermediate counts): hand it back before the next step adds its own.
            release_freed_memory()
            page_vectors = self._page_vectors(head, clock)
            with _unspoolable(outcome.path):
                all_vectors = spooled.read()
            spooled.close()
            # The chunks' vectors are written: evolution may use their array as its own.
            graph = self._finish_graph(
                turn, windows.skeleton(), ids, all_vectors, texts, overwrite=True
            )
            del all_vectors
            turn.emit("store")
            with clock("store"):
                if graph is not None:
                    writer.add_graph(graph)
                if page_vectors is not None:
                    writer.add_page_vectors(page_vectors)
                info = writer.commit()
                # From here every read sees the new version alone (see _remove_older).
                self._remove_older(head.document.source, info, outcome)
        except Exception:
            # As put_document does; a killed process (or Ctrl-C) leaves the rows to the next
            # ingest's recover, and none of them is ever visible.
            with suppress(Exception):  # its own failure (a full disk) must not hide the first
                writer.abort()
            raise
        finally:
            if spooled is not None:
                spooled.close()
        return info

    def _replace_whole(self, turn: _Turn) -> DocumentInfo:
        """The same bytes parsed again by a new parser or chunker: the new rows have the stored
        version's document id, so they cannot be written beside it. Everything is made first,
        then the old version goes and the new one is written in one go."""
        existing, clock = turn.slot.existing, turn.clock
        assert existing is not None
        skeleton = turn.windows.skeleton()
        parsed, chunks = turn.windows.whole()
        turn.emit("embed")
        with clock("embed"):
            encoder = self._encoder()
            vectors = self._window_vectors(turn, chunks, 0)
        self._look_ahead_safely(turn.runner, turn.key + 1)
        self.store.bind_encoder(encoder.fingerprint, encoder.dim)
        release_freed_memory()
        page_vectors = self._page_vectors(parsed, clock)
        texts = None
        if self.chat is not None:
            texts = {c.id: strip_placeholders(c.body) for c in chunks}
        graph = self._finish_graph(turn, skeleton, [c.id for c in chunks], vectors, texts)
        turn.emit("store")
        with clock("store"):
            self.store.delete_document(existing.id)
            info = self.store.put_document(
                parsed,
                chunks,
                vectors,
                self._chunker_id(),
                graph,
                source=turn.source,
                page_vectors=page_vectors,
            )
            self._remove_older(parsed.document.source, info, turn.slot.outcome)
        return info

    def _window_vectors(self, turn: _Turn, chunks: Sequence[Chunk], offset: int) -> np.ndarray:
        """The vectors of ``chunks``, the file's chunks from ``offset`` on."""
        outcome, output = turn.slot.outcome, turn.output
        if output.vectors is not None:
            # The Ray engine's actors embedded the chunks already, with the same encoder.
            return np.asarray(output.vectors[offset : offset + len(chunks)])
        vectors, ahead_s = self._embedder.vectors(turn.key, [c.text for c in chunks])
        if ahead_s is not None:
            # Embedded during the last file's graph and store: this stage's clock saw only the
            # wait, and the process CPU of that embedding went to the last file's stages, which
            # ran beside it.
            outcome.timings["count.embedded_ahead"] = 1
            outcome.timings["embed.ahead"] = round(ahead_s, 4)
        return vectors

    def _look_ahead_safely(self, runner: _Runner, key: int) -> None:
        try:
            self._look_ahead(runner, key)
        except Exception:  # only a head start was lost; it is no failure of this file
            log.warning("looking ahead to the next file failed", exc_info=True)

    def _page_vectors(self, parsed: ParsedDocument, clock: _Stopwatch) -> PageVectors | None:
        if self._visual is None:
            return None
        # Page images beside the text, in this process; stored in the same commit.
        with clock("embed_pages"):
            return document_page_vectors(parsed, self._visual(), self.store, self.settings.visual)

    def _finish_graph(
        self,
        turn: _Turn,
        skeleton: ContentGraph | None,
        ids: list[str],
        vectors: np.ndarray,
        texts: dict[str, str] | None,
        *,
        overwrite: bool = False,
    ) -> GraphBundle | None:
        if skeleton is None or not ids:
            return None
        turn.emit("graph")
        with turn.clock("graph"):
            # The worker built the graph beside the chunks; what is left needs the vectors.
            graph = finish_graph(
                skeleton,
                ids,
                vectors,
                self.settings.graph,
                chat=self.chat,
                embed=self._embedder.encode,
                texts=texts,
                overwrite=overwrite,
            )
        release_freed_memory()
        return graph

    def _remove_older(self, source: str, info: DocumentInfo, outcome: FileOutcome) -> None:
        for old in self.store.documents_by_source(source):
            if old.id == info.id:
                continue
            try:
                self.store.delete_document(old.id)
            except Exception as exc:  # whatever it was, the new version is committed
                why = f"{exc.code}: {exc.message}" if isinstance(exc, DocsightError) else exc
                outcome.warnings.append(
                    f"the previous version ({old.id[:12]}) could not be removed yet "
                    f"({why}); it is hidden from every search, and the next ingest or "
                    "`docsight check --repair` removes it"
                )
            else:
                outcome.replaced.append(old.id)


def _no_text_reason(parser_id: str, settings: Settings) -> str:
    if parser_id.endswith("-ocr"):
        return "no extractable text (scanned pages need OCR: pip install 'docsight[ocr]')"
    if parser_id.startswith(("pdf/", "image/")) and settings.parse.ocr == "never":
        return "no extractable text (OCR is off: parse.ocr = never)"
    return "no extractable text"


def _mark_skipped(outcome: FileOutcome, existing: DocumentInfo, source: str) -> None:
    outcome.status = "skipped"
    outcome.reason = (
        "unchanged" if existing.source == source else f"same content as {existing.source}"
    )
    outcome.pages, outcome.chunks = existing.pages, existing.chunks


def _record_failure(outcome: FileOutcome, exc: BaseException, path: Path) -> None:
    outcome.status = "failed"
    if isinstance(exc, DocsightError):
        outcome.error_code = exc.code
        outcome.reason = exc.reason if isinstance(exc, IngestError) else exc.message
    elif isinstance(exc, MemoryError):
        outcome.error_code = "out_of_memory"
        outcome.reason = "ran out of memory while processing the file"
    else:  # a bug or an unexpected library error must not stop the batch
        log.error("unexpected error ingesting %s", path, exc_info=exc)
        outcome.error_code = "internal_error"
        outcome.reason = f"unexpected {type(exc).__name__}: {exc}"


@contextmanager
def _unspoolable(path: str) -> Iterator[None]:
    """An ``OSError`` of the chunk vectors' temporary file as the file's ingest error."""
    try:
        yield
    except OSError as exc:
        raise IngestError(
            Path(path),
            f"the chunk vectors could not be kept in the temporary directory "
            f"{tempfile.gettempdir()} ({exc.strerror or exc}); free space there or set TMPDIR",
        ) from exc


class _Stopwatch:
    """Accumulates wall time per stage into a dict: ``with clock("parse"): ...``; and the
    process's CPU time as ``<stage>.cpu`` (the encoder runs on onnxruntime's threads, which the
    calling thread's clock would miss; the supervisor's reader thread is counted too, a small
    share next to embedding)."""

    def __init__(self, into: dict[str, float]) -> None:
        self.into = into

    @contextmanager
    def __call__(self, stage: str) -> Iterator[None]:
        started = time.perf_counter()
        cpu = time.process_time()
        try:
            yield
        finally:
            self.into[stage] = round(self.into.get(stage, 0.0) + time.perf_counter() - started, 4)
            cpu_key = f"{stage}.cpu"
            self.into[cpu_key] = round(self.into.get(cpu_key, 0.0) + time.process_time() - cpu, 4)
