"""Charts as data tables, from OCR lines and pixels.

A chart's text has roles that its geometry gives away: a column of evenly spaced numbers on the
left is the y axis, a row of evenly spaced numbers along the bottom is the x axis of a horizontal
bar chart, the row of labels under a y axis names the categories, and the other numbers are
values, each belonging to the category it stands over (vertical charts) or beside (horizontal
ones). Several y axes side by side are several panels. Charts without axes (most report charts
print their values and drop the axis) are read as rows of labels and numbers, or as a matrix when
a header row names the columns. When the values are not printed, bar lengths are measured on the
pixels and converted with the axis (marked "≈"). Values of different series are told apart by
their colour, named after it unless a legend names the series.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import median
from typing import Any

from docsight.query.image import ImageType, QueryImage, TypedText
from docsight.query.typed.chart_axes import Axis, estimate, find_x_axis, find_y_axes, span
from docsight.query.typed.common import (
    chromatic,
    clip,
    colour_name,
    compact,
    cx,
    cy,
    ink_colour,
    is_number,
    is_prose,
    median_height,
    reading_order,
    row_bands,
    title_block,
    unique,
    v_overlap,
)
from docsight.vision.common import OcrLine

#: Rows of the data table kept (a chart with more is summarised by its first rows).
MAX_ROWS = 36


@dataclass
class Pair:
    category: str
    value: str
    series: str = ""
    estimated: bool = False
    #: Centre of the value label (orders the values of one category).
    at: tuple[float, float] = (0.0, 0.0)
    #: The value label's ink colour, when it has one (series are told apart by it).
    colour: tuple[int, int, int] | None = None


@dataclass
class Panel:
    name: str = ""
    categories: list[str] = field(default_factory=list)
    pairs: list[Pair] = field(default_factory=list)
    axis: Axis | None = None
    orientation: str = "vertical"
    used: set[int] = field(default_factory=set)
    #: Column headers of a matrix chart, left to right.
    columns: list[str] = field(default_factory=list)


def _nearest(target: float, centres: Sequence[float], reach: float) -> int | None:
    if not centres:
        return None
    k = min(range(len(centres)), key=lambda i: abs(centres[i] - target))
    return k if abs(centres[k] - target) <= reach else None


def _spacing(centres: Sequence[float], h: float) -> float:
    ordered = sorted(centres)
    gaps = [b - a for a, b in itertools.pairwise(ordered) if b - a > 1]
    return float(median(gaps)) if gaps else 4 * h


class ChartReader:
    """One chart image read into panels of (category, series, value) pairs."""

    def __init__(self, image: QueryImage) -> None:
        self.image = image
        self.rgb = image.rgb
        lines = [ln for ln in image.lines if ln.text.strip()]
        block = title_block(lines, image.height)
        self.title_text = " ".join(ln.text for ln in block)
        self.prose = [ln for ln in lines if ln not in block and is_prose(ln, image.width)]
        self.labels = [ln for ln in lines if ln not in self.prose]
        self.h = median_height(self.labels or lines)
        self.taken: set[int] = {id(ln) for ln in block}
        self.title = block[0] if block else None
        self.panels: list[Panel] = []
        self.axis_titles: list[str] = []
        self.x_labels: list[str] = []
        self.y_ticks: list[str] = []
        self.orientation = "unknown"

    def free(self, lines: Sequence[OcrLine]) -> list[OcrLine]:
        return [ln for ln in lines if id(ln) not in self.taken]

    def take(self, lines: Sequence[OcrLine]) -> None:
        self.taken.update(id(ln) for ln in lines)

    # --- the three layouts ----------------------------------------------------------------------

    def read(self) -> None:
        numbers = [ln for ln in self.free(self.labels) if is_number(ln.text) and not ln.vertical]
        y_axes = find_y_axes(numbers)
        if y_axes:
            self.orientation = "vertical"
            for axis in y_axes:
                self.take(axis.lines)
                self.y_ticks.extend(axis.labels)
            for k, axis in enumerate(y_axes):
                right = [
                    span(a)[0]
                    for a in y_axes[k + 1 :]
                    if span(a)[0] > span(axis)[2] and v_overlap(span(a), span(axis)) > 0
                ]
                self.panels.append(self._vertical_panel(axis, min(right, default=1e9)))
            first = self.title
            if len(y_axes) > 1 and first is not None and first.x1 < span(y_axes[1])[0]:
                # Only over the first of several panels: that panel's name, not the chart's.
                self.panels[0].name = f"{self.title_text} {self.panels[0].name}".strip()
                self.title, self.title_text = None, ""
        else:
            x_axis = find_x_axis(numbers)
            if x_axis is not None and self._row_labels(x_axis):
                self.orientation = "horizontal"
                self.take(x_axis.lines)
                self.x_labels = x_axis.labels
                self.panels.append(self._horizontal_panel(x_axis))
            else:
                self.panels.append(self._unaxed_panel())
        self._vertical_titles()
        self._assign_series()

    def _vertical_panel(self, axis: Axis, x_end: float) -> Panel:
        panel = Panel(axis=axis, orientation="vertical")
        h = median_height(axis.lines)
        top, last = axis.lines[0], axis.lines[-1]
        region = [
            ln
            for ln in self.free(self.labels)
            if axis.lines[0].x1 - h < cx(ln) < x_end
            and top.top - 3 * h <= cy(ln) <= last.bottom + 5 * h
            and not ln.vertical
        ]
        # The category row sits right under the plot, whose floor is at most a tick step below
        # the lowest tick (or a line of text, for axes that stop short of the floor).
        gap = max(1.5 * h, 0.8 * abs(axis.positions[-1] - axis.positions[-2]))
        below = [ln for ln in region if cy(ln) >= cy(last) - 0.3 * h]
        bands = [b for b in row_bands(below) if len(b) >= 2 and b[0].top <= last.bottom + gap]
        cats = bands[0] if bands else []
        self.take(cats)
        panel.categories = [ln.text for ln in cats]
        self.x_labels.extend(panel.categories)
        if cats:
            under = [ln for ln in self.free(below) if ln.top >= max(c.bottom for c in cats) - 2]
            title = [ln for ln in under if not is_number(ln.text)][:1]
            self.take(title)
            self.axis_titles.extend(ln.text for ln in title)
        floor = min((c.top for c in cats), default=last.bottom)
        values = [
            ln
            for ln in self.free(region)
            if is_number(ln.text) and cy(ln) < floor and cx(ln) > axis.lines[0].x1
        ]
        above = [ln for ln in self.free(region) if ln.bottom <= top.top + 0.5 * h]
        names = [ln for ln in above if not is_number(ln.text)]
        if names:
            panel.name = " ".join(ln.text for ln in sorted(names, key=lambda ln: ln.x0))
            self.take(names)
        centres = [cx(c) for c in cats]
        reach = 0.75 * _spacing(centres, h)
        for ln in values:
            k = _nearest(cx(ln), centres, reach)
            if k is not None:
                panel.pairs.append(self._pair(cats[k].text, ln))
                self.take([ln])
        if not panel.pairs:
            for c in cats:
                est = estimate(self.rgb, axis, cx(c), h)
                if est is not None:
                    panel.pairs.append(Pair(c.text, est, estimated=True))
        return panel

    def _row_labels(self, axis: Axis) -> list[OcrLine]:
        """Labels left of where a bottom value axis starts, in two or more rows: the categories
        of a horizontal bar chart (without them the numeric row is a category axis)."""
        row_top = min(ln.top for ln in axis.lines)
        start = axis.lines[0].x0
        texts = [
            ln
            for ln in self.free(self.labels)
            if ln.x1 <= start + self.h and ln.bottom <= row_top + 2 and not is_number(ln.text)
        ]
        return texts if len(row_bands(texts)) >= 2 else []

    def _horizontal_panel(self, axis: Axis) -> Panel:
        panel = Panel(axis=axis, orientation="horizontal")
        h = self.h
        row_top = min(ln.top for ln in axis.lines)
        start = axis.lines[0].x0
        cats = self._category_rows(self._row_labels(axis))
        numbers = [
            ln
            for ln in self.free(self.labels)
            if is_number(ln.text) and ln.bottom <= row_top + 2 and ln.x0 >= start - h
        ]
        self._pair_rows(panel, cats, numbers)
        if not panel.pairs:
            for label, box in cats:
                est = estimate(self.rgb, axis, (box[1] + box[3]) / 2, h)
                if est is not None:
                    panel.pairs.append(Pair(label, est, estimated=True))
        return panel

    def _unaxed_panel(self) -> Panel:
        """No axis: rows of labels with numbers to their right, a matrix under a header row, or
        columns of numbers over a bottom row of labels; whichever pairs more numbers wins."""
        free = self.free(self.labels)
        numbers = [ln for ln in free if is_number(ln.text) and not ln.vertical]
        if not numbers:
            return Panel(orientation="unknown")
        left = min(n.x0 for n in numbers)
        texts = [ln for ln in free if not is_number(ln.text) and ln.x1 <= left + self.h]
        by_rows = Panel(orientation="horizontal")
        cats = self._category_rows(texts)
        header = self._header_row(cats, numbers, free)
        self._pair_rows(by_rows, cats, numbers, header)
        by_columns = self._columns_panel(free, numbers)
        best = by_columns if len(by_columns.pairs) > len(by_rows.pairs) else by_rows
        if best is by_rows and header:
            self.take(header)
            best.columns = [ln.text for ln in header]
        self.take([ln for ln in free if id(ln) in best.used])
        self.orientation = best.orientation if best.pairs else "unknown"
        return best

    def _columns_panel(self, free: list[OcrLine], numbers: list[OcrLine]) -> Panel:
        panel = Panel(orientation="vertical")
        bands = [b for b in row_bands(free) if len(b) >= 2]
        if not bands:
            return panel
        cats = bands[-1]
        centres = [cx(c) for c in cats]
        reach = 0.75 * _spacing(centres, self.h)
        floor = min(c.top for c in cats)
        for ln in numbers:
            if ln in cats or cy(ln) >= floor:
                continue
            k = _nearest(cx(ln), centres, reach)
            if k is not None:
                panel.pairs.append(self._pair(cats[k].text, ln))
                panel.used.add(id(ln))
        if panel.pairs:
            panel.categories = [c.text for c in cats]
            panel.used.update(id(c) for c in cats)
        return panel

    def _header_row(
        self,
        cats: list[tuple[str, tuple[float, float, float, float]]],
        numbers: list[OcrLine],
        free: list[OcrLine],
    ) -> list[OcrLine]:
        """Column headers of a matrix: a row of two or more labels above the first numbers,
        right of the row labels."""
        if not cats or not numbers:
            return []
        first = min(n.top for n in numbers)
        label_right = max(box[2] for _, box in cats)
        above = [ln for ln in free if ln.bottom <= first + 2 and cx(ln) > label_right]
        bands = [b for b in row_bands(above) if len(b) >= 2]
        return bands[-1] if bands else []

    def _category_rows(
        self, texts: list[OcrLine], take: bool = True
    ) -> list[tuple[str, tuple[float, float, float, float]]]:
        """Row labels, top to bottom; a line starting in lower case continues the label above
        (wrapped labels), other lines of a row are joined left to right."""
        rows: list[tuple[str, tuple[float, float, float, float]]] = []
        for band in row_bands(texts):
            label = " ".join(ln.text for ln in band)
            box = (
                min(ln.x0 for ln in band),
                min(ln.top for ln in band),
                max(ln.x1 for ln in band),
                max(ln.bottom for ln in band),
            )
            if rows and label[:1].islower() and box[1] - rows[-1][1][3] <= 0.8 * self.h:
                prev, pbox = rows[-1]
                rows[-1] = (f"{prev} {label}", (pbox[0], pbox[1], max(pbox[2], box[2]), box[3]))
            else:
                rows.append((label, box))
            if take:
                self.take(band)
        return rows

    def _pair_rows(
        self,
        panel: Panel,
        cats: list[tuple[str, tuple[float, float, float, float]]],
        numbers: list[OcrLine],
        header: Sequence[OcrLine] = (),
    ) -> None:
        centres = [(box[1] + box[3]) / 2 for _, box in cats]
        columns = [cx(ln) for ln in header]
        col_reach = 0.75 * _spacing(columns, self.h)
        for ln in sorted(numbers, key=lambda n: (cy(n), n.x0)):
            inside = [k for k, (_, box) in enumerate(cats) if box[1] - 2 <= cy(ln) <= box[3] + 2]
            k = inside[0] if inside else _nearest(cy(ln), centres, 0.8 * self.h)
            if k is None:
                continue
            pair = self._pair(cats[k][0], ln)
            if header:
                j = _nearest(cx(ln), columns, col_reach)
                pair.series = header[j].text if j is not None else ""
            panel.pairs.append(pair)
            panel.used.add(id(ln))
        panel.categories = [label for label, _ in cats]

    # --- series, titles -------------------------------------------------------------------------

    def _pair(self, category: str, line: OcrLine) -> Pair:
        colour = ink_colour(self.rgb, line.box)
        return Pair(
            category,
            line.text,
            at=(cx(line), cy(line)),
            colour=colour if chromatic(colour) else None,
        )

    def _assign_series(self) -> None:
        """Series by value colour when values come in two or more colours, else by order within
        a category when categories hold several values; legend labels name them when their
        number matches."""
        short = [
            ln
            for ln in self.free(self.labels)
            if not is_number(ln.text) and len(ln.text.split()) <= 5 and not ln.vertical
        ]
        legend = [label for label, _ in self._category_rows(short, take=False)]
        # Colours are grouped over every panel at once: panels share their series.
        pairs = [p for panel in self.panels if not panel.columns for p in panel.pairs]
        by_colour = dict(
            zip(map(id, pairs), _colour_series([p.colour for p in pairs]), strict=True)
        )
        for panel in self.panels:
            if panel.columns:
                continue  # a matrix: the header names the columns
            colours = [by_colour[id(p)] for p in panel.pairs]
            keys = [(p.category, c) for p, c in zip(panel.pairs, colours, strict=True)]
            # Many categories with two values in one colour: the colours are not the series
            # (labels printed inside stacked bars take the bar's colour as background).
            if len(set(colours)) >= 2 and len(keys) - len(set(keys)) <= 0.34 * len(keys):
                names = self._legend_colours(short, set(colours))
                names.update(_named_colours(self.caption, set(colours)))
                for p, colour in zip(panel.pairs, colours, strict=True):
                    p.series = names.get(colour, colour) if colour else "other"
                continue
            per_cat: dict[str, int] = {}
            # Order along the value axis: left to right in rows, top to bottom in columns.
            along = 0 if panel.orientation == "horizontal" else 1
            panel.pairs.sort(key=lambda p: p.at[along])
            for p in panel.pairs:
                per_cat[p.category] = per_cat.get(p.category, 0) + 1
                p.series = str(per_cat[p.category])
            n = max(per_cat.values(), default=0)
            if n <= 1:
                for p in panel.pairs:
                    p.series = ""
            elif len(legend) == n:
                for p in panel.pairs:
                    p.series = legend[int(p.series) - 1]
            else:
                for p in panel.pairs:
                    p.series = f"series {p.series}"
        self.legend = legend

    def _legend_colours(self, labels: Sequence[OcrLine], series: set[str]) -> dict[str, str]:
        """Series named by legend labels printed in the series' colour."""
        names: dict[str, str] = {}
        for ln in labels:
            colour = ink_colour(self.rgb, ln.box)
            if colour is None or not chromatic(colour):
                continue
            word = colour_name(colour)
            hits = [s for s in series if s == word or s.endswith(f" {word}")]
            if len(hits) == 1 and hits[0] not in names:
                names[hits[0]] = ln.text
        return names

    def _vertical_titles(self) -> None:
        for ln in self.free(self.labels):
            if ln.vertical and not is_number(ln.text):
                self.axis_titles.insert(0, ln.text)
                self.take([ln])

    # --- output ---------------------------------------------------------------------------------

    @property
    def caption(self) -> str:
        return " ".join(ln.text for ln in sorted(self.prose, key=lambda ln: (ln.top, ln.x0)))


