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
    #: Seconds spent per stage ("parse", "describe", "chunk", "embed", "store").
    timings: dict[str, float] = Field(default_factory=dict)
    #: Peak resident memory of the worker process while it parsed this file, in MiB (``None``
    #: when the file was not parsed in a worker).
    peak_memory_mb: float | None = None


class IngestReport(BaseModel):
    files: list[FileOutcome] = Field(default_factory=list)
    seconds: float = 0.0
    #: What went wrong for the batch rather than a file, such as the final indexing step failing
    #: on a full disk (every file's outcome above still holds).
    warnings: list[str] = Field(default_factory=list)

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


@dataclass(frozen=True)
class IngestProgress:
    """A progress event: ``stage`` of file ``index`` (1-based) out of ``total``."""

    index: int
    total: int
    path: str
    stage: str  # "read", "parse", "embed", "store", "done", "optimize"
