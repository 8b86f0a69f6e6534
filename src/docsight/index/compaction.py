"""How a table is optimized: compacted, its indexes updated, its old versions removed.

lancedb's ``optimize`` does all three with Lance's default compaction, which treats every file
below a million rows as too small. Until a table reaches a million rows, each optimize therefore
rewrites all of it, decoding and encoding every row again: one 2,000-chunk file added to a
collection of 38,000 chunks cost an optimize of 10.9 s, and the cost grows with the collection
(``benchmarks/results/compaction.md``).

With Lance's own Python package (``pylance``, the ``large`` extra) the compaction is bounded:

* files that have reached :data:`TARGET_ROWS` rows are left as they are, so an ingest rewrites
  only the rows that came since (at most about that many), whatever the table's size;
* rows are copied as their encoded pages where Lance can (``try_binary_copy``; for docsight's
  tables it mostly cannot, and they are encoded again);
* a full-text index is kept in segments: new rows are merged into the newest segment until it
  reaches :data:`SEGMENT_BYTES`, and then start a new one, where the whole index used to be
  merged again at every optimize. Lance scores BM25 across segments as over one index (the
  same scores, measured), and a search reads each segment: 16 segments of 160,000 rows took
  18 ms a query against 12 ms for one (``benchmarks/results/compaction.md``);
* a vector index's new rows are always merged into its newest segment. Lance's default gave
  each optimize's rows a segment of their own, and files indexed by different segments are
  never compacted together, so the chunks table gained a file and the vector index a segment
  with every ingest.

Without the package, lancedb's own optimize runs as before. Either way the table ends with one
version, its deleted rows gone from the files and every row in its indexes (the bounded way
keeps several files where lancedb's keeps one).
"""

from __future__ import annotations

import logging
import warnings
from datetime import timedelta
from functools import cache
from typing import Any

log = logging.getLogger(__name__)

#: Rows at which a table file counts as full: later compactions leave it alone. A chunk row is
#: about 3 KiB (text, body and a 384-float vector), so a full chunks file is about 100 MB: the
#: most an ingest's optimize rewrites of that table, against all of it (up to a million rows)
#: with lancedb's default. A collection of 100,000 pages (about 600,000 chunks) keeps about
#: twenty such files, which indexed searches do not notice.
TARGET_ROWS = 32_768

#: Size at which the newest segment of a full-text index is left alone and new rows start a
#: segment of their own. Merging rows into a segment rewrites it: 1.3 s for one of 100,000
#: chunk rows (about 18 MiB) against 0.5 s for a new segment of 2,000 rows. At 8 MiB a merge
#: costs well under a second, and 600,000 chunks (about 100,000 pages) keep about fifteen
#: segments.
SEGMENT_BYTES = 8 << 20

#: The Lance releases this file format and these calls were tested with (lancedb's own engine
#: is the same major release); another release falls back to lancedb's optimize.
_TESTED_MAJOR = 9


@cache
def bounded_compaction() -> bool:
    """Whether the bounded compaction can run: Lance's package is installed, in the release
    it was tested with."""
    try:
        import lance
    except Exception:  # absent, or a broken install: lancedb's optimize needs neither
        return False
    version = str(getattr(lance, "__version__", "0"))
    major = version.split(".", 1)[0]
    if major != str(_TESTED_MAJOR):
        log.warning(
            "pylance %s is installed, but docsight's bounded compaction was tested with %d.x: "
            "tables are optimized by lancedb instead",
            version,
            _TESTED_MAJOR,
        )
        return False
    return True


def optimize_table(table: Any, *, bounded: bool | None = None, indexes: bool = True) -> None:
    """Compact ``table`` (a lancedb table), fold its new rows into its indexes and remove every
    older version and unreferenced file at once.

    With ``indexes=False`` and the bounded compaction, the indexes are left as they are (rows
    not in them yet are found by a scan); lancedb's optimize cannot leave them, and updates
    them anyway.

    Only under the collection's writer lock: no other write may be in flight, since files no
    version references are removed whatever their age.
    """
    if bounded is None:
        bounded = bounded_compaction()
    with warnings.catch_warnings():
        # Lance warns that readers of an older version will fail: docsight's read again.
        warnings.simplefilter("ignore", UserWarning)
        if bounded:
            _bounded(table, indexes=indexes)
        else:
            _lancedb(table)


def _bounded(table: Any, *, indexes: bool = True) -> None:
    dataset = table.to_lance()
    dataset.optimize.compact_files(
        target_rows_per_fragment=TARGET_ROWS,
        compaction_mode="try_binary_copy",
    )
    if indexes:
        _update_indexes(dataset)
    dataset.cleanup_old_versions(older_than=timedelta(0), delete_unverified=True)
    table.checkout_latest()


def _update_indexes(dataset: Any) -> None:
    """Fold new rows into every index: into its newest segment while that is below
    :data:`SEGMENT_BYTES`, else into a segment of their own."""
    for index in dataset.describe_indices():
        if not index.segments:
            dataset.optimize.optimize_indices(index_names=[index.name])
            continue
        newest = max(index.segments, key=lambda s: (s.dataset_version_at_last_update, s.created_at))
        # Lance reports no size for a vector index's segment: its new rows are merged in always
        # (asking for a new segment of it, Lance 9.0 merged them anyway).
        merge = 1 if (newest.size_bytes or 0) < SEGMENT_BYTES else 0
        dataset.optimize.optimize_indices(index_names=[index.name], num_indices_to_merge=merge)


def _lancedb(table: Any) -> None:
    table.optimize(cleanup_older_than=timedelta(0), delete_unverified=True)
    if table.list_indices():
        # Lance prunes before it folds rows into the indexes, which commits one more version:
        # a second pass (nothing left to compact) prunes that.
        table.optimize(cleanup_older_than=timedelta(0), delete_unverified=True)
