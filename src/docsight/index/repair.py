"""Finding and repairing damaged tables of a Lance collection.

A Lance table is a directory of immutable data files, index files and one manifest per version.
Damage comes in three kinds, each found the way a reader would trip over it:

- **unreadable**: the newest manifest is missing, truncated or garbled, so the table cannot be
  opened. Repair moves damaged manifests aside one at a time (a rollback to the last good
  version), then falls back to the backup copy of the manifest taken after the last successful
  optimize, and only then moves the whole table aside: its rows are lost.
- **data**: rows whose data file is missing or truncated. Row ids encode their fragment
  (``fragment << 32 | offset``) and a row-id-only scan reads no data file, so each fragment is
  probed with one row. Repair rolls back to an older version that reads whole and keeps more
  rows, where Lance still has one; otherwise it deletes the damaged fragments' rows by row id,
  which never reads them and only writes a small deletion commit.
- **index**: an index that fails a probe query (or whose files lack Lance's footer). Repair
  rebuilds it from the table.

Nothing is deleted outright: what repair sets aside goes to ``damaged/`` in the collection. The
rows lost with it are found afterwards by the integrity check (documents whose rows no longer
match their counts), and those documents are dropped and named for re-ingesting.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from docsight.errors import StoreError
from docsight.index import schema as S
from docsight.index.lookup import create_lookup_index, index_column
from docsight.index.where import quote

if TYPE_CHECKING:
    from docsight.index.lance import LanceStore

log = logging.getLogger(__name__)

#: Backups of collection.json and of each table's newest manifest, refreshed after optimize.
RECOVERY_DIR = "recovery"
#: Where repair moves what it sets aside (damaged manifests and tables), never deleted by us.
DAMAGED_DIR = "damaged"
_MAGIC = b"LANC"  # the last four bytes of every Lance data and index file
_U64_MAX = 2**64 - 1
_WORD = re.compile(r"[A-Za-z]{3,}")


@dataclass
class TableDamage:
    table: str
    #: ``unreadable``, ``data`` or ``index``.
    kind: str
    detail: str
    #: Damaged fragments (``data``) and the rows they hold.
    fragments: tuple[int, ...] = ()
    rows: int = 0
    #: The index that failed (``index``).
    index: str | None = None
    index_type: str | None = None
    #: Row ids of the rows that still read (``data``).
    readable: list[int] | None = None

    def describe(self) -> str:
        if self.kind == "unreadable":
            return f"table {self.table} cannot be opened ({self.detail})"
        if self.kind == "data":
            return (
                f"table {self.table}: {self.rows} rows are in missing or damaged data files "
                f"({self.detail})"
            )
        return (
            f"table {self.table}: its {self.index_type} index {self.index} is damaged "
            f"({self.detail})"
        )


def lance_reason(exc: BaseException) -> str:
    """The useful part of a Lance error: no source locations of the Rust code."""
    text = str(exc).replace("\n", " ")
    text = re.sub(r",\s*/\S+\.rs:\d+:\d+", "", text)
    text = re.sub(r"^lance error:\s*", "", text)
    return text[:300]


def table_dirs(store: LanceStore) -> dict[str, Any]:
    """Every table directory, whether or not Lance can open it, except tables whose creation
    was cut short (see :func:`unfinished`): those never held anything. For a remote collection
    the values are the folders' paths relative to the collection."""
    if store.remote:
        return {
            name[: -len(".lance")]: f"tables/{name}"
            for name in store.location.children("tables")
            if name.endswith(".lance") and not unfinished_table(store, name[: -len(".lance")])
        }
    root = store.path / "tables"
    if not root.is_dir():
        return {}
    return {
        p.name[: -len(".lance")]: p
        for p in sorted(root.glob("*.lance"))
        if p.is_dir() and not unfinished(p)
    }


def unfinished(table_dir: Path) -> bool:
    """A table killed while it was being created: no committed version (a manifest still
    named ``…manifest#n`` was never renamed into place) and no data. Lance lists it but cannot
    open it; it is not damage, and creating the table again replaces it."""
    versions = table_dir / "_versions"
    committed = versions.is_dir() and any(versions.glob("*.manifest"))
    data = table_dir / "data"
    holds_data = data.is_dir() and any(data.iterdir())
    return not committed and not holds_data


