"""Reading order and blocks: lines and atoms → ordered lines → paragraph-like blocks.

* :func:`reading_order` runs a recursive XY-cut over lines and atoms (tables, figures): column
  gutters first, then the widest horizontal whitespace band, then rows;
* :func:`merge_row_segments` re-joins pieces of one visual line that the XY-cut kept in one column
  (bullets and their text, table-like rows without rules);
* :func:`group_blocks` splits the ordered lines into paragraph-like blocks;
* :func:`join_lines` joins a block's lines, undoing end-of-line hyphenation;
* :func:`order_units` runs the three in turn: lines and atoms → blocks and atoms in order.

Nothing here knows where the boxes come from, so OCR'd page images use the same functions.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from statistics import median
from typing import TypeVar

from docsight.parsers.pdf.layout import Box, Line, font_style, gaps_between, overlap

BULLET_CHARS = "•●▪◦‣○■□◆◇►▶➢➤✓✔–—-*·\uf0b7\uf0a7\uf076\uf0d8\uf0fc\uf0a8\uf06e"
_BULLET = re.compile(
    rf"^(?:[{re.escape(BULLET_CHARS)}](?:\s|$)|\(?\d{{1,2}}[.)](?:\s|$)|\(?[a-z][.)]\s|\([ivx]{{1,4}}\)\s)"
)
_HYPHENS = ("-", "\u2010", "\u00ad")
_SENTENCE_END = (".", "!", "?", ":", ";")

B = TypeVar("B", bound=Box)
U = TypeVar("U", bound=Box)


# --- reading order -------------------------------------------------------------------------------


def _is_column_gutter(left: Sequence[Box], right: Sequence[Box], page_width: float) -> bool:
    """Whether a vertical gap separates reading columns rather than cells of one table row.

    Text columns are wide; table columns are narrow and their rows share baselines (so do a
    bullet and its text). Two wide sides are columns even when their baselines align, as the
    columns of LaTeX papers do.
    """

    def wide(side: Sequence[Box]) -> bool:
        # The upper quartile, so short last lines and stray pieces do not hide a text column.
        widths = sorted(b.x1 - b.x0 if isinstance(b, Line) else page_width for b in side)
        return widths[(3 * len(widths)) // 4] >= 0.2 * page_width

    if wide(left) and wide(right):
        return True
    small, big = (left, right) if len(left) <= len(right) else (right, left)
    # Centres, not baselines: a small item number is centred on its line, not set on it.
    centres = sorted((b.top + b.bottom) / 2 for b in big if isinstance(b, Line))
    aligned = 0
    for b in small:
        if not isinstance(b, Line) or not centres:
            continue
        c, tol = (b.top + b.bottom) / 2, max(2.0, 0.3 * (b.bottom - b.top))
        i = bisect_left(centres, c - tol)
        if i < len(centres) and centres[i] <= c + tol:
            aligned += 1
    return aligned < 0.5 * len(small)


def reading_order(items: Sequence[B], page_width: float) -> list[tuple[B, int]]:
    """Order lines and atoms by a recursive XY-cut; returns ``(item, column id)`` pairs.

    Priority at each region: column gutters running through the whole region, then the widest
    horizontal whitespace band when it is wider than a line or when some rows still hold two
    columns side by side (a full-width title above two columns), then every row top to bottom.
    Cutting one band at a time keeps two columns from being sliced at coincidental gaps.
    """
    heights = [b.bottom - b.top for b in items if isinstance(b, Line) and not b.vertical]
    unit = median(heights) if heights else 10.0
    out: list[tuple[B, int]] = []
    next_col = [0]

    def new_col() -> int:
        next_col[0] += 1
        return next_col[0]

    def emit_row(row: list[B], col: int) -> None:
        # Items in one band with no horizontal gap between them are stacked (touching lines);
        # read each x-cluster top-down, the clusters left to right. One row alone never makes
        # columns: a justified line can hold a gap as wide as a gutter.
        cuts = [(g0 + g1) / 2 for g0, g1 in gaps_between([(b.x0, b.x1) for b in row])]
        clusters: list[list[B]] = [[] for _ in range(len(cuts) + 1)]
        for b in row:
            clusters[bisect_left(cuts, (b.x0 + b.x1) / 2)].append(b)
        for cluster in clusters:
            out.extend((b, col) for b in sorted(cluster, key=lambda b: (b.top, b.x0)))

    def rec(group: list[B], col: int, depth: int) -> None:
        if len(group) <= 1 or depth > 150:
            out.extend((b, col) for b in sorted(group, key=lambda b: (b.top, b.x0)))
            return
        gutters = _find_gutters(group, unit, page_width)
        if gutters:
            parts: list[list[B]] = [[] for _ in range(len(gutters) + 1)]
            for b in group:
                parts[bisect_left(gutters, (b.x0 + b.x1) / 2)].append(b)
            for part in parts:
                if part:
                    rec(part, new_col(), depth + 1)
            return
        ygaps = gaps_between([(b.top, b.bottom) for b in group])
        if not ygaps:
            emit_row(group, col)
            return
        g0, g1 = max(ygaps, key=lambda g: g[1] - g[0])
        if g1 - g0 >= unit:
            cut = (g0 + g1) / 2
            rec([b for b in group if (b.top + b.bottom) / 2 < cut], col, depth + 1)
            rec([b for b in group if (b.top + b.bottom) / 2 >= cut], col, depth + 1)
            return
        cuts = [(a + b) / 2 for a, b in ygaps]
        rows: list[list[B]] = [[] for _ in range(len(cuts) + 1)]
        for b in group:
            rows[bisect_left(cuts, (b.top + b.bottom) / 2)].append(b)
        # Consecutive rows split by a gutter at the same place are a two-column stretch (text
        # beside a figure, columns under a full-width title): read each stretch column-wise.
        stretch: list[list[B]] = []
        span: tuple[float, float] | None = None
        for row in [*rows, []]:
            gap = _row_gutter(row, page_width) if row else None
            if gap is not None and span is not None and overlap(*gap, *span) > 0:
                stretch.append(row)
                span = (max(gap[0], span[0]), min(gap[1], span[1]))
                continue
            if len(stretch) >= 2 and len(stretch) < len(rows):
                rec([b for r in stretch for b in r], col, depth + 1)
            else:
                for r in stretch:
                    emit_row(r, col)
            stretch, span = [row], gap

    rec(list(items), 0, 0)
    return out


def _find_gutters(group: Sequence[Box], unit: float, page_width: float) -> list[float]:
    """x positions of column gutters through the whole group.

    A gutter is a vertical strip at least half a line high wide that no item crosses, except a
    line or two overflowing it slightly (a long bullet in a narrow column); an item reaching far
    into both sides (a full-width title) always blocks it.
    """
    x_min = min(b.x0 for b in group)
    width = int(max(b.x1 for b in group) - x_min) + 2
    diff = [0] * (width + 1)
    for b in group:
        diff[max(0, int(b.x0 - x_min))] += 1
        diff[min(width, int(b.x1 - x_min) + 1)] -= 1
    tol = 1 if len(group) >= 10 else 0
    runs: list[tuple[float, float]] = []
    cover, start = 0, None
    for x in range(width):
        cover += diff[x]
        if cover <= tol and start is None:
            start = x
        elif cover > tol and start is not None:
            runs.append((start + x_min, x + x_min))
            start = None
    cuts = []
    for g0, g1 in runs:
        if g1 - g0 < 0.5 * unit:
            continue
        cut = (g0 + g1) / 2
        crossing = [b for b in group if b.x0 < g0 and b.x1 > g1]
        if any(min(cut - b.x0, b.x1 - cut) > 0.25 * (b.x1 - b.x0) for b in crossing):
            continue
        left = [b for b in group if b.x1 <= g1 and b not in crossing]
        right = [b for b in group if b.x0 >= g0 and b not in crossing]
        if left and right and _is_column_gutter(left, right, page_width):
            cuts.append(cut)
    return cuts


def _row_gutter(row: Sequence[Box], page_width: float) -> tuple[float, float] | None:
    """The gap between two wide items side by side in one row (columns, not table cells)."""
    wide = sorted((b for b in row if (b.x1 - b.x0) >= 0.2 * page_width), key=lambda b: b.x0)
    for a, b in pairwise(wide):
        if b.x0 >= a.x1:
            return (a.x1, b.x0)
    return None


def merge_row_segments(ordered: list[tuple[Line, int]]) -> list[tuple[Line, int]]:
    """Join consecutive pieces of one visual line in the same column (bullet + text, table rows)."""
    out: list[tuple[Line, int]] = []
    for line, col in ordered:
        if out:
            prev, pcol = out[-1]
            if (
                pcol == col
                and not prev.vertical
                and not line.vertical
                and line.x0 >= prev.x1 - 1.0
                and overlap(line.top, line.bottom, prev.top, prev.bottom)
                >= 0.5 * min(line.height, prev.height)
            ):
                prev.words.extend(line.words)
                prev.refresh()
                continue
        out.append((line, col))
    return out


def order_units(lines: Sequence[Line], atoms: Sequence[U], page_width: float) -> list[Block | U]:
    """Lines and atoms (tables, figures) in reading order, the lines grouped into blocks.

    A block never spans an atom: the lines before and after it are grouped separately.
    """
    items: list[Line | U] = [*lines, *atoms]
    units: list[Block | U] = []
    run: list[tuple[Line, int]] = []
    for item, col in reading_order(items, page_width):
        if isinstance(item, Line):
            run.append((item, col))
            continue
        units.extend(group_blocks(merge_row_segments(run)))
        run = []
        units.append(item)
    units.extend(group_blocks(merge_row_segments(run)))
    return units


# --- blocks --------------------------------------------------------------------------------------


@dataclass
class Block:
    lines: list[Line]
    column: int = 0

    @property
    def x0(self) -> float:
        return min(ln.x0 for ln in self.lines)

    @property
    def x1(self) -> float:
        return max(ln.x1 for ln in self.lines)

    @property
    def top(self) -> float:
        return min(ln.top for ln in self.lines)

    @property
    def bottom(self) -> float:
        return max(ln.bottom for ln in self.lines)

    @property
    def text(self) -> str:
        return join_lines([ln.text for ln in self.lines])

    def font_counts(self) -> Counter[tuple[str, float]]:
        counts: Counter[tuple[str, float]] = Counter()
        for ln in self.lines:
            for w in ln.words:
                counts[(w.font, round(w.size, 1))] += len(w.text)
        return counts

    def dominant_font(self) -> tuple[str, float]:
        return self.font_counts().most_common(1)[0][0]

    def style_share(self, attr: str) -> float:
        """Share of characters whose font has style flag ``attr`` (bold, monospace, math...)."""
        counts = self.font_counts()
        total = sum(counts.values()) or 1
        return sum(n for (f, _), n in counts.items() if getattr(font_style(f), attr)) / total


def starts_with_bullet(text: str) -> bool:
    return bool(_BULLET.match(text))


def _typical_gap(ordered: Sequence[tuple[Line, int]]) -> float:
    gaps = []
    for (a, ca), (b, cb) in pairwise(ordered):
        gap = b.top - a.bottom
        if ca == cb and abs(a.size - b.size) < 0.5 and 0 <= gap < a.height:
            gaps.append(gap)
    return median(gaps) if gaps else 2.0


def group_blocks(ordered: Sequence[tuple[Line, int]]) -> list[Block]:
    """Split ordered lines into paragraph-like blocks.

    A new block starts at a column change, a gap wider than the usual leading, a change of size
    or weight, a jump backwards, a bullet, a first-line indent, or after a short line that ends
    a sentence.
    """
    leading = _typical_gap(ordered)
    blocks: list[Block] = []
    for line, col in ordered:
        if blocks and _continues(blocks[-1], line, col, leading):
            blocks[-1].lines.append(line)
        else:
            blocks.append(Block([line], col))
    return blocks


def _continues(block: Block, line: Line, col: int, leading: float) -> bool:
    prev = block.lines[-1]
    if col != block.column or line.vertical or prev.vertical:
        return False
    size = max(prev.size, line.size)
    gap = line.top - prev.bottom
    if gap > leading + 0.5 * size or gap < -0.5 * size:
        return False
    if abs(prev.size - line.size) > 0.12 * size:
        return False
    for attr in ("bold", "monospace"):
        # Only a clean switch counts: a bold run-in heading shares its line with plain text.
        a, b = prev.share(attr), line.share(attr)
        if (a >= 0.9 and b <= 0.1) or (a <= 0.1 and b >= 0.9):
            return False
    bx0, bx1 = block.x0, block.x1
    if overlap(line.x0, line.x1, bx0, bx1) < 0.3 * min(line.width, bx1 - bx0):
        return False
    text = line.text
    if starts_with_bullet(text):
        return False
    first = block.lines[0]
    if starts_with_bullet(first.text) and len(first.words) > 1:
        hang = first.words[1].x0
        if abs(line.x0 - hang) <= 0.6 * size or abs(line.x0 - first.x0) <= 0.6 * size:
            return True
    indent = line.x0 - bx0
    if (
        0.6 * size < indent < 6 * size
        and line.x1 >= bx1 - size
        and (prev.x1 < bx1 - size or len(block.lines) > 1)
    ):
        return False  # a first-line indent: LaTeX separates paragraphs this way alone
    prev_text = prev.text.rstrip()
    width = bx1 - bx0
    return not (
        prev_text.endswith(_SENTENCE_END)
        and prev.x1 < bx1 - 0.15 * width
        and width > 15 * size
        and text[:1].isupper()
    )


def join_lines(lines: Sequence[str]) -> str:
    """Join a block's lines with spaces, undoing end-of-line hyphenation ("infor-" + "mation")."""
    out = ""
    for raw in lines:
        text = raw.strip()
        if not text:
            continue
        if not out:
            out = text
        elif out.endswith(_HYPHENS) and len(out) >= 2 and out[-2].isalpha() and text[0].isalpha():
            # "infor-" + "mation" is one word; "Program-" + "Guided" and "on-the-" + "job" keep
            # their hyphen (a capital or an earlier hyphen marks a compound).
            compound = text[0].isupper() or "-" in out[:-1].rsplit(" ", 1)[-1]
            out = out + text if compound else out[:-1] + text
        else:
            out += " " + text
    return out.replace("\u00ad", "")
