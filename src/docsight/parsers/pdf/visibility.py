"""Words a reader would not see: off the page, too small to read, or without contrast.

A PDF's text layer and what the page shows can differ: text drawn outside the crop box, in a
1 pt font, in white on white, with the invisible render mode or under an opaque shape is
extracted like any other. That is how instructions are smuggled to a model and keywords into a
search index, so such words are taken out of the text flow here and emitted apart, flagged.

Contrast is judged on the page render rather than from the text's fill colour: the render
answers the real question (is there ink where the word is?) for every way of hiding text at once,
and it keeps the invisible text layer of an OCR'd scan visible, because the scan under it is
inked. Colour channels are compared separately so red text on a grey of equal luminance counts
as visible.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from docsight.document.model import Hidden
from docsight.parsers.pdf.layout import Line, Word, group_lines, inside
from docsight.parsers.pdf.page import Rect

#: Colour levels (of 255, any channel) a word's box must span to count as inked. Anti-aliased
#: glyphs span far more even when light grey on white; a same-colour word spans exactly 0.
MIN_CONTRAST = 12
#: Word pixel rows :meth:`VisibilityCheck._inked_all` reduces at once (about 50 bytes of index
#: arrays each): a page of many tall words (a hostile file) is checked in batches.
_BATCH_ROWS = 200_000


@dataclass
class HiddenText:
    """Lines of words hidden for the same reasons, emitted as one flagged element per page."""

    reasons: tuple[Hidden, ...]
    lines: list[Line]


class VisibilityCheck:
    """Sorts a page's words into visible and hidden, given the page render (if any).

    ``frame`` is the visible page (the crop box) in the words' coordinates, ``scale`` the render's
    pixels per point, and ``render`` a PIL image of the frame or ``None`` (contrast then cannot
    be judged and only position and size are checked).
    """

    def __init__(self, frame: Rect, render: Any, scale: float, min_font_pt: float) -> None:
        self.frame = frame
        self.scale = scale
        self.min_font_pt = min_font_pt
        self.pixels = None
        self._planar: Any = None
        if render is not None:
            import numpy as np

            self.pixels = np.asarray(render if render.mode == "RGB" else render.convert("RGB"))

    def reasons(self, word: Word) -> tuple[Hidden, ...]:
        return self._reasons(word, self.pixels is None or self._inked(word))

    def _reasons(self, word: Word, inked: bool) -> tuple[Hidden, ...]:
        """Why ``word`` is hidden, given whether its box on the render is ``inked``."""
        if not inside(word, self.frame, 0.0):
            return (Hidden.OFF_PAGE,)  # nothing of it is rendered, so contrast means nothing
        out: list[Hidden] = []
        # Libraries size a glyph by its box height, which for rotated text is its advance width
        # (a rotated "(" would read as 1 pt); across the baseline a rotated word is as thick
        # as its font is tall.
        size = word.size if word.upright else min(word.x1 - word.x0, word.bottom - word.top)
        if size < self.min_font_pt:
            out.append(Hidden.TINY)
        if not inked:
            out.append(Hidden.NO_CONTRAST)
        return tuple(out)

    def _pixel_box(self, word: Word) -> tuple[int, int, int, int]:
        """``word``'s box on the render in whole pixels, clipped to it: ``(x0, y0, x1, y1)``."""
        assert self.pixels is not None
        height, width = self.pixels.shape[:2]
        ox, oy = self.frame[0], self.frame[1]
        return (
            max(0, math.floor((word.x0 - ox) * self.scale)),
            max(0, math.floor((word.top - oy) * self.scale)),
            min(width, math.ceil((word.x1 - ox) * self.scale)),
            min(height, math.ceil((word.bottom - oy) * self.scale)),
        )

    def _inked(self, word: Word) -> bool:
        """Whether the render has ink in ``word``'s box: one word at a time (the reference
        :meth:`_inked_all` must agree with)."""
        assert self.pixels is not None
        x0, y0, x1, y1 = self._pixel_box(word)
        if x1 <= x0 or y1 <= y0:
            return True  # a box that rounds to no pixel tells nothing; leave the word be
        region = self.pixels[y0:y1, x0:x1]
        spread = region.max(axis=(0, 1)).astype(int) - region.min(axis=(0, 1)).astype(int)
        return int(spread.max()) >= MIN_CONTRAST

    def split(self, words: Sequence[Word]) -> tuple[list[Word], list[HiddenText]]:
        """``(visible words, hidden text grouped by reasons)``; order within each is kept."""
        visible: list[Word] = []
        hidden: dict[tuple[Hidden, ...], list[Word]] = {}
        inked = self._inked_all(words) if self.pixels is not None else [True] * len(words)
        for word, ink in zip(words, inked, strict=True):
            reasons = self._reasons(word, ink)
            if reasons:
                hidden.setdefault(reasons, []).append(word)
            else:
                visible.append(word)
        groups = [HiddenText(reasons, _lines(found)) for reasons, found in hidden.items()]
        return visible, [g for g in groups if g.lines]

    def _inked_all(self, words: Sequence[Word]) -> list[bool]:
        """:meth:`_inked` of every word, from a few numpy calls a page instead of two a word.

        The words' pixel boxes are rounded as :meth:`_pixel_box` rounds them (the same float64
        arithmetic), the extremes of each word's pixel rows come from one ``reduceat`` over the
        render's channels and each word's from a second one over its rows: the same pixels and
        the same test as :meth:`_inked`, so the same answers. A word at a time, numpy's overhead
        per call made the check 1.36 CPU s for the first 40 pages of ADOBE_2015_10K.pdf (28,707
        words); all at once it takes 0.40 s.
        """
        import numpy as np

        assert self.pixels is not None
        out = [True] * len(words)
        if not words:
            return out
        height, width = self.pixels.shape[:2]
        ox, oy = self.frame[0], self.frame[1]
        coords = np.array([(w.x0, w.top, w.x1, w.bottom) for w in words], dtype=np.float64)
        x0 = np.maximum(0, np.floor((coords[:, 0] - ox) * self.scale)).astype(np.int64)
        y0 = np.maximum(0, np.floor((coords[:, 1] - oy) * self.scale)).astype(np.int64)
        x1 = np.minimum(width, np.ceil((coords[:, 2] - ox) * self.scale)).astype(np.int64)
        y1 = np.minimum(height, np.ceil((coords[:, 3] - oy) * self.scale)).astype(np.int64)
        # A box that rounds to no pixel is left be, as in _inked.
        keep = np.flatnonzero((x1 > x0) & (y1 > y0))
        ends = np.cumsum((y1 - y0)[keep])
        start = 0
        while start < len(keep):
            base = ends[start - 1] if start else 0
            stop = max(start + 1, int(np.searchsorted(ends, base + _BATCH_ROWS, "right")))
            part = keep[start:stop]
            inked = self._inked_batch(x0[part], y0[part], x1[part], y1[part])
            for i, ink in zip(part.tolist(), inked.tolist(), strict=True):
                out[i] = ink
            start = stop
        return out

    def _planes(self) -> Any:
        """The render as one row of pixels per colour channel (made once, on first use):
        reductions along a channel's pixels run several times faster than across pixels."""
        import numpy as np

        assert self.pixels is not None
        if self._planar is None:
            height, width, channels = self.pixels.shape
            # One pixel more than the render, so that a segment ending at the render's last
            # pixel still ends at an index ``reduceat`` takes.
            planar = np.zeros((channels, height * width + 1), dtype=self.pixels.dtype)
            planar[:, :-1] = self.pixels.transpose(2, 0, 1).reshape(channels, -1)
            self._planar = planar
        return self._planar

    def _inked_batch(self, x0: Any, y0: Any, x1: Any, y1: Any) -> Any:
        """Whether each pixel box (numpy arrays of its sides, none empty) holds ink."""
        import numpy as np

        assert self.pixels is not None
        width = self.pixels.shape[1]
        planes = self._planes()
        rows = y1 - y0
        cols = x1 - x0
        # One segment of each channel per word and pixel row. ``reduceat`` over the indices
        # (start, end, start, end, ...) reduces each segment in place at the even positions
        # (the odd ones, from an end to the next start, are dropped): no pixel is copied.
        word_of_row = np.repeat(np.arange(len(rows)), rows)
        first_row = np.cumsum(rows) - rows
        row = y0[word_of_row] + np.arange(int(rows.sum())) - first_row[word_of_row]
        start = row * width + x0[word_of_row]
        bounds = np.empty(2 * len(start), dtype=np.int64)
        bounds[0::2] = start
        bounds[1::2] = start + cols[word_of_row]
        row_high = np.maximum.reduceat(planes, bounds, axis=1)[:, 0::2]
        row_low = np.minimum.reduceat(planes, bounds, axis=1)[:, 0::2]
        high = np.maximum.reduceat(row_high, first_row, axis=1).astype(np.int16)
        low = np.minimum.reduceat(row_low, first_row, axis=1).astype(np.int16)
        return (high - low).max(axis=0) >= MIN_CONTRAST


def _lines(words: list[Word]) -> list[Line]:
    return sorted(group_lines(words), key=lambda ln: (ln.top, ln.x0))