def unfinished_table(store: LanceStore, name: str) -> bool:
    """:func:`unfinished` for the table ``name`` of a local or remote collection."""
    if not store.remote:
        return unfinished(store._table_dir(name))
    folder = f"tables/{name}.lance"
    committed = any(n.endswith(".manifest") for n in store.location.children(f"{folder}/_versions"))
    return not committed and not store.location.children(f"{folder}/data")


def read_rows(table: Any, columns: list[str], rowids: list[int] | None) -> pa.Table:
    """``columns`` of every row, or only of ``rowids`` (taken by id, so a damaged fragment is
    never opened: a filter on row ids still reads the files it rules out)."""
    if rowids is None:
        return table.search().select(columns).limit(None).to_arrow()
    if not rowids:
        return pa.schema([table.schema.field(c) for c in columns]).empty_table()
    return table.take_row_ids(rowids).select(columns).to_arrow()


def _inside(fragments: Iterable[int]) -> str:
    return " OR ".join(f"(_rowid >= {f << 32} AND _rowid < {(f + 1) << 32})" for f in fragments)


# --- finding damage ---------------------------------------------------------------------------


def inspect(store: LanceStore, *, probe_indexes: bool = True) -> list[TableDamage]:
    """Damage in every table of the collection (read-only)."""
    damages: list[TableDamage] = []
    for name in table_dirs(store):
        damages.extend(inspect_table(store, name, probe_indexes=probe_indexes))
    return damages


def inspect_table(store: LanceStore, name: str, *, probe_indexes: bool = True) -> list[TableDamage]:
    try:
        table = store._connect().open_table(name)
        rowids = _rowids(table)
    except Exception as exc:
        return [TableDamage(name, "unreadable", lance_reason(exc))]
    damages: list[TableDamage] = []
    bad, rows, reason = _damaged_fragments(table, rowids)
    readable = None
    if bad:
        keep = ~np.isin(rowids >> np.uint64(32), np.asarray(bad, dtype=np.uint64))
        readable = [int(r) for r in rowids[keep]]
        damages.append(TableDamage(name, "data", reason, tuple(bad), rows, readable=readable))
    if probe_indexes:
        damages.extend(_probe_indexes(store, name, table, readable))
    return damages


def _rowids(table: Any) -> np.ndarray:
    column = table.search().with_row_id(True).select(["_rowid"]).limit(None).to_arrow()["_rowid"]
    return np.asarray(column.to_numpy(), dtype=np.uint64)


def _damaged_fragments(table: Any, rowids: np.ndarray) -> tuple[list[int], int, str]:
    if not len(rowids):
        return [], 0, ""
    fragments, first, counts = np.unique(
        rowids >> np.uint64(32), return_index=True, return_counts=True
    )
    bad: list[int] = []
    rows = 0
    reason = ""
    for fragment, index, count in zip(fragments, first, counts, strict=True):
        try:
            table.take_row_ids([int(rowids[index])]).to_arrow()
        except Exception as exc:
            bad.append(int(fragment))
            rows += int(count)
            reason = reason or lance_reason(exc)
    return bad, rows, reason


def _probe_indexes(
    store: LanceStore, name: str, table: Any, readable: list[int] | None
) -> list[TableDamage]:
    damages = []
    for index in table.list_indices():
        try:
            if not store.remote:  # remotely the probe query below finds a truncated file
                _check_index_files(store.path / "tables" / f"{name}.lance", index)
            if index.index_type == "FTS":
                _probe_text(table, readable)
            elif "vector" in index.columns:
                _probe_vector(table, readable)
            elif str(index.index_type).upper() == "BTREE" and len(index.columns) == 1:
                _probe_lookup(table, str(index.columns[0]), readable)
        except Exception as exc:
            damages.append(
                TableDamage(
                    name, "index", lance_reason(exc), index=index.name, index_type=index.index_type
                )
            )
    return damages


