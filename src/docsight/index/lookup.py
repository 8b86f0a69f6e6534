"""Lookup indexes: BTREE indexes on the columns the store finds rows by.

The store reads rows by ``id`` (the chunks and elements an answer cites, a document's row, a
graph) and by ``doc_id`` (one document's chunks, elements and pages; searches within chosen
documents; and, for every file an ingest stores, whether its document has rows already).
Without an index Lance answers such a filter by scanning the column over the whole table. In a
collection of a million chunks (``benchmarks/results/lookup_indexes.md``), that check for a new
file took 641 ms by scan and 47 ms with the indexes, one document's chunks 306 ms against 31,
and 50 chunks by id 423 ms against 126.

A table gets its indexes once it holds :data:`MIN_ROWS` rows; the final optimize of an ingest
creates them (:func:`docsight.index.maintenance.optimize`) and every later optimize folds new
rows into them, as into any index (:func:`docsight.index.compaction.optimize_table`). Rows not
yet in an index are found by a scan, so a missing or lagging lookup index costs speed, never
results.

The page vectors' ``doc_id`` index is :mod:`docsight.index.visual`'s: a visual search within
documents needs it from the first page, whatever the table's size.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from docsight.index.lance import LanceStore

#: The columns of each table that reads filter on.
LOOKUP_COLUMNS: dict[str, tuple[str, ...]] = {
    "documents": ("id", "source"),
    "chunks": ("id", "doc_id"),
    "elements": ("id", "doc_id"),
    "nodes": ("doc_id",),
    "graphs": ("id", "doc_id"),
    "pages": ("doc_id",),
    "assets": ("id", "doc_id"),
}

#: Rows from which a table gets its lookup indexes. Each index makes every later optimize of its
#: table dearer: an ingest's final optimize took (medians) 0.2 s longer at 50,000 chunks, 0.7 s
#: at 100,000, 1.1 s at 250,000 and 1.5 s at a million. At 100,000 chunks the reads gained
#: nothing clear (at most 8 ms, less than runs varied); at 250,000 each read took 17-67 ms less
#: and the check for a new file 99 ms less (``lookup_indexes.md``). A speed threshold only: what
#: is found is the same either way.
MIN_ROWS = 200_000


def missing_lookup_indexes(table: Any, name: str) -> list[str]:
    """The lookup columns of table ``name`` without an index."""
    indexed = {column for index in table.list_indices() for column in index.columns}
    return [c for c in LOOKUP_COLUMNS.get(name, ()) if c not in indexed]


def ensure_lookup_indexes(store: LanceStore, *, min_rows: int | None = None) -> list[str]:
    """Create the missing lookup indexes of every table with at least ``min_rows`` rows
    (default :data:`MIN_ROWS`); returns them as ``table.column``. Caller holds the writer
    lock."""
    threshold = MIN_ROWS if min_rows is None else min_rows
    made: list[str] = []
    for name in LOOKUP_COLUMNS:
        table = store._table(name)
        if table is None:
            continue
        missing = missing_lookup_indexes(table, name)
        if not missing or table.count_rows() < max(1, threshold):
            continue
        for column in missing:
            create_lookup_index(table, column)
            made.append(f"{name}.{column}")
    return made


def create_lookup_index(table: Any, column: str) -> None:
    """(Re)build the BTREE index on ``column`` of ``table`` from its rows."""
    from lancedb.index import BTree

    table.create_index(column, config=BTree(), replace=True)


def index_column(table: Any, index_name: str) -> str | None:
    """The one column a scalar index of ``table`` covers (``None``: no such index)."""
    for index in table.list_indices():
        if index.name == index_name and len(index.columns) == 1:
            return str(index.columns[0])
    return None
