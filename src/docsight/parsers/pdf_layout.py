"""Page geometry for the PDF parser: glyphs → words → lines → reading order → blocks.

Everything here is pure geometry on boxes in PDF points with a top-left origin, so it can be tested
on synthetic input without a PDF. The pipeline is:

* :func:`words_from_glyphs` cuts the glyph stream into words (content-stream order keeps columns
  apart; explicit spaces and gaps end a word);
* :func:`group_lines` bands words into rows and cuts every row at gaps wider than about an em, so a
  line never spans a column gutter;
* :func:`reading_order` runs a recursive XY-cut over lines and atoms (tables, figures): column
  gutters first, then the widest horizontal whitespace band, then rows;
* :func:`merge_row_segments` re-joins pieces of one visual line that the XY-cut kept in one column
  (bullets and their text, table-like rows without rules);
* :func:`group_blocks` splits the ordered lines into paragraph-like blocks.

Also here: :func:`join_lines` (de-hyphenation), :func:`find_furniture` (running headers and
footers), :func:`rule_groups` and :func:`grid_from_lines` (tables drawn with horizontal rules only,
as LaTeX booktabs does) and :func:`cluster_boxes` (vector figures).
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import pairwise
from statistics import median
from typing import NamedTuple, Protocol, TypeVar

#: A gap wider than this fraction of the font size separates two words.
WORD_GAP = 0.13
#: A gap wider than this fraction of the font size splits a row into separate line segments.
SEGMENT_GAP = 0.8
#: Top and bottom bands (fractions of page height) where running headers and footers live.
FURNITURE_BAND = 0.08

BULLET_CHARS = "•●▪◦‣○■□◆◇►▶➢➤✓✔–—-*·\uf0b7\uf0a7\uf076\uf0d8\uf0fc\uf0a8\uf06e"
_BULLET = re.compile(
    rf"^(?:[{re.escape(BULLET_CHARS)}](?:\s|$)|\(?\d{{1,2}}[.)](?:\s|$)|\(?[a-z][.)]\s|\([ivx]{{1,4}}\)\s)"
)
_HYPHENS = ("-", "\u2010", "\u00ad")
_SENTENCE_END = (".", "!", "?", ":", ";")


class Glyph(NamedTuple):
    """One character as the PDF library reports it (top-left origin, PDF points)."""

    text: str
    x0: float
    top: float
    x1: float
    bottom: float
    size: float
    font: str
    upright: bool = True


class Box(Protocol):
    @property
    def x0(self) -> float: ...
    @property
    def top(self) -> float: ...
    @property
    def x1(self) -> float: ...
    @property
    def bottom(self) -> float: ...


B = TypeVar("B", bound=Box)


@dataclass(frozen=True)
class FontStyle:
    bold: bool
    italic: bool
    monospace: bool
    math: bool


_BOLD = re.compile(r"bold|black|heavy|semibold|demi|cmbx|medi$|[-,]bd(?:$|[^a-z])|ultra", re.I)
_ITALIC = re.compile(r"ital|obli|slant|cmti\d|cmsl\d|[-,]it(?:$|[^a-z])", re.I)
_MONO = re.compile(r"mono|courier|consol|code|cmtt|sftt|typewriter|menlo|fixed", re.I)
_MATH = re.compile(
    r"^(?:cmmi|cmsy|cmex|cmbsy|msam|msbm|eufm|rsfs|txsy|txmi|txex|pxsy|pxmi|esint|wasy|mtsy|mtmi"
    r"|mtex|lmmath|lmsy)|math",
    re.I,
)


def base_font_name(name: str) -> str:
    """The font name without the six-letter subset tag (``ABCDEF+Times-Bold`` → ``Times-Bold``)."""
    return name.split("+", 1)[1] if len(name) > 7 and name[6] == "+" else name


@lru_cache(maxsize=4096)
def font_style(name: str) -> FontStyle:
    """Style flags guessed from a font name; PDFs rarely carry reliable flags otherwise."""
    base = base_font_name(name)
    return FontStyle(
        bold=bool(_BOLD.search(base)),
        italic=bool(_ITALIC.search(base)),
        monospace=bool(_MONO.search(base)),
        math=bool(_MATH.search(base)),
    )


# --- words and lines -----------------------------------------------------------------------------


@dataclass(slots=True)
class Word:
    text: str
    x0: float
    top: float
    x1: float
    bottom: float
    size: float = 10.0
    font: str = ""
    upright: bool = True

    @property
    def height(self) -> float:
        return self.bottom - self.top


def words_from_glyphs(glyphs: Iterable[Glyph]) -> list[Word]:
    """Cut the glyph stream into words.

    The content stream already keeps a column's text together, so consecutive glyphs form a word
    while they sit on the same baseline and touch; spaces, jumps and wide gaps end it.
    """
    words: list[Word] = []
    cur: Word | None = None
    for g in glyphs:
        text = g.text
        if not text or text.isspace():
            cur = None
            continue
        if cur is not None and g.upright == cur.upright:
            if g.upright:
                gap = g.x0 - cur.x1
                same_line = abs(g.bottom - cur.bottom) <= 0.3 * max(g.size, 1.0)
            else:
                gap = max(g.top - cur.bottom, cur.top - g.bottom)
                same_line = abs(g.x0 - cur.x0) <= 0.3 * max(g.size, 1.0)
            tol = WORD_GAP * max(g.size, cur.size, 1.0)
            if same_line and -tol <= gap <= tol:
                cur.text += text
                cur.x0, cur.x1 = min(cur.x0, g.x0), max(cur.x1, g.x1)
                cur.top, cur.bottom = min(cur.top, g.top), max(cur.bottom, g.bottom)
                continue
        cur = Word(text, g.x0, g.top, g.x1, g.bottom, g.size, g.font, g.upright)
        words.append(cur)
    return words


@dataclass(slots=True)
class Line:
    """A run of words on one baseline that does not cross a gutter (or a vertical text run)."""

    words: list[Word]
    x0: float = 0.0
    top: float = 0.0
    x1: float = 0.0
    bottom: float = 0.0
    vertical: bool = False
    column: int = 0
    _text: str | None = field(default=None, repr=False)
    _font: tuple[str, float] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.refresh()

    def refresh(self) -> None:
        self.x0 = min(w.x0 for w in self.words)
        self.x1 = max(w.x1 for w in self.words)
        self.top = min(w.top for w in self.words)
        self.bottom = max(w.bottom for w in self.words)
        self._text = None
        self._font = None

    @property
    def text(self) -> str:
        if self._text is None:
            parts: list[str] = []
            prev: Word | None = None
            for w in self.words:
                if prev is not None:
                    if self.vertical:
                        gap = max(w.top - prev.bottom, prev.top - w.bottom)
                    else:
                        gap = w.x0 - prev.x1
                    if gap > WORD_GAP * max(prev.size, w.size) * 0.5:
                        parts.append(" ")
                parts.append(w.text)
                prev = w
            self._text = "".join(parts)
        return self._text

    @property
    def height(self) -> float:
        return self.bottom - self.top

    @property
    def width(self) -> float:
        return self.x1 - self.x0

    def dominant_font(self) -> tuple[str, float]:
        """The (font name, size) carrying most characters."""
        if self._font is None:
            counts: Counter[tuple[str, float]] = Counter()
            for w in self.words:
                counts[(w.font, round(w.size, 1))] += len(w.text)
            self._font = counts.most_common(1)[0][0]
        return self._font

    @property
    def size(self) -> float:
        return self.dominant_font()[1]

    @property
    def style(self) -> FontStyle:
        return font_style(self.dominant_font()[0])

    @property
    def n_chars(self) -> int:
        return sum(len(w.text) for w in self.words)

    def share(self, attr: str) -> float:
        """Share of characters whose font has style flag ``attr`` (bold, monospace, ...)."""
        total = sum(len(w.text) for w in self.words) or 1
        return sum(len(w.text) for w in self.words if getattr(font_style(w.font), attr)) / total


def _overlap(a0: float, a1: float, b0: float, b1: float) -> float:
    return min(a1, b1) - max(a0, b0)


def group_lines(words: Sequence[Word]) -> list[Line]:
    """Band words into rows by vertical overlap, then cut rows at gaps wider than ~an em."""
    upright = sorted((w for w in words if w.upright), key=lambda w: (w.top + w.bottom) / 2)
    rows: list[list[Word]] = []
    refs: list[Word] = []
    for w in upright:
        # The tallest word anchors a band so superscripts cannot drag it upwards; a word far
        # taller or shorter (a drop cap, a giant figure) never joins, or it would swallow lines.
        # The band before the last is tried too, for a word sorted just past a giant.
        for k in range(len(rows) - 1, max(-1, len(rows) - 3), -1):
            ref = refs[k]
            small, big = sorted((w.height, ref.height))
            if _overlap(w.top, w.bottom, ref.top, ref.bottom) >= 0.5 * small and big <= 2.5 * small:
                rows[k].append(w)
                if w.height > ref.height:
                    refs[k] = w
                break
        else:
            rows.append([w])
            refs.append(w)
    lines: list[Line] = []
    for row in rows:
        row.sort(key=lambda w: w.x0)
        seg: list[Word] = []
        for w in row:
            if seg:
                prev = seg[-1]
                if w.text == prev.text and abs(w.x0 - prev.x0) < 1 and abs(w.top - prev.top) < 1:
                    continue  # text drawn twice (fake bold, shadows)
                if w.x0 - max(p.x1 for p in seg) > SEGMENT_GAP * max(w.size, prev.size):
                    lines.append(Line(seg))
                    seg = []
            seg.append(w)
        if seg:
            lines.append(Line(seg))
    lines.extend(_vertical_lines([w for w in words if not w.upright]))
    return lines


def _vertical_lines(words: list[Word]) -> list[Line]:
    """Rotated text (margin stamps, axis titles): consecutive runs sharing an x band."""
    lines: list[Line] = []
    for w in words:
        last = lines[-1] if lines else None
        if (
            last is not None
            and _overlap(w.x0, w.x1, last.x0, last.x1) > 0.5 * min(w.x1 - w.x0, last.width)
            and -2 * w.size <= w.top - last.bottom <= 2 * w.size
        ):
            last.words.append(w)
            last.refresh()
        else:
            lines.append(Line([w], vertical=True))
    return lines


# --- reading order -------------------------------------------------------------------------------


def _gaps(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Empty intervals between the union of ``spans``."""
    spans = sorted(spans)
    gaps: list[tuple[float, float]] = []
    reach = spans[0][1]
    for a, b in spans[1:]:
        if a > reach:
            gaps.append((reach, a))
        reach = max(reach, b)
    return gaps


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
        cuts = [(g0 + g1) / 2 for g0, g1 in _gaps([(b.x0, b.x1) for b in row])]
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
        ygaps = _gaps([(b.top, b.bottom) for b in group])
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
            if gap is not None and span is not None and _overlap(*gap, *span) > 0:
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
                and _overlap(line.top, line.bottom, prev.top, prev.bottom)
                >= 0.5 * min(line.height, prev.height)
            ):
                prev.words.extend(line.words)
                prev.refresh()
                continue
        out.append((line, col))
    return out


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
    if _overlap(line.x0, line.x1, bx0, bx1) < 0.3 * min(line.width, bx1 - bx0):
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


