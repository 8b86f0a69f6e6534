"""A collection that heals (issue 12, faults 3 to 7): damaged files, a full disk, a lost
collection.json and a read-only collection.

Each test damages a copy of a small ingested collection with a script from
``fixtures.damage``, then runs the commands a user would. Every command either works or fails
with a JSON error naming the collection and the damage, never a traceback; ``check`` says what is
lost; ``check --repair`` restores a working collection and names the files to ingest again; and
ingesting them again gives back everything. A full disk is simulated by making the store's writes
raise ``ENOSPC``, and, where this machine lets tests mount one, by a real 24 MiB tmpfs.
"""

from __future__ import annotations

import errno
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from docsight import DocSight
from docsight.cli.main import app
from docsight.errors import CollectionDamagedError, ReadOnlyCollectionError
from docsight.settings import Settings
from fixtures import damage
from fixtures.corpus_fixtures import write_corpus

QUERY = "warranty two years"
INLINE = Settings(ingest={"isolation": "none"})


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, Any]]:
    """(corpus, collection, encoder): two small files, ingested once for every test to copy."""
    base = tmp_path_factory.mktemp("faults")
    corpus = write_corpus(base / "corpus")
    ds = DocSight(base / "col", settings=INLINE)
    assert not ds.ingest([corpus]).failed
    yield corpus, base / "col", ds.encoder()


def _copy(template: tuple[Path, Path, Any], target: Path) -> Path:
    return damage.copy_collection(template[1], target)


def _ds(collection: Path, encoder: Any) -> DocSight:
    ds = DocSight(collection, settings=INLINE)
    ds._encoder = encoder
    return ds


def _cli(collection: Path, *args: str) -> tuple[int, Any]:
    """Run a command with --json: (exit code, parsed output). A traceback fails the test."""
    result = CliRunner().invoke(app, ["-c", str(collection), *args, "--json"])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"{args} raised {result.exception!r}") from result.exception
    return result.exit_code, json.loads(result.stdout)


def _assert_whole(ds: DocSight, documents: int = 2) -> None:
    report = ds.check()
    assert report.ok, report.problems
    assert len(ds.documents()) == documents
    assert ds.search(QUERY, k=3) if documents else True


# --- damaged files (faults 3, 4 and 6) ---------------------------------------------------------

CASES = [
    ("delete a data file", "chunks", "data_damaged"),
    ("truncate a data file", "documents", "data_damaged"),
    ("truncate the newest manifest", "chunks", "table_damaged"),
    ("delete every manifest", "documents", "table_damaged"),
    ("delete full-text index files", "chunks", "index_damaged"),
    ("truncate full-text index files", "pages", "index_damaged"),
    ("delete collection.json", "", "manifest"),
    ("truncate collection.json", "", "manifest"),
]


@pytest.mark.parametrize(("fault", "table", "code"), CASES, ids=[c[0] for c in CASES])
def test_damage_is_reported_repaired_and_reingested(
    fault: str, table: str, code: str, template: tuple[Path, Path, Any], tmp_path: Path
) -> None:
    corpus, _, encoder = template
    collection = _copy(template, tmp_path / "col")
    damage.DAMAGES[fault](collection, table)

    # Every command answers: with results, or with a clear error naming the collection.
    for command in (["docs"], ["search", QUERY], ["ask", "How long is the warranty?"]):
        exit_code, out = _cli(collection, *command)
        if exit_code:
            assert out["error"]["code"] == "collection_damaged", out
            assert (
                str(collection) in out["error"]["message"] and "--repair" in out["error"]["message"]
            )
    exit_code, report = _cli(collection, "check")
    assert code in {p["code"] for p in report["problems"]}, report["problems"]
    if code != "manifest":
        assert exit_code == 1 and table in {p["table"] for p in report["problems"]}

    exit_code, repaired = _cli(collection, "check", "--repair")
    assert exit_code == 0 and repaired["ok"], repaired
    assert repaired["repairs"]
    ds = _ds(collection, encoder)
    kept = len(ds.documents())
    assert ds.check().ok
    if kept:
        assert ds.search(QUERY, k=3) or kept < 2
    # Whatever was lost is named (or, for lost document rows, said) and comes back by ingesting.
    if kept < 2:
        assert repaired["reingest"] or any("entries were lost" in r for r in repaired["repairs"])
    report = ds.ingest([corpus])
    assert not report.failed and len(report.added) == 2 - kept
    _assert_whole(_ds(collection, encoder))


