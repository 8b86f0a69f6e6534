"""Filters for Lance queries: quoting, ``IN`` lists in bounded batches, index probes.

Every query the store builds goes through these, so a document id or name with a quote in it
can never end a string literal early.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

#: Ids per ``IN (...)`` filter; longer lists are split, since Lance parses each filter whole.
MAX_IN_LIST = 500


def quote(value: str) -> str:
    """``value`` as an SQL string literal."""
    return "'" + value.replace("'", "''") + "'"


def in_filter(column: str, values: Iterable[str]) -> str:
    return f"{column} IN ({', '.join(quote(v) for v in values)})"


def batches(values: Sequence[str], size: int = MAX_IN_LIST) -> Iterable[Sequence[str]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


def has_text_index(table: Any) -> bool:
    """Whether ``table`` has its full-text index (BM25 needs it)."""
    return any(i.index_type == "FTS" for i in table.list_indices())