def _check_index_files(table_dir: Path, index: Any) -> None:
    folder = table_dir / "_indices" / str(getattr(index, "index_uuid", "") or "")
    if not folder.is_dir():
        return  # layouts this code does not know are left to the probe query
    for file in folder.rglob("*.lance"):
        with file.open("rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            if size < len(_MAGIC):
                raise OSError(f"{file.name} is truncated ({size} bytes)")
            handle.seek(size - len(_MAGIC))
            if handle.read(len(_MAGIC)) != _MAGIC:
                raise OSError(f"{file.name} is truncated or damaged (no Lance footer)")


def _sample(table: Any, column: str, readable: list[int] | None) -> list[Any]:
    """Values of ``column`` from the first, middle and last readable rows."""
    values = read_rows(table, [column], readable)[column]
    n = len(values)
    picks = sorted({0, n // 2, n - 1}) if n else []
    return [values[i].as_py() for i in picks]


def _probe_text(table: Any, readable: list[int] | None) -> None:
    for text in _sample(table, "text", readable):
        word = _WORD.search(text or "")
        if word:
            table.search(word.group(0), query_type="fts", fts_columns="text").limit(1).to_arrow()


def _probe_vector(table: Any, readable: list[int] | None) -> None:
    for vector in _sample(table, "vector", readable)[:1]:
        if vector is not None:
            query = table.search(np.asarray(vector, dtype=np.float32), vector_column_name="vector")
            query.distance_type("cosine").nprobes(20).limit(1).to_arrow()


def _probe_lookup(table: Any, column: str, readable: list[int] | None) -> None:
    for value in _sample(table, column, readable)[:1]:
        if isinstance(value, str):
            table.count_rows(f"{column} = {quote(value)}")


# --- repairing ----------------------------------------------------------------------------------


def repair(store: LanceStore, damages: list[TableDamage]) -> list[str]:
    """Fix what :func:`inspect` found; returns what was done, in words. Caller holds the lock."""
    actions: list[str] = []
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    for name in dict.fromkeys(d.table for d in damages if d.kind == "unreadable"):
        actions.append(_repair_unreadable(store, name, stamp))
        store._forget_tables()
    for damage in damages:
        if damage.kind == "data":
            actions.append(_repair_data(store, damage))
            store._forget_tables()
    # Indexes last: a rollback or a dropped fragment may have changed what they must cover.
    for name in dict.fromkeys(d.table for d in damages):
        for damage in inspect_table(store, name):
            if damage.kind == "index":
                actions.append(_rebuild_index(store, damage))
    store._forget_tables()
    return actions


def _manifests(versions: Path) -> list[tuple[int, Path]]:
    """(version, file) newest first; Lance names them ``N.manifest`` or, in its v2 scheme,
    ``(2**64 - 1 - N).manifest`` so that the newest sorts first."""
    files = {file.name: file for file in versions.glob("*.manifest")}
    return [(number, files[name]) for number, name in _manifest_names(list(files))]


def _manifest_names(names: Iterable[str]) -> list[tuple[int, str]]:
    """(version, file name) of the manifests among ``names``, newest first."""
    found = []
    for name in names:
        stem, dot, suffix = name.rpartition(".")
        if not dot or suffix != "manifest":
            continue
        try:
            number = int(stem)
        except ValueError:
            continue
        found.append((_U64_MAX - number if number > 2**63 else number, name))
    return sorted(found, reverse=True)


def _set_aside(store: LanceStore, path: Path, stamp: str) -> Path:
    relative = path.relative_to(store.path)
    target = store.path / DAMAGED_DIR / stamp / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(path), str(target))
    return target


def _opens_whole(store: LanceStore, name: str) -> bool:
    return not [d for d in inspect_table(store, name, probe_indexes=False)]


def _repair_unreadable(store: LanceStore, name: str, stamp: str) -> str:
    if store.remote:
        from docsight.errors import RemoteUnsupportedError

        raise RemoteUnsupportedError(
            f"table {name} of {store.path} cannot be opened, and `check --repair` rolls a table "
            "back by moving its damaged manifests aside, which it does on a local directory "
            "only: copy the collection to a local directory, repair it there and copy it back, "
            "or ingest its files again into a new collection"
        )
    table_dir = store.path / "tables" / f"{name}.lance"
    versions = table_dir / "_versions"
    moved: list[int] = []
    for version, file in _manifests(versions) if versions.is_dir() else []:
        _set_aside(store, file, stamp)
        moved.append(version)
        store._forget_tables()
        if _manifests(versions) and _opens_whole(store, name):
            kept = _manifests(versions)[0][0]
            return (
                f"rolled table {name} back to version {kept}: moved damaged version(s) "
                f"{', '.join(map(str, moved))} aside to {DAMAGED_DIR}/{stamp}"
            )
    backup = store.path / RECOVERY_DIR / "tables" / f"{name}.lance"
    for _version, file in _manifests(backup) if backup.is_dir() else []:
        versions.mkdir(parents=True, exist_ok=True)
        shutil.copy2(file, versions / file.name)
        store._forget_tables()
        if _opens_whole(store, name):
            return f"restored table {name} from its backup manifest (version {_version})"
        _set_aside(store, versions / file.name, stamp)
    target = _set_aside(store, table_dir, stamp)
    return f"table {name} could not be opened at any version: moved it aside to {target}"


def _repair_data(store: LanceStore, damage: TableDamage) -> str:
    table = store._connect().open_table(damage.table)
    current = table.version
    keep_now = table.count_rows() - damage.rows
    for entry in sorted(table.list_versions(), key=lambda v: v["version"], reverse=True):
        version = entry["version"]
        if version >= current:
            continue
        try:
            table.checkout(version)
            if not _damaged_fragments(table, _rowids(table))[0] and table.count_rows() > keep_now:
                table.restore(version)
                return (
                    f"rolled table {damage.table} back to version {version}, the last one whose "
                    f"files are all readable"
                )
        except Exception as exc:  # an older version may be damaged or cleaned up too
            log.debug("version %s of %s is no good: %s", version, damage.table, exc)
    table.checkout_latest()
    # Deleting by row id reads no data file: the fragments leave the table in one small commit.
    table.delete(_inside(damage.fragments))
    return (
        f"removed {damage.rows} unreadable rows of table {damage.table} "
        f"(fragments {', '.join(map(str, damage.fragments))})"
    )


def _rebuild_index(store: LanceStore, damage: TableDamage) -> str:
    table = store._connect().open_table(damage.table)
    if damage.index_type == "FTS":
        store._create_text_index(table)
    elif str(damage.index_type).upper() == "BTREE":  # a lookup index (index.lookup, .visual)
        column = index_column(table, damage.index or "")
        if column is None:
            raise StoreError(f"index {damage.index} of table {damage.table} is not on one column")
        create_lookup_index(table, column)
        store._forget_tables()
    else:
        store._create_vector_index(table, replace=True)
    return f"rebuilt the {damage.index_type} index of table {damage.table} from its rows"


# --- backups, failed writes -------------------------------------------------------------------


def backup_manifests(store: LanceStore) -> None:
    """Copy each table's newest manifest to ``recovery/`` (a few kilobytes): if that manifest is
    later damaged and no older version is left, repair can put it back."""
    if store.remote:
        _backup_remote_manifests(store)
        return
    for name, table_dir in table_dirs(store).items():
        found = _manifests(table_dir / "_versions")
        if not found:
            continue
        target = store.path / RECOVERY_DIR / "tables" / f"{name}.lance"
        try:
            target.mkdir(parents=True, exist_ok=True)
            newest = found[0][1]
            tmp = target / (newest.name + ".tmp")
            shutil.copyfile(newest, tmp)
            os.replace(tmp, target / newest.name)
            for old in target.iterdir():
                if old.name != newest.name:
                    old.unlink()
        except OSError as exc:  # a full disk must not fail the ingest that just succeeded
            log.warning("could not back up the manifest of table %s: %s", name, exc)


def _backup_remote_manifests(store: LanceStore) -> None:
    for name, folder in table_dirs(store).items():
        found = _manifest_names(store.location.children(f"{folder}/_versions"))
        if not found:
            continue
        target = f"{RECOVERY_DIR}/tables/{name}.lance"
        newest = found[0][1]
        try:
            store.location.copy(f"{folder}/_versions/{newest}", f"{target}/{newest}")
            for old in store.location.children(target):
                if old != newest:
                    store.location.delete(f"{target}/{old}")
        except OSError as exc:
            log.warning("could not back up the manifest of table %s: %s", name, exc)


def backup_collection_manifest(store: LanceStore, text: str) -> None:
    try:
        # Locally: a temporary file renamed into place; remotely: one whole upload.
        store.location.write_text(f"{RECOVERY_DIR}/collection.json", text)
    except OSError as exc:
        log.warning("could not back up collection.json: %s", exc)


def rebuilt_manifest(store: LanceStore) -> dict[str, Any]:
    """collection.json as it was last backed up, or as the tables say (no encoder known)."""
    with contextlib.suppress(OSError, ValueError):
        data = json.loads(store.location.read_text(f"{RECOVERY_DIR}/collection.json"))
        if isinstance(data, dict) and data.get("schema_version") in S.READABLE_SCHEMA_VERSIONS:
            return data
    return {"schema_version": S.STORE_SCHEMA_VERSION, "encoder": None}


def scrub_failed_write(table_dir: Path, since_ns: int) -> int:
    """Delete the files a failed write left in a table (a partial data file on a full disk).

    Call only when the table's version did not change: then nothing written since ``since_ns``
    is referenced by any version. Files are matched by modification time, which the kernel's
    coarse clock may set a little early: a late file is left behind (harmless, the next optimize
    removes it), an earlier, committed file is never touched.
    """
    removed = 0
    for sub in ("data", "_indices", "_transactions", "_deletions", "_versions"):
        folder = table_dir / sub
        if not folder.is_dir():
            continue
        for file in folder.rglob("*"):
            if sub == "_versions" and not file.name.startswith("."):
                continue  # only a temporary manifest, never a committed one
            with contextlib.suppress(OSError):
                if file.is_file() and file.stat().st_mtime_ns >= since_ns:
                    file.unlink()
                    removed += 1
    return removed


def free_bytes(path: Path) -> int | None:
    try:
        return shutil.disk_usage(path).free
    except OSError:
        return None


def dir_bytes(path: Path) -> int:
    total = 0
    for file in path.rglob("*"):
        with contextlib.suppress(OSError):
            if file.is_file():
                total += file.stat().st_size
    return total


def now_ns() -> int:
    return time.time_ns()


# --- the whole collection -------------------------------------------------------------------

#: Check findings that mean a committed document lost rows it needs.
_LOST_ROWS = ("count_mismatch", "graph_missing", "missing_asset", "missing_source")


def repair_collection(store: LanceStore) -> tuple[list[str], list[str]]:
    """Restore a working collection: fix damaged tables, finish interrupted writes, then drop
    the documents that lost rows. Returns what was done and the files to ingest again."""
    actions: list[str] = []
    reingest: list[str] = []
    if store.manifest_problem:
        actions.append(f"rebuilt collection.json ({store.manifest_problem})")
    damages = inspect(store)
    lost_documents = any(d.table == "documents" and d.kind != "index" for d in damages)
    if damages:
        actions += repair(store, damages)
    if lost_documents:
        # Rows whose documents row was lost are orphans now; name them before recover removes
        # them (the file names went with the rows, so only their ids can be given).
        orphan_ids = _orphan_ids(store)
        if orphan_ids:
            shown = ", ".join(sorted(i[:12] for i in orphan_ids)[:5])
            actions.append(
                f"removed the rows of {len(orphan_ids)} document(s) whose entries were lost "
                f"({shown}); ingest their folders again: unchanged files are skipped, these "
                "are added again"
            )
    store.recover()
    report = store.check()
    broken = {p.doc_id for p in report.problems if p.code in _LOST_ROWS and p.doc_id}
    bad_files = {p.doc_id for p in report.problems if p.code == "missing_source"}
    for doc_id in sorted(broken):
        info = _document_info(store, doc_id)
        if info is not None and doc_id in bad_files:
            # A damaged kept file is set aside like a damaged table, never deleted.
            kept = store.sources.key(info["sha256"], info["media_type"])
            if store.location.is_file(kept):
                stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
                store.location.move(kept, f"{DAMAGED_DIR}/{stamp}/{kept}")
        store.delete_document(doc_id)
        name, source = (info["name"], info["source"]) if info else (doc_id[:12], None)
        actions.append(
            f"removed document {name} ({doc_id[:12]}), which had lost rows; ingest "
            f"{source or 'its file'} again"
        )
        if source:
            reingest.append(source)
    return actions, reingest


def _orphan_ids(store: LanceStore) -> set[str]:
    from docsight.index.lance import CHILD_TABLES

    stored = store.committed_ids() | store.superseded_ids()
    found: set[str] = set()
    for name in CHILD_TABLES:
        table = store._table(name)
        if table is not None:
            column = table.search().select(["doc_id"]).limit(None).to_arrow()["doc_id"]
            found.update(str(d) for d in set(column.to_pylist()) - stored if d is not None)
    return found


def _document_info(store: LanceStore, doc_id: str) -> dict[str, Any] | None:
    rows = store._document_rows(f"id = '{doc_id}'", all_versions=True)
    return rows[0] if rows else None
