"""Distributed ingestion on Ray (``ingest.engine = "ray"``, ``docsight ingest --engine ray``).

What runs where:

* **This process (the driver)** does what the local engine's parent process does: it discovers
  the files, reads, hashes and sniffs each one, skips the unchanged ones, builds each document's
  graph and writes every row through the collection's store, one document at a time in input
  order, children first and the documents row last (:mod:`docsight.ingest.pipeline`). The
  collection has one writer, under its lock or lease, wherever the work was done.
* **Ray tasks** parse, OCR, describe and chunk one file each. The file's bytes travel with the
  task through Ray's object store, so a node needs no view of the driver's disk. Inside the
  task, the file goes to the same supervised worker process the local engine uses
  (:class:`~docsight.ingest.supervisor.Supervisor` with one worker, kept for the life of the
  Ray worker process), so the per-file limits (wall clock, memory, CPU, address space) and the
  outcomes of a file that crashes or hangs its parser are the local ones, and a hostile file
  never takes the Ray worker down. With ``ingest.isolation = "none"`` the task parses
  in-process, without limits, as the local engine does.
* **Embedding actors** (``ingest.ray_embedders``, each holding one encoder) embed each file's
  chunks in the encoder's batches as soon as its parse task ends, and the vectors come back to
  the driver with the parse result. They run the driver's own embedding function on the same
  encoder, so the vectors are the local ones (the fingerprint is checked).

Failures: a Ray worker process that dies during a task (a lost node, a kill) has its task run
again once (:data:`TASK_RETRIES`); if that fails too, the file ends as ``worker_crashed`` with
the reason, like a local worker's death. An embedding actor that dies is restarted and its call
retried (:data:`ACTOR_RESTARTS`). Nothing is written before a file's parse and vectors are
both in, so a failure leaves no partial document.

Progress: the parse workers' page events go to a small actor (fire and forget, at most a few
a second per file), which the driver drains while it waits for a result, so the tracker sees
the same page-by-page events as locally, a little later.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import secrets
import shutil
import socket
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docsight.errors import (
    ConfigurationError,
    DocsightError,
    EngineUnavailableError,
    IngestError,
    MissingDependencyError,
    OutOfMemoryError,
    WorkerCrashedError,
)
from docsight.ingest.worker import (
    JobResult,
    ParseJob,
    ParseOutput,
    ParseProgress,
    ProgressListener,
    WorkerSetup,
    logging_snapshot,
    registered_parsers,
)
from docsight.settings import EmbedSettings

log = logging.getLogger(__name__)

#: Times a parse task is run again after its Ray worker process died (not after a file's own
#: failure, which the supervised worker reports as an outcome).
TASK_RETRIES = 1
#: Times an embedding actor is restarted after it died, its pending calls retried.
ACTOR_RESTARTS = 2
#: Names of the embedding actors start with this.
ACTOR_PREFIX = "docsight-embed-"
#: Seconds the cluster may take to reserve the CPUs of ``ingest.workers`` parse tasks.
PLACEMENT_TIMEOUT_S = 60.0
#: Seconds between two looks at the progress board while the driver waits for a result, and
#: at least between two page events a task sends for one file.
PROGRESS_S = 0.25


def import_ray() -> Any:
    """The ``ray`` module, or a docsight error naming the extra that provides it."""
    try:
        import ray
    except ImportError as exc:
        raise MissingDependencyError(
            "distributed ingestion (--engine ray)", "distributed", f"ray: {exc}"
        ) from exc
    return ray


@dataclass
class _Flight:
    """A file sent to the cluster: its parse task and the embedding call chained to it."""

    job: ParseJob
    result: Any  # ObjectRef[JobResult]
    vectors: Any  # ObjectRef[tuple[ndarray, fingerprint, wall, cpu]]
    sent: float


class RayRunner:
    """The pipeline's runner (see ``_Runner`` in :mod:`docsight.ingest.pipeline`) on a Ray
    cluster: ``submit`` starts a file's parse task and its embedding, ``result`` waits for both.

    The cluster is joined on first use: ``ingest.ray_address``, else ``$RAY_ADDRESS``, else a
    new local instance that :meth:`close` shuts down again. A process that called ``ray.init``
    itself keeps its cluster.
    """

    def __init__(self, setup: WorkerSetup, fingerprint: Callable[[], str]) -> None:
        settings = setup.settings
        limits = settings.ingest
        # A parse task holds one CPU of the cluster, so its models get one thread each unless
        # ingest.model_threads says otherwise (the local default shares a machine's cores).
        threads = limits.model_threads if limits.model_threads >= 0 else 1
        settings = settings.model_copy(
            update={"ingest": limits.model_copy(update={"model_threads": threads})}
        )
        self.setup = dataclasses.replace(
            setup,
            settings=settings,
            parsers=registered_parsers(),
            logging=logging_snapshot(),
            sys_path=tuple(os.path.abspath(p) for p in sys.path),
        )
        self.limits = limits
        self._fingerprint = fingerprint
        self._ray: Any = None
        self._owns_cluster = False
        self._listener: ProgressListener | None = None
        self._flights: dict[int, _Flight] = {}
        self._done: dict[int, JobResult] = {}
        self._embedders: list[Any] = []
        self._parse: Any = None
        self._setup_ref: Any = None
        self._board: Any = None
        self._size: int | None = None
        self._group: Any = None

    # --- the runner protocol -------------------------------------------------------------------

    @property
    def size(self) -> int:
        """Parse tasks run at once: ``ingest.workers`` when set, else the cluster's CPUs less
        the actors' reservations (never more than those: the rest could not be placed)."""
        if self._size is None:
            ray = self._connect()
            cpus = float(ray.cluster_resources().get("CPU", 1.0))
            reserved = self.limits.ray_embed_cpus * self.limits.ray_embedders
            free = max(1, int(cpus - reserved))
            self._size = min(self.limits.workers, free) if self.limits.workers else free
        return self._size

    def listen(self, listener: ProgressListener) -> None:
        self._listener = listener

    def submit(self, key: int, job: ParseJob) -> None:
        try:
            data = Path(job.path).read_bytes()
        except OSError as exc:
            error = IngestError(job.path, f"cannot read: {exc.strerror or exc}")
            self._done[key] = JobResult.failed(key, error)
            return
        self._start()
        embedder = self._embedders[key % len(self._embedders)]
        result, texts = self._parse.remote(self._setup_ref, job, data, key, self._board)
        # The embedding waits on the task's chunk texts inside the cluster: no round trip here.
        vectors = embedder.embed.remote(texts)
        self._flights[key] = _Flight(job, result, vectors, time.perf_counter())

    def result(self, key: int) -> JobResult:
        if key in self._done:
            return self._done.pop(key)
        flight = self._flights.pop(key)
        ray = self._ray
        try:
            while not ray.wait([flight.result], timeout=PROGRESS_S)[0]:
                self._relay_progress()
            self._relay_progress()
            result: JobResult = ray.get(flight.result)
        except ray.exceptions.RayError as exc:
            return self._lost(key, flight, exc, "parse")
        # The clock and the memory peak are the supervised worker's; the queue is Ray's.
        if result.output is None:
            return result
        try:
            vectors, fingerprint, wall, cpu = ray.get(flight.vectors)
        except ray.exceptions.RayError as exc:
            return self._lost(key, flight, exc, "embed")
        expected = self._fingerprint()
        if fingerprint != expected:
            raise ConfigurationError(
                f"the embedding actors' encoder is {fingerprint}, but this process's is "
                f"{expected}: install the same docsight and models on every node"
            )
        output: ParseOutput = result.output
        output.vectors = vectors
        output.timings["embed.remote"] = round(wall, 4)
        output.timings["embed.remote.cpu"] = round(cpu, 4)
        if self._listener is not None:
            pages = output.parsed.document.page_count
            self._listener(ParseProgress(key, "parse", pages, pages))
        return result

    def ready(self, key: int) -> JobResult | None:
        """Never ahead: the cluster's actors embed every file already."""
        return None

    def _relay_progress(self) -> None:
        """Hand the page events the tasks posted to the listener, in this thread."""
        if self._board is None or self._listener is None:
            return
        try:
            events = self._ray.get(self._board.drain.remote(), timeout=5)
        except Exception as exc:  # progress is a nicety: a lost board never fails a file
            log.debug("progress board: %s", exc)
            return
        for event in events:
            self._listener(ParseProgress(*event))

    def close(self) -> None:
        ray = self._ray
        if ray is None:
            return
        if self._board is not None:
            _quietly(ray.kill, self._board)
            self._board = None
        for flight in self._flights.values():  # an interrupted batch: stop what still runs
            _quietly(ray.cancel, flight.result, force=True)
        self._flights.clear()
        for actor in self._embedders:
            _quietly(ray.kill, actor)
        self._embedders.clear()
        if self._group is not None:
            from ray.util.placement_group import remove_placement_group

            _quietly(remove_placement_group, self._group)
            self._group = None
        if self._owns_cluster:
            _quietly(ray.shutdown)
        self._ray = None

    # --- the cluster ---------------------------------------------------------------------------

    def _connect(self) -> Any:
        if self._ray is not None:
            return self._ray
        ray = import_ray()
        if not ray.is_initialized():
            address = self.limits.ray_address
            where = address or os.environ.get("RAY_ADDRESS") or "a new local instance"
            why = _unreachable(address or os.environ.get("RAY_ADDRESS"))
            if why is not None:
                # Ray itself retries an address that does not answer for minutes, printing as
                # it goes: a refused or silent port is this error at once instead.
                raise EngineUnavailableError(
                    f"cannot reach the Ray cluster at {where} ({why}); check --address "
                    "(ingest.ray_address, $DOCSIGHT_INGEST_RAY_ADDRESS) or $RAY_ADDRESS"
                )
            try:
                with warnings.catch_warnings():
                    # Ray starts its daemons by fork and exec; lancedb's warning about forking
                    # a process that holds its runtime is for forks that go on running Python.
                    warnings.filterwarnings("ignore", "lancedb fork", RuntimeWarning)
                    ray.init(
                        address=address,
                        include_dashboard=False,
                        # Workers' output stays in Ray's logs: outcomes carry the reasons, and
                        # the command's output stays docsight's.
                        log_to_driver=False,
                        logging_level=logging.ERROR,
                    )
            except Exception as exc:  # Ray raises ConnectionError, RuntimeError, ValueError...
                raise EngineUnavailableError(
                    f"cannot start Ray ingestion on {where} ({type(exc).__name__}: "
                    f"{_first_line(exc)}); check --address (ingest.ray_address, "
                    "$DOCSIGHT_INGEST_RAY_ADDRESS) or $RAY_ADDRESS"
                ) from exc
            self._owns_cluster = True
        self._ray = ray
        return ray

    def _start(self) -> None:
        """The remote function and the actors, made once the first file needs parsing."""
        if self._parse is not None:
            return
        ray = self._connect()
        self._setup_ref = ray.put(self.setup)
        options: dict[str, Any] = {}
        if self.limits.workers:
            options["scheduling_strategy"] = self._bounded()
        self._parse = ray.remote(parse_task).options(
            num_cpus=1, num_returns=2, max_retries=TASK_RETRIES, retry_exceptions=False, **options
        )
        actor = ray.remote(EmbedActor)
        self._board = (
            ray.remote(ProgressBoard).options(num_cpus=0, max_restarts=-1).remote()
            if self._listener is not None
            else None
        )
        embed = self.setup.settings.embed
        # Named, so an operator (or a test) can find this ingest's actors on the cluster.
        token = secrets.token_hex(4)
        self._embedders = [
            actor.options(
                name=f"{ACTOR_PREFIX}{token}-{i}",
                num_cpus=self.limits.ray_embed_cpus,
                max_restarts=ACTOR_RESTARTS,
                max_task_retries=ACTOR_RESTARTS,
            ).remote(embed, self.setup.sys_path)
            for i in range(self.limits.ray_embedders)
        ]

    def _bounded(self) -> Any:
        """A placement group of ``size`` one-CPU bundles for the parse tasks, so that Ray
        itself runs at most ``ingest.workers`` of them at once, wherever they land (tasks
        beyond it wait in Ray's queue, started the moment a bundle frees, with no round trip
        through this process). Bundles are spread over the nodes where they fit."""
        from ray.util.placement_group import placement_group, remove_placement_group
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        ray = self._ray
        group = placement_group([{"CPU": 1}] * self.size, strategy="SPREAD")
        try:
            ray.get(group.ready(), timeout=PLACEMENT_TIMEOUT_S)
        except Exception as exc:
            _quietly(remove_placement_group, group)
            raise EngineUnavailableError(
                f"the Ray cluster did not free {self.size} CPUs for the parse tasks within "
                f"{PLACEMENT_TIMEOUT_S:g} s ({type(exc).__name__}); other jobs hold them: lower "
                "DOCSIGHT_INGEST_WORKERS or wait for them"
            ) from exc
        self._group = group
        return PlacementGroupSchedulingStrategy(
            placement_group=group, placement_group_capture_child_tasks=False
        )

    def _lost(self, key: int, flight: _Flight, exc: BaseException, stage: str) -> JobResult:
        """The outcome of a file whose task or actor Ray could not bring to an end."""
        ray = self._ray
        path = flight.job.path
        seconds = time.perf_counter() - flight.sent
        error: DocsightError
        if isinstance(exc, ray.exceptions.OutOfMemoryError):
            error = OutOfMemoryError(path, "Ray's memory monitor killed the task (node memory)")
        elif stage == "embed":
            error = WorkerCrashedError(
                path,
                f"the embedding actor died and was not restored after {ACTOR_RESTARTS} restarts "
                f"({type(exc).__name__})",
            )
        elif isinstance(exc, ray.exceptions.WorkerCrashedError | ray.exceptions.NodeDiedError):
            error = WorkerCrashedError(
                path,
                f"the Ray worker parsing the file died, {TASK_RETRIES + 1} times "
                f"(task retried {TASK_RETRIES}×)",
            )
        else:
            error = WorkerCrashedError(
                path, f"Ray could not run the file ({type(exc).__name__}: {_first_line(exc)})"
            )
        log.warning("%s: %s", path, error.reason)
        return JobResult.failed(key, error, seconds=seconds)


