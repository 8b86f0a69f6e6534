"""Crash safety of ingestion (issue 6): a killed ingest is finished by the next one.

``docsight ingest`` runs in a subprocess and is SIGKILLed at seeded random moments spread over a
clean run's duration, or right after a random table commit (a timed kill mostly lands while files
are parsed); running it again must leave exactly the documents and chunks of a clean ingest (ids
are content hashes, so the comparison is by id), with no duplicates, no orphans, the text index
in place and a clean ``docsight check``. In-process, a crash is also simulated at every write step
of a document, so each commit step is covered deterministically. Finally, a second writer on the
same collection waits for the lock or fails with ``CollectionLockedError``. About 75 s on two
shared cores.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock, Timeout
from typer.testing import CliRunner

from docsight import DocSight
from docsight.cli.main import app
from docsight.errors import CollectionLockedError
from docsight.settings import Settings
from fixtures import officegen, pdfgen
from fixtures.corpus_fixtures import write_corpus

#: Kills at a random moment of the run (mostly while files are parsed) ...
TIME_TRIALS = 3
#: ... and right after a random table commit (mid-document, mid-index, mid-optimize).
COMMIT_TRIALS = 2
#: How long workers may outlive a killed ingest (they die with their parent via PDEATHSIG).
WORKER_EXIT_S = 10.0
RUN_TIMEOUT_S = 180.0


@dataclass(frozen=True)
class Snapshot:
    documents: list[str]  # sorted, repeated ids would show
    chunks: list[str]

    @classmethod
    def of(cls, collection: Path) -> Snapshot:
        ds = DocSight(collection)
        docs = sorted(d.id for d in ds.documents())
        chunks = sorted(c.id for d in docs for c in ds.store.document_chunks(d))
        return cls(docs, chunks)


@dataclass(frozen=True)
class Reference:
    corpus: Path
    snapshot: Snapshot
    seconds: float  # a clean run of the command, start to exit
    commits: int  # table versions a clean run writes


def _commits(collection: Path) -> int:
    """Table versions written so far (Lance commits one manifest per version)."""
    tables = collection / "tables"
    if not tables.is_dir():
        return 0
    return sum(
        len(os.listdir(versions))
        for versions in (t / "_versions" for t in tables.iterdir())
        if versions.is_dir()
    )


def _command(collection: Path, corpus: Path) -> list[str]:
    exe = Path(sys.executable).with_name("docsight")
    cli = [str(exe)] if exe.exists() else [sys.executable, "-m", "docsight.cli.main"]
    return [*cli, "-c", str(collection), "ingest", str(corpus), "--json"]


def _start(collection: Path, corpus: Path, log: Path) -> subprocess.Popen[bytes]:
    # A session of its own, so any worker left behind can be found (and reaped) by group.
    with open(log, "wb") as out, open(log.with_suffix(".err"), "wb") as err:
        return subprocess.Popen(
            _command(collection, corpus), stdout=out, stderr=err, start_new_session=True
        )


def _group_members(pgid: int) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":  # fields[2] is the process group
            members.append(int(entry.name))
    return members


def _reap_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def _run_to_completion(collection: Path, corpus: Path, log: Path) -> dict[str, Any]:
    proc = _start(collection, corpus, log)
    try:
        code = proc.wait(timeout=RUN_TIMEOUT_S)
    finally:
        _reap_group(proc.pid)
    assert code == 0, log.with_suffix(".err").read_text()
    return json.loads(log.read_text())  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Reference:
    """Eight small files of six types, and what a clean ingest of them stores."""
    base = tmp_path_factory.mktemp("crash")
    corpus = write_corpus(base / "corpus")
    pdfgen.make_report(corpus / "report.pdf")
    pdfgen.make_two_column(corpus / "two-column.pdf")
    pdfgen.make_numbered(corpus / "numbered.pdf")
    officegen.make_docx(corpus / "procedure.docx")
    officegen.make_pptx(corpus / "deck.pptx")
    officegen.make_xlsx(corpus / "sheet.xlsx")
    report = _run_to_completion(base / "col", corpus, base / "reference.log")
    assert report["counts"]["added"] == 8, report
    snapshot = Snapshot.of(base / "col")
    assert len(snapshot.documents) == 8 and snapshot.chunks
    # Timed on a second, warm run (the first pays for cold caches and would place the last
    # trials' kills after the end); its ids must be the same.
    started = time.perf_counter()
    _run_to_completion(base / "timed", corpus, base / "timed.log")
    seconds = time.perf_counter() - started
    assert Snapshot.of(base / "timed") == snapshot
    return Reference(corpus, snapshot, seconds, _commits(base / "timed"))


def _assert_whole(collection: Path, reference: Reference) -> None:
    assert Snapshot.of(collection) == reference.snapshot
    report = DocSight(collection).check()
    assert report.problems == [], report.problems
    assert report.counts["documents"] == len(reference.snapshot.documents)
    assert report.counts["chunks"] == len(reference.snapshot.chunks)
    # Keyword search needs the text index: a run killed before building it must not lose it.
    assert DocSight(collection).store.text_search("warranty two years", 3)


def _kill_after_commit(proc: subprocess.Popen[bytes], collection: Path, commit: int) -> bool:
    while proc.poll() is None:
        if _commits(collection) >= commit:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            return True
        time.sleep(0.003)
    return False


def _kill_after(proc: subprocess.Popen[bytes], seconds: float) -> bool:
    try:
        proc.wait(timeout=seconds)
        return False
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        return True


@pytest.mark.slow
@pytest.mark.parametrize(
    ("kind", "trial"),
    [("time", i) for i in range(TIME_TRIALS)] + [("commit", i) for i in range(COMMIT_TRIALS)],
)
def test_sigkill_then_rerun_completes_the_collection(
    kind: str, trial: int, reference: Reference, tmp_path: Path
) -> None:
    rng = random.Random(f"{kind}{trial}")
    collection = tmp_path / "col"
    proc = _start(collection, reference.corpus, tmp_path / "killed.log")
    try:
        # Stratified: trial i is killed somewhere in the i-th slice of a clean run (of its first
        # 90 %: runs vary, and a kill after the end tests nothing).
        if kind == "time":
            at = 0.9 * reference.seconds * (trial + rng.random()) / TIME_TRIALS
            where = f"{at:.1f} s of {reference.seconds:.1f} s"
            killed = _kill_after(proc, at)
        else:
            commit = 1 + int(reference.commits * (trial + rng.random()) / COMMIT_TRIALS)
            where = f"table commit {commit} of {reference.commits}"
            killed = _kill_after_commit(proc, collection, commit)
        # Workers die with their parent (PDEATHSIG): none may linger holding files open.
        deadline = time.monotonic() + WORKER_EXIT_S
        while _group_members(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _group_members(proc.pid), "workers outlived the killed ingest"
    finally:
        _reap_group(proc.pid)

    found = "nothing written"
    if (collection / "collection.json").is_file():
        before = DocSight(collection).check()
        found = f"{before.counts.get('documents', 0)} documents, " + (
            ", ".join(sorted({p.code for p in before.problems})) or "no problems"
        )
    report = _run_to_completion(collection, reference.corpus, tmp_path / "rerun.log")
    counts = report["counts"]
    assert counts["failed"] == 0 and counts["added"] + counts["skipped"] == 8, report
    print(
        f"\n{kind} trial {trial}: {'killed' if killed else 'finished'} at {where} "
        f"({found}); re-run added {counts['added']}"
    )
    _assert_whole(collection, reference)


# --- a crash at every write of a document, in-process --------------------------------------------


class _Crash(BaseException):
    """Not an Exception: it goes through the pipeline's per-file handling, as a kill would."""


