"""Page geometry for the PDF parser: glyphs → words → lines.

Everything in this module and in :mod:`~docsight.parsers.pdf.reading` is pure geometry on boxes in
PDF points with a top-left origin, so it can be tested on synthetic input without a PDF:

* :func:`words_from_glyphs` cuts the glyph stream into words (content-stream order keeps columns
  apart; explicit spaces and gaps end a word);
* :func:`group_lines` bands words into rows and cuts every row at gaps wider than about an em, so a
  line never spans a column gutter.

Also here: font style guesses from font names, and the small box helpers the other modules share
(:func:`overlap`, :func:`gaps_between`, :func:`inside`).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import NamedTuple, Protocol

#: A gap wider than this fraction of the font size separates two words.
WORD_GAP = 0.13
#: A gap wider than this fraction of the font size splits a row into separate line segments.
SEGMENT_GAP = 0.8


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

    def __reduce__(
        self,
    ) -> tuple[type[Word], tuple[str, float, float, float, float, float, str, bool]]:
        # A page's words are pickled between processes and between the passes of a long
        # document (:mod:`.passes`): as constructor arguments they pickle in half the time and
        # three quarters of the bytes of the default state of a slotted object.
        return (
            Word,
            (
                self.text,
                self.x0,
                self.top,
                self.x1,
                self.bottom,
                self.size,
                self.font,
                self.upright,
            ),
        )


def words_from_glyphs(glyphs: Iterable[Glyph]) -> list[Word]:
    """Cut the glyph stream into words.

    The content stream already keeps a column's text together, so consecutive glyphs form a word
    while they sit on the same baseline and touch; spaces, jumps and wide gaps end it.
    """
    words: list[Word] = []
    #: Per word: whether a space glyph (or the stream's start) came right before it, and the
    #: narrowest gap between two of its glyphs (infinite for one glyph).
    spaced: list[bool] = []
    inner: list[float] = []
    cur: Word | None = None
    after_space = True
    for g in glyphs:
        text = g.text
        if not text or text.isspace():
            cur = None
            after_space = True
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
                inner[-1] = min(inner[-1], gap)
                cur.x0, cur.x1 = min(cur.x0, g.x0), max(cur.x1, g.x1)
                cur.top, cur.bottom = min(cur.top, g.top), max(cur.bottom, g.bottom)
                continue
        cur = Word(text, g.x0, g.top, g.x1, g.bottom, g.size, g.font, g.upright)
        words.append(cur)
        spaced.append(after_space)
        inner.append(math.inf)
        after_space = False
    return _join_tracked(words, spaced, inner)


#: Letter-spaced ("tracked") titles: the gaps between a tracked word's letters, as fractions of
#: the font size. Below the low end the letters touch and form a word anyway; above the high
#: end the gap is a column's or a word's.
_TRACKED_GAP = (0.05, 0.45)
#: Pieces a tracked word may have: a longer run is no word, and the cap keeps a page of evenly
#: spaced single letters (a hostile file, a grid of labels) linear to read.
_TRACKED_PIECES = 30


def _join_tracked(words: list[Word], spaced: list[bool], inner: list[float]) -> list[Word]:
    """Join the pieces of letter-spaced words: "S U P ERI O R" → "SUPERIOR".

    Covers and headings are often set with tracking, every letter a fixed distance from the
    next, wider than the gap that separates words in body text. The PDF then still types a
    space glyph between the words, so a run of short letter pieces with no space between them,
    on one baseline, spaced evenly, is one word. Evenly means the gaps inside the pieces too:
    the letters of "ERI" sat just close enough to be cut as a word. Short words of ordinary text
    ("it is a", typeset without space glyphs) have touching letters inside, and a table row's
    pieces are spaced unevenly, so neither is joined.
    """
    out: list[Word] = []
    i = 0
    while i < len(words):
        j = i + 1
        gaps: list[float] = []
        while (
            j < len(words)
            and j - i < _TRACKED_PIECES
            and not spaced[j]
            and _tracked_pair(words[j - 1], words[j], gaps)
        ):
            j += 1
        run = words[i:j]
        letters = sum(len(w.text) for w in run)
        gaps += [g for g in inner[i:j] if g != math.inf]
        if (
            len(run) >= 3
            and letters >= 4
            and all(len(w.text) <= 3 and w.text.isalpha() for w in run)
            and min(gaps) >= _TRACKED_GAP[0] * run[0].size
            and max(gaps) <= 1.5 * min(gaps) + 0.02 * run[0].size
        ):
            first = run[0]
            out.append(
                Word(
                    "".join(w.text for w in run),
                    min(w.x0 for w in run),
                    min(w.top for w in run),
                    max(w.x1 for w in run),
                    max(w.bottom for w in run),
                    first.size,
                    first.font,
                    first.upright,
                )
            )
        else:
            out.extend(run[:1])
            j = i + 1
        i = j
    return out


def _tracked_pair(a: Word, b: Word, gaps: list[float]) -> bool:
    """Whether ``b`` follows ``a`` on its baseline at a tracking distance (appended to ``gaps``)."""
    if not (a.upright and b.upright) or abs(a.size - b.size) > 0.1 * max(a.size, 1.0):
        return False
    if abs(a.bottom - b.bottom) > 0.3 * max(a.size, 1.0):
        return False
    gap = (b.x0 - a.x1) / max(a.size, 1.0)
    if not _TRACKED_GAP[0] <= gap <= _TRACKED_GAP[1]:
        return False
    gaps.append(b.x0 - a.x1)
    return True


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


def overlap(a0: float, a1: float, b0: float, b1: float) -> float:
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
            if overlap(w.top, w.bottom, ref.top, ref.bottom) >= 0.5 * small and big <= 2.5 * small:
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
        reach = 0.0  # the rightmost x1 of ``seg``, kept as words join rather than searched
        for w in row:
            if seg:
                prev = seg[-1]
                if w.text == prev.text and abs(w.x0 - prev.x0) < 1 and abs(w.top - prev.top) < 1:
                    continue  # text drawn twice (fake bold, shadows)
                if w.x0 - reach > SEGMENT_GAP * max(w.size, prev.size):
                    lines.append(Line(seg))
                    seg = []
            reach = max(reach, w.x1) if seg else w.x1
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
            and overlap(w.x0, w.x1, last.x0, last.x1) > 0.5 * min(w.x1 - w.x0, last.width)
            # Text turned clockwise runs down the page, counter-clockwise up it.
            and (
                -2 * w.size <= w.top - last.bottom <= 2 * w.size
                or -2 * w.size <= last.top - w.bottom <= 2 * w.size
            )
        ):
            last.words.append(w)
            last.refresh()
        else:
            lines.append(Line([w], vertical=True))
    return lines


# --- box helpers ---------------------------------------------------------------------------------


def gaps_between(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Empty intervals between the union of ``spans``."""
    spans = sorted(spans)
    gaps: list[tuple[float, float]] = []
    reach = spans[0][1]
    for a, b in spans[1:]:
        if a > reach:
            gaps.append((reach, a))
        reach = max(reach, b)
    return gaps


def inside(box: Box, frame: tuple[float, float, float, float], margin: float = 1.0) -> bool:
    """Whether the centre of ``box`` lies in ``frame`` (x0, top, x1, bottom)."""
    cx, cy = (box.x0 + box.x1) / 2, (box.top + box.bottom) / 2
    return (
        frame[0] - margin <= cx <= frame[2] + margin
        and frame[1] - margin <= cy <= frame[3] + margin
    )
