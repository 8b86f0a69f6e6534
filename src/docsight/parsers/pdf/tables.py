"""Tables: ruled grids (pdfplumber), tables ruled with horizontal lines only (LaTeX booktabs,
financial statements) and tables drawn as shaded bands.

Cells are always filled from the parser's own words, so spacing matches the text flow. Grids
without vertical rules take their columns from whitespace gaps (:func:`grid_from_lines`), and
columns holding only a unit ("$", "%") fold into the number beside them.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from statistics import median
from typing import Any

from docsight.document.model import ElementKind
from docsight.document.tables import is_number, normalize_rows, rows_to_markdown, rows_to_text
from docsight.parsers.pdf.extract import Objects
from docsight.parsers.pdf.layout import Line, Word, gaps_between, group_lines, inside, overlap
from docsight.parsers.pdf.page import Atom, Page, Rect, intersects
from docsight.parsers.pdf.reading import join_lines


def table_atom(box: Rect, rows: list[list[str]], image_id: str | None) -> Atom:
    """A TABLE atom over ``box`` holding ``rows`` (already normalised)."""
    return Atom(
        ElementKind.TABLE,
        *box,
        text=rows_to_text(rows),
        markdown=rows_to_markdown(rows),
        image_id=image_id,
        attrs={"rows": len(rows), "cols": len(rows[0])},
    )


def find_tables(
    plumber_page: Any, objects: Objects, page: Page, words: list[Word]
) -> list[tuple[Rect, list[list[str]]]]:
    """Tables on the page as ``(box, rows)``: ruled grids (pdfplumber's finder, filled with our
    words) and regions bounded by horizontal rules, which replace grid fragments inside them."""
    found: list[tuple[Rect, list[list[str]]]] = []
    ox, oy = page.origin
    frame = (ox - 2, oy - 2, ox + page.width + 2, oy + page.height + 2)
    if objects.vertical_edges >= 2 and len(objects.rules) + objects.vertical_edges >= 4:
        for table in ruled_grids(plumber_page, objects, frame):
            box = tuple(table.bbox)
            if box[0] < frame[0] or box[1] < frame[1] or box[2] > frame[2] or box[3] > frame[3]:
                continue  # grids running off the page are figure backgrounds, not tables
            rows = normalize_rows(_cells(table, [w for w in words if inside(w, box)]))
            if _plausible(rows):
                found.append((box, rows))
    # LaTeX booktabs and many reports rule tables with horizontal lines only.
    all_lines = group_lines(words) if objects.rules else []
    for x0, top, x1, bottom, ys in rule_regions(objects.rules, all_lines, 0.6 * page.height):
        box = (x0, top - 1, x1, bottom + 1)
        hits = [f for f in found if intersects(box, f[0])]
        if any(not inside(_R(f[0]), box, 2.0) for f in hits) or (
            sum(_area(f[0]) for f in hits) > 0.6 * _area(box)
        ):
            continue  # the ruled grid already covers it
        lines = group_lines([w for w in words if inside(w, box, 0.0)])
        if len(lines) < 2 or sum(ln.width for ln in lines) > 0.8 * len(lines) * (x1 - x0):
            continue  # empty, or prose between two rules
        head = _header_rows(words, box)
        if head:
            box = (x0, min(ln.top for ln in head) - 1, x1, bottom + 1)
            lines = group_lines([w for w in words if inside(w, box, 0.0)])
            ys = [box[1], *ys]
        rows = normalize_rows(grid_from_lines(lines, ys[1] if len(ys) >= 3 else None))
        if _plausible(rows):
            # Partial vertical rules made pdfplumber see a fragment; the rules bound the whole.
            found = [f for f in found if f not in hits] + [(box, rows)]
    return found


def ruled_grids(
    plumber_page: Any, objects: Objects, bbox: Rect = (0.0, 0.0, 0.0, 0.0)
) -> list[Any]:
    """pdfplumber's ruled tables on the page: ``plumber_page.find_tables()``, with the same
    result, at a fraction of its cost.

    The finder reads only the page's edges, which pdfplumber takes from its list of every
    object on the page as a dict of resolved attributes: characters included, though no edge
    comes from them. Building that list cost most of the table search: 14.7 CPU s for the 108
    pages of NIKE_2021_10K.pdf that draw lines, against 1.0 s here. Here the finder sees a page
    holding the same dicts, made by pdfplumber's own ``process_object``, for the line,
    rectangle and curve objects only, in the same order: the same edges, the same tables.
    ``tests/integration/test_pdf_fast_paths.py`` checks the two agree on real documents.
    """
    from pdfplumber.table import TableFinder, TableSettings

    page = _edge_page()(plumber_page, objects, bbox)
    return TableFinder(page, TableSettings.resolve(None)).tables


@cache
def _edge_page() -> type:
    """A pdfplumber container holding given objects: what ``TableFinder`` asks of a page under
    the default ("lines") strategies is its ``edges``, which the container derives from them."""
    from pdfplumber.container import Container

    class EdgePage(Container):
        def __init__(self, plumber_page: Any, objects: Objects, bbox: Rect) -> None:
            self._found: dict[str, list[dict[str, Any]]] = {}
            if plumber_page is None:  # pdfium read the page: its shapes are dicts already
                self.bbox = bbox
                for attrs in objects.shapes:
                    self._found.setdefault(attrs["object_type"], []).append(attrs)
                return
            self.bbox = plumber_page.bbox
            for obj in objects.curves:
                attrs = plumber_page.process_object(obj)
                self._found.setdefault(attrs["object_type"], []).append(attrs)

        @property
        def objects(self) -> dict[str, list[dict[str, Any]]]:
            return self._found

    return EdgePage


def _header_rows(words: list[Word], box: Rect) -> list[Line]:
    """Column headings stacked right above a table's top rule (financial statements put their
    header outside the rules): short pieces of text, closely spaced, within the table's width."""
    inner = [w.size for w in words if inside(w, box, 0.0)]
    size = median(inner) if inner else 10.0
    above = [
        w
        for w in words
        if box[0] - 1 <= w.x0
        and w.x1 <= box[2] + 1
        and box[1] - 80 <= w.top
        and w.bottom <= box[1] + 1
    ]
    rows: list[Line] = []
    edge = box[1]
    for ln in sorted(group_lines(above), key=lambda ln: -ln.bottom):
        if edge - ln.bottom > 1.2 * ln.size or len(ln.words) > 5 or ln.size > 1.15 * size:
            break
        rows.append(ln)
        edge = min(edge, ln.top)
    return rows