def _crash_at(store: Any, target: int) -> Callable[[], list[str]]:
    """Make the ``target``-th write step raise :class:`_Crash`; returns the steps seen so far."""
    seen: list[str] = []

    def step(label: str) -> None:
        seen.append(label)
        if len(seen) - 1 == target:
            raise _Crash(label)

    write, ensure, optimize = store._write, store._ensure_text_index, store.optimize

    def crash_write(name: str, data: Any, schema: Any, *, append: bool) -> None:
        step(f"write {name}")
        write(name, data, schema, append=append)

    def crash_ensure() -> None:
        step("text index")
        ensure()

    def crash_optimize(*, indexes: bool = True) -> list[str]:
        step("optimize" if indexes else "compaction")
        return optimize(indexes=indexes)

    store._write, store._ensure_text_index, store.optimize = (
        crash_write,
        crash_ensure,
        crash_optimize,
    )
    return lambda: seen


@pytest.fixture(scope="module")
def text_reference(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Any]]:
    base = tmp_path_factory.mktemp("steps")
    corpus = write_corpus(base / "corpus")
    ds = DocSight(base / "col", settings=Settings(ingest={"isolation": "none"}))
    ds.ingest([corpus])
    yield corpus, ds.encoder()


def _inline(collection: Path, encoder: Any, compact_every: int = 32) -> DocSight:
    ds = DocSight(
        collection,
        settings=Settings(ingest={"isolation": "none", "compact_every": compact_every}),
    )
    ds._encoder = encoder  # loaded once for all cases
    return ds


