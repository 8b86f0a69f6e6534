"""Vertical or horizontal: is a document read like a report or looked at like a slide deck?

MM-BizRAG treats the two differently: report-like ("vertical") documents are linear text with
tables and pictures as separate artifacts, slide-like ("horizontal") documents are best seen a page
at a time. Offline, the decision uses what the parse already measured: page shape (slides are
landscape), text density (slides carry few words per page), type size (slides use large type)
and whether most pages open with a title. A configured vision model may overrule it later.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Sequence

from docsight.document.model import (
    FURNITURE_KINDS,
    HEADING_KINDS,
    Element,
    Layout,
    Page,
)

_LANDSCAPE = 1.15  # width / height above which a page counts as landscape
_SPARSE_WORDS = 120  # words per page below which a page reads like a slide
_LARGE_TYPE = 15.0  # median body size (pt) of slide text
_PAGED_TYPES = ("application/pdf", "image/")


def classify_layout(media_type: str, pages: Sequence[Page], elements: Sequence[Element]) -> Layout:
    """``horizontal`` or ``vertical`` from the parsed pages; flowing formats are vertical."""
    tally = LayoutTally()
    tally.add(elements, len(pages))
    return tally.decide(media_type, pages)


class LayoutTally:
    """What :func:`classify_layout` measures of the elements, added a batch at a time, so a
    document can be classified without holding its elements (the builder's streaming)."""

    def __init__(self) -> None:
        self.words: dict[int, int] = {}
        self.titled: set[int] = set()
        #: Body type sizes, each weighted by its element's words (at most 50).
        self.sizes: Counter[float] = Counter()

    def add(self, elements: Iterable[Element], page_count: int) -> None:
        for e in elements:
            if e.kind in FURNITURE_KINDS or e.page >= page_count:
                continue
            n = len(e.text.split())
            self.words[e.page] = self.words.get(e.page, 0) + n
            if e.kind in HEADING_KINDS:
                self.titled.add(e.page)
            elif e.font is not None and e.font.size:
                self.sizes[e.font.size] += min(n, 50)

    def decide(self, media_type: str, pages: Sequence[Page]) -> Layout:
        if not media_type.startswith(_PAGED_TYPES) or not pages:
            return "vertical"  # text, Markdown, HTML, Word: no pages to look at
        sized = [p for p in pages if p.width > 0 and p.height > 0]
        landscape = (
            sum(1 for p in sized if p.width / p.height >= _LANDSCAPE) / len(sized) if sized else 0.0
        )
        text_pages = [w for w in self.words.values() if w > 0]
        density = statistics.median(text_pages) if text_pages else 0.0
        body_size = _weighted_median(self.sizes)
        score = 0.0
        score += 2.0 if landscape >= 0.8 else 0.0
        score += 1.0 if density < _SPARSE_WORDS else 0.0
        score += 1.0 if body_size >= _LARGE_TYPE else 0.0
        score += 1.0 if text_pages and len(self.titled) >= 0.6 * len(text_pages) else 0.0
        return "horizontal" if score >= 3.0 else "vertical"


def _weighted_median(counts: Counter[float]) -> float:
    """The median of the values repeated by their counts (``statistics.median`` of that list)."""
    n = sum(counts.values())
    if n == 0:
        return 0.0
    values = sorted(v for v, c in counts.items() if c > 0)

    def at(k: int) -> float:
        for v in values:
            k -= counts[v]
            if k < 0:
                return v
        raise IndexError(k)

    return at(n // 2) if n % 2 else (at(n // 2 - 1) + at(n // 2)) / 2
