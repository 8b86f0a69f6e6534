"""Excel (XLSX) through openpyxl: one page per sheet, one table per block of cells.

openpyxl opens the workbook read-only with cached values (``data_only``), so a formula yields the
result Excel last computed, never its text. Cells are streamed from the sheet XML sparsely: the
declared dimension of a sheet (which may claim A1:XFD1048576) is never iterated, only the cells
present, and reading stops at ``max_sheet_cells``. The cells of a sheet are then cut into
rectangular regions separated by fully empty rows or columns; each region becomes a table whose
first row is the header, split into pieces of a few rows so every piece fits one retrieval chunk.
"""

from __future__ import annotations

import bisect
import datetime as dt
import io
import itertools
import warnings
from collections.abc import Iterator
from typing import Any

from docsight.document.builder import DocumentBuilder
from docsight.document.model import ElementKind, ParsedDocument
from docsight.document.tables import rows_to_markdown, rows_to_text
from docsight.errors import LimitExceededError, ParseError
from docsight.parsers.base import ParseContext, SourceFile
from docsight.parsers.ooxml import check_archive, core_metadata, library_errors
from docsight.parsers.textutil import clean_text, squash_spaces
from docsight.settings import ParseSettings

_NS = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
_MAX_ROW, _MAX_COL = 1_048_576, 16_384
#: A table piece holds about this many characters of Markdown (at least ``_MIN_ROWS`` rows).
_PIECE_CHARS = 1500
_MIN_ROWS = 5
#: Excel's own limit on a cell's text; longer shared strings only come from crafted files.
_MAX_CELL_CHARS = 32_767
#: Characters read from a whole workbook, per cell of ``max_sheet_cells``. One shared string
#: may be referenced by every cell, so the text of a sheet can be far larger than its file.
_CHARS_PER_CELL_BUDGET = 64

Cells = dict[tuple[int, int], str]
Region = tuple[int, int, int, int]  # first row, first column, last row, last column (1-based)