# --- on the cluster ------------------------------------------------------------------------------

#: What a Ray worker process keeps between the tasks it runs: its supervised parse worker (or
#: its in-process state), built on the first task.
_WORKER: dict[str, Any] = {}


def parse_task(
    setup: WorkerSetup, job: ParseJob, data: bytes, key: int = 0, board: Any = None
) -> tuple[JobResult, list[str]]:
    """One file, in a Ray worker process: its parse result and its chunks' texts (which the
    embedding actor reads without the rest of the result). Page events go to ``board``."""
    _adopt(setup)
    local = _local_copy(job, data)
    try:
        here = dataclasses.replace(job, path=str(local)) if local is not None else job
        result = _parse_here(setup, here, _Poster(board, key) if board is not None else None)
    finally:
        if local is not None:
            shutil.rmtree(local.parent, ignore_errors=True)
    output = result.output
    if output is None:
        return result, []
    if local is not None:  # the document is the driver's file, wherever it was parsed
        output.parsed.document.source = job.path
    return result, output.chunk_texts()


def _adopt(setup: WorkerSetup) -> None:
    """The driver's import path and parser registry, so the same parsers run here. A Ray
    worker process outlives one ingest: a task of another ingest, with other settings or
    parsers, replaces what the last one left (its supervised worker too)."""
    if _WORKER.get("setup") == setup:
        return
    from docsight.parsers import PARSERS

    for entry in setup.sys_path:
        if entry not in sys.path and os.path.isdir(entry):
            sys.path.append(entry)
    for name, target, extra, description in setup.parsers:
        PARSERS.register(name, target, extra=extra, description=description)
    old = _WORKER.pop("supervisor", None)
    if old is not None:
        old.close()
    _WORKER.pop("state", None)
    _WORKER["setup"] = setup


