"""What ingestion reports back, per file and for a batch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field

Status = Literal["added", "skipped", "no_text", "failed"]


class FileOutcome(BaseModel):
    path: str
    status: Status
    name: str
    doc_id: str | None = None
    #: Why a file was skipped or failed, in words a user can act on.
    reason: str | None = None
    #: Set when the file failed: ``unsupported_format``, ``parse_error``, ``limit_exceeded``,
    #: ``encrypted``, ``ingest_error`` (unreadable, empty, changed while read); from the worker
    #: supervision ``timeout``, ``out_of_memory``, ``cpu_limit`` and ``worker_crashed``; and
    #: ``store_error``, ``storage_full`` (the disk is full: this file and the ones after it are
    #: not stored), ``read_only``, ``collection_damaged``, ``encoder_error`` or
    #: ``internal_error`` (a bug).
    error_code: str | None = None
    pages: int = 0
    chunks: int = 0
    seconds: float = 0.0
    #: Documents removed because this file, at the same path, replaced them.
    replaced: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    #: Elements of text a reader would not see (see ``document.model.Hidden``): stored in the
    #: map, kept out of search.
    hidden_elements: int = 0
    #: Wall seconds per stage ("read", "verify", "parse", "describe", "chunk", "embed",
    #: "graph", "store"), each with its CPU seconds as "<stage>.cpu"; per model of the worker
    #: ("model.<ocr|layout|table|picture_ocr>.<calls|pixels|wall|cpu>"); and what the file held
    #: ("count.<pages|tables|pictures|pictures_ocr|chunks>"). See benchmarks/ingest_profile.py.
    timings: dict[str, float] = Field(default_factory=dict)
    #: Peak resident memory of the worker process while it parsed this file, in MiB (``None``
    #: when the file was not parsed in a worker).
    peak_memory_mb: float | None = None
    #: Peak resident memory of the ingesting process (the one that called ingest) while it
    #: waited for this file's parse, then embedded, built the graph of and stored it, in MiB;
    #: with ``ingest.isolation = "none"`` the parse ran in it too. Looked at every 50 ms
    #: (``None``: the file was not parsed, or the system has no ``/proc``).
    process_peak_memory_mb: float | None = None


class IngestReport(BaseModel):
    files: list[FileOutcome] = Field(default_factory=list)
    seconds: float = 0.0
    #: What went wrong for the batch rather than a file, such as the final indexing step failing
    #: on a full disk (every file's outcome above still holds).
    warnings: list[str] = Field(default_factory=list)
    #: The batch was interrupted (Ctrl-C): ``files`` holds the files that were kept or had
    #: failed by then, ``not_done`` the files that were not stored.
    interrupted: bool = False
    not_done: list[str] = Field(default_factory=list)

    def _with(self, status: Status) -> list[FileOutcome]:
        return [f for f in self.files if f.status == status]

    @property
    def added(self) -> list[FileOutcome]:
        return self._with("added")

    @property
    def skipped(self) -> list[FileOutcome]:
        return self._with("skipped")

    @property
    def no_text(self) -> list[FileOutcome]:
        return self._with("no_text")

    @property
    def failed(self) -> list[FileOutcome]:
        return self._with("failed")

    def counts(self) -> dict[str, int]:
        return {s: len(self._with(s)) for s in ("added", "skipped", "no_text", "failed")}


#: Stages a file goes through, in order: ``read`` (hash and sniff), ``parse`` (pages, in a
#: worker process), ``describe`` (text in pictures, descriptions), ``embed``, ``graph``,
#: ``store``, then ``done``; ``optimize`` is the batch's final indexing step.
STAGES = ("read", "parse", "describe", "embed", "graph", "store", "done", "optimize")


@dataclass(frozen=True)
class IngestProgress:
    """A progress event: ``stage`` of file ``index`` (1-based) out of ``total``.

    Events are data for whatever shows them (the CLI's bar and lines, a server's stream): they
    carry counts, never text meant for a person. Page counts come from the worker parsing the
    file, so a file's ``pages`` is 0 until parsing starts; the batch counts cover the files
    whose pages are known (``files_counted`` of the files that need work).
    """

    index: int
    total: int
    path: str
    stage: str
    #: Pages of this file done in ``stage`` (``parse``), and the file's pages (0: not known).
    page: int = 0
    pages: int = 0
    #: Pages of the batch parsed so far, and pages of the files counted so far.
    batch_pages_done: int = 0
    batch_pages: int = 0
    #: Files of the batch that need parsing (not skipped), and how many of them are counted.
    files_to_parse: int = 0
    files_counted: int = 0
    #: Seconds since the batch started.
    elapsed: float = 0.0
    #: How the file ended (``stage == "done"`` only).
    outcome: FileOutcome | None = None

    def pages_per_second(self) -> float | None:
        """Pages parsed per second over the batch so far (``None`` before the first page)."""
        if self.batch_pages_done <= 0 or self.elapsed <= 0:
            return None
        return self.batch_pages_done / self.elapsed

    def seconds_left(self) -> float | None:
        """An estimate of the batch's remaining seconds from its page rate so far (``None``
        until a page is done): files not counted yet are assumed as long as the counted ones."""
        if self.batch_pages_done <= 0 or self.elapsed <= 0 or not self.files_counted:
            return None
        per_file = self.batch_pages / self.files_counted
        expected = self.batch_pages + per_file * max(0, self.files_to_parse - self.files_counted)
        rate = self.pages_per_second() or 1.0
        return max(0.0, (expected - self.batch_pages_done) / rate)


class IngestInterrupted(KeyboardInterrupt):
    """Ctrl-C during ingestion. ``report`` lists the files that were kept (committed: their
    outcome stands) and, in ``report.not_done``, the files that were not stored; ingesting the
    same paths again finishes the job (kept files are skipped as unchanged)."""

    def __init__(self, report: IngestReport) -> None:
        super().__init__("ingestion interrupted")
        self.report = report
