"""Progress of an ingest batch, counted in pages.

Files are a poor unit: a 109-page filing and a one-page note count the same. The workers report
each file's page count as they open it and every page as they parse it; the tracker adds those
up across the batch and hands :class:`IngestProgress` events to the caller's callback, always in
the caller's thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from docsight.ingest.report import FileOutcome, IngestProgress
from docsight.ingest.worker import ParseProgress

ProgressCallback = Callable[[IngestProgress], None]


class ProgressTracker:
    """Pages known and parsed per file of a batch (files are keyed 0-based, shown 1-based)."""

    def __init__(self, paths: list[str], callback: ProgressCallback | None) -> None:
        self.paths = paths
        self.callback = callback
        self.started = time.perf_counter()
        #: Files handed to a parser, their page counts (once known) and pages parsed.
        self._parsing: set[int] = set()
        self._pages: dict[int, int] = {}
        self._parsed: dict[int, int] = {}
        self._stage: dict[int, str] = {}
        self._prepared = 0

    def prepared(self, key: int, needs_parsing: bool) -> None:
        """File ``key`` was read and checked; it needs parsing unless skipped or refused."""
        self._prepared = max(self._prepared, key + 1)
        if needs_parsing:
            self._parsing.add(key)

    def _to_parse(self) -> int:
        # Files not checked yet may all need parsing: the estimate of time left assumes so.
        return len(self._parsing) + len(self.paths) - self._prepared

    def parsed(self, event: ParseProgress) -> None:
        """A worker's report on file ``event.key``."""
        if event.key not in self._parsing:
            return
        if event.total:
            self._pages[event.key] = event.total
        if event.stage == "parse":
            self._parsed[event.key] = min(event.done, event.total or event.done)
        else:  # parsing is over once a later stage starts
            self._parsed[event.key] = self._pages.get(event.key, 0)
        self._stage[event.key] = event.stage
        self.emit(event.key, event.stage)

    def finished(self, key: int, outcome: FileOutcome) -> None:
        """File ``key`` ended: all its pages count as done, whatever became of it."""
        if key in self._parsing:
            pages = max(self._pages.get(key, 0), outcome.pages)
            self._pages[key] = pages
            self._parsed[key] = pages
        self.emit(key, "done", outcome)

    def emit(self, key: int, stage: str, outcome: FileOutcome | None = None) -> None:
        if stage != "done":
            self._stage[key] = stage
        if self.callback is None:
            return
        self.callback(
            IngestProgress(
                index=key + 1,
                total=len(self.paths),
                path=self.paths[key] if 0 <= key < len(self.paths) else "",
                stage=stage,
                page=self._parsed.get(key, 0),
                pages=self._pages.get(key, 0),
                batch_pages_done=sum(self._parsed.values()),
                batch_pages=sum(self._pages.values()),
                files_to_parse=self._to_parse(),
                files_counted=len(self._pages),
                elapsed=round(time.perf_counter() - self.started, 3),
                outcome=outcome,
            )
        )

    def optimizing(self) -> None:
        if self.callback is not None:
            n = len(self.paths)
            self.callback(
                IngestProgress(
                    index=n,
                    total=n,
                    path="",
                    stage="optimize",
                    batch_pages_done=sum(self._parsed.values()),
                    batch_pages=sum(self._pages.values()),
                    files_to_parse=self._to_parse(),
                    files_counted=len(self._pages),
                    elapsed=round(time.perf_counter() - self.started, 3),
                )
            )
