"""Tables as Markdown and as plain rows: one rendering used by every parser."""

from __future__ import annotations

import re
from collections.abc import Sequence

#: A cell holding one figure: "1,975", "$ 6,489", "(26)", "-3.5", "12 %".
_NUMBER = re.compile(r"^[(\-−–]?[$€£¥]?\s*-?\d[\d,]*(?:\.\d+)?\s*%?\)?$")


def is_number(cell: str) -> bool:
    """Whether ``cell`` is a single figure (with its currency, sign, brackets or percent)."""
    return bool(_NUMBER.match(cell.strip()))


def _cell(value: object) -> str:
    text = "" if value is None else " ".join(str(value).split())
    return text.replace("|", "\\|")


def normalize_rows(rows: Sequence[Sequence[object]]) -> list[list[str]]:
    """Rectangular rows of clean cell strings, with fully empty rows and columns removed."""
    cleaned = [[_cell(c) for c in row] for row in rows]
    cleaned = [row for row in cleaned if any(row)]
    if not cleaned:
        return []
    width = max(len(row) for row in cleaned)
    cleaned = [row + [""] * (width - len(row)) for row in cleaned]
    keep = [j for j in range(width) if any(row[j] for row in cleaned)]
    return [[row[j] for j in keep] for row in cleaned]


def rows_to_markdown(rows: Sequence[Sequence[object]]) -> str:
    """A GitHub-flavoured Markdown table; the first row is the header."""
    table = normalize_rows(rows)
    if not table:
        return ""
    header, body = table[0], table[1:]
    lines = [
        "| " + " | ".join(header) + " |",
        "| " + " | ".join("---" for _ in header) + " |",
    ]
    lines.extend("| " + " | ".join(row) + " |" for row in body)
    return "\n".join(lines)


def rows_to_text(rows: Sequence[Sequence[object]]) -> str:
    """One line per row, cells separated by `` | ``, for full-text search and snippets."""
    return "\n".join(" | ".join(c for c in row if c) for row in normalize_rows(rows))