# --- headers and footers -------------------------------------------------------------------------

_DIGITS = re.compile(r"\d+")
_PAGE_NUMBER = re.compile(
    r"^(?:page\s*)?(?:#|[ivxlc]{1,6})(?:\s*(?:of|/)\s*#)?$|^[-–—]\s*#\s*[-–—]$|^#\s*\|.*$|^.*\|\s*#$"
)


def furniture_key(text: str) -> str:
    return " ".join(_DIGITS.sub("#", text.lower()).split())


def find_furniture(
    pages: Sequence[Sequence[Line]], frames: Sequence[tuple[float, float]]
) -> list[dict[int, str]]:
    """Running headers and footers: for each page, ``{line index: "header" | "footer"}``.

    ``frames`` gives each page's ``(top, height)``. A line in the top or bottom band is furniture
    when its digit-normalised text recurs on several pages, or when it is a bare page number.
    """
    n = len(pages)
    seen: defaultdict[tuple[str, str], set[int]] = defaultdict(set)
    candidates: list[list[tuple[int, str, str, bool]]] = []
    for p, (lines, (top, h)) in enumerate(zip(pages, frames, strict=True)):
        band = FURNITURE_BAND * h
        found: list[tuple[int, str, str, bool]] = []
        # The first and last rows count too: some pages end their text well above the band.
        first = min((ln.bottom for ln in lines), default=0.0)
        last = max((ln.top for ln in lines), default=0.0)
        for i, ln in enumerate(lines):
            in_band = True
            if ln.bottom - top <= band or ln.top <= first:
                zone, in_band = "header", ln.bottom - top <= band
            elif ln.top - top >= h - band or ln.bottom >= last:
                zone, in_band = "footer", ln.top - top >= h - band
            else:
                continue
            key = furniture_key(ln.text)
            if key:
                found.append((i, zone, key, in_band))
                seen[(zone, key)].add(p)
        candidates.append(found)
    # Outside the bands a line must recur on many pages: a short document can repeat a body
    # line by chance.
    need = max(2, min(5, math.ceil(0.25 * n)))
    need_outside = max(3, math.ceil(0.4 * n))
    result: list[dict[int, str]] = []
    for found in candidates:
        marks: dict[int, str] = {}
        for i, zone, key, in_band in found:
            count = len(seen[(zone, key)])
            if count >= (need if in_band else need_outside) or (
                in_band and _PAGE_NUMBER.match(key)
            ):
                marks[i] = zone
        result.append(marks)
    return result


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
            if y - reg[3] > max_gap or _overlap(x0, x1, reg[0], reg[2]) < 0.5 * (x1 - x0):
                continue
            width = max(x1, reg[2]) - min(x0, reg[0])
            if any(
                reg[3] < ln.top
                and ln.bottom < y
                and ln.width >= 0.6 * width
                and _overlap(ln.x0, ln.x1, reg[0], reg[2]) > 0
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
        if last is not None and _overlap(ln.top, ln.bottom, last.top, last.bottom) >= 0.5 * min(
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
    gaps = [g for g in _gaps([(w.x0, w.x1) for w in body]) if g[1] - g[0] >= 0.5 * size]
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


# --- vector figures ------------------------------------------------------------------------------


def cluster_boxes(
    boxes: Sequence[tuple[float, float, float, float]], gap: float
) -> list[tuple[tuple[float, float, float, float], int]]:
    """Union boxes lying within about ``gap`` of each other; returns ``(bbox, member count)``.

    Boxes are stamped onto a sparse grid of ``gap``-sized cells and joined through a union-find,
    which stays linear in the covered area where pairwise tests would be quadratic in the
    thousands of paths a chart can hold.
    """
    parent = list(range(len(boxes)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[tuple[int, int], int] = {}
    # Cells coarser than the gap only merge slightly more eagerly, and keep big boxes cheap.
    step = max(gap, 8.0)
    for i, (x0, top, x1, bottom) in enumerate(boxes):
        for cx in range(int((x0 - gap / 2) // step), int((x1 + gap / 2) // step) + 1):
            for cy in range(int((top - gap / 2) // step), int((bottom + gap / 2) // step) + 1):
                j = owner.setdefault((cx, cy), i)
                if j != i:
                    ri, rj = find(i), find(j)
                    if ri != rj:
                        parent[ri] = rj
    groups: dict[int, list[int]] = defaultdict(list)
    for i in range(len(boxes)):
        groups[find(i)].append(i)
    out = []
    for members in groups.values():
        out.append(
            (
                (
                    min(boxes[i][0] for i in members),
                    min(boxes[i][1] for i in members),
                    max(boxes[i][2] for i in members),
                    max(boxes[i][3] for i in members),
                ),
                len(members),
            )
        )
    return sorted(out, key=lambda c: (c[0][1], c[0][0]))


def inside(box: Box, frame: tuple[float, float, float, float], margin: float = 1.0) -> bool:
    """Whether the centre of ``box`` lies in ``frame`` (x0, top, x1, bottom)."""
    cx, cy = (box.x0 + box.x1) / 2, (box.top + box.bottom) / 2
    return (
        frame[0] - margin <= cx <= frame[2] + margin
        and frame[1] - margin <= cy <= frame[3] + margin
    )