@dataclass
class _R:
    """A plain box, for geometry helpers that take objects with coordinates."""

    x0: float
    top: float
    x1: float
    bottom: float

    def __init__(self, b: Rect) -> None:
        self.x0, self.top, self.x1, self.bottom = b


def _area(b: Rect) -> float:
    return max(0.0, b[2] - b[0]) * max(0.0, b[3] - b[1])


def _cells(table: Any, words: list[Word]) -> list[list[str]]:
    """Cell text from our own words (pdfplumber's extraction drops spaces in tight text)."""
    rows: list[list[str]] = []
    for row in table.rows:
        in_row = [w for w in words if inside(w, row.bbox, 0.5)]
        cells = []
        for cell in row.cells:
            lines = group_lines([w for w in in_row if cell is not None and inside(w, cell, 0.5)])
            lines.sort(key=lambda ln: (ln.top, ln.x0))
            cells.append(join_lines([ln.text for ln in lines]))
        rows.append(cells)
    return rows


def _plausible(rows: list[list[str]]) -> bool:
    """At least 2×2, not mostly empty, and most rows really split into cells (chart gridlines
    and boxed text produce grids whose text sits in one cell)."""
    if len(rows) < 2 or len(rows[0]) < 2:
        return False
    cells = [c for row in rows for c in row]
    multi = sum(1 for row in rows if sum(1 for c in row if c) >= 2)
    return sum(1 for c in cells if not c) <= 0.5 * len(cells) and multi >= 0.5 * len(rows)


