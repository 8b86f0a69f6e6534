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
        if render is not None:
            import numpy as np

            self.pixels = np.asarray(render if render.mode == "RGB" else render.convert("RGB"))

    def reasons(self, word: Word) -> tuple[Hidden, ...]:
        if not inside(word, self.frame, 0.0):
            return (Hidden.OFF_PAGE,)  # nothing of it is rendered, so contrast means nothing
        out: list[Hidden] = []
        # Libraries size a glyph by its box height, which for rotated text is its advance width
        # (a rotated "(" would read as 1 pt); across the baseline a rotated word is as thick
        # as its font is tall.
        size = word.size if word.upright else min(word.x1 - word.x0, word.bottom - word.top)
        if size < self.min_font_pt:
            out.append(Hidden.TINY)
        if self.pixels is not None and not self._inked(word):
            out.append(Hidden.NO_CONTRAST)
        return tuple(out)

    def _inked(self, word: Word) -> bool:
        assert self.pixels is not None
        height, width = self.pixels.shape[:2]
        ox, oy = self.frame[0], self.frame[1]
        x0 = max(0, math.floor((word.x0 - ox) * self.scale))
        y0 = max(0, math.floor((word.top - oy) * self.scale))
        x1 = min(width, math.ceil((word.x1 - ox) * self.scale))
        y1 = min(height, math.ceil((word.bottom - oy) * self.scale))
        if x1 <= x0 or y1 <= y0:
            return True  # a box that rounds to no pixel tells nothing; leave the word be
        region = self.pixels[y0:y1, x0:x1]
        spread = region.max(axis=(0, 1)).astype(int) - region.min(axis=(0, 1)).astype(int)
        return int(spread.max()) >= MIN_CONTRAST

    def split(self, words: Sequence[Word]) -> tuple[list[Word], list[HiddenText]]:
        """``(visible words, hidden text grouped by reasons)``; order within each is kept."""
        visible: list[Word] = []
        hidden: dict[tuple[Hidden, ...], list[Word]] = {}
        for word in words:
            reasons = self.reasons(word)
            if reasons:
                hidden.setdefault(reasons, []).append(word)
            else:
                visible.append(word)
        groups = [HiddenText(reasons, _lines(found)) for reasons, found in hidden.items()]
        return visible, [g for g in groups if g.lines]


def _lines(words: list[Word]) -> list[Line]:
    return sorted(group_lines(words), key=lambda ln: (ln.top, ln.x0))