def _format(value: Any) -> str:
    """A cell value as displayed text, without number formats."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.15g}"
    if isinstance(value, dt.datetime):
        if value.time() == dt.time(0):
            return value.date().isoformat()
        return value.isoformat(sep=" ")
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    return squash_spaces(clean_text(str(value)).replace("\n", " "))


def column_letter(col: int) -> str:
    letters = ""
    while col > 0:
        col, rest = divmod(col - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


def cell_range(region: Region) -> str:
    r0, c0, r1, c1 = region
    start, end = f"{column_letter(c0)}{r0}", f"{column_letter(c1)}{r1}"
    return start if start == end else f"{start}:{end}"


def split_regions(cells: Cells) -> list[Region]:
    """Rectangles of cells separated by fully empty rows or columns, top to bottom, left to right.

    Recursive XY cuts: split at every empty row, then every empty column, and again within each
    part until no part splits.
    """
    regions: list[Region] = []
    stack: list[list[tuple[int, int]]] = [list(cells)] if cells else []
    while stack:
        coords = stack.pop()
        parts = _cut(coords, 0) or _cut(coords, 1)
        if parts is None:
            rows = [r for r, _ in coords]
            cols = [c for _, c in coords]
            regions.append((min(rows), min(cols), max(rows), max(cols)))
        else:
            stack.extend(parts)
    return sorted(regions)


def _cut(coords: list[tuple[int, int]], axis: int) -> list[list[tuple[int, int]]] | None:
    values = sorted({c[axis] for c in coords})
    starts = [v for prev, v in itertools.pairwise(values) if v - prev > 1]
    if not starts:
        return None
    bands: dict[int, list[tuple[int, int]]] = {}
    bounds = [values[0], *starts]
    for coord in coords:
        band = bounds[bisect.bisect_right(bounds, coord[axis]) - 1]
        bands.setdefault(band, []).append(coord)
    return list(bands.values())


class _SheetCells:
    """Streams the cells of one worksheet, sparsely and within a budget of cells."""

    def __init__(self, ws: Any, wb: Any, budget: int, char_budget: int) -> None:
        from openpyxl.worksheet._reader import WorkSheetParser

        # openpyxl's own cell decoder (shared strings, dates, booleans, cached formula values);
        # its row iterator is not used because it fills every gap up to the declared dimension.
        self.decoder = WorkSheetParser(
            None,
            getattr(ws, "_shared_strings", []),
            data_only=True,
            epoch=getattr(wb, "epoch", dt.datetime(1899, 12, 30)),
            date_formats=getattr(wb, "_date_formats", set()),
            timedelta_formats=getattr(wb, "_timedelta_formats", set()),
        )
        self.ws = ws
        self.budget = budget
        self.char_budget = char_budget
        self.read = 0
        self.chars = 0
        self.memo: dict[str, str] = {}  # shared strings are cleaned once, not once per use
        self.bad = 0
        self.cut = False

    def cells(self) -> Cells:
        from xml.etree.ElementTree import iterparse

        cells: Cells = {}
        row_tag, cell_tag, data_tag = _NS + "row", _NS + "c", _NS + "sheetData"
        decoder = self.decoder
        with self.ws._get_source() as source:
            stack: list[Any] = []
            for event, el in iterparse(source, events=("start", "end")):
                if event == "start":
                    stack.append(el)
                    if el.tag == row_tag:
                        decoder.row_counter = _row_number(el.get("r"), decoder.row_counter + 1)
                        decoder.col_counter = 0
                        self.read += 1  # empty rows cost time too
                    continue
                stack.pop()
                # Finished cells, rows and top-level parts are dropped at once, so memory stays
                # flat however long the sheet or wide the row.
                if el.tag == cell_tag:
                    self._cell(el, cells)
                    if stack:
                        stack[-1].remove(el)
                elif el.tag == data_tag:
                    break  # nothing after the sheet data holds cell values
                elif stack and (el.tag == row_tag or len(stack) == 1):
                    stack[-1].remove(el)
                if self.read >= self.budget or self.chars >= self.char_budget:
                    self.cut = True
                    break
        return cells

    def _cell(self, el: Any, cells: Cells) -> None:
        self.read += 1
        try:
            cell = self.decoder.parse_cell(el)
        except Exception:  # a bad shared-string index, date serial or reference
            self.bad += 1
            return
        row, col = cell["row"], cell["column"]
        if not (1 <= row <= _MAX_ROW and 1 <= col <= _MAX_COL):
            self.bad += 1
            return
        value = cell["value"]
        if isinstance(value, str):
            text = self.memo.get(value)
            if text is None:
                text = _format(value[:_MAX_CELL_CHARS])
                if len(self.memo) < 100_000:
                    self.memo[value] = text
        else:
            text = _format(value)
        self.chars += len(text)
        if text:
            cells[(row, col)] = text


def _row_number(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


def _pieces(rows: list[list[str]]) -> Iterator[tuple[int, int]]:
    """``(start, end)`` row slices of a table's body, each about ``_PIECE_CHARS`` of Markdown."""
    start, size = 1, 0
    for i in range(1, len(rows)):
        size += sum(len(c) + 3 for c in rows[i]) + 2
        if size > _PIECE_CHARS and i - start >= _MIN_ROWS:
            yield start, i
            start, size = i, sum(len(c) + 3 for c in rows[i]) + 2
    yield start, len(rows)


