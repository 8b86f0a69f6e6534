"""Distributed ingestion on Ray (``ingest.engine = "ray"``) into a collection on loopback S3.

A Ray cluster of two nodes on this machine (1 CPU each, all on 127.0.0.1) parses and embeds;
this process writes the collection on a moto server on 127.0.0.1. The same files ingested
locally must give the same rows, table by table: document ids, chunk ids and texts, elements,
maps, graphs, and vectors within float tolerance, and the same search results. A Ray worker
killed while it parses a file costs a retry (or, when the retry dies too, that file alone, as a
failed outcome); a killed embedding actor is restarted; `docsight check` passes afterwards, and
a second writer is refused while the Ray ingest holds the collection's lease. A driver killed
mid-ingest leaves whole documents only, and the next ingest recovers after the lease's ttl.
``DOCSIGHT_INGEST_WORKERS`` bounds the parse tasks at once. Skipped only when ray is not
installed (the ``distributed`` extra).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from docsight import DocSight, Settings
from docsight.cli.main import app
from docsight.errors import CollectionLeasedError
from docsight.index.lease import LEASE_NAME
from docsight.ingest.ray_engine import ACTOR_PREFIX
from docsight.ingest.report import IngestProgress
from docsight.parsers import PARSERS
from docsight.parsers.sniff import TEXT
from fixtures.s3_fixtures import S3Endpoint, moto_server, s3  # noqa: F401 (fixtures)
from fixtures.stall_parser import TARGET

ray = pytest.importorskip("ray", reason="ray is not installed (pip install '.[distributed]')")
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
BOOKTABS = Path("smoke") / "slides-and-manuals" / "booktabs.pdf"
QUERIES = [
    "What was Northwind's revenue in 2024?",
    "error E47 on the T-200",
    "desiccant pack order number",
    "T-300 data plan price",
    "rules in tables toprule midrule bottomrule",
]
#: Columns that differ between two ingestions of the same files by design.
VOLATILE = {"ingested_at"}
runner = CliRunner()


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    """A Ray cluster of two nodes on this machine for the module, 1 CPU each: a head and a
    second node, each a raylet of its own with its own object store, so tasks run on both and
    their results travel between nodes. The engine joins it and leaves it up."""
    from ray.cluster_utils import Cluster

    with warnings.catch_warnings(), pytest.MonkeyPatch.context() as patch:
        warnings.filterwarnings("ignore", "lancedb fork", RuntimeWarning)
        # Ray's switch for a single-machine cluster: every node on 127.0.0.1, not the
        # machine's address (inherited by the daemons and workers Ray starts).
        patch.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        nodes = Cluster(
            initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False}
        )
        try:
            nodes.add_node(num_cpus=1)
            nodes.wait_for_nodes()
            ray.init(address=nodes.address, log_to_driver=False)
            assert len([n for n in ray.nodes() if n["Alive"]]) == 2
            yield ray
        finally:
            ray.shutdown()
            nodes.shutdown()


@dataclass
class Pair:
    local: DocSight
    remote: DocSight
    uri: str
    work_dir: Path
    base: Path
    #: What was ingested: the demo corpus, and the smoke document when the shared data exists.
    inputs: list[Path]
    #: The Ray ingest's progress events.
    events: list[IngestProgress]


def _demo_corpus(folder: Path) -> Path:
    subprocess.run(
        [sys.executable, str(REPO / "scripts" / "make_sample_corpus.py"), str(folder)],
        check=True,
        capture_output=True,
    )
    return folder


def _ray_settings(work_dir: Path, **ingest: Any) -> Settings:
    return Settings(work_dir=work_dir, ingest={"engine": "ray", **ingest})


@pytest.fixture(scope="module")
def pair(
    cluster: Any,
    s3: S3Endpoint,  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
    request: pytest.FixtureRequest,
) -> Pair:
    base = tmp_path_factory.mktemp("ray")
    inputs = [_demo_corpus(base / "corpus")]
    # The smoke document (booktabs, 18 pages) goes in the same ingest: one ingest and one
    # comparison instead of two, and its long parse overlaps the corpus files' on the cluster.
    try:
        shared: Path | None = request.getfixturevalue("shared_data")
    except pytest.skip.Exception:  # no shared data: the corpus alone
        shared = None
    if shared is not None and (shared / BOOKTABS).is_file():
        inputs.append(shared / BOOKTABS)
    expected = 6 + (len(inputs) - 1)
    uri = f"s3://{s3.bucket('ray')}/team/col"
    # The local side parses in-process (the rows are the same either way, and it is faster);
    # the Ray side runs the real path: supervised workers inside the Ray tasks.
    local = DocSight(base / "local", settings=Settings(ingest={"isolation": "none"}))
    remote = DocSight(uri, settings=_ray_settings(base / "work"))
    assert local.ingest(inputs).counts()["added"] == expected
    events: list[IngestProgress] = []
    report = remote.ingest(inputs, progress=events.append)
    assert report.counts() == {"added": expected, "skipped": 0, "no_text": 0, "failed": 0}
    # Every file's chunks were embedded by the actors, not by this process.
    assert all("embed.remote" in f.timings for f in report.files)
    assert all(f.peak_memory_mb for f in report.files)  # parsed in a supervised worker
    return Pair(local, remote, uri, base / "work", base, inputs, events)


def _rows(ds: DocSight) -> dict[str, list[dict[str, Any]]]:
    store: Any = ds.store
    tables = store._connect().list_tables().tables
    return {
        name: sorted(store._table(name).to_arrow().to_pylist(), key=lambda r: r["id"])
        for name in tables
    }


def _assert_same_rows(local: DocSight, remote: DocSight) -> int:
    """Every table holds the same rows; returns the number of rows compared."""
    here, there = _rows(local), _rows(remote)
    assert sorted(here) == sorted(there)
    compared = 0
    for table, rows in here.items():
        other = there[table]
        assert [r["id"] for r in other] == [r["id"] for r in rows], table
        for a, b in zip(rows, other, strict=True):
            assert a.keys() == b.keys()
            for column in a.keys() - VOLATILE:
                if column == "vector":
                    np.testing.assert_allclose(
                        np.asarray(b[column]), np.asarray(a[column]), atol=1e-5, err_msg=table
                    )
                else:
                    assert b[column] == a[column], (table, a["id"], column)
            compared += 1
    return compared


def _above_cut(hits: list[Any]) -> dict[str, float]:
    """Chunk id → score of the hits scored above the last one (a tie at the cut may go
    either way)."""
    return {h.chunk_id: h.score for h in hits if h.score > hits[-1].score}


def _assert_same_answers(local: DocSight, remote: DocSight) -> int:
    """The same search results: each channel (BM25, dense) finds the same chunks with the same
    scores, and the fused ranking is the same, hit by hit. Two chunks with the same BM25 score
    come in the store's scan order, which two collections of the same rows need not share
    whichever engine wrote them (booktabs has such pairs): the fused ranking of such a query is
    compared as a set. Returns the number of queries compared rank by rank."""
    exact = 0
    vectors = local.encoder().encode_queries(QUERIES)
    for query, vector in zip(QUERIES, vectors, strict=True):
        bm25 = local.store.text_search(query, 20)
        assert _above_cut(remote.store.text_search(query, 20)) == pytest.approx(_above_cut(bm25))
        dense_here = _above_cut(local.store.vector_search(vector, 20))
        dense_there = _above_cut(remote.store.vector_search(vector, 20))
        assert dense_there == pytest.approx(dense_here, abs=1e-5)
        here, there = local.search(query, k=8), remote.search(query, k=8)
        assert {h.chunk_id for h in there} == {h.chunk_id for h in here}, query
        scores = [round(h.score, 6) for h in bm25]
        if len(set(scores)) == len(scores):
            assert [(h.chunk_id, h.rank) for h in there] == [(h.chunk_id, h.rank) for h in here]
            assert [h.score for h in there] == pytest.approx([h.score for h in here], rel=1e-5)
            exact += 1
    for doc in local.documents():
        assert remote.document(doc.id) == local.document(doc.id)  # the map
    return exact


def test_ray_ingestion_gives_the_rows_of_a_local_one(pair: Pair, s3: S3Endpoint) -> None:  # noqa: F811
    compared = _assert_same_rows(pair.local, pair.remote)
    assert compared > 100  # documents, elements, chunks, pages, graph nodes...
    # The smoke document's BM25 ties leave fewer queries to compare rank by rank.
    assert _assert_same_answers(pair.local, pair.remote) >= (1 if len(pair.inputs) > 1 else 3)
    bucket = pair.uri.split("/")[2]
    assert any("/chunks.lance/" in key for key in s3.keys(bucket, "team/col/"))
    # Unchanged files are skipped on the driver: nothing reaches the cluster.
    again = DocSight(pair.uri, settings=_ray_settings(pair.work_dir)).ingest(pair.inputs)
    assert again.counts()["skipped"] == 6 + len(pair.inputs) - 1


def test_ray_ingestion_of_the_smoke_document_reports_pages_as_locally(
    pair: Pair, shared_data: Path
) -> None:
    """booktabs (18 pages) went in with the corpus and compared row for row above; here, its
    progress: page by page, as locally, the parse worker's events reaching the driver before
    the result."""
    assert len(pair.inputs) == 2
    stored = {d.name: d for d in pair.remote.documents()}
    assert stored["booktabs.pdf"].pages == 18
    partial = [
        e.page
        for e in pair.events
        if e.path.endswith("booktabs.pdf")
        and e.stage == "parse"
        and e.pages == 18
        and 0 < e.page < 18
    ]
    assert partial and partial == sorted(partial)


def test_killed_ray_workers_cost_a_retry_or_one_file_and_check_passes(
    cluster: Any,
    s3: S3Endpoint,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setattr(PARSERS, "_entries", dict(PARSERS._entries))
    PARSERS.register(TEXT, TARGET, description="test: stalls on command")
    folder = tmp_path / "files"
    folder.mkdir()
    once, always = tmp_path / "once.pids", tmp_path / "always.pids"
    body = "Pallets are inspected weekly; damaged pallets are tagged and removed."
    (folder / "a-once.txt").write_text(f"STALL {once}\n\n{body} Retried once.\n")
    (folder / "b-always.txt").write_text(f"STALL {always}\n\n{body} Killed every time.\n")
    for i in range(3):
        (folder / f"c-plain-{i}.txt").write_text(f"Plain file {i}.\n\n{body} Number {i}.\n")
    uri = f"s3://{s3.bucket('killed')}/team/col"
    work_dir = tmp_path / "work"

    killed: list[int] = []
    refused: list[BaseException | str] = []
    stop = threading.Event()

    def pids(path: Path) -> list[int]:
        return [int(p) for p in path.read_text().split()] if path.exists() else []

    def kill(pid: int) -> None:
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)

    def watch() -> None:
        """Kill the Ray worker parsing a-once once, and b-always every time; meanwhile, a
        second writer tries the collection."""
        while not stop.is_set():
            if (first := pids(once)) and not any(p in killed for p in first) and not refused:
                second = DocSight(uri, settings=Settings(work_dir=work_dir, lock_timeout=0.3))
                try:
                    second.ingest([folder / "c-plain-0.txt"])
                    refused.append("the second writer was let in")
                except Exception as exc:
                    refused.append(exc)
                kill(first[0])
            for pid in pids(always):
                if pid not in killed:
                    kill(pid)
            time.sleep(0.05)

    actor_killed: list[str] = []

    def progress(event: IngestProgress) -> None:
        # Once the first file is stored, the embedding actor is killed; Ray restarts it and
        # the files after it are embedded by the new one.
        if event.stage == "done" and not actor_killed:
            names = [n["name"] for n in ray.util.list_named_actors(all_namespaces=True)]
            name = next(n for n in names if n.startswith(ACTOR_PREFIX))
            ray.kill(ray.get_actor(name), no_restart=False)
            actor_killed.append(name)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        report = DocSight(uri, settings=_ray_settings(work_dir)).ingest([folder], progress)
    finally:
        stop.set()
        watcher.join(timeout=5)
    outcomes = {f.name: f for f in report.files}
    assert actor_killed and refused, (actor_killed, refused)
    assert isinstance(refused[0], CollectionLeasedError), refused
    assert len(pids(once)) == 2 and outcomes["a-once.txt"].status == "added"
    assert len(pids(always)) == 2  # the first run and its one retry, both killed
    failed = outcomes["b-always.txt"]
    assert failed.status == "failed" and failed.error_code == "worker_crashed"
    assert "Ray worker" in (failed.reason or "") and "2 times" in (failed.reason or "")
    assert [outcomes[f"c-plain-{i}.txt"].status for i in range(3)] == ["added"] * 3
    stored = DocSight(uri, settings=Settings(work_dir=work_dir)).documents()
    assert sorted(d.name for d in stored) == ["a-once.txt"] + [f"c-plain-{i}.txt" for i in range(3)]

    checked = runner.invoke(
        app, ["check", "--collection", uri, "--json"], env={"DOCSIGHT_WORK_DIR": str(work_dir)}
    )
    assert checked.exit_code == 0, checked.output
    assert json.loads(checked.output)["ok"] is True


@ray.remote(num_cpus=1)
def _warm(path: tuple[str, ...]) -> None:
    sys.path.extend(p for p in path if p not in sys.path)
    import docsight.ingest.worker  # noqa: F401
    import fixtures.stall_parser  # noqa: F401

    time.sleep(0.5)


def _stamps(stamps: Path) -> tuple[int, set[str]]:
    """The most parses that ran at the same moment, and the nodes they ran on, from their
    ``start end node`` lines."""
    lines = [line.split() for line in stamps.read_text().splitlines()]
    spans = [(float(start), float(end)) for start, end, _ in lines]
    most = max(sum(1 for s, e in spans if s <= start < e) for start, _ in spans)
    return most, {node for _, _, node in lines}


@pytest.mark.parametrize("workers", [1, 0])
def test_ingest_workers_bounds_the_parse_tasks_at_once(
    cluster: Any,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    workers: int,
) -> None:
    """DOCSIGHT_INGEST_WORKERS=1 runs one parse task at a time on the two 1-CPU nodes; unset
    (0), both nodes parse at once (which shows the test can see overlap), and the files parsed
    on the two nodes give the rows a local ingestion gives."""
    monkeypatch.setattr(PARSERS, "_entries", dict(PARSERS._entries))
    PARSERS.register(TEXT, TARGET, description="test: stamps its parse")
    stamps = tmp_path / "stamps"
    folder = tmp_path / "files"
    folder.mkdir()
    for i in range(6):
        (folder / f"f{i}.txt").write_text(f"STAMP {stamps}\n\nFile {i} of the workers test.\n")
    # Two Ray workers with docsight imported, started side by side, so either can take a
    # parse at once: a cold worker's start (seconds on a busy machine) would hide the overlap.
    ray.get([_warm.remote(tuple(sys.path)) for _ in range(2)])
    monkeypatch.setenv("DOCSIGHT_INGEST_WORKERS", str(workers))
    settings = Settings(ingest={"engine": "ray", "isolation": "none"})
    assert settings.ingest.workers == workers
    remote = DocSight(tmp_path / "col", settings=settings)
    assert remote.ingest([folder]).counts()["added"] == 6
    most, nodes = _stamps(stamps)
    assert most == (1 if workers else 2)
    if not workers:
        assert len(nodes) == 2 and "-" not in nodes  # two at once: one on each node
        local = DocSight(tmp_path / "local", settings=Settings(ingest={"isolation": "none"}))
        assert local.ingest([folder]).counts()["added"] == 6
        assert _assert_same_rows(local, remote) > 4
    # The placement group that bounded the tasks is gone with the ingest.
    from ray.util import placement_group_table

    assert all(g["state"] == "REMOVED" for g in placement_group_table().values())


#: The `docsight` command, with the test parser registered first (a driver process of its own).
_DRIVER = (
    "import sys; from docsight.parsers import PARSERS; from docsight.parsers.sniff import TEXT; "
    "from fixtures.stall_parser import TARGET; PARSERS.register(TEXT, TARGET, description='test'); "
    "from docsight.cli.main import main; sys.argv[0] = 'docsight'; main()"
)


def test_a_driver_killed_mid_ingest_leaves_nothing_half_visible_and_the_next_ingest_recovers(
    cluster: Any,
    s3: S3Endpoint,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    folder = tmp_path / "files"
    folder.mkdir()
    body = "Forklifts are charged overnight in bay four; the charger log is checked each morning."
    for name in ("a", "b", "d"):
        (folder / f"{name}.txt").write_text(f"File {name}.\n\n{body}\n")
    flag = tmp_path / "go"
    started = tmp_path / "go.started"
    # c's parse waits for the flag, on one CPU: the other parses the rest, and the driver,
    # which stores files in input order, stores a and b, then waits for c.
    (folder / "c.txt").write_text(f"HOLD {flag}\n\nFile c.\n\n{body}\n")
    uri = f"s3://{s3.bucket('driver')}/team/col"
    work_dir = tmp_path / "work"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO / "tests")]),
        "DOCSIGHT_WORK_DIR": str(work_dir),
        "DOCSIGHT_LEASE_SECONDS": "2",  # a dead driver's lease expires 2 s after its renewal
        # Parsing inside the Ray workers saves starting supervised workers; the driver is the
        # process killed here, and its rows are written the same way either way.
        "DOCSIGHT_INGEST_ISOLATION": "none",
    }
    address = ray.get_runtime_context().gcs_address  # the module's cluster
    command = ["ingest", str(folder), "-c", uri, "--engine", "ray", "--address", address]
    driver = subprocess.Popen(
        [sys.executable, "-c", _DRIVER, *command],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    reader = DocSight(uri, settings=Settings(work_dir=work_dir))
    try:
        deadline = time.monotonic() + 90
        # Killed once a file is stored and a held one is being parsed: mid-ingest.
        while not (started.exists() and _stored(reader)):
            assert driver.poll() is None and time.monotonic() < deadline, "no mid-ingest moment"
            time.sleep(0.1)
        driver.send_signal(signal.SIGKILL)
        assert driver.wait(timeout=10) == -signal.SIGKILL
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
    # What a reader sees: whole documents only, and the dead driver's lease still in place.
    seen = reader.documents()
    assert 1 <= len(seen) < 4
    for doc in seen:
        assert len(reader.store.document_chunks(doc.id)) == doc.chunks > 0
    bucket = uri.split("/")[2]
    assert f"team/col/{LEASE_NAME}" in s3.keys(bucket, "team/col/")
    with pytest.raises(CollectionLeasedError):  # still held: it has not expired yet
        DocSight(uri, settings=Settings(work_dir=work_dir, lock_timeout=0)).ingest([folder])
    # Ray ends the dead driver's job: the task still holding c's parse gives its CPU back.
    deadline = time.monotonic() + 30
    while ray.available_resources().get("CPU", 0) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ray.available_resources().get("CPU", 0) == 2

    # The next ingest waits out the lease, takes it over and stores the rest (with the killed
    # driver's parsers: a file stored by another parser would be parsed again, not skipped).
    flag.touch()
    monkeypatch.setattr(PARSERS, "_entries", dict(PARSERS._entries))
    PARSERS.register(TEXT, TARGET, description="test: stalls on command")
    plain = Settings(
        work_dir=work_dir,
        lock_timeout=120,
        lease_seconds=2,
        ingest={"engine": "ray", "isolation": "none"},
    )
    waited = time.monotonic()
    report = DocSight(uri, settings=plain).ingest([folder])
    # Taken over once it expired, not at the end of the wait: the lease and the four files take
    # a few seconds on a quiet machine and 35 on a loaded one, far short of the 120.
    assert time.monotonic() - waited < 90
    counts = report.counts()
    assert counts["failed"] == 0 and counts["added"] + counts["skipped"] == 4
    assert counts["skipped"] == len(seen)
    stored = DocSight(uri, settings=Settings(work_dir=work_dir)).documents()
    assert sorted(d.name for d in stored) == ["a.txt", "b.txt", "c.txt", "d.txt"]
    checked = runner.invoke(
        app, ["check", "--collection", uri, "--json"], env={"DOCSIGHT_WORK_DIR": str(work_dir)}
    )
    assert checked.exit_code == 0, checked.output
    assert json.loads(checked.output)["ok"] is True


def _stored(reader: DocSight) -> bool:
    try:
        return bool(reader.documents())
    except Exception:  # no collection yet: the first commit has not landed
        return False