# Two files: five write steps each (pages, elements, chunks, documents, text index), then optimize
# and the text index update inside it; the single file covers a crash after the first commit but
# before any text index exists.
@pytest.mark.parametrize(
    ("files", "target"),
    [(("faq.txt", "guide.md"), t) for t in range(12)] + [(("faq.txt",), t) for t in range(7)],
)
def test_crash_at_each_write_step_then_rerun(
    files: tuple[str, ...], target: int, text_reference: tuple[Path, Any], tmp_path: Path
) -> None:
    corpus, encoder = text_reference
    paths = [corpus / f for f in files]
    collection = tmp_path / "col"
    ds = _inline(collection, encoder)
    steps = _crash_at(ds.store, target)
    with pytest.raises(_Crash):
        ds.ingest(paths)
    assert len(steps()) == target + 1

    _rerun_completes(collection, encoder, paths, steps()[-1])


def _rerun_completes(collection: Path, encoder: Any, paths: list[Path], where: str) -> None:
    again = _inline(collection, encoder)
    report = again.ingest(paths)
    assert not report.failed and len(report.added) + len(report.skipped) == len(paths)
    check = again.check()
    assert check.problems == [], (where, check.problems)
    assert check.counts["documents"] == len(paths)
    assert again.store.text_search("warranty two years", 3)


def test_crash_in_a_compaction_between_files_then_rerun(
    text_reference: tuple[Path, Any], tmp_path: Path
) -> None:
    """``ingest.compact_every``: a crash inside a compaction between two files leaves a
    collection the next ingest completes. (After the last file the final optimize compacts: no
    compaction between files runs there.)"""
    corpus, encoder = text_reference
    paths = [corpus / "faq.txt", corpus / "guide.md"]
    dry = _inline(tmp_path / "dry", encoder, compact_every=1)
    seen = _crash_at(dry.store, -1)
    dry.ingest(paths)
    targets = [i for i, label in enumerate(seen()) if label == "compaction"]
    assert len(targets) == 1 and "optimize" in seen()[targets[-1] :], seen()
    for target in targets:
        collection = tmp_path / f"col-{target}"
        ds = _inline(collection, encoder, compact_every=1)
        steps = _crash_at(ds.store, target)
        with pytest.raises(_Crash):
            ds.ingest(paths)
        assert steps()[-1] == "compaction"
        _rerun_completes(collection, encoder, paths, f"compaction at step {target}")


# --- check ---------------------------------------------------------------------------------------


