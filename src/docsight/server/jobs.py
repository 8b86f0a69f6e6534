"""Ingestion jobs: uploads ingested in the background, watched by polling or by SSE.

A job is reserved before its upload is read, so a server at ``server.max_jobs`` refuses the
request (429, :class:`TooManyJobsError`) before storing any of it. Its files stream into
``<collection>/uploads/.incoming/<job>/`` (a remote collection's local working directory stands
for ``<collection>`` here and below); the job then waits its turn (``queued``): jobs of
one server ingest one at a time, since ingestion holds the collection's writer lock and a
second job would only wait on it, and fail after ``lock_timeout``. When its turn comes
(``running``), the files move to ``<collection>/uploads/<name>`` and go through
:meth:`DocSight.ingest` like any other files, in the same isolated workers. A stable path per
name is what makes an upload of a new ``report.pdf`` replace the document of the old one, as
ingesting the same path again does; it is also why jobs take turns.

Once ingested, the uploaded files are deleted: the collection keeps its own copy of what page
images are made from (``sources/``, by content hash, for PDFs and images) and stores the pages
of every other format, so nothing reads the upload again.

Finished jobs are remembered (the last :data:`KEEP_FINISHED`) so a client can read the outcome
late. Progress reaches watchers as events on per-watcher asyncio queues, pushed from the
ingesting thread with ``call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from docsight.errors import JobNotFoundError, TooManyJobsError
from docsight.server.errors import error_json

if TYPE_CHECKING:
    from docsight.api import DocSight
    from docsight.ingest.report import IngestProgress

log = logging.getLogger(__name__)

JobStatus = Literal["queued", "running", "done", "failed"]
UPLOADS_DIR = "uploads"
_INCOMING = ".incoming"
#: Finished jobs kept for late readers; older ones are forgotten (404).
KEEP_FINISHED = 200

#: An event for watchers: ``("progress", data)`` or ``("done", job JSON)``.
Event = tuple[str, dict[str, Any]]


@dataclass
class Job:
    id: str
    status: JobStatus = "queued"
    files: list[str] = field(default_factory=list)
    report: dict[str, Any] | None = None
    error: dict[str, str] | None = None
    progress: dict[str, Any] | None = None
    _watchers: list[tuple[asyncio.AbstractEventLoop, asyncio.Queue[Event]]] = field(
        default_factory=list, repr=False
    )

    @property
    def finished(self) -> bool:
        return self.status in ("done", "failed")

    def to_json(self) -> dict[str, Any]:
        """The job as ``GET /jobs/{id}`` returns it."""
        progress = None
        if self.progress is not None:
            progress = {k: self.progress[k] for k in ("file", "stage", "page", "pages", "index")}
            progress["total"] = self.progress["total"]
        return {
            "job": self.id,
            "status": self.status,
            "files": list(self.files),
            "report": self.report,
            "error": self.error,
            "progress": progress,
        }


class JobManager:
    """The jobs of one server over one :class:`DocSight`."""

    def __init__(self, ds: DocSight, max_jobs: int) -> None:
        self.ds = ds
        self.max_jobs = max_jobs
        # The collection directory itself for a local collection; for one on object storage its
        # local working directory, since uploads are files the workers read from a disk.
        self.root = Path(ds.work_dir) / UPLOADS_DIR
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._lock = threading.Lock()
        #: Held by the job that is ingesting (see the module docstring).
        self._turn = threading.Lock()
        self._threads: dict[str, threading.Thread] = {}

    # --- lifecycle ----------------------------------------------------------------------------

    def reserve(self) -> tuple[Job, Path]:
        """A new queued job and the empty directory its upload streams into; raises
        :class:`TooManyJobsError` when ``max_jobs`` jobs are unfinished."""
        with self._lock:
            active = sum(1 for j in self._jobs.values() if not j.finished)
            if active >= self.max_jobs:
                raise TooManyJobsError(
                    f"{active} ingestion jobs are running, the most this server runs at once "
                    "(server.max_jobs); try again when one has finished"
                )
            job = Job(id=uuid.uuid4().hex)
            self._jobs[job.id] = job
            self._forget_old()
        incoming = self._incoming(job.id)
        try:
            incoming.mkdir(parents=True)
        except BaseException:
            self.discard(job)
            raise
        return job, incoming

    def discard(self, job: Job) -> None:
        """Forget a reserved job whose upload was refused, and whatever of it was stored."""
        with self._lock:
            self._jobs.pop(job.id, None)
        shutil.rmtree(self._incoming(job.id), ignore_errors=True)

    def start(self, job: Job, names: list[str]) -> None:
        """Ingest the received files in the background."""
        job.files = list(names)
        thread = threading.Thread(
            target=self._run, args=(job,), name=f"docsight-job-{job.id[:8]}", daemon=True
        )
        with self._lock:
            self._threads[job.id] = thread
        thread.start()

    def get(self, job_id: str) -> Job:
        with self._lock:
            job = self._jobs.get(job_id)
        if job is None:
            raise JobNotFoundError(f"no ingestion job {job_id[:64]!r} on this server")
        return job

    def active(self) -> int:
        with self._lock:
            return sum(1 for j in self._jobs.values() if not j.finished)

    def close(self, timeout: float = 30.0) -> None:
        """Wait (up to ``timeout`` seconds in all) for running jobs: ingestion cannot be cut
        short from another thread, and what it commits is whole either way."""
        with self._lock:
            threads = list(self._threads.values())
        deadline = _now() + timeout
        for thread in threads:
            thread.join(max(0.0, deadline - _now()))
        if any(t.is_alive() for t in threads):
            log.warning("ingestion jobs still running at shutdown; ingest their files again")

    # --- watching -----------------------------------------------------------------------------

    def watch(self, job: Job) -> asyncio.Queue[Event]:
        """A queue of the job's events from now on: first its latest progress (if any), and
        ``done`` with the job JSON at the end (at once for a finished job)."""
        queue: asyncio.Queue[Event] = asyncio.Queue()
        with self._lock:
            if job.finished:
                queue.put_nowait(("done", job.to_json()))
            else:
                if job.progress is not None:
                    queue.put_nowait(("progress", dict(job.progress)))
                job._watchers.append((asyncio.get_running_loop(), queue))
        return queue

    def unwatch(self, job: Job, queue: asyncio.Queue[Event]) -> None:
        with self._lock:
            job._watchers = [(lp, q) for lp, q in job._watchers if q is not queue]

    def _publish(self, job: Job, event: Event) -> None:
        with self._lock:
            watchers = list(job._watchers)
            if event[0] == "done":
                job._watchers.clear()
        for loop, queue in watchers:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is watching
                loop.call_soon_threadsafe(queue.put_nowait, event)

    # --- the work -----------------------------------------------------------------------------

    def _run(self, job: Job) -> None:
        try:
            with self._turn:
                job.status = "running"
                self._ingest(job)
        except BaseException as exc:  # a job thread must end with a status, whatever happened
            job.error = error_json(exc)
            job.status = "failed"
        finally:
            shutil.rmtree(self._incoming(job.id), ignore_errors=True)
            with self._lock:
                self._threads.pop(job.id, None)
            self._publish(job, ("done", job.to_json()))

    def _ingest(self, job: Job) -> None:
        from docsight.ingest.report import IngestInterrupted

        incoming = self._incoming(job.id)
        placed: list[Path] = []
        try:
            for name in job.files:
                target = self.root / name
                os.replace(incoming / name, target)
                placed.append(target)
            try:
                report = self.ds.ingest(placed, progress=lambda e: self._progress(job, e))
            except IngestInterrupted as stop:  # not from Ctrl-C here, but keep what it kept
                report = stop.report
            job.report = {**report.model_dump(mode="json"), "counts": report.counts()}
            job.status = "done"
        finally:
            for path in placed:
                with contextlib.suppress(OSError):
                    path.unlink()

    def _progress(self, job: Job, event: IngestProgress) -> None:
        data = {
            "file": Path(event.path).name,
            "stage": event.stage,
            "page": event.page,
            "pages": event.pages,
            "index": event.index,
            "total": event.total,
            "batch_pages_done": event.batch_pages_done,
            "batch_pages": event.batch_pages,
        }
        job.progress = data
        self._publish(job, ("progress", data))

    # --- helpers ------------------------------------------------------------------------------

    def _incoming(self, job_id: str) -> Path:
        return self.root / _INCOMING / job_id

    def _forget_old(self) -> None:
        finished = [j.id for j in self._jobs.values() if j.finished]
        for job_id in finished[: max(0, len(finished) - KEEP_FINISHED)]:
            del self._jobs[job_id]


def _now() -> float:
    import time

    return time.monotonic()


__all__ = ["UPLOADS_DIR", "Job", "JobManager", "JobStatus"]
