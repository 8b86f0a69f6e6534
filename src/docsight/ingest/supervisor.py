"""Supervision of the worker processes that parse files (see :mod:`docsight.ingest.worker`).

A supervisor thread in the parent starts workers, hands them jobs and watches them:

* wall clock: a file past ``ingest.timeout_s`` gets its worker killed (SIGKILL) → ``timeout``;
* memory: resident memory is polled from ``/proc``; past ``ingest.memory_mb`` → ``out_of_memory``
  (the address-space limit inside the worker is a backstop for allocations faster than the poll);
* CPU: the worker's ``RLIMIT_CPU`` makes the kernel send SIGXCPU → ``cpu_limit``;
* a worker killed by a signal (SIGABRT from PDFium, SIGSEGV) → ``worker_crashed`` naming it.

A dead worker is replaced by a fresh one on demand. Workers are fresh interpreters (never a
``fork``: onnxruntime's and lancedb's threads are live in the parent; see :class:`_Process` for
why not ``multiprocessing``'s ``spawn``), started only once a file needs parsing, so re-ingesting
an unchanged folder starts none. Results are read as soon as they arrive, so a worker never
waits on the parent while its clock runs.

Time spent waiting for a configured vision model does not count against ``timeout_s``: a slow
endpoint describing a long deck is not a hostile file. The model's timeouts, retries and
per-document call cap bound that wait, and so does the supervisor.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass
from multiprocessing import Pipe
from multiprocessing.connection import Connection, wait
from typing import Any

from docsight._memory import process_memory
from docsight.errors import (
    CpuLimitError,
    DocsightError,
    IngestTimeoutError,
    OutOfMemoryError,
    WorkerCrashedError,
)
from docsight.ingest.limits import address_space_mb
from docsight.ingest.split import PageSplitter
from docsight.ingest.spool import Spool
from docsight.ingest.worker import (
    JobResult,
    ParseJob,
    ParseProgress,
    ProgressListener,
    WorkerSetup,
    logging_snapshot,
    registered_parsers,
    replay_log_record,
)

log = logging.getLogger(__name__)

#: Seconds between two looks at the workers' memory and clocks.
POLL_S = 0.05
#: Seconds a new worker may take to import its modules and report ready.
START_TIMEOUT_S = 60.0
#: A worker that ends a file holding more than this share of the memory cap is replaced, so the
#: next file does not start close to the limit (freed memory is rarely returned to the system).
RECYCLE_SHARE = 0.5
#: Workers that die before reporting ready this many times in a row mean something is broken
#: in the environment, not in a file.
MAX_START_FAILURES = 3


@dataclass
class _Running:
    key: int
    job: ParseJob
    started: float
    #: Wall-clock and CPU seconds the job may use, grown by the pages the worker reports.
    budget_s: float
    cpu_s: float | None
    pages: int = 0
    #: Seconds spent waiting for the vision model, which do not count against the budget.
    paused_s: float = 0.0
    vision_since: float | None = None
    peak_mb: float = 0.0
    virtual_mb: float = 0.0
    #: Why the supervisor killed the worker.
    killed: DocsightError | None = None

    @property
    def deadline(self) -> float:
        return self.started + self.paused_s + self.budget_s


class _Process:
    """A worker process: a fresh interpreter running :func:`worker_process` on one end of a
    socket pair.

    Not ``multiprocessing.Process``: its ``spawn`` re-runs the caller's ``__main__`` module in
    every worker, which breaks scripts without a ``__main__`` guard (the worker would start
    ingesting) and callers reading a script from stdin. A plain ``exec`` of the interpreter
    imports nothing but docsight; the caller's ``sys.path`` travels with the setup.
    """

    _ENTRY = "from docsight.ingest.worker import worker_process; worker_process()"

    def __init__(self, setup: WorkerSetup) -> None:
        parent_end, child_end = Pipe(duplex=True)
        fd = child_end.fileno()
        try:
            self.popen = subprocess.Popen(
                [sys.executable, "-c", self._ENTRY, str(fd)],
                pass_fds=(fd,),
                stdin=subprocess.DEVNULL,
            )
        finally:
            child_end.close()
        self.conn: Connection = parent_end
        self.pid = self.popen.pid
        #: Readable once the process has exited (Linux 5.3+); the pipe's end of file otherwise.
        self.sentinel: int | None = None
        with contextlib.suppress(AttributeError, OSError):
            self.sentinel = os.pidfd_open(self.pid)
        # The setup goes first; the worker reads it before anything else.
        with contextlib.suppress(OSError, ValueError):
            self.conn.send(setup)

    def alive(self) -> bool:
        return self.popen.poll() is None

    def wait(self, timeout: float) -> int | None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout)
        return self.popen.returncode

    def kill(self) -> None:
        if self.popen.returncode is None:
            with contextlib.suppress(ProcessLookupError, OSError):
                os.kill(self.pid, signal.SIGKILL)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.conn.close()
        if self.sentinel is not None:
            with contextlib.suppress(OSError):
                os.close(self.sentinel)
            self.sentinel = None


@dataclass
class _Worker:
    process: _Process
    started: float
    ready: bool = False
    job: _Running | None = None
    retiring: bool = False

    @property
    def conn(self) -> Connection:
        return self.process.conn


class Supervisor:
    """A pool of worker processes that parses jobs under the limits of ``settings.ingest``.

    ``submit`` queues a job; ``result`` blocks until that job's result is in (results of other
    jobs are kept until asked for). Always ``close`` it (or use it as a context manager).

    The workers write what they return into the supervisor's spool (:mod:`.spool`): a result's
    windows can be read until they are discarded (``ParseWindows.discard``) or the supervisor
    closes, which deletes the spool.
    """

    def __init__(
        self, setup: WorkerSetup, workers: int | None = None, *, spool: bool = True
    ) -> None:
        self.setup = dataclasses.replace(
            setup,
            parsers=registered_parsers(),
            logging=logging_snapshot(),
            sys_path=tuple(os.path.abspath(p) for p in sys.path),
        )
        self.limits = setup.settings.ingest
        self.size = workers or self.limits.worker_count()
        #: Spreads a long file's pages over the workers (with one worker it would only cost).
        self._splitter: PageSplitter | None = None
        if self.limits.pages_per_part > 0 and self.size >= 2:
            self._splitter = PageSplitter(self.limits.pages_per_part)
        self._pending: deque[tuple[int, ParseJob]] = deque()
        self._lock = threading.Lock()
        self._results: queue.Queue[JobResult | ParseProgress | BaseException] = queue.Queue()
        self._listener: ProgressListener | None = None
        self._done: dict[int, JobResult] = {}
        #: What stopped the supervisor thread, once it has been received.
        self._failure: BaseException | None = None
        self._workers: list[_Worker] = []
        self._stop = threading.Event()
        self._start_failures = 0
        self._thread: threading.Thread | None = None
        #: Workers started and workers lost to a crash or a limit, for reports and tests.
        self.started = 0
        self.replaced = 0
        #: Where the workers write what they return (``None``: it travels in the messages, as
        #: a Ray task's result must, to reach another machine).
        self.spool: Spool | None = Spool() if spool else None

    # --- caller side ---------------------------------------------------------------------------

    def listen(self, listener: ProgressListener) -> None:
        """Call ``listener`` with the progress the workers report. It runs in the caller's
        thread, while :meth:`result` waits: progress is queued with the results."""
        self._listener = listener

    def submit(self, key: int, job: ParseJob) -> None:
        """Queue ``job`` under ``key`` (0 or more; the supervisor's own jobs have keys below)."""
        job = dataclasses.replace(job, spool=self._spool_path())
        with self._lock:
            if self._splitter is not None:
                job = self._splitter.prepare(key, job)
            self._pending.append((key, job))
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._supervise, name="docsight-ingest-supervisor", daemon=True
            )
            self._thread.start()

    def result(self, key: int) -> JobResult:
        while key not in self._done:
            if self._failure is not None:
                raise DocsightError(
                    f"the ingest supervisor failed: {self._failure}"
                ) from self._failure
            try:
                item = self._results.get(timeout=1.0)
            except queue.Empty:
                if self._thread is None or not self._thread.is_alive():
                    raise DocsightError("the ingest supervisor stopped unexpectedly") from None
                continue
            self._take(item)
        return self._done.pop(key)

    def ready(self, key: int) -> JobResult | None:
        """The result of ``key`` if it has arrived, without waiting; :meth:`result` still
        returns it. Progress that arrived with it goes to the listener, as in :meth:`result`."""
        while key not in self._done and self._failure is None:
            try:
                item = self._results.get_nowait()
            except queue.Empty:
                return None
            self._take(item)
        return self._done.get(key)

    def _take(self, item: JobResult | ParseProgress | BaseException) -> None:
        if isinstance(item, BaseException):
            self._failure = item  # raised by the next result()
        elif isinstance(item, ParseProgress):
            if self._listener is not None:
                self._listener(item)
        else:
            self._done[item.key] = item

    def close(self) -> None:
        """Stop the workers and delete the spool with whatever results were not used."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        for worker in list(self._workers):
            self._shutdown(worker)
        self._workers.clear()
        if self.spool is not None:
            self.spool.close()

    def _spool_path(self) -> str | None:
        if self.spool is None:
            return None
        try:
            return self.spool.path
        except OSError as exc:  # no writable temporary directory: results travel whole
            log.warning("results will not be spooled: %s", exc)
            self.spool = None
            return None

    def __enter__(self) -> Supervisor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- supervisor thread ---------------------------------------------------------------------

    def _supervise(self) -> None:
        try:
            while not self._stop.is_set():
                self._start_workers()
                self._dispatch()
                waitables: list[Any] = [w.conn for w in self._workers]
                waitables += [w.process.sentinel for w in self._workers if w.process.sentinel]
                ready = wait(waitables, timeout=POLL_S) if waitables else []
                if not waitables:
                    self._stop.wait(POLL_S)
                for worker in list(self._workers):
                    if worker.conn in ready or worker.process.sentinel in ready:
                        self._service(worker)
                self._watch()
        except BaseException as exc:  # surface to the caller instead of dying silently
            log.exception("ingest supervisor failed")
            self._results.put(exc)

    def _start_workers(self) -> None:
        with self._lock:
            waiting = len(self._pending)
        idle = sum(1 for w in self._workers if w.job is None and not w.retiring)
        while waiting > idle and len(self._workers) < self.size:
            if self._start_failures >= MAX_START_FAILURES:
                self._fail_pending()
                return
            self._workers.append(_Worker(_Process(self.setup), time.monotonic()))
            self.started += 1
            idle += 1

    def _fail_pending(self) -> None:
        with self._lock:
            pending, self._pending = list(self._pending), deque()
        reason = (
            f"worker processes could not start ({MAX_START_FAILURES} attempts failed); "
            "set ingest.isolation to 'none' to see why"
        )
        for key, job in pending:
            self._deliver(JobResult.failed(key, WorkerCrashedError(job.path, reason)))

    def _dispatch(self) -> None:
        for worker in self._workers:
            if not worker.ready or worker.job is not None or worker.retiring:
                continue
            with self._lock:
                if not self._pending:
                    return
                key, job = self._pending.popleft()
            now = time.monotonic()
            wall, cpu = self.limits.budget()
            # A finishing job's parts are the worker's once sent: this process keeps the job
            # for its path only, not its megabytes of pages (split.py).
            kept = dataclasses.replace(job, parts=()) if job.parts else job
            worker.job = _Running(key, kept, now, wall, cpu)
            # If the worker just died, _service reports the job when its sentinel fires.
            with contextlib.suppress(OSError, ValueError):
                worker.conn.send((key, job))

    def _service(self, worker: _Worker) -> None:
        """Read what the worker sent; if it died, report its job and forget it."""
        try:
            while worker.conn.poll():
                self._receive(worker, worker.conn.recv())
        except (EOFError, OSError):
            pass
        if worker.process.alive() and not worker.conn.closed:
            return
        exitcode = worker.process.wait(timeout=5)
        self._forget(worker)
        if worker.job is not None:
            self.replaced += 1
            self._deliver(self._death_result(worker.job, exitcode))
        elif not worker.ready and not worker.retiring:
            self._start_failures += 1
            log.warning("an ingest worker died while starting (exit code %s)", exitcode)

    def _receive(self, worker: _Worker, message: Any) -> None:
        kind = message[0]
        if kind == "log":
            replay_log_record(message[1])
        elif kind == "ready":
            worker.ready = True
            self._start_failures = 0
        elif kind == "budget" and worker.job is not None and worker.job.key == message[1]:
            worker.job.pages, worker.job.budget_s, worker.job.cpu_s = message[2:5]
        elif kind == "vision" and worker.job is not None and worker.job.key == message[1]:
            waiting, now = worker.job, time.monotonic()
            if message[2]:
                waiting.vision_since = now
            elif waiting.vision_since is not None:
                waiting.paused_s += now - waiting.vision_since
                waiting.vision_since = None
        elif kind == "progress":
            event: ParseProgress | None = ParseProgress(*message[1:5])
            if self._splitter is not None and event is not None:
                event = self._splitter.progress(event)
            if event is not None:
                self._results.put(event)
        elif kind == "result":
            result: JobResult = message[1]
            sizes: list[int] = message[2]
            if result.output is not None and sizes:
                parsed = result.output.parsed
                parsed.assets = [
                    dataclasses.replace(asset, data=worker.conn.recv_bytes())
                    for asset, _ in zip(parsed.assets, sizes, strict=True)
                ]
            finished, worker.job = worker.job, None
            if finished is not None and finished.peak_mb:
                result.peak_rss_mb = round(max(result.peak_rss_mb or 0.0, finished.peak_mb), 1)
            self._deliver(result)
            self._maybe_recycle(worker)

    def _deliver(self, result: JobResult) -> None:
        """Hand a job's result to the caller; the jobs of a file split by pages end as the
        file's one result, and their follow-up jobs go ahead of every other file's."""
        if self._splitter is None:
            self._results.put(result)
            return
        step = self._splitter.result(result)
        with self._lock:
            if step.drop:
                kept = [(k, j) for k, j in self._pending if k not in step.drop]
                dropped = {k for k, _ in self._pending} & step.drop
                self._pending = deque(kept)
                self._splitter.forget(dropped)
            self._pending.extendleft(reversed(step.jobs))
        if step.progress is not None:
            self._results.put(step.progress)
        if step.result is not None:
            self._results.put(step.result)

    def _maybe_recycle(self, worker: _Worker) -> None:
        memory = process_memory(worker.process.pid)
        if memory is not None and memory[0] > RECYCLE_SHARE * self.limits.memory_mb:
            worker.retiring = True
            with contextlib.suppress(OSError, ValueError):
                worker.conn.send(None)

    def _watch(self) -> None:
        """Kill workers past their deadline or memory cap; the kill is reported on death."""
        now = time.monotonic()
        cap = self.limits.memory_mb
        for worker in self._workers:
            running = worker.job
            if running is None:
                if not worker.ready and now - worker.started > START_TIMEOUT_S:
                    log.warning("an ingest worker did not start within %g s", START_TIMEOUT_S)
                    self._kill(worker)
                continue
            if running.killed is not None:
                continue
            memory = process_memory(worker.process.pid)
            if memory is not None:
                running.peak_mb = max(running.peak_mb, memory[0])
                running.virtual_mb = max(running.virtual_mb, memory[1])
                if memory[0] > cap:
                    running.killed = OutOfMemoryError(
                        running.job.path,
                        f"killed at {memory[0]:.0f} MiB of memory, over the {cap} MiB limit "
                        "(ingest.memory_mb)",
                    )
                    self._kill(worker)
                    continue
            if running.vision_since is not None:
                if now - running.vision_since > self._vision_budget():
                    running.killed = IngestTimeoutError(
                        running.job.path,
                        f"killed after waiting {now - running.vision_since:.0f} s for the vision "
                        "model (its timeout, retries and max_calls_per_document bound the wait)",
                    )
                    self._kill(worker)
            elif now > running.deadline:
                running.killed = IngestTimeoutError(running.job.path, self._timeout_reason(running))
                self._kill(worker)

    def _timeout_reason(self, running: _Running) -> str:
        limits = self.limits
        if not running.pages or not limits.per_page_s:
            return f"killed after {running.budget_s:g} s (ingest.timeout_s)"
        reason = (
            f"killed after {running.budget_s:.0f} s (ingest.timeout_s {limits.timeout_s:g} s + "
            f"ingest.per_page_s {limits.per_page_s:g} s × {running.pages} pages"
        )
        if running.budget_s < limits.timeout_s + limits.per_page_s * running.pages:
            reason += ", capped at ingest.max_timeout_s"
        return reason + ")"

    def _vision_budget(self) -> float:
        vlm = self.setup.settings.vlm
        per_call = min(
            vlm.budget, vlm.timeout * (vlm.max_retries + 1) + vlm.max_backoff * vlm.max_retries
        )
        rounds = math.ceil(max(1, vlm.max_calls_per_document) / vlm.max_concurrency)
        return per_call * rounds + self.limits.timeout_s

    def _death_result(self, running: _Running, exitcode: int | None) -> JobResult:
        seconds = time.monotonic() - running.started
        peak = round(running.peak_mb, 1) or None
        error = running.killed or self._crash_error(running, exitcode)
        return JobResult.failed(running.key, error, seconds=seconds, peak_rss_mb=peak)

    def _crash_error(self, running: _Running, code: int | None) -> DocsightError:
        path = running.job.path
        if code is None or code >= 0:
            return WorkerCrashedError(
                path, f"the worker process exited unexpectedly (exit status {code})"
            )
        signum = -code
        name = _signal_name(signum)
        if signum == signal.SIGXCPU:
            return CpuLimitError(
                path, f"stopped after {running.cpu_s or 0:.0f} CPU seconds (ingest.cpu_s)"
            )
        address_space = address_space_mb(self.limits)
        if address_space is not None and running.virtual_mb > 0.9 * address_space:
            return OutOfMemoryError(
                path,
                f"the parser died ({name}) at the {address_space} MiB address-space limit "
                "(ingest.address_space_mb)",
            )
        if signum == signal.SIGKILL:
            return WorkerCrashedError(
                path, "the worker process was killed (SIGKILL), probably by the system's "
                "out-of-memory killer",
            )  # fmt: skip
        return WorkerCrashedError(
            path, f"the parser crashed the worker process ({name}); the file is probably malformed"
        )

    def _kill(self, worker: _Worker) -> None:
        worker.process.kill()

    def _forget(self, worker: _Worker) -> None:
        with contextlib.suppress(ValueError):
            self._workers.remove(worker)
        worker.process.close()

    def _shutdown(self, worker: _Worker) -> None:
        """Ask an idle worker to exit; kill it if it does not, or if it is busy."""
        if worker.job is None:
            with contextlib.suppress(OSError, ValueError):
                worker.conn.send(None)
            worker.process.wait(timeout=2)
        if worker.process.alive():
            self._kill(worker)
            worker.process.wait(timeout=5)
        self._forget(worker)


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"