def banded_table(objects: Objects, box: Rect, lines: list[Line]) -> list[list[str]] | None:
    """Rows of a table drawn with shaded bands or full-width rules instead of a grid.

    Bar charts are also made of rectangles, but their bars vary in length; table bands span
    the table. The text must also fall into a dense grid.
    """
    if sum(len(ln.words) for ln in lines) < 15:
        return None
    width = box[2] - box[0]
    paths = [p for p in objects.paths if inside(_R(p), box, 1.0)]
    if not paths or sum(1 for p in paths if p[2] - p[0] >= 0.8 * width) < 0.5 * len(paths):
        return None
    rows = normalize_rows(grid_from_lines(lines))
    return rows if len(rows) >= 3 and _plausible(rows) else None


def with_row_labels(
    box: Rect, rows: list[list[str]], words: Sequence[Word]
) -> tuple[Rect, list[list[str]]] | None:
    """The table grown leftwards over its row labels, when its rules or bands cover only the
    number columns and the labels sit to the left as loose text (financial statements often
    shade or rule just the figures). ``None`` when the table already has a text column or the
    words on its left are not labels of its rows.

    A label column is told from a neighbouring column of prose by alignment: most of the
    table's rows have a line on their left at the same height, and most of those lines sit at
    a row's height (prose beside a table keeps its own line pitch).
    """
    body = rows[1:] if len(rows) > 2 else rows
    if len(body) < 3 or not all(is_numeric_cell(r[0]) for r in body):
        return None
    inner = group_lines([w for w in words if inside(w, box, 0.0)])
    left = group_lines(
        [w for w in words if w.x1 <= box[0] + 1 and w.top >= box[1] - 2 and w.bottom <= box[3] + 2]
    )
    if len(inner) < 3 or not left:
        return None

    def aligned(ln: Line, others: Sequence[Line]) -> bool:
        mid = (ln.top + ln.bottom) / 2
        return any(abs(mid - (o.top + o.bottom) / 2) <= 0.35 * max(ln.height, 1.0) for o in others)

    labelled = sum(1 for ln in inner if aligned(ln, left)) / len(inner)
    matching = sum(1 for ln in left if aligned(ln, inner)) / len(left)
    if labelled < 0.7 or matching < 0.6:
        return None
    grown = (min(ln.x0 for ln in left) - 1, box[1], box[2], box[3])
    lines = group_lines([w for w in words if inside(w, grown, 0.0)])
    table = normalize_rows(grid_from_lines(lines))
    return (grown, table) if _plausible(table) and len(table[0]) > len(rows[0]) else None


def is_numeric_cell(cell: str) -> bool:
    """A figure, a dash, a lone unit or nothing: what a statement's number columns hold."""
    text = cell.strip()
    return not text or text in ("—", "–", "-", "$", "%") or is_number(text)


# --- tables drawn with horizontal rules only -----------------------------------------------------


def merge_rules(
    rules: Iterable[tuple[float, float, float]], gap: float = 3.0
) -> list[tuple[float, float, float]]:
    """Join collinear rule segments (many generators draw a rule cell by cell)."""
    out: list[tuple[float, float, float]] = []
    for y, x0, x1 in sorted(rules, key=lambda r: (round(r[0]), r[1])):
        if out:
            py, px0, px1 = out[-1]
            if abs(py - y) <= 1.0 and x0 <= px1 + gap:
                out[-1] = (py, px0, max(px1, x1))
                continue
        out.append((y, x0, x1))
    return sorted(out)