def test_a_damaged_index_passes_no_check_and_is_rebuilt(
    template: tuple[Path, Path, Any], tmp_path: Path
) -> None:
    """Fault 3 on its own: search crashed while check said consistent."""
    collection = _copy(template, tmp_path / "col")
    damage.damage_text_index(collection, "chunks")
    ds = _ds(collection, template[2])
    with pytest.raises(CollectionDamagedError, match="index"):
        ds.search(QUERY, k=3)
    report = ds.check()
    assert [(p.code, p.table) for p in report.errors] == [("index_damaged", "chunks")]
    repaired = ds.check(repair=True)
    assert repaired.ok and any(
        "rebuilt the FTS index of table chunks" in r for r in repaired.repairs
    )
    assert not repaired.reingest
    _assert_whole(ds)


def test_lost_collection_json_is_rebuilt_from_the_tables(
    template: tuple[Path, Path, Any], tmp_path: Path
) -> None:
    """Fault 6: docs said "empty" and re-ingesting did not bring collection.json back."""
    corpus, _, encoder = template
    collection = _copy(template, tmp_path / "col")
    shutil.rmtree(collection / "recovery")  # no backup either: only the tables are left
    (collection / "collection.json").unlink()
    exit_code, docs = _cli(collection, "docs")
    assert exit_code == 0 and len(docs) == 2
    ds = _ds(collection, encoder)
    assert {p.code for p in ds.check().problems} >= {"manifest"}
    assert ds.ingest([corpus]).counts()["skipped"] == 2
    assert (collection / "collection.json").is_file()
    _assert_whole(_ds(collection, encoder))


# --- a full disk (fault 5) ---------------------------------------------------------------------