def _local_copy(job: ParseJob, data: bytes) -> Path | None:
    """``None`` when this node sees the driver's file as it was hashed; else a copy of the
    shipped bytes under the same name (the name is part of the document)."""
    try:
        if hashlib.sha256(Path(job.path).read_bytes()).hexdigest() == job.sha256:
            return None
    except OSError:
        pass
    folder = Path(tempfile.mkdtemp(prefix="docsight-ray-"))
    copy = folder / Path(job.path).name
    copy.write_bytes(data)
    return copy


def _parse_here(
    setup: WorkerSetup, job: ParseJob, listener: ProgressListener | None = None
) -> JobResult:
    started = time.perf_counter()
    if setup.settings.ingest.isolation == "none":
        from docsight.ingest.worker import InlineRunner, WorkerState

        state = _WORKER.get("state")
        if state is None:
            state = _WORKER["state"] = WorkerState(setup)
        runner: Any = InlineRunner(state.settings, state.context, state.chunker)
    else:
        from docsight.ingest.supervisor import Supervisor

        runner = _WORKER.get("supervisor")
        if runner is None:
            # One worker: the task holds one CPU. It outlives the task, so the models it
            # loaded serve the next file this Ray worker gets; it dies with this process. No
            # spool: the result goes back to the driver, maybe on another machine.
            runner = _WORKER["supervisor"] = Supervisor(setup, workers=1, spool=False)
    if listener is not None:
        runner.listen(listener)
    runner.submit(0, job)
    result: JobResult = runner.result(0)
    if not result.seconds:
        result.seconds = time.perf_counter() - started
    return result


