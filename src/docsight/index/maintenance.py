"""Upkeep of a Lance collection: finishing interrupted writes and optimizing tables.

Both run under the writer lock. ``recover`` runs before every ingest and in ``check --repair``;
it needs no more free disk than the rows it removes (a deletion commits a few kilobytes), so it
works on a full disk. ``optimize`` runs after an ingest that changed something: compaction can
rewrite a whole table before its old files go, so a table is only optimized when the disk has
room for a copy of it, and otherwise left as it is (its new rows are still found, by a scan).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import pyarrow.compute as pc

from docsight.errors import DocsightError
from docsight.index import compaction, lookup, repair
from docsight.index.compaction import optimize_table
from docsight.index.guard import os_errno

if TYPE_CHECKING:
    from docsight.index.lance import LanceStore

log = logging.getLogger(__name__)

#: Free space a table's compaction needs, beyond a copy of the table.
_HEADROOM = 8 << 20


def recover(store: LanceStore) -> int:
    """Finish or undo what an interrupted write left; returns the uncommitted documents whose
    rows were removed.

    A process killed mid-ingest can leave child rows of a document it never committed, an older
    version of a re-ingested file beside the new one (killed between the new commit and the old
    delete), a first document committed before its text index was built, or committed rows it
    never folded into the indexes (the final optimize). Re-running ingest skips documents that
    are already committed, so nothing else would ever clean up or build those.
    """
    from docsight.index.lance import CHILD_TABLES, MANIFEST

    superseded = store.superseded_ids()
    stored = store.committed_ids() | superseded
    orphans: set[str] = set()
    for name in CHILD_TABLES:
        table = store._table(name)
        if table is None:
            continue
        ids = table.search().select(["doc_id"]).limit(None).to_arrow().column("doc_id")
        orphans.update(set(pc.unique(ids).to_pylist()) - stored)
    orphans.discard(None)  # type: ignore[arg-type]
    with store._lock:
        if store.location.is_dir("tables") and (
            not store.location.is_file(MANIFEST) or store.manifest_problem
        ):
            store._write_manifest()
        for doc_id in sorted(superseded):
            # The replacement committed; only the old version's removal was cut short.
            log.info("removing document %s, superseded by a newer version", doc_id)
            store.delete_document(doc_id)
        if orphans:
            log.info("removing rows of %d uncommitted documents", len(orphans))
            store._delete_children(sorted(orphans))
        from docsight.index.sources import remove_orphans

        if remove_orphans(store):
            log.info("removed kept files of documents that were never committed")
        store._ensure_text_index()
        if indexes_lag(store):
            log.info("adding rows an interrupted ingest left out of the indexes")
            try:
                skipped = optimize(store)
            except DocsightError as exc:  # only an optimization: the rows are found anyway
                log.warning("indexes not updated: %s", exc.message)
            else:
                for reason in skipped:
                    log.warning("%s", reason)
    return len(orphans)


def indexes_lag(store: LanceStore) -> bool:
    """Whether an index of a text table misses rows (they are found by a slower scan)."""
    from docsight.index.lance import _TEXT_TABLES

    for name in _TEXT_TABLES:
        table = store._table(name)
        if table is None:
            continue
        for index in table.list_indices():
            stats = table.index_stats(index.name)
            if stats is not None and stats.num_unindexed_rows:
                return True
    return False


def optimize(store: LanceStore, *, indexes: bool = True) -> list[str]:
    """Fold new rows into the indexes, compact files and drop old table versions at once.

    Old versions go as soon as the optimize commits: a reader that loses its version mid-read
    reads again (:mod:`.guard`). Returns what had to be left undone for lack of disk space.
    ``indexes=False`` compacts without updating the indexes where Lance allows it (see
    :func:`.compaction.optimize_table`): what a long ingest does between files. Without the
    bounded compaction, that leaves out tables past :data:`.compaction.TARGET_ROWS` rows:
    lancedb's optimize would rewrite all of such a table, and merge its indexes, every few files.
    """
    from docsight.index.lance import CHILD_TABLES, _is_vector_index

    skipped: list[str] = []
    bounded = compaction.bounded_compaction()
    with store._lock:
        chunks = store._table("chunks")
        if chunks is not None and indexes:
            store._ensure_text_index()
            has_vector_index = any(_is_vector_index(i) for i in chunks.list_indices())
            if not has_vector_index and chunks.count_rows() >= store.vector_index_min_rows:
                store._create_vector_index(chunks)
        from docsight.index.visual import ensure_index

        ensure_index(store)  # page vectors' doc_id, if a write could not build it
        if indexes:
            # Before the compaction below, which then drops the versions they replaced. They
            # only save time (reads scan without them), so failing to build one (a full disk
            # is measured per table below) must not keep the tables from their compaction.
            try:
                lookup.ensure_lookup_indexes(store)
            except Exception as exc:
                log.warning("the lookup indexes could not be built yet: %s", exc)
        for name in ("documents", *CHILD_TABLES):
            table = store._table(name)
            if table is None:
                continue
            if not indexes and not bounded and table.count_rows() > compaction.TARGET_ROWS:
                continue  # left to the final optimize (see above)
            # Object storage has no free space to run out of: only a local disk is measured.
            free = None if store.remote else repair.free_bytes(store.path)
            needed = 0 if store.remote else int(repair.dir_bytes(store._table_dir(name)) * 1.2)
            needed += _HEADROOM
            if free is not None and free < needed:
                skipped.append(
                    f"table {name} was not compacted or reindexed: {free >> 20} MiB free, "
                    f"about {needed >> 20} MiB needed; its new rows are found by a slower scan "
                    "until `docsight check --repair` or an ingest with more room optimizes it"
                )
                continue
            version, started = table.version, repair.now_ns()
            try:
                optimize_table(table, bounded=bounded, indexes=indexes)
            except Exception as exc:
                if not store.remote and os_errno(exc) is not None and table.version == version:
                    repair.scrub_failed_write(store._table_dir(name), started)
                raise
        repair.backup_manifests(store)
    return skipped