def test_check_reports_damage_and_repair_removes_orphans(
    text_reference: tuple[Path, Any], tmp_path: Path
) -> None:
    corpus, encoder = text_reference
    collection = tmp_path / "col"
    ds = _inline(collection, encoder)
    ds.ingest([corpus])
    assert ds.check().problems == []
    store: Any = ds.store
    faq, guide = sorted(ds.documents(), key=lambda d: d.name)
    chunks = store._table("chunks")
    # An uncommitted document (its row gone), a lost chunk and a duplicated element.
    store._table("documents").delete(f"id = '{faq.id}'")
    lost = ds.store.document_chunks(guide.id)[0].id
    chunks.delete(f"id = '{lost}'")
    elements = store._table("elements")
    elements.add(elements.search().where(f"doc_id = '{guide.id}'").limit(1).to_arrow())

    report = ds.check()
    codes = {(p.code, p.table) for p in report.problems}
    assert {
        ("orphan_rows", "chunks"),
        ("orphan_rows", "pages"),
        ("count_mismatch", "chunks"),
        ("duplicate_id", "elements"),
    } <= codes, report.problems
    assert not report.ok

    runner = CliRunner()
    result = runner.invoke(app, ["-c", str(collection), "check", "--json"])
    assert result.exit_code == 1
    assert {p["code"] for p in json.loads(result.stdout)["problems"]} >= {"orphan_rows"}
    result = runner.invoke(app, ["-c", str(collection), "check", "--repair", "--json"])
    assert result.exit_code == 0, result.stdout
    repaired = json.loads(result.stdout)
    assert "orphan_rows in chunks (2 rows)" in repaired["repairs"] or any(
        r.startswith("orphan_rows in chunks") for r in repaired["repairs"]
    )
    # The guide lost a chunk: repair removes it and names its file to ingest again.
    assert repaired["reingest"] == [guide.source]
    assert any(r.startswith("removed document guide.md") for r in repaired["repairs"])
    assert ds.check().problems == [] and [d.name for d in ds.documents()] == []

    ds.ingest([corpus])
    result = runner.invoke(app, ["-c", str(collection), "check"])
    assert result.exit_code == 0 and "collection is consistent" in result.stdout

    other = DocSight(collection, settings=Settings(embed={"max_tokens": 128}))
    assert [p.code for p in other.check().problems] == ["encoder_mismatch"]


# --- a second writer ---------------------------------------------------------------------------