def test_enospc_mid_batch_keeps_every_outcome(
    template: tuple[Path, Path, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk fills while the second file is stored: the first stays added, the second fails
    as storage_full, nothing half-written is visible, and the report is complete JSON."""
    corpus, _, encoder = template
    ds = _ds(tmp_path / "col", encoder)
    store: Any = ds.store
    write = store._write
    calls = {"documents": 0}

    def write_until_full(name: str, data: Any, schema: Any, *, append: bool) -> None:
        if name == "documents":
            calls["documents"] += 1
        if calls["documents"] >= 1 and name == "chunks" and store.committed_ids():
            raise OSError(errno.ENOSPC, "No space left on device")
        write(name, data, schema, append=append)

    monkeypatch.setattr(store, "_write", write_until_full)
    report = ds.ingest([corpus])
    outcomes = {f.name: (f.status, f.error_code) for f in report.files}
    assert sorted(outcomes.values()) == [("added", None), ("failed", "storage_full")], outcomes
    full = next(f for f in report.files if f.error_code == "storage_full")
    assert "disk" in (full.reason or "") and "full" in (full.reason or "")
    assert len(ds.documents()) == 1  # the half-written document is not visible
    monkeypatch.undo()
    assert {p.code for p in ds.check().errors} <= {"orphan_rows"}
    assert not ds.ingest([corpus]).failed
    _assert_whole(_ds(tmp_path / "col", encoder))


def test_enospc_in_the_final_indexing_step_is_a_warning(
    template: tuple[Path, Path, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus, _, _ = template
    monkeypatch.setenv("DOCSIGHT_INGEST_ISOLATION", "none")
    from docsight.index.lance import LanceStore

    def full_optimize(self: Any, *, indexes: bool = True) -> None:
        raise RuntimeError("lance error: LanceError(IO): No space left on device (os error 28)")

    monkeypatch.setattr(LanceStore, "optimize", full_optimize)
    # The guard wraps methods at import: wrap the replacement the same way.
    from docsight.index.guard import guard

    guard(LanceStore, reads=(), writes=("optimize",))
    exit_code, report = _cli(tmp_path / "col", "ingest", str(corpus))
    assert exit_code == 0 and report["counts"]["added"] == 2
    assert any("storage_full" in w for w in report["warnings"]), report["warnings"]
    monkeypatch.undo()
    assert len(DocSight(tmp_path / "col").documents()) == 2


def test_old_versions_go_as_soon_as_an_ingest_ends(
    template: tuple[Path, Path, Any], tmp_path: Path
) -> None:
    corpus, _, encoder = template
    collection = tmp_path / "col"
    _ds(collection, encoder).ingest([corpus])
    for table in damage.table_dir(collection, "x").parent.glob("*.lance"):
        assert len(list((table / "_versions").glob("*.manifest"))) == 1, table.name
    assert (collection / "recovery" / "collection.json").is_file()


@pytest.mark.slow
def test_a_real_full_disk(template: tuple[Path, Path, Any], tmp_path: Path) -> None:
    """On a 24 MiB tmpfs: fill it, ingest (storage_full, clean JSON), repair on the full disk,
    free the space, ingest again."""
    corpus, _, encoder = template
    with damage.small_tmpfs(tmp_path / "mnt", 24) as mount:
        collection = _copy(template, mount / "col")
        extra = tmp_path / "extra"
        extra.mkdir()
        (extra / "notes.md").write_text("# Notes\n\n" + "The warranty covers the hinge. " * 400)
        ballast = damage.fill(mount, leave_bytes=16 << 10)
        exit_code, report = _cli(collection, "ingest", str(extra), str(corpus))
        assert exit_code == 0, report
        outcomes = {f["name"]: (f["status"], f["error_code"]) for f in report["files"]}
        assert outcomes["notes.md"] == ("failed", "storage_full"), outcomes
        assert outcomes["guide.md"][0] == "skipped" and outcomes["faq.txt"][0] == "skipped"
        exit_code, repaired = _cli(collection, "check", "--repair")
        assert exit_code == 0, repaired  # repair needs no room for a copy of any table
        assert len(_ds(collection, encoder).documents()) == 2
        ballast.unlink()
        exit_code, report = _cli(collection, "ingest", str(extra))
        assert exit_code == 0 and report["counts"]["added"] == 1, report
        _assert_whole(_ds(collection, encoder), documents=3)


# --- read-only (fault 7) -----------------------------------------------------------------------


@pytest.mark.slow
def test_a_read_only_collection_reads_and_refuses_writes_clearly(
    template: tuple[Path, Path, Any], tmp_path: Path
) -> None:
    corpus, _, encoder = template
    with damage.small_tmpfs(tmp_path / "mnt", 24) as mount:
        collection = _copy(template, mount / "col")
        with damage.remounted_read_only(mount):
            assert len(_cli(collection, "docs")[1]) == 2
            exit_code, hits = _cli(collection, "search", QUERY)
            assert exit_code == 0 and hits
            exit_code, report = _cli(collection, "check")
            assert exit_code == 0 and report["ok"], report
            for command in (["ingest", str(corpus)], ["check", "--repair"], ["rm", "faq.txt"]):
                exit_code, out = _cli(collection, *command)
                assert exit_code == 1 and out["error"]["code"] == "read_only", (command, out)
                assert "reading it" in out["error"]["message"]
            with pytest.raises(ReadOnlyCollectionError):
                _ds(collection, encoder).ingest([corpus])


def test_a_table_killed_while_being_created_is_not_damage(tmp_path: Path) -> None:
    """A SIGKILL during the first table's creation leaves a directory Lance lists but cannot
    open: a manifest never renamed into place and no data. Found by the crash-safety test."""
    collection = tmp_path / "col"
    ds = DocSight(collection)
    ds.ingest([write_corpus(tmp_path / "corpus")])
    shutil.rmtree(collection / "tables")
    unfinished = collection / "tables" / "assets.lance"
    (unfinished / "_versions").mkdir(parents=True)
    (unfinished / "_versions" / "18446744073709551614.manifest#1").write_bytes(b"\x00" * 64)
    (unfinished / "_transactions").mkdir()
    (unfinished / "_transactions" / "0-cut-short.txn").write_bytes(b"\x00" * 16)
    fresh = DocSight(collection)
    report = fresh.check()
    assert report.ok, report.problems
    again = DocSight(collection).ingest([tmp_path / "corpus"])
    assert again.counts()["added"] == 2 and again.counts()["failed"] == 0
    assert DocSight(collection).check().ok
    assert DocSight(collection).search("warranty", k=1)