def _table(panel: Panel) -> list[list[str]]:
    """A wide table (category, one column per series) or a two-column one."""
    series = unique([*panel.columns, *(p.series for p in panel.pairs if p.series)], limit=8)
    if not series:
        rows = [["category", "value"]]
        order = {c: k for k, c in enumerate(panel.categories)}
        pairs = sorted(panel.pairs, key=lambda p: order.get(p.category, len(order)))
        rows += [[p.category, p.value] for p in pairs]
        return rows[: MAX_ROWS + 1]
    cells: dict[str, dict[str, str]] = {c: {} for c in panel.categories}
    for p in panel.pairs:
        row = cells.setdefault(p.category, {})
        # Two values in one cell (a label paired with the wrong category) are both kept.
        row[p.series] = f"{row[p.series]} / {p.value}" if p.series in row else p.value
    rows = [["category", *series]]
    rows += [[cat, *(vals.get(s, "") for s in series)] for cat, vals in cells.items() if vals]
    return rows[: MAX_ROWS + 1]


def _colour_series(colours: Sequence[tuple[int, int, int] | None]) -> list[str]:
    """A series name per value colour ("" for uncoloured values).

    Colours are grouped by colour word; a word's group is split in two shades only at a
    lightness jump that dwarfs the others, since the anti-aliased ink of small labels varies
    too much for a fixed distance to separate series.
    """
    words = [colour_name(c) if c is not None else "" for c in colours]
    names = list(words)
    for word in {w for w in words if w}:
        idx = sorted(
            (k for k, w in enumerate(words) if w == word), key=lambda k: sum(colours[k] or ())
        )
        light = [sum(colours[k] or ()) for k in idx]
        gaps = sorted(((light[i] - light[i - 1], i) for i in range(1, len(idx))), reverse=True)
        if not gaps or gaps[0][0] < 80 or (len(gaps) > 1 and gaps[0][0] < 3 * gaps[1][0]):
            continue
        cut = gaps[0][1]
        for k in idx[:cut]:
            names[k] = f"dark {word}"
        for k in idx[cut:]:
            names[k] = f"light {word}"
    return names if len({n for n in names if n}) >= 2 else ["" for _ in colours]


