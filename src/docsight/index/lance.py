"""The embedded LanceDB store.

One directory per collection: a ``collection.json`` manifest (schema version, encoder) and one Lance
table per kind of row. Lance commits are atomic per table but not across tables, so a document is
written children-first with its ``documents`` row last; that row is the commit point, and every
read filters on committed documents. BM25 uses Lance's native full-text index; dense search is
exact until the collection is large enough for an IVF-PQ index to pay off.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import warnings
from collections.abc import Iterable, Iterator, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from docsight.document.chunk import Chunk
from docsight.document.model import Asset, Document, Element, ParsedDocument
from docsight.errors import (
    ConfigurationError,
    DocumentNotFoundError,
    SchemaVersionError,
    StoreError,
)
from docsight.graph.build import GraphBundle
from docsight.graph.model import ContentGraph
from docsight.index import repair
from docsight.index import schema as S
from docsight.index.base import (
    ChannelHit,
    CheckReport,
    CollectionStats,
    DocumentInfo,
    PageIndex,
    PageVectors,
)
from docsight.index.graph_rows import GraphMethods
from docsight.index.guard import guard
from docsight.index.location import LocalLocation, Location, open_location
from docsight.index.renders import Renderer
from docsight.index.sources import SourceFiles, render_asset, stored_source
from docsight.index.visual import PageVectorMethods
from docsight.index.visual import write as write_page_vectors
from docsight.index.where import batches as _batches
from docsight.index.where import has_text_index as _has_text_index
from docsight.index.where import in_filter as _in_filter
from docsight.index.where import quote as _quote
from docsight.index.writer import DocumentWriter

log = logging.getLogger(__name__)

MANIFEST = "collection.json"
_FTS_OPTIONS = dict(
    use_tantivy=False,
    with_position=False,
    base_tokenizer="simple",
    language="English",
    lower_case=True,
    stem=True,
    remove_stop_words=True,
    ascii_folding=True,
)
#: Tables whose rows belong to one document each (the documents row commits them).
CHILD_TABLES = ("chunks", "nodes", "graphs", "elements", "pages", "assets", "page_vectors")
#: Tables with a full-text index on ``text``.
_TEXT_TABLES = ("chunks", "pages", "nodes")


class LanceStore(GraphMethods, PageVectorMethods):
    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        vector_index_min_rows: int = 50_000,
        render_cache_mb: float = 64.0,
        work_dir: Path | None = None,
    ) -> None:
        #: Where the shared part lives (a directory or a URI) and the local working part.
        self.location: Location = open_location(path, work_dir)
        #: The collection directory; for a remote collection its URI (a ``str``), which only
        #: appears in messages: every file access goes through ``location``.
        self.path: Any = (
            self.location.root
            if isinstance(self.location, LocalLocation)
            else self.location.display
        )
        self.remote = self.location.remote
        self.vector_index_min_rows = vector_index_min_rows
        #: Source files kept for page images, and the renderer that makes images from them.
        self.sources = SourceFiles(self.location)
        self.renderer = Renderer(render_cache_mb)
        self._db: Any = None
        self._tables: dict[str, Any] = {}
        self._manifest: dict[str, Any] | None = None
        self._lock = threading.RLock()
        self._committed: tuple[int, frozenset[str], frozenset[str]] | None = None
        self._graphs: dict[str, ContentGraph] = {}
        self._guard_state = threading.local()
        #: Why collection.json had to be rebuilt from its backup or the tables (``None``: it
        #: was read as written); ``check`` reports it and any write puts the file back.
        self.manifest_problem: str | None = None
        #: collection.json as this store last wrote it.
        self._manifest_written: str | None = None

    def _forget_tables(self) -> None:
        """Drop open table handles, so the next read opens every table afresh."""
        with self._lock:
            self._db = None
            self._tables.clear()
            self._committed = None

    def damage(self) -> list[str]:
        """What is damaged in the collection's tables, in words (empty: nothing found)."""
        return [d.describe() for d in repair.inspect(self)]

    # --- opening -------------------------------------------------------------------------------

    @property
    def exists(self) -> bool:
        # The tables are the collection: a lost collection.json is rebuilt, not "no collection".
        return self.location.is_file(MANIFEST) or bool(repair.table_dirs(self))

    def _read_manifest(self) -> dict[str, Any]:
        if self._manifest is None:
            file = self.path / MANIFEST if not self.remote else f"{self.path}/{MANIFEST}"
            manifest: Any = None
            if self.location.is_file(MANIFEST):
                try:
                    manifest = json.loads(self.location.read_text(MANIFEST))
                    if not isinstance(manifest, dict):
                        raise ValueError("not a JSON object")
                except (OSError, ValueError) as exc:
                    if not repair.table_dirs(self):
                        raise StoreError(f"{file}: unreadable collection manifest ({exc})") from exc
                    self.manifest_problem = f"{file} is damaged ({exc})"
                    manifest = None
            elif repair.table_dirs(self):
                self.manifest_problem = f"{file} is missing"
            if manifest is None and self.manifest_problem is not None:
                manifest = repair.rebuilt_manifest(self)
            if manifest is not None:
                version = manifest.get("schema_version")
                if version not in S.READABLE_SCHEMA_VERSIONS:
                    raise SchemaVersionError(
                        f"{self.path} was written with store schema v{version}; this version of "
                        f"docsight reads v{S.READABLE_SCHEMA_VERSIONS[0]} to "
                        f"v{S.STORE_SCHEMA_VERSION}. "
                        "Re-ingest into a new collection."
                    )
                self._manifest = manifest
            else:
                self._manifest = {"schema_version": S.STORE_SCHEMA_VERSION, "encoder": None}
        return self._manifest

    def _write_manifest(self) -> None:
        manifest = self._read_manifest()
        # An older readable version takes this version's number at its first write (v5 → v6).
        manifest["schema_version"] = S.STORE_SCHEMA_VERSION
        text = json.dumps(manifest, indent=2)
        if self.remote and text == self._manifest_written and not self.manifest_problem:
            return  # every document's write would cost two requests for the same bytes
        # Atomic: readers see the old or the new file (a rename locally, one PUT remotely).
        self.location.write_text(MANIFEST, text)
        self.manifest_problem = None
        self._manifest_written = text
        repair.backup_collection_manifest(self, text)

    def _connect(self) -> Any:
        if self._db is None:
            import lancedb

            self._read_manifest()
            if not self.remote:
                self.path.mkdir(parents=True, exist_ok=True)
                where: Any = self.path / "tables"
            else:
                where = self.location.lance_uri("tables")
            # Re-check table versions on every read so a long-lived reader sees other writers.
            self._db = lancedb.connect(
                where,
                read_consistency_interval=timedelta(0),
                storage_options=self.location.storage_options() or None,
            )
        return self._db

    def _table(self, name: str) -> Any | None:
        """An existing table, or ``None``: reads never create anything."""
        with self._lock:
            if name not in self._tables:
                db = self._connect()
                if name not in db.list_tables().tables or repair.unfinished_table(self, name):
                    return None
                self._tables[name] = db.open_table(name)
            return self._tables[name]

    def _writable_table(self, name: str, schema: pa.Schema) -> Any:
        with self._lock:
            table = self._table(name)
            if table is None:
                folder = f"tables/{name}.lance"
                if self.location.is_dir(folder) and repair.unfinished_table(self, name):
                    # A creation killed before its first commit: nothing in it to keep.
                    self.location.delete_tree(folder)
                table = self._connect().create_table(name, schema=schema, exist_ok=True)
                self._tables[name] = table
            return table

    # --- encoder binding -----------------------------------------------------------------------

    def encoder_fingerprint(self) -> str | None:
        encoder = self._read_manifest().get("encoder")
        return encoder["fingerprint"] if encoder else None

    def bind_encoder(self, fingerprint: str, dim: int) -> None:
        """Record the vector space of this collection; refuse a different one."""
        manifest = self._read_manifest()
        current = manifest.get("encoder")
        if current is None:
            manifest["encoder"] = {"fingerprint": fingerprint, "dim": dim}
            self._write_manifest()
        elif current["fingerprint"] != fingerprint or current["dim"] != dim:
            raise ConfigurationError(
                f"collection {self.path} was embedded with {current['fingerprint']} "
                f"(dim {current['dim']}); the configured encoder is {fingerprint} (dim {dim}). "
                "Use the same encoder or a new collection."
            )
        elif not self.location.is_file(MANIFEST) or self.manifest_problem:
            self._write_manifest()

    def _dim(self) -> int:
        encoder = self._read_manifest().get("encoder")
        if not encoder:
            raise StoreError(f"collection {self.path} has no encoder bound yet")
        return int(encoder["dim"])

    # --- documents -----------------------------------------------------------------------------

    def committed_ids(self) -> frozenset[str]:
        """Committed documents, less versions superseded by a newer one of the same source."""
        return self._commit_state()[1]

    def superseded_ids(self) -> frozenset[str]:
        """Committed documents replaced by a newer version of the same file whose removal was
        interrupted (a crash or a failure between the new commit and the old delete). They are
        invisible to every read; ``recover`` removes them."""
        return self._commit_state()[2]

    def _commit_state(self) -> tuple[int, frozenset[str], frozenset[str]]:
        table = self._table("documents")
        if table is None:
            return (-1, frozenset(), frozenset())
        version = table.version
        if self._committed is None or self._committed[0] != version:
            rows = (
                table.search()
                .where("status = 'done'")
                .select(["id", "source", "ingested_at"])
                .limit(None)
                .to_arrow()
                .to_pylist()
            )
            newest: dict[str, dict[str, Any]] = {}
            for row in rows:
                best = newest.get(row["source"])
                if best is None or _version_order(row) > _version_order(best):
                    newest[row["source"]] = row
            keep = frozenset(r["id"] for r in newest.values())
            old = frozenset(r["id"] for r in rows) - keep
            self._committed = (version, keep, old)
        return self._committed

    def _document_rows(
        self, where: str | None = None, *, all_versions: bool = False
    ) -> list[dict[str, Any]]:
        table = self._table("documents")
        if table is None:
            return []
        clause = "status = 'done'" + (f" AND ({where})" if where else "")
        query = table.search().where(clause).select(S.DOCUMENT_INFO_COLUMNS).limit(None)
        rows: list[dict[str, Any]] = query.to_arrow().to_pylist()
        if all_versions:
            return rows
        superseded = self.superseded_ids()
        return [r for r in rows if r["id"] not in superseded]

    @staticmethod
    def _info(row: dict[str, Any]) -> DocumentInfo:
        # The documents table's columns are named after DocumentInfo's fields.
        return DocumentInfo.model_validate(row)

    def has_document(self, doc_id: str) -> DocumentInfo | None:
        rows = self._document_rows(f"id = {_quote(doc_id)}", all_versions=True)
        if not rows or self._is_superseded(rows[0]):
            return None
        return self._info(rows[0])

    def _is_superseded(self, row: dict[str, Any]) -> bool:
        """Whether a newer version of ``row``'s source is committed (see ``_commit_state``).

        Asked of the versions of one source, not of every document: an ingest asks it once or
        twice a file, each time after a write, and a scan of every committed row took 0.14 s
        at 10,000 documents and 0.9 s at 100,000, a query of one source 0.02-0.03 s at any of
        these sizes (``benchmarks/results/document_lookup.md``)."""
        table = self._table("documents")
        if table is None:
            return False
        known = self._committed
        if known is not None and known[0] == table.version:
            return row["id"] in known[2]
        versions = self._document_rows(f"source = {_quote(row['source'])}", all_versions=True)
        return any(_version_order(other) > _version_order(row) for other in versions)

    def list_documents(self) -> list[DocumentInfo]:
        infos = [self._info(r) for r in self._document_rows()]
        return sorted(infos, key=lambda d: (d.name, d.id))

    def documents_by_source(self, source: str) -> list[DocumentInfo]:
        """Every committed version stored for ``source``, superseded ones included (what a
        replacement must remove)."""
        rows = self._document_rows(f"source = {_quote(source)}", all_versions=True)
        return [self._info(r) for r in rows]

    def _upsert(self, name: str, data: pa.Table | list[dict[str, Any]], schema: pa.Schema) -> None:
        """Insert rows, replacing stored rows with the same ids."""
        self._write(name, data, schema, append=False)

    def _append(self, name: str, data: pa.Table | list[dict[str, Any]], schema: pa.Schema) -> None:
        """Insert rows whose ids the table does not hold (the caller has made sure of it).

        A merge joins the new rows with every id the table holds, and its memory grows with the
        table: storing a 1,000-page report in a fresh collection peaked about 40 MiB higher
        with merges than with appends, a 250-page one 18 MiB. A pending document's rows cannot
        be in the table (``begin_document`` removed them), so they are appended."""
        self._write(name, data, schema, append=True)

    def _write(
        self,
        name: str,
        data: pa.Table | list[dict[str, Any]],
        schema: pa.Schema,
        *,
        append: bool,
    ) -> None:
        table_data = (
            data if isinstance(data, pa.Table) else pa.Table.from_pylist(data, schema=schema)
        )
        if table_data.num_rows == 0:
            return
        table = self._writable_table(name, schema)
        version, started = table.version, repair.now_ns()
        try:
            if append:
                table.add(table_data)
            else:
                (
                    table.merge_insert("id")
                    .when_matched_update_all()
                    .when_not_matched_insert_all()
                    .execute(table_data)
                )
        except Exception:
            # Nothing was committed: remove the partial files (a full disk stays as full as it
            # was, not fuller with bytes no version will ever reference).
            with _quiet():
                if self.remote:
                    pass  # object stores have no partial files to scrub (uploads are whole)
                else:
                    current = self._table(name)
                    if current is None or current.version == version:
                        repair.scrub_failed_write(self._table_dir(name), started)
            raise

    def put_document(
        self,
        parsed: ParsedDocument,
        chunks: Sequence[Chunk],
        vectors: np.ndarray,
        chunker: str,
        graph: GraphBundle | None = None,
        source: Path | None = None,
        page_vectors: PageVectors | None = None,
    ) -> DocumentInfo:
        """Write a document; with ``source`` (its file), images with a render recipe are kept
        as recipes over a copy of the file instead of as pixels; ``page_vectors`` (its page
        images' vectors, from the bound visual encoder) are written before the commit too.
        If any step fails, what was written is removed again (nothing of it was visible); a
        killed process leaves it to the next ``recover``. (:meth:`begin_document` writes the
        same rows in steps.)"""
        with self._lock:
            writer = self.begin_document(parsed, chunker, source=source)
            try:
                writer.add_chunks(chunks, vectors)
                if graph is not None:
                    writer.add_graph(graph)
                if page_vectors is not None:
                    writer.add_page_vectors(page_vectors)
                return writer.commit()
            except Exception:
                with _quiet():  # its own failure (a full disk) must not hide the first one
                    writer.abort()
                raise

    def begin_document(
        self,
        parsed: ParsedDocument,
        chunker: str,
        *,
        source: Path | None = None,
        windows: Iterable[tuple[int, int, Sequence[Element]]] | None = None,
    ) -> DocumentWriter:
        """Start writing a document: its earlier rows, committed or not, are removed, and its
        file (see :meth:`put_document`), assets, pages and elements written; the returned
        writer takes its chunks, graph and page vectors, and commits it. With ``windows``, the
        document's own elements are not read: each window gives the elements of pages
        ``[start, stop)``, written as it comes."""
        doc = parsed.document
        with self._lock:
            self._write_manifest()
            # The document's rows are appended, not merged: whatever an earlier write of it
            # left (committed, or cut short and not yet recovered) goes first.
            self._clear(doc.id)
            # Children first, in any order; the documents row is the commit point. The source
            # file goes first of all: rows never point at a file that is not there.
            kept = source is not None and any(a.render for a in parsed.assets)
            if kept:
                assert source is not None
                self.sources.put(source, doc.sha256, doc.media_type)
            for group in _asset_groups(parsed.assets, from_source=kept):
                self._append("assets", S.asset_rows(group, from_source=kept), S.ASSETS)
            try:
                # A long document's rows go in bounded batches (S.WRITE_ROWS).
                if windows is None:
                    self._write_pending(S.structure_tables(doc))
                    return DocumentWriter(self, parsed, chunker, len(doc.elements))
                count = 0
                for start, stop, elements in windows:
                    self._write_pending(S.window_tables(doc, start, stop, elements))
                    count += len(elements)
            except Exception:
                # A window that could not be read, a full disk: what was written goes again.
                with _quiet():
                    self._abort_pending(doc.id)
                raise
        return DocumentWriter(self, parsed, chunker, count)

    def _write_pending(self, tables: Iterator[tuple[str, pa.Table, pa.Schema]]) -> None:
        with self._lock:
            for name, table, schema in tables:
                self._append(name, table, schema)

    def _write_page_vectors_pending(self, doc_id: str, page_vectors: PageVectors) -> None:
        with self._lock:
            write_page_vectors(self, doc_id, page_vectors, append=True)

    def _commit_pending(
        self, parsed: ParsedDocument, chunks: int, chunker: str, nodes: int, elements: int
    ) -> DocumentInfo:
        with self._lock:
            row = S.document_row(parsed, chunks, chunker, n_nodes=nodes, n_elements=elements)
            written = pa.Table.from_pylist([row], schema=S.DOCUMENTS)
            self._upsert("documents", written, S.DOCUMENTS)
            try:
                self._ensure_text_index()
            except Exception as exc:
                # The document is committed; a missing index is found by check and built by
                # recover (or the ingest's final optimize), so the write still succeeded.
                log.warning("the full-text index could not be built yet: %s", exc)
        # What a read of the row returns, without the read: the row as Arrow holds it (a
        # read-back cost two scans of the documents table, one of them of every committed id).
        return self._info(written.select(S.DOCUMENT_INFO_COLUMNS).to_pylist()[0])

    def _abort_pending(self, doc_id: str) -> None:
        from docsight.index.sources import remove_orphans

        with self._lock:
            self._clear(doc_id)
            remove_orphans(self)  # its kept file: no committed document claims it any more

    def delete_document(self, doc_id: str) -> None:
        with self._lock:
            documents = self._table("documents")
            kept = stored_source(self, doc_id, committed=False)
            if documents is not None:
                # Un-commit first, so readers stop seeing the document before its rows go.
                documents.delete(f"id = {_quote(doc_id)}")
            self._delete_children([doc_id])
            if kept is not None:  # last, so rows never point at a file that is gone
                self.sources.remove(*kept)

    def _clear(self, doc_id: str) -> None:
        """Remove every row of ``doc_id``, committed or not, so that its rows can be appended.

        Counting first costs a scan of one column per table (0.02 s at 600,000 rows); a delete
        that matches nothing would still commit a new version of every table."""
        documents = self._table("documents")
        if documents is not None and documents.count_rows(f"id = {_quote(doc_id)}"):
            self.delete_document(doc_id)  # committed (perhaps superseded): un-commit first
            return
        where = f"doc_id = {_quote(doc_id)}"
        for name in CHILD_TABLES:
            table = self._table(name)
            if table is not None and table.count_rows(where):
                table.delete(where)

    def _delete_children(self, doc_ids: Sequence[str]) -> None:
        for name in CHILD_TABLES:
            table = self._table(name)
            if table is None:
                continue
            for batch in _batches(list(doc_ids)):
                table.delete(_in_filter("doc_id", batch))

    def recover(self) -> int:
        """Finish or undo what an interrupted write left; returns the uncommitted documents whose
        rows were removed (see :func:`.maintenance.recover`)."""
        from docsight.index import maintenance

        return maintenance.recover(self)

    def repair(self) -> tuple[list[str], list[str]]:
        """Restore a working collection; returns what was done and the files to ingest again
        (see :func:`.repair.repair_collection`)."""
        return repair.repair_collection(self)

    def vector_dim(self) -> int | None:
        """The dimension of the stored chunk vectors (``None`` without chunks)."""
        table = self._table("chunks")
        field = table.schema.field("vector") if table is not None else None
        return field.type.list_size if field is not None else None

    def check(self) -> CheckReport:
        """Verify the collection's integrity without changing it (see :mod:`.check`)."""
        from docsight.index.check import check_collection

        return check_collection(self)

    def get_document(self, doc_id: str) -> Document:
        table = self._table("documents")
        rows = (
            table.search()
            .where(f"id = {_quote(doc_id)} AND status = 'done'")
            .select(["doc_json"])
            .limit(1)
            .to_arrow()
            .to_pylist()
            if table is not None
            else []
        )
        if not rows:
            raise DocumentNotFoundError(f"no document {doc_id} in {self.path}")
        document = Document.model_validate_json(rows[0]["doc_json"])
        elements_table = self._table("elements")
        if elements_table is not None:
            element_rows = (
                elements_table.search()
                .where(f"doc_id = {_quote(doc_id)}")
                .limit(None)
                .to_arrow()
                .to_pylist()
            )
            document.elements = sorted(
                (S.element_from_row(r) for r in element_rows), key=lambda e: e.order
            )
        return document

    def get_asset(self, asset_id: str, *, dpi: float | None = None) -> Asset | None:
        table = self._table("assets")
        if table is None:
            return None
        rows = table.search().where(f"id = {_quote(asset_id)}").limit(1).to_arrow().to_pylist()
        if not rows or rows[0]["doc_id"] not in self.committed_ids():
            return None
        asset = S.asset_from_row(rows[0])
        return asset if asset.data or not asset.render else render_asset(self, asset, dpi=dpi)

    # --- chunks and search ---------------------------------------------------------------------

    def _chunk_rows(self, where: str) -> list[dict[str, Any]]:
        table = self._table("chunks")
        if table is None:
            return []
        rows = table.search().where(where).select(S.CHUNK_COLUMNS).limit(None).to_arrow()
        committed = self.committed_ids()
        return [r for r in rows.to_pylist() if r["doc_id"] in committed]

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        by_id: dict[str, Chunk] = {}
        for batch in _batches(list(dict.fromkeys(chunk_ids))):
            for row in self._chunk_rows(_in_filter("id", batch)):
                by_id[row["id"]] = S.chunk_from_row(row)
        return [by_id[i] for i in chunk_ids if i in by_id]

    def get_elements(self, element_ids: Sequence[str]) -> list[Element]:
        table = self._table("elements")
        if table is None:
            return []
        committed = self.committed_ids()
        by_id: dict[str, Element] = {}
        for batch in _batches(list(dict.fromkeys(element_ids))):
            rows = table.search().where(_in_filter("id", batch)).limit(None).to_arrow().to_pylist()
            by_id.update((r["id"], S.element_from_row(r)) for r in rows if r["doc_id"] in committed)
        return [by_id[i] for i in element_ids if i in by_id]

    def document_chunks(self, doc_id: str) -> list[Chunk]:
        rows = self._chunk_rows(f"doc_id = {_quote(doc_id)}")
        return sorted((S.chunk_from_row(r) for r in rows), key=lambda c: c.order)

    def _ensure_text_index(self) -> None:
        """Create the BM25 indexes once their tables have rows; later rows are added by optimize."""
        for name in _TEXT_TABLES:
            table = self._table(name)
            if table is None or table.count_rows() == 0:
                continue
            if not _has_text_index(table):
                self._create_text_index(table)

    def _create_text_index(self, table: Any) -> None:
        with warnings.catch_warnings():
            # create_fts_index is the one sync call that configures the native index.
            warnings.simplefilter("ignore", DeprecationWarning)
            table.create_fts_index("text", replace=True, **_FTS_OPTIONS)

    def _create_vector_index(self, table: Any, *, replace: bool = False) -> None:
        from lancedb.index import IvfPq

        # The first argument is the column when a config is given; partitions are left to
        # Lance, which sizes them from the row count.
        table.create_index(
            "vector",
            config=IvfPq(distance_type="cosine", num_sub_vectors=max(1, self._dim() // 8)),
            replace=replace,
        )

    def _table_dir(self, name: str) -> Path:
        return self.path / "tables" / f"{name}.lance"

    def _hits(self, rows: pa.Table, score: Any, *, pages: bool = False) -> list[ChannelHit]:
        committed = self.committed_ids()
        ids = [None] * rows.num_rows if pages else rows.column("id").to_pylist()
        return [
            ChannelHit(chunk_id=i, doc_id=d, page=p, score=float(s))
            for i, d, p, s in zip(
                ids,
                rows.column("doc_id").to_pylist(),
                rows.column("page").to_pylist(),
                score,
                strict=True,
            )
            if d in committed
        ]

    def _full_text(
        self, name: str, query: str, limit: int, doc_ids: Sequence[str] | None
    ) -> pa.Table | None:
        table = self._table(name)
        if table is None or not query.strip() or doc_ids == [] or not _has_text_index(table):
            return None
        search = table.search(query, query_type="fts", fts_columns="text")
        if doc_ids:
            search = search.where(_in_filter("doc_id", doc_ids), prefilter=True)
        columns = ["doc_id", "page", "_score"] + (["id"] if name == "chunks" else [])
        return search.select(columns).limit(limit).to_arrow()

    def text_search(
        self, query: str, limit: int, doc_ids: Sequence[str] | None = None
    ) -> list[ChannelHit]:
        rows = self._full_text("chunks", query, limit, doc_ids)
        return [] if rows is None else self._hits(rows, rows.column("_score").to_pylist())

    def page_text_search(
        self, query: str, limit: int, doc_ids: Sequence[str] | None = None
    ) -> list[ChannelHit]:
        rows = self._full_text("pages", query, limit, doc_ids)
        if rows is None:
            return []
        return self._hits(rows, rows.column("_score").to_pylist(), pages=True)

    def page_index(self, doc_ids: Sequence[str]) -> list[PageIndex]:
        table = self._table("pages")
        committed = self.committed_ids()
        wanted = [d for d in dict.fromkeys(doc_ids) if d in committed]
        if table is None or not wanted:
            return []
        counts: dict[str, int] = {d: 0 for d in wanted}
        labels: dict[str, dict[str, list[int]]] = {d: {} for d in wanted}
        for batch in _batches(wanted):
            rows = (
                table.search()
                .where(_in_filter("doc_id", batch))
                .select(["doc_id", "page", "labels"])
                .limit(None)
                .to_arrow()
                .to_pylist()
            )
            for row in rows:
                doc = row["doc_id"]
                counts[doc] = max(counts[doc], row["page"] + 1)
                for label in row["labels"] or []:
                    labels[doc].setdefault(label, []).append(row["page"])
        return [PageIndex(d, counts[d], labels[d]) for d in wanted]

    def chunks_on_pages(self, pages: Sequence[tuple[str, int]]) -> list[Chunk]:
        by_doc: dict[str, set[int]] = {}
        for doc_id, page in pages:
            by_doc.setdefault(doc_id, set()).add(int(page))
        chunks: list[Chunk] = []
        for doc_id, numbers in by_doc.items():
            where = (
                f"doc_id = {_quote(doc_id)} AND page IN ({', '.join(map(str, sorted(numbers)))})"
            )
            chunks.extend(S.chunk_from_row(r) for r in self._chunk_rows(where))
        return sorted(chunks, key=lambda c: (c.doc_id, c.page, c.order))

    def vector_search(
        self, vector: np.ndarray, limit: int, doc_ids: Sequence[str] | None = None
    ) -> list[ChannelHit]:
        table = self._table("chunks")
        if table is None or doc_ids == []:
            return []
        search = table.search(
            np.asarray(vector, dtype=np.float32), vector_column_name="vector"
        ).distance_type("cosine")
        if any(_is_vector_index(i) for i in table.list_indices()):
            search = search.nprobes(20).refine_factor(5)
        if doc_ids:
            search = search.where(_in_filter("doc_id", doc_ids), prefilter=True)
        rows = search.select(["id", "doc_id", "page", "_distance"]).limit(limit).to_arrow()
        return self._hits(rows, [1.0 - d for d in rows.column("_distance").to_pylist()])

    # --- maintenance ---------------------------------------------------------------------------

    def optimize(self, *, indexes: bool = True) -> list[str]:
        """Fold new rows into the indexes, compact files and drop old versions at once; returns
        what had to be left undone for lack of disk space (see :func:`.maintenance.optimize`)."""
        from docsight.index import maintenance

        return maintenance.optimize(self, indexes=indexes)

    def stats(self) -> CollectionStats:
        """Counts, indexes and bytes on disk per part (see :func:`.sources.collection_stats`)."""
        from docsight.index.sources import collection_stats

        return collection_stats(self)


def _version_order(row: dict[str, Any]) -> tuple[Any, str]:
    """Which of two committed versions of one source is newer: the later ``ingested_at``, then
    the larger id (two commits in the same microsecond)."""
    return (row["ingested_at"], row["id"])


def _is_vector_index(index: Any) -> bool:
    return "vector" in index.columns and index.index_type.upper().startswith("IVF")


def _asset_groups(
    assets: Sequence[Asset], max_bytes: int = 64 << 20, *, from_source: bool = False
) -> Iterable[list[Asset]]:
    """Split assets into writes of bounded size (page renders of a long PDF add up)."""
    group: list[Asset] = []
    size = 0
    for asset in assets:
        weight = 0 if from_source and asset.render else len(asset.data)
        if group and size + weight > max_bytes:
            yield group
            group, size = [], 0
        group.append(asset)
        size += weight
    if group:
        yield group


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Best-effort cleanup after a failure: its own errors must not hide the first one."""
    try:
        yield
    except Exception as exc:
        log.debug("cleanup after a failed write failed too: %s", exc)


guard(
    LanceStore,
    reads=(
        "committed_ids",
        "superseded_ids",
        "has_document",
        "list_documents",
        "documents_by_source",
        "get_document",
        "get_asset",
        "get_chunks",
        "get_elements",
        "document_chunks",
        "text_search",
        "page_text_search",
        "page_index",
        "chunks_on_pages",
        "vector_search",
        "get_graph",
        "graph_references",
        "node_text_search",
        "node_vector_search",
        "page_vector_search",
        "page_vector_count",
        "visual_binding",
        "stats",
    ),
    writes=(
        "bind_encoder",
        "bind_visual",
        "put_document",
        "begin_document",
        "_write_pending",
        "_write_page_vectors_pending",
        "_commit_pending",
        "_abort_pending",
        "delete_document",
        "recover",
        "optimize",
    ),
)