class _WorkbookReader:
    """Sheets onto pages, within one text budget for the whole workbook."""

    def __init__(self, builder: DocumentBuilder, settings: ParseSettings) -> None:
        self.builder = builder
        self.settings = settings
        self.chars_left = settings.max_sheet_cells * _CHARS_PER_CELL_BUDGET

    def sheet(self, ws: Any, wb: Any) -> None:
        builder, settings = self.builder, self.settings
        page = builder.add_page()
        name = squash_spaces(clean_text(str(ws.title))) or f"Sheet {page + 1}"
        base: dict[str, Any] = {"sheet": name}
        state = getattr(ws, "sheet_state", "visible") or "visible"
        if state != "visible":
            base.update(hidden=True, state=state)
        builder.add(ElementKind.HEADING, name, page=page, level=1, attrs=dict(base))
        if self.chars_left <= 0:
            builder.warn(f"sheet {name!r}: not read, the workbook's text budget is spent")
            return
        reader = _SheetCells(ws, wb, settings.max_sheet_cells, self.chars_left)
        cells = reader.cells()
        self.chars_left -= reader.chars
        if reader.cut:
            builder.warn(
                f"sheet {name!r}: stopped after {reader.read} cells and rows and "
                f"{reader.chars} characters (max_sheet_cells)"
            )
        if reader.bad:
            builder.warn(f"sheet {name!r}: {reader.bad} unreadable cells skipped")
        for region in split_regions(cells):
            self.region(page, cells, region, base)

    def region(self, page: int, cells: Cells, region: Region, base: dict[str, Any]) -> None:
        builder = self.builder
        r0, c0, r1, c1 = region
        attrs = {**base, "range": cell_range(region)}
        if r0 == r1 and c0 == c1:
            builder.add(ElementKind.PARAGRAPH, cells[(r0, c0)], page=page, attrs=attrs)
            return
        if (r1 - r0 + 1) * (c1 - c0 + 1) > self.settings.max_sheet_cells:
            # Cells scattered so that no empty row or column separates them (a diagonal): a
            # grid would be mostly blanks, so list the cells by reference instead.
            inside = sorted(k for k in cells if r0 <= k[0] <= r1 and c0 <= k[1] <= c1)
            lines = [f"{column_letter(c)}{r}: {cells[(r, c)]}" for r, c in inside]
            builder.add(
                ElementKind.TABLE, "\n".join(lines), page=page, attrs={**attrs, "sparse": 1}
            )
            return
        rows = [[cells.get((r, c), "") for c in range(c0, c1 + 1)] for r in range(r0, r1 + 1)]
        header = rows[0]
        pieces = list(_pieces(rows)) if len(rows) > 1 else [(1, 1)]
        for k, (start, end) in enumerate(pieces):
            piece = [header, *rows[start:end]]
            piece_attrs = {**attrs, "rows": len(piece), "cols": c1 - c0 + 1}
            if len(pieces) > 1:
                body = (r0 + start, c0, r0 + end - 1, c1)
                piece_attrs.update(range=cell_range(body), region=cell_range(region), part=k + 1)
                piece_attrs["parts"] = len(pieces)
            builder.add(
                ElementKind.TABLE,
                rows_to_text(piece),
                page=page,
                markdown=rows_to_markdown(piece),
                attrs=piece_attrs,
            )


class XlsxParser:
    name = "xlsx"
    version = "1"

    def parse(
        self, source: SourceFile, settings: ParseSettings, context: ParseContext | None = None
    ) -> ParsedDocument:
        check_archive(source.path, source.data, settings)
        builder = source.builder(f"{self.name}/{self.version}")
        with library_errors(source.path, "invalid Excel workbook"), warnings.catch_warnings():
            # openpyxl warns about every extension it does not read (data validation, slicers).
            warnings.simplefilter("ignore")
            import openpyxl

            wb = openpyxl.load_workbook(
                io.BytesIO(source.data),
                read_only=True,
                data_only=True,
                keep_links=False,
                keep_vba=False,
            )
            reader = _WorkbookReader(builder, settings)
            try:
                sheets = list(wb.worksheets)
                if len(sheets) > settings.max_pages:
                    raise LimitExceededError(
                        source.path,
                        f"{len(sheets)} sheets, more than the limit of {settings.max_pages}",
                    )
                for ws in sheets:
                    reader.sheet(ws, wb)
                title, metadata = core_metadata(wb.properties)
            finally:
                wb.close()
        if not builder.pages:
            raise ParseError(source.path, "workbook without worksheets")
        if not any(e.kind != ElementKind.HEADING for e in builder.elements):
            builder.warn("no cell values")
        return builder.build(title=title, metadata=metadata)
