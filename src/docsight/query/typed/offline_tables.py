"""Tables as Markdown: the table structure engine ingestion uses, with the OCR lines it needs.

The crop is trimmed to its table first: a caption or a note above or below it (running text,
"Table 3: ...") is not a row. The engine (rapid-table, with the ``ocr`` extra) predicts the cell
grid; when it is missing, fails or loses much of the text, rows and columns come from the OCR
boxes' alignment (the whitespace grid ingestion falls back to as well).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from docsight.document.tables import normalize_rows, rows_to_markdown
from docsight.query.image import ImageType, QueryImage, TypedText
from docsight.query.typed.common import (
    MAX_TEXT_CHARS,
    clip,
    compact,
    is_caption_start,
    is_prose,
    median_height,
    union,
)
from docsight.vision.common import OcrLine

#: Rows kept in the typed text (the header and the first body rows).
MAX_ROWS = 30
#: Characters kept per cell.
MAX_CELL = 80
#: Share of the OCR text the rows must hold to be believed (as at ingestion).
MIN_TEXT_SHARE = 0.6


def split_caption(lines: Sequence[OcrLine], width: int) -> tuple[list[OcrLine], list[OcrLine]]:
    """``(table lines, caption lines)``: running text peeled off the top and bottom edges."""
    ordered = sorted((ln for ln in lines if ln.text.strip()), key=lambda ln: (ln.top, ln.x0))
    caption: list[OcrLine] = []

    def edge(ln: OcrLine) -> bool:
        return is_prose(ln, width) or is_caption_start(ln.text)

    while ordered and edge(ordered[0]):
        caption.append(ordered.pop(0))
    tail: list[OcrLine] = []
    while ordered and edge(ordered[-1]):
        tail.insert(0, ordered.pop())
    return ordered, caption + tail


def plausible(rows: Sequence[Sequence[str]], chars: int) -> bool:
    """Two or more rows and columns holding most of the text OCR found."""
    if len(rows) < 2 or len(rows[0]) < 2:
        return False
    found = sum(len(c.replace(" ", "")) for row in rows for c in row)
    return found >= MIN_TEXT_SHARE * chars


def _engine_rows(image: QueryImage, lines: Sequence[OcrLine]) -> list[list[str]]:
    from docsight.vision.common import ocr_available

    if not ocr_available():
        return []
    from docsight.vision.tables import TableEngine

    h = median_height(lines)
    x0, y0, x1, y1 = union(ln.box for ln in lines)
    x0, y0 = max(0, int(x0 - h / 2)), max(0, int(y0 - h / 2))
    x1, y1 = min(image.width, int(x1 + h / 2) + 1), min(image.height, int(y1 + h / 2) + 1)
    crop = image.rgb[y0:y1, x0:x1]
    shifted = [
        OcrLine(ln.text, (ln.x0 - x0, ln.top - y0, ln.x1 - x0, ln.bottom - y0), ln.score)
        for ln in lines
    ]
    try:
        return normalize_rows(TableEngine.shared().rows(crop, shifted))
    except Exception:  # a model failure must leave the whitespace grid, not lose the table
        return []


def _grid_rows(lines: Sequence[OcrLine]) -> list[list[str]]:
    from docsight.parsers.pdf.layout import Word, group_lines
    from docsight.parsers.pdf.tables import grid_from_lines

    words = []
    for ln in lines:
        if ln.vertical:
            continue
        # OCR pads boxes until the lines of a row overlap the next; trim to the glyphs.
        pad = 0.15 * (ln.bottom - ln.top)
        size = (ln.bottom - ln.top) / 1.4
        words.append(Word(ln.text, ln.x0, ln.top + pad, ln.x1, ln.bottom - pad, size=size))
    return normalize_rows(grid_from_lines(group_lines(words))) if words else []


def _unspan(rows: list[list[str]]) -> list[list[str]]:
    """A row whose cells all repeat one text (a title or note spanning the table, expanded per
    cell by the engine) keeps it once: the copies only cost words of the query."""
    out = []
    for row in rows:
        if len(row) > 1 and row[0] and all(c == row[0] for c in row):
            row = [row[0]] + [""] * (len(row) - 1)
        out.append(row)
    return out


def fit_rows(rows: list[list[str]], budget: int, max_rows: int = MAX_ROWS) -> list[list[str]]:
    """The header and as many first rows as fit ``budget`` characters of Markdown."""
    kept = rows[:1]
    used = len(rows_to_markdown(kept)) if kept else 0
    for row in rows[1 : max_rows + 1]:
        cost = sum(len(c) + 3 for c in row) + 2
        if used + cost > budget:
            break
        kept.append(row)
        used += cost
    return kept


def read_table(image: QueryImage) -> tuple[list[list[str]], list[OcrLine]]:
    """``(rows, caption lines)`` of a table image; ``rows`` is empty when no grid holds up."""
    body, caption = split_caption(image.lines, image.width)
    if len(body) < 2:
        return [], caption
    chars = sum(len(ln.text.replace(" ", "")) for ln in body)
    rows = _engine_rows(image, body)
    if not plausible(rows, chars):
        rows = _grid_rows(body)
    return (rows if plausible(rows, chars) else []), caption


class OfflineTableParser:
    """A table image as a Markdown table (header row first), with its caption."""

    type: ImageType = "table"
    version = "offline-table/1"

    def parse(self, image: QueryImage) -> TypedText | None:
        rows, caption_lines = read_table(image)
        caption = " ".join(ln.text for ln in caption_lines)
        if not rows:
            body = [ln.text for ln in image.lines if ln not in caption_lines and ln.text.strip()]
            if not body and not caption:
                return None
            # No grid held up: the cells' text in reading order is still what a search wants.
            text = compact([clip(caption, 300), " | ".join(body)])
            return TypedText(
                type="table",
                text=text,
                fields={"rows": [], "header": [], "caption": clip(caption, 400)},
                parser=self.version,
            )
        budget = MAX_TEXT_CHARS - len(clip(caption, 300)) - 40
        kept = fit_rows([[clip(c, MAX_CELL) for c in row] for row in _unspan(rows)], budget)
        markdown = rows_to_markdown(kept)
        more = f"({len(rows) - len(kept)} more rows)" if len(rows) > len(kept) else ""
        text = compact([clip(caption, 300), markdown, more])
        fields: dict[str, Any] = {
            "header": rows[0],
            "rows": rows[1:100],
            "n_rows": len(rows) - 1,
            "n_cols": len(rows[0]),
            "caption": clip(caption, 400),
        }
        return TypedText(type="table", text=text, fields=fields, parser=self.version)