def rule_regions(
    rules: Sequence[tuple[float, float, float]], lines: Sequence[Line], max_gap: float
) -> list[tuple[float, float, float, float, list[float]]]:
    """Regions bounded by stacked horizontal rules: tables ruled without vertical lines
    (LaTeX booktabs, financial statements).

    ``rules`` are ``(y, x0, x1)``. Consecutive rules that overlap horizontally chain into one
    region unless more than ``max_gap`` or a line of running text (one unbroken segment of 8+
    words across most of the width; table rows break at column gaps) separates them. Returns
    ``(x0, top, x1, bottom, rule ys)`` for regions of two or more rules.
    """
    prose = sorted(
        (ln for ln in lines if len(ln.words) >= 8 and not ln.vertical), key=lambda ln: ln.top
    )
    regions: list[list[float]] = []  # x0, top, x1, bottom
    ys: list[list[float]] = []
    for y, x0, x1 in merge_rules(rules):
        for reg, marks in zip(reversed(regions), reversed(ys), strict=True):
            if y - reg[3] > max_gap or overlap(x0, x1, reg[0], reg[2]) < 0.5 * (x1 - x0):
                continue
            width = max(x1, reg[2]) - min(x0, reg[0])
            if any(
                reg[3] < ln.top
                and ln.bottom < y
                and ln.width >= 0.6 * width
                and overlap(ln.x0, ln.x1, reg[0], reg[2]) > 0
                for ln in prose
            ):
                continue
            reg[0], reg[2], reg[3] = min(reg[0], x0), max(reg[2], x1), y
            marks.append(y)
            break
        else:
            regions.append([x0, y, x1, y])
            ys.append([y])
    return [
        (reg[0], reg[1], reg[2], reg[3], marks)
        for reg, marks in zip(regions, ys, strict=True)
        if len(marks) >= 2
    ]


def grid_from_lines(lines: Sequence[Line], body_top: float | None = None) -> list[list[str]]:
    """Cells of a table without vertical rules: rows are lines, columns are whitespace gaps.

    Column gaps are measured on the body rows (below ``body_top``) because header cells often
    span several columns; every word then goes to the column holding its centre.
    """
    rows = sorted(lines, key=lambda ln: (ln.top + ln.bottom) / 2)
    merged: list[list[Word]] = []
    last: Line | None = None
    for ln in rows:
        if last is not None and overlap(ln.top, ln.bottom, last.top, last.bottom) >= 0.5 * min(
            ln.height, last.height
        ):
            merged[-1].extend(ln.words)
        else:
            merged.append(list(ln.words))
            last = ln
    if not merged:
        return []
    body = [w for row in merged for w in row if body_top is None or w.top >= body_top - 1]
    if not body:
        body = [w for row in merged for w in row]
    size = median(w.size for w in body)
    gaps = [g for g in gaps_between([(w.x0, w.x1) for w in body]) if g[1] - g[0] >= 0.5 * size]
    cuts = [(a + b) / 2 for a, b in gaps]
    table: list[list[str]] = []
    for row in merged:
        cells: list[list[Word]] = [[] for _ in range(len(cuts) + 1)]
        for w in sorted(row, key=lambda w: w.x0):
            cells[bisect_left(cuts, (w.x0 + w.x1) / 2)].append(w)
        table.append([Line(c).text if c else "" for c in cells])
    return _fold_unit_columns(table)


_LEFT_UNITS = {"$", "€", "£", "¥", "("}
_RIGHT_UNITS = {"%", ")", "pts", "bps"}


def _fold_unit_columns(table: list[list[str]]) -> list[list[str]]:
    """Columns holding only "$" or "%" belong to the number beside them ("$ 5,748")."""
    j = 0
    while table and j < len(table[0]):
        cells = {row[j] for row in table} - {""}
        target = None
        if cells and cells <= _LEFT_UNITS and j + 1 < len(table[0]):
            target = j + 1
        elif cells and cells <= _RIGHT_UNITS and j > 0:
            target = j - 1
        if target is None:
            j += 1
            continue
        for row in table:
            a, b = (row[j], row[target]) if target > j else (row[target], row[j])
            row[target] = " ".join(x for x in (a, b) if x)
            del row[j]
    return table