class _Poster:
    """A task's page events, posted to the board without waiting: the first of each stage, then
    at most one every :data:`PROGRESS_S` seconds (the tracker needs the latest, not each)."""

    def __init__(self, board: Any, key: int) -> None:
        self.board = board
        self.key = key
        self._stage = ""
        self._sent = 0.0

    def __call__(self, event: ParseProgress) -> None:
        now = time.monotonic()
        if event.stage == self._stage and now - self._sent < PROGRESS_S:
            return
        self._stage, self._sent = event.stage, now
        try:
            self.board.post.remote((self.key, event.stage, event.done, event.total))
        except Exception as exc:  # progress is a nicety: never fail a parse over it
            log.debug("progress board: %s", exc)


class ProgressBoard:
    """Page events of the running tasks, until the driver drains them."""

    def __init__(self) -> None:
        self.events: list[tuple[int, str, int, int]] = []

    def post(self, event: tuple[int, str, int, int]) -> None:
        self.events.append(event)

    def drain(self) -> list[tuple[int, str, int, int]]:
        events, self.events = self.events, []
        return events


class EmbedActor:
    """One encoder on the cluster; embeds a file's chunk texts as the driver would."""

    def __init__(self, settings: EmbedSettings, sys_path: tuple[str, ...] = ()) -> None:
        for entry in sys_path:
            if entry not in sys.path and os.path.isdir(entry):
                sys.path.append(entry)
        from docsight.encoders import create_encoder

        self.encoder = create_encoder(settings)

    def embed(self, texts: list[str]) -> tuple[Any, str, float, float]:
        """``(vectors, encoder fingerprint, wall seconds, CPU seconds)``."""
        from docsight.ingest.embedding import embed_texts

        wall, cpu = time.perf_counter(), time.process_time()
        vectors = embed_texts(texts, self.encoder)
        return (
            vectors,
            self.encoder.fingerprint,
            time.perf_counter() - wall,
            time.process_time() - cpu,
        )

    def pid(self) -> int:
        return os.getpid()


#: Seconds a cluster's port may take to accept a connection.
CONNECT_TIMEOUT_S = 5.0


def _unreachable(address: str | None) -> str | None:
    """Why ``host:port`` (or ``ray://host:port``) does not accept a TCP connection, or ``None``
    when it does, or when the address names no port (``auto``, a new local instance)."""
    if not address:
        return None
    target = address.removeprefix("ray://")
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit():
        return None
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S):
            return None
    except OSError as exc:
        return exc.strerror or type(exc).__name__


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else ""


def _quietly(action: Callable[..., object], *args: Any, **kwargs: Any) -> None:
    try:
        action(*args, **kwargs)
    except Exception as exc:  # cleanup of a cluster that may be gone already
        log.debug("ray cleanup: %s", exc)
