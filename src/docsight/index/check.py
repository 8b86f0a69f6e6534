"""The integrity check of a Lance collection (read-only).

A collection is whole when every committed document row is matched by exactly the child rows it
counts, no child row outlives its document, every id is unique, every referenced asset is stored
(as an image, or as a recipe over the document's kept file, which must be there with the bytes
its hash names, and no kept file outlives its document),
the tables have the layout of this schema version, the vectors have the bound encoder's dimension
and are finite, and the text indexes exist. It also verifies what the commands rely on: every
table opens, every data file reads, every index answers a probe query (:mod:`.repair`), and only
one committed version of each file is stored. Repairs are :meth:`LanceStore.repair`'s job.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from docsight.errors import SchemaVersionError, StoreError
from docsight.index import repair, visual
from docsight.index import schema as S
from docsight.index.base import CheckProblem, CheckReport

if TYPE_CHECKING:
    from docsight.index.lance import LanceStore

CHILDREN = ("pages", "elements", "chunks", "nodes", "graphs", "assets", "page_vectors")
#: Child tables whose rows the document row counts (assets are checked by reference instead).
_COUNTED = ("pages", "elements", "chunks", "nodes")
_EXAMPLES = 3
_REPAIR_HINT = "`docsight check --repair` removes them"
_REINGEST_HINT = "remove the document (`docsight rm ID`) and ingest its file again"


def _short(ids: Iterable[str]) -> str:
    ids = sorted(ids)
    shown = ", ".join(i[:12] for i in ids[:_EXAMPLES])
    return shown + (f" and {len(ids) - _EXAMPLES} more" if len(ids) > _EXAMPLES else "")


def _read(table: Any, columns: list[str]) -> pa.Table:
    # Rows of damaged fragments are left out: they are reported as damage, and reading them
    # would fail (_Checker.run marks a damaged table with the row ids that still read).
    return repair.read_rows(table, columns, getattr(table, "_docsight_readable", None))


def _schema_difference(actual: pa.Schema, expected: pa.Schema, skip: set[str]) -> list[str]:
    want = {f.name: f.type for f in expected if f.name not in skip}
    have = {f.name: f.type for f in actual if f.name not in skip}
    differences = [f"missing column {n}" for n in want if n not in have]
    differences += [f"unexpected column {n}" for n in have if n not in want]
    differences += [
        f"column {n} is {have[n]}, expected {t}"
        for n, t in want.items()
        if n in have and have[n] != t
    ]
    return differences


class _Checker:
    def __init__(self, store: LanceStore) -> None:
        self.store = store
        where = str(store.path.resolve()) if not store.remote else str(store.path)
        self.report = CheckReport(path=where)

    def problem(self, code: str, message: str, **fields: Any) -> None:
        self.report.problems.append(CheckProblem(code=code, message=message, **fields))

    def run(self) -> CheckReport:
        if not self._manifest():
            return self.report
        if not self.store.location.is_dir("tables"):
            return self.report  # nothing written yet (and reading must not create anything)
        unreadable, readable_rows = self._damage()
        tables = {
            name: None if name in unreadable else self.store._table(name)
            for name in ("documents", *CHILDREN)
        }
        for name, table in tables.items():
            if table is not None:
                table._docsight_readable = readable_rows.get(name)
        readable = {
            name: table
            for name, table in tables.items()
            if table is not None and self._schema(name, table)
        }
        for name, table in tables.items():
            self.report.counts[name] = int(table.count_rows()) if table is not None else 0
        for name in unreadable:
            readable.pop(name, None)
        documents = self._documents(readable.get("documents"))
        self._superseded(readable.get("documents"))
        children = {
            name: self._children(name, table, documents)
            for name, table in readable.items()
            if name in CHILDREN
        }
        self._counts(documents, children)
        self._assets(readable, documents)
        self._sources(readable, documents)
        for name in ("chunks", "nodes"):
            if name in readable:
                self._vectors(readable[name], name)
        for name in ("chunks", "pages", "nodes"):
            if name in readable:
                self._indexes(name, readable[name], sum(children[name].values()))
        self._graphs(documents, children)
        visual.check_rows(self, readable, documents)
        return self.report

    # --- damage ---------------------------------------------------------------------------------

    def _damage(self) -> tuple[set[str], dict[str, list[int] | None]]:
        """Report damaged tables, data files and indexes; returns the tables that cannot be
        opened, and the row ids that still read in tables with damaged data files."""
        unreadable: set[str] = set()
        readable: dict[str, list[int] | None] = {}
        for damage in repair.inspect(self.store):
            if damage.kind == "unreadable":
                unreadable.add(damage.table)
                self.problem(
                    "table_damaged",
                    f"{damage.describe()}: none of its rows can be read; `docsight check "
                    "--repair` rolls it back to its last good version",
                    table=damage.table,
                )
            elif damage.kind == "data":
                readable[damage.table] = damage.readable
                self.problem(
                    "data_damaged",
                    f"{damage.describe()}; the documents that lost rows are listed below, and "
                    "`docsight check --repair` removes them (ingest their files again)",
                    table=damage.table,
                    rows=damage.rows,
                )
            else:
                self.problem(
                    "index_damaged",
                    f"{damage.describe()}: searches that use it fail; `docsight check --repair` "
                    "rebuilds it from the table",
                    table=damage.table,
                )
        return unreadable, readable

    def _superseded(self, table: Any) -> None:
        """Older versions of a re-ingested file still stored beside the newest one."""
        if table is None:
            return
        rows = _read(table, ["id", "name", "source", "status"]).to_pylist()
        by_source: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in rows:
            if row["status"] == "done":
                by_source[row["source"]].append(row)
        for source, versions in sorted(by_source.items()):
            if len(versions) > 1:
                self.problem(
                    "superseded_version",
                    f"{versions[0]['name']}: {len(versions) - 1} older version(s) of {source} "
                    "are still stored beside the newest (a re-ingest was interrupted); searches "
                    "see only the newest, and the next ingest or `docsight check --repair` "
                    "removes the others",
                    table="documents",
                    rows=len(versions) - 1,
                )

    # --- the manifest and the table layouts ----------------------------------------------------

    def _manifest(self) -> bool:
        try:
            manifest = self.store._read_manifest()
        except SchemaVersionError as exc:
            self.problem("schema_version", exc.message)
            return False
        except StoreError as exc:
            self.problem("manifest", exc.message)
            return False
        self.report.schema_version = int(manifest["schema_version"])
        encoder = manifest.get("encoder") or {}
        self.report.encoder = encoder.get("fingerprint")
        self.report.dim = encoder.get("dim")
        self.report.visual = visual.binding(self.store)
        if self.store.manifest_problem:
            known = "its encoder" if self.report.encoder else "its schema version (not the encoder)"
            self.problem(
                "manifest",
                f"{self.store.manifest_problem}: it was rebuilt in memory from "
                f"{'its backup' if self.report.encoder else 'the tables'}, which give {known}; "
                "`docsight check --repair` (or the next ingest) writes it back",
            )
        return True

    def _schema(self, name: str, table: Any) -> bool:
        """Whether the table has this schema version's layout (and can be checked further)."""
        if name == visual.PAGE_VECTORS:
            return visual.check_schema(self, table)
        if name in ("chunks", "nodes"):
            expected = S.chunks_schema(1) if name == "chunks" else S.nodes_schema(1)
            skip = {"vector"}
        else:
            expected, skip = (
                {
                    "documents": S.DOCUMENTS,
                    "pages": S.PAGES,
                    "elements": S.ELEMENTS,
                    "assets": S.ASSETS,
                    "graphs": S.GRAPHS,
                }[name],
                set(),
            )
        differences = _schema_difference(table.schema, expected, skip)
        if differences:
            self.problem(
                "table_schema",
                f"table {name} does not have the layout of store schema "
                f"v{S.STORE_SCHEMA_VERSION}: {'; '.join(differences)}",
                table=name,
            )
            return False
        if name in ("chunks", "nodes"):
            return self._vector_column(table, name)
        return True

    def _vector_column(self, table: Any, name: str) -> bool:
        field = table.schema.field("vector") if "vector" in table.schema.names else None
        if field is None or not pa.types.is_fixed_size_list(field.type):
            self.problem(
                "table_schema", f"table {name} has no fixed-size vector column", table=name
            )
            return False
        size = field.type.list_size
        if self.report.dim is None:
            if table.count_rows():
                self.problem(
                    "encoder_unbound",
                    f"{name} hold {size}-dimensional vectors but the collection has no encoder "
                    "bound in collection.json",
                    table=name,
                )
        elif size != self.report.dim:
            self.problem(
                "vector_dim",
                f"{name} vectors have dimension {size}; the collection's encoder "
                f"{self.report.encoder} has dimension {self.report.dim}",
                table=name,
            )
        return True

    # --- rows ----------------------------------------------------------------------------------

    def _duplicates(self, name: str, ids: pa.ChunkedArray) -> None:
        counts = pc.value_counts(ids)
        repeated = {
            value: count
            for value, count in zip(
                counts.field("values").to_pylist(), counts.field("counts").to_pylist(), strict=True
            )
            if count > 1
        }
        if repeated:
            extra = sum(repeated.values()) - len(repeated)
            self.problem(
                "duplicate_id",
                f"table {name}: {len(repeated)} id(s) occur more than once ({extra} extra rows): "
                f"{_short(repeated)}",
                table=name,
                rows=extra,
            )

    def _documents(self, table: Any) -> dict[str, dict[str, Any]]:
        """Committed document rows by id."""
        if table is None:
            self.report.counts["documents"] = 0
            return {}
        rows = _read(table, ["id", "name", "status", "pages", "elements", "chunks", "nodes"])
        self._duplicates("documents", rows.column("id"))
        committed: dict[str, dict[str, Any]] = {}
        other: Counter[str] = Counter()
        for row in rows.to_pylist():
            if row["status"] == "done":
                committed[row["id"]] = row
            else:
                other[str(row["status"])] += 1
        self.report.counts["documents"] = len(committed)
        self.report.counts["uncommitted"] = sum(other.values())
        if other:
            statuses = ", ".join(f"{n} {status!r}" for status, n in sorted(other.items()))
            self.problem(
                "document_status",
                f"document rows that are not committed (status {statuses}) are invisible",
                severity="warning",
                table="documents",
                rows=sum(other.values()),
            )
        return committed

    def _children(
        self, name: str, table: Any, documents: dict[str, dict[str, Any]]
    ) -> Counter[str]:
        """Rows per committed document; rows of any other document are reported as orphans."""
        rows = _read(table, ["id", "doc_id"])
        self._duplicates(name, rows.column("id"))
        per_doc: Counter[str] = Counter()
        counts = pc.value_counts(rows.column("doc_id"))
        for doc_id, count in zip(
            counts.field("values").to_pylist(), counts.field("counts").to_pylist(), strict=True
        ):
            per_doc[doc_id] = count
        orphans = {d: n for d, n in per_doc.items() if d not in documents}
        if orphans:
            rows_n = sum(orphans.values())
            self.problem(
                "orphan_rows",
                f"table {name}: {rows_n} rows of {len(orphans)} document(s) that were never "
                f"committed ({_short(str(d) for d in orphans)}); {_REPAIR_HINT}",
                table=name,
                rows=rows_n,
            )
        return Counter({d: n for d, n in per_doc.items() if d in documents})

    def _counts(
        self, documents: dict[str, dict[str, Any]], children: dict[str, Counter[str]]
    ) -> None:
        for doc_id, row in sorted(documents.items()):
            for name in _COUNTED:
                stored = children.get(name, Counter()).get(doc_id, 0)
                if name not in children and self.report.counts.get(name):
                    continue  # the table exists but could not be read: reported already
                if stored != row[name]:
                    self.problem(
                        "count_mismatch",
                        f"{row['name']} ({doc_id[:12]}): the document row counts {row[name]} "
                        f"{name}, the table holds {stored}; {_REINGEST_HINT}",
                        table=name,
                        doc_id=doc_id,
                        rows=abs(stored - int(row[name] or 0)),
                    )

    def _graphs(
        self, documents: dict[str, dict[str, Any]], children: dict[str, Counter[str]]
    ) -> None:
        """Every document with graph nodes has its graph (the blob readout navigates)."""
        if "graphs" not in children and self.report.counts.get("graphs"):
            return  # the table exists but could not be read: reported already
        stored = children.get("graphs", Counter())
        for doc_id, row in sorted(documents.items()):
            if row.get("nodes") and stored.get(doc_id, 0) != 1:
                self.problem(
                    "graph_missing",
                    f"{row['name']} ({doc_id[:12]}): the content graph is missing; "
                    f"{_REINGEST_HINT}",
                    table="graphs",
                    doc_id=doc_id,
                )

    def _assets(self, tables: dict[str, Any], documents: dict[str, dict[str, Any]]) -> None:
        """Every page render, picture and chunk image of a committed document is stored."""
        stored: set[str] = set()
        if "assets" in tables:
            rows = _read(tables["assets"], ["id", "doc_id"])
            stored = {
                i
                for i, d in zip(
                    rows.column("id").to_pylist(), rows.column("doc_id").to_pylist(), strict=True
                )
                if d in documents
            }
        wanted: dict[str, set[str]] = defaultdict(set)
        for name, column in (("pages", "image_id"), ("elements", "image_id")):
            if name in tables:
                rows = _read(tables[name], ["doc_id", column])
                for doc_id, image in zip(
                    rows.column("doc_id").to_pylist(), rows.column(column).to_pylist(), strict=True
                ):
                    if image and doc_id in documents:
                        wanted[doc_id].add(image)
        if "chunks" in tables:
            rows = _read(tables["chunks"], ["doc_id", "image_ids"])
            for doc_id, images in zip(
                rows.column("doc_id").to_pylist(), rows.column("image_ids").to_pylist(), strict=True
            ):
                if images and doc_id in documents:
                    wanted[doc_id].update(images)
        for doc_id, images in sorted(wanted.items()):
            missing = images - stored
            if missing:
                self.problem(
                    "missing_asset",
                    f"{documents[doc_id]['name']} ({doc_id[:12]}): {len(missing)} referenced "
                    f"images are not stored ({_short(missing)}); {_REINGEST_HINT}",
                    table="assets",
                    doc_id=doc_id,
                    rows=len(missing),
                )

    def _sources(self, tables: dict[str, Any], documents: dict[str, dict[str, Any]]) -> None:
        """Every document whose images are recipes has its file, whole; no file is left over."""
        needed: set[str] = set()
        if "assets" in tables:
            rows = _read(tables["assets"], ["doc_id", "data", "render"])
            for doc_id, data, render in zip(
                rows.column("doc_id").to_pylist(),
                rows.column("data").is_null().to_pylist(),
                rows.column("render").to_pylist(),
                strict=True,
            ):
                if data and render and doc_id in documents:
                    needed.add(doc_id)
        files: dict[str, tuple[str, str]] = {}
        if "documents" in tables:
            rows = _read(tables["documents"], ["id", "sha256", "media_type", "status"])
            files = {
                r["id"]: (r["sha256"], r["media_type"])
                for r in rows.to_pylist()
                if r["status"] == "done"
            }
        sources = self.store.sources
        for doc_id in sorted(needed):
            sha256, media_type = files.get(doc_id, ("", ""))
            wrong = sources.check(sha256, media_type) if sha256 else "missing"
            if wrong:
                self.problem(
                    "missing_source",
                    f"{documents[doc_id]['name']} ({doc_id[:12]}): the file kept to show its "
                    f"page images is {wrong}; {_REINGEST_HINT}",
                    table="sources",
                    doc_id=doc_id,
                )
        claimed = {sha for sha, _ in files.values()}
        left = sorted(key for key in sources.stored() if key not in claimed)
        if left and "documents" in tables:
            self.problem(
                "orphan_source",
                f"{len(left)} kept file(s) belong to no stored document ({_short(left)}), left "
                f"by an interrupted write; {_REPAIR_HINT}",
                table="sources",
                rows=len(left),
            )

    def _vectors(self, table: Any, name: str) -> None:
        """Vectors are present, finite and not zero (a zero vector has no cosine)."""
        bad = 0
        size = table.schema.field("vector").type.list_size
        for batch in _read(table, ["vector"]).to_batches():
            column = batch.column("vector")
            bad += column.null_count
            if column.null_count:
                column = column.filter(pc.is_valid(column))
            values = column.flatten().to_numpy(zero_copy_only=False).reshape(-1, size)
            finite = np.isfinite(values).all(axis=1)
            bad += int((~finite).sum())
            bad += int((np.abs(values[finite]).sum(axis=1) == 0).sum())
        if bad:
            self.problem(
                "bad_vector",
                f"{bad} vectors in table {name} are missing, not finite or zero",
                table=name,
                rows=bad,
            )

    def _indexes(self, name: str, table: Any, rows: int) -> None:
        """``rows``: rows of committed documents (orphans are reported on their own)."""
        indices = table.list_indices()
        if rows and not any(i.index_type == "FTS" for i in indices):
            self.problem(
                "text_index_missing",
                f"table {name} has {rows} rows but no full-text index: keyword search finds "
                "nothing in it; `docsight check --repair` builds it",
                table=name,
            )
        for index in indices:
            stats = table.index_stats(index.name)
            lagging = int(getattr(stats, "num_unindexed_rows", 0) or 0)
            if lagging:
                self.problem(
                    "unindexed_rows",
                    f"{lagging} rows of table {name} are not in its {index.index_type} index "
                    "yet (searches scan them, more slowly); the next ingest or "
                    "`docsight check --repair` adds them",
                    severity="warning",
                    table=name,
                    rows=lagging,
                )


def check_collection(store: LanceStore) -> CheckReport:
    return _Checker(store).run()
