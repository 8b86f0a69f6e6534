"""Ingestion: read → sniff → (skip if unchanged) → parse → chunk → embed → store.

A file is identified by the hash of its bytes, so an unchanged file is recognised without being
parsed, and only a new parser version makes docsight parse it again. A file that replaces an
earlier version at the same path supersedes it once the new version is committed. One bad file
never stops a batch: it ends as a failed outcome with the reason.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from docsight.document.ids import bytes_sha256
from docsight.encoders.base import Encoder
from docsight.errors import DocsightError, IngestError, LimitExceededError
from docsight.index.base import Store
from docsight.ingest.chunking import Chunker
from docsight.ingest.describe import enrich
from docsight.ingest.picture_text import read_picture_text
from docsight.ingest.report import FileOutcome, IngestProgress, IngestReport
from docsight.parsers import parser_for
from docsight.parsers.base import ParseContext, Parser, SourceFile
from docsight.parsers.sniff import detect_media_type
from docsight.settings import Settings

log = logging.getLogger(__name__)

#: File types picked up when a directory is ingested; files named explicitly are always tried.
DOCUMENT_SUFFIXES = frozenset(
    {".pdf", ".md", ".markdown", ".txt", ".text", ".html", ".htm", ".docx", ".pptx", ".xlsx"}
    | {".png", ".jpg", ".jpeg", ".tif", ".tiff"}
)

ProgressCallback = Callable[[IngestProgress], None]


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


class IngestPipeline:
    def __init__(
        self,
        store: Store,
        encoder: Callable[[], Encoder],
        chunker: Chunker,
        settings: Settings,
        context: ParseContext | None = None,
    ) -> None:
        self.store = store
        self._encoder = encoder  # loaded on the first file that needs embedding
        self.chunker = chunker
        self.settings = settings
        self.context = context or ParseContext()

    def run(
        self, paths: Sequence[str | Path], progress: ProgressCallback | None = None
    ) -> IngestReport:
        started = time.perf_counter()
        files, passed_over = discover(paths, exclude=[self.store.path])
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
        self.store.recover()
        changed = False
        for index, path in enumerate(files, start=1):

            def emit(stage: str, _i: int = index, _p: Path = path) -> None:
                if progress is not None:
                    progress(IngestProgress(_i, len(files), str(_p), stage))

            outcome = self._ingest_one(path, emit)
            changed = changed or outcome.status in ("added", "no_text")
            report.files.append(outcome)
            emit("done")
        if changed:
            if progress is not None:
                progress(IngestProgress(len(files), len(files), "", "optimize"))
            self.store.optimize()
        report.seconds = time.perf_counter() - started
        return report

    def _ingest_one(self, path: Path, emit: Callable[[str], None]) -> FileOutcome:
        started = time.perf_counter()
        outcome = FileOutcome(path=str(path), status="failed", name=path.name)
        try:
            self._process(path, outcome, emit)
        except DocsightError as exc:
            outcome.status = "failed"
            outcome.error_code = exc.code
            outcome.reason = exc.reason if isinstance(exc, IngestError) else exc.message
        except MemoryError:
            outcome.status = "failed"
            outcome.error_code = "out_of_memory"
            outcome.reason = "ran out of memory while processing the file"
        except Exception as exc:  # a bug or an unexpected library error must not stop the batch
            log.exception("unexpected error ingesting %s", path)
            outcome.status = "failed"
            outcome.error_code = "internal_error"
            outcome.reason = f"unexpected {type(exc).__name__}: {exc}"
        outcome.seconds = round(time.perf_counter() - started, 3)
        return outcome

    def _parser_id(self, parser: Parser) -> str:
        """The parser and version; for parsers that OCR, whether OCR could run, so a document
        parsed before the ``ocr`` extra was installed is parsed again once it is."""
        parser_id = f"{parser.name}/{parser.version}"
        if getattr(parser, "uses_ocr", False) and self.settings.parse.ocr != "never":
            from docsight.parsers.vision.common import ocr_available

            parser_id += "+ocr" if ocr_available() else "-ocr"
        return parser_id

    def _read(self, path: Path) -> SourceFile:
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
                f"over the {self.settings.parse.max_file_mb:g} MiB limit",
            )
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise IngestError(path, f"cannot read: {exc.strerror or exc}") from exc
        if not data:
            raise IngestError(path, "file is empty")
        return SourceFile(
            path=path.resolve(),
            data=data,
            sha256=bytes_sha256(data),
            media_type=detect_media_type(data, path),
        )

    def _process(self, path: Path, outcome: FileOutcome, emit: Callable[[str], None]) -> None:
        emit("read")
        source = self._read(path)
        outcome.doc_id = source.doc_id
        parser = parser_for(source.media_type, path)
        parser_id = self._parser_id(parser)
        chunker_id = f"{self.chunker.strategy}/{self.chunker.version}"

        existing = self.store.has_document(source.doc_id)
        if existing is not None and (existing.parser, existing.chunker) == (parser_id, chunker_id):
            outcome.status = "skipped"
            outcome.reason = (
                "unchanged"
                if existing.source == str(source.path)
                else f"same content as {existing.source}"
            )
            outcome.pages, outcome.chunks = existing.pages, existing.chunks
            return

        clock = _Stopwatch(outcome.timings)
        emit("parse")
        with clock("parse"):
            parsed = parser.parse(source, self.settings.parse, self.context)
        # The stored parser id is what the skip check compares (it may name OCR availability).
        parsed.document.parser = parser_id
        outcome.warnings.extend(parsed.warnings)
        with clock("describe"):
            read_picture_text(parsed, self.context, self.settings.parse)
            enrich(parsed, self.context.vlm)
        with clock("chunk"):
            chunks = self.chunker.chunk(parsed.document)

        emit("embed")
        with clock("embed"):
            encoder = self._encoder()
            vectors = (
                encoder.encode_documents([c.text for c in chunks])
                if chunks
                else np.zeros((0, encoder.dim), dtype=np.float32)
            )
        self.store.bind_encoder(encoder.fingerprint, encoder.dim)

        emit("store")
        with clock("store"):
            if existing is not None:
                # Same bytes, new parser or chunker: the old rows have other ids; replace them.
                self.store.delete_document(existing.id)
            info = self.store.put_document(parsed, chunks, vectors, chunker_id)
            for old in self.store.documents_by_source(str(source.path)):
                if old.id != info.id:
                    self.store.delete_document(old.id)
                    outcome.replaced.append(old.id)

        outcome.pages, outcome.chunks = info.pages, info.chunks
        if chunks:
            outcome.status = "added"
        else:
            outcome.status = "no_text"
            outcome.reason = "no extractable text (scanned pages need OCR)"


class _Stopwatch:
    """Accumulates wall time per stage into a dict: ``with clock("parse"): ...``."""

    def __init__(self, into: dict[str, float]) -> None:
        self.into = into

    @contextmanager
    def __call__(self, stage: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.into[stage] = round(self.into.get(stage, 0.0) + time.perf_counter() - started, 4)