@pytest.mark.slow
def test_second_ingest_waits_for_the_lock_or_fails_clearly(
    reference: Reference, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``test_writer_lock_is_exclusive`` holds the lock in this process; here the holder is a
    real ``docsight ingest`` in another process."""
    collection = tmp_path / "col"
    first = _start(collection, reference.corpus, tmp_path / "first.log")
    try:
        lock = FileLock(str(collection / "writer.lock"), timeout=0)
        while first.poll() is None:  # until the first ingest holds the lock
            if not (collection / "writer.lock").exists():
                time.sleep(0.05)
                continue
            try:
                lock.acquire()
            except Timeout:
                break
            lock.release()
            time.sleep(0.05)
        assert first.poll() is None, "the first ingest ended before it was caught holding the lock"

        impatient = DocSight(collection, settings=Settings(lock_timeout=0.2))
        with pytest.raises(CollectionLockedError, match="another process is writing"):
            impatient.ingest([reference.corpus])
        monkeypatch.setenv("DOCSIGHT_LOCK_TIMEOUT", "0.2")
        result = CliRunner().invoke(
            app, ["-c", str(collection), "ingest", str(reference.corpus), "--json"]
        )
        assert result.exit_code == 1
        assert json.loads(result.stdout)["error"]["code"] == "collection_locked"
        monkeypatch.delenv("DOCSIGHT_LOCK_TIMEOUT")

        # A patient second writer waits, then finds everything done.
        patient = DocSight(collection, settings=Settings(lock_timeout=RUN_TIMEOUT_S))
        report = patient.ingest([reference.corpus])
        assert first.wait(timeout=RUN_TIMEOUT_S) == 0
    finally:
        _reap_group(first.pid)
    assert len(report.skipped) == 8, report.counts()
    _assert_whole(collection, reference)


# --- re-ingesting an edited file: replacement is one logical step ------------------------------


def _edit(corpus: Path, target: Path) -> Path:
    """A copy of the corpus, then the FAQ edited: the warranty goes from two to five years."""
    folder = write_corpus(target)
    faq = folder / "faq.txt"
    faq.write_text((corpus / "faq.txt").read_text().replace("two years", "five years"))
    return folder


def _faq_versions(ds: DocSight) -> list[str]:
    """The text of every visible version of the FAQ."""
    visible = [d for d in ds.documents() if d.name == "faq.txt"]
    return [" ".join(c.text for c in ds.store.document_chunks(d.id)) for d in visible]


# The re-ingest of the edited FAQ writes pages, elements, chunks, nodes, graphs and the documents
# row, builds nothing new, removes the old version (one step), then optimizes: every point.
@pytest.mark.parametrize("target", range(9))
def test_crash_while_replacing_an_edited_file(
    target: int, text_reference: tuple[Path, Any], tmp_path: Path
) -> None:
    corpus, encoder = text_reference
    collection = tmp_path / "col"
    folder = write_corpus(tmp_path / "corpus")
    _inline(collection, encoder).ingest([folder])
    _edit(corpus, folder)

    ds = _inline(collection, encoder)
    steps = _crash_at(ds.store, target)
    delete = ds.store.delete_document

    def crash_delete(doc_id: str) -> None:
        steps().append("delete old version")
        if len(steps()) - 1 == target:
            raise _Crash("delete old version")
        delete(doc_id)

    ds.store.delete_document = crash_delete  # type: ignore[method-assign]
    try:
        ds.ingest([folder / "faq.txt"])
        crashed = False
    except _Crash:
        crashed = True

    # Before any repair, readers see exactly one version: never the stale beside the current.
    reader = _inline(collection, encoder)
    (text,) = _faq_versions(reader)
    assert ("two years" in text) != ("five years" in text)
    assert reader.resolve("faq.txt").name == "faq.txt"  # not ambiguous
    hits = reader.search("warranty years", k=10)
    assert len({h.doc_id for h in hits if h.doc_id in {d.id for d in reader.documents()}}) >= 1
    if crashed and "upsert documents" in steps()[:-1]:  # the new row was committed
        assert "five years" in text
        if steps()[-1] == "delete old version":  # the point the issue hit 3 times of 3
            assert "superseded_version" in {p.code for p in reader.check().problems}

    report = _inline(collection, encoder).ingest([folder])
    assert not report.failed
    after = _inline(collection, encoder)
    assert after.check().problems == [], (steps(), after.check().problems)
    assert [("five years" in t) for t in _faq_versions(after)] == [True]


def test_a_failed_old_version_delete_is_finished_by_repair(
    text_reference: tuple[Path, Any], tmp_path: Path
) -> None:
    """A disk that fills between the new commit and the old delete: the file is added, the old
    version is hidden at once, check reports it and --repair removes it."""
    corpus, encoder = text_reference
    collection = tmp_path / "col"
    folder = write_corpus(tmp_path / "corpus")
    _inline(collection, encoder).ingest([folder])
    _edit(corpus, folder)

    ds = _inline(collection, encoder)

    def disk_full(doc_id: str) -> None:
        from docsight.errors import StorageFullError

        raise StorageFullError("the disk holding the collection is full (simulated)")

    ds.store.delete_document = disk_full  # type: ignore[method-assign]
    report = ds.ingest([folder / "faq.txt"])
    (outcome,) = report.files
    assert outcome.status == "added" and not outcome.replaced
    assert any("could not be removed yet" in w for w in outcome.warnings)

    reader = _inline(collection, encoder)
    assert [("five years" in t) for t in _faq_versions(reader)] == [True]
    assert not any("two years" in h.text for h in reader.search("warranty two years", k=10))
    check = reader.check()
    assert [p.code for p in check.errors] == ["superseded_version"]
    repaired = reader.check(repair=True)
    assert repaired.ok and repaired.problems == [], repaired.problems
    assert "superseded_version in documents (1 rows)" in repaired.repairs
    assert len(reader.store.documents_by_source(str((folder / "faq.txt").resolve()))) == 1