def _named_colours(caption: str, colours: set[str]) -> dict[str, str]:
    """Series names a caption gives colours ("FLAN-T5 (blue line) and ProgramFC (green)")."""
    names: dict[str, str] = {}
    for colour in colours:
        match = re.search(
            rf"([A-Z0-9][\w\-.]*(?: [A-Z][\w\-.]*)?)\s*\((?:the |in )?{colour}\b", caption
        )
        if match:
            names[colour] = match[1]
    return names


def _markdown(rows: list[list[str]]) -> str:
    from docsight.document.tables import rows_to_markdown

    return rows_to_markdown(rows)


class OfflineChartParser:
    """A chart read into a data table: title, axis labels, series and values from OCR lines,
    bar lengths from pixels when values are not printed; the table structure engine reads
    charts whose labels and numbers form a grid without axes."""

    type: ImageType = "chart"
    version = "offline-chart/1"

    def parse(self, image: QueryImage) -> TypedText | None:
        if not any(ln.text.strip() for ln in image.lines):
            return None
        reader = ChartReader(image)
        reader.read()
        panels = [p for p in reader.panels if p.pairs]
        values: list[dict[str, Any]] = [
            {
                "category": p.category,
                "value": p.value,
                **({"series": p.series} if p.series else {}),
                **({"estimated": True} if p.estimated else {}),
                **({"panel": panel.name} if panel.name and len(panels) > 1 else {}),
            }
            for panel in panels
            for p in panel.pairs
        ]
        title = reader.title_text
        caption = reader.caption
        if not title and re.match(r"(fig(ure)?|chart|exhibit|graph)\b", caption, re.I):
            title = clip(caption.split(". ")[0], 120)
        series = unique(
            [s for panel in panels for s in [*panel.columns, *(p.series for p in panel.pairs)]], 12
        )
        leftover = [ln.text for ln in reading_order(reader.free(reader.labels))]
        parts = [f"Title: {title}" if title else ""]
        if reader.axis_titles:
            parts.append("Axes: " + "; ".join(unique(reader.axis_titles, 4)))
        if reader.y_ticks:
            parts.append("y axis: " + ", ".join(unique(reader.y_ticks, 12)))
        if reader.orientation == "horizontal" and reader.x_labels and not values:
            parts.append("x axis: " + ", ".join(unique(reader.x_labels, 12)))
        if series:
            parts.append("Series: " + ", ".join(series))
        for panel in panels:
            if panel.name and len(panels) > 1:
                parts.append(f"Panel: {panel.name}")
            parts.append(_markdown(_table(panel)))
        grid = [] if panels else _grid(image)
        if grid:
            parts.append(_markdown(grid))
        elif leftover:
            parts.append("Labels: " + ", ".join(unique(leftover, 30)))
        if caption:
            parts.append("Caption: " + clip(caption, 300))
        text = compact(parts)
        if not text:
            return None
        fields: dict[str, Any] = {
            "title": title,
            "x_labels": unique(reader.x_labels, 40),
            "y_ticks": unique(reader.y_ticks, 20),
            "values": values[:80],
            "series": series,
            "orientation": reader.orientation,
            "axis_titles": unique(reader.axis_titles, 4),
            "panels": [p.name for p in panels if p.name],
            "caption": clip(caption, 400),
        }
        return TypedText(type="chart", text=text, fields=fields, parser=self.version)


def _grid(image: QueryImage) -> list[list[str]]:
    """A chart whose text forms a grid (a table-like chart): the table reader's rows."""
    from docsight.query.typed.offline_tables import read_table

    rows, _ = read_table(image)
    if len(rows) < 2 or len(rows[0]) < 2:
        return []
    # A chart's scattered labels fill a grid sparsely; a table-like chart fills it.
    filled = sum(1 for row in rows for c in row if c) / (len(rows) * len(rows[0]))
    return rows[: MAX_ROWS + 1] if filled >= 0.6 else []


__all__ = ["Axis", "ChartReader", "OfflineChartParser", "find_x_axis", "find_y_axes"]
