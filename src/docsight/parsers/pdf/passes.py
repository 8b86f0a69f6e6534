"""Passes 2 and 3 of the PDF parser with the pages streaming through, never all held.

Pass 1 leaves each page's words, lines, tables and figures: about 0.2 MiB a page as Python
objects. Passes 2 and 3 decide a few things over the whole document (decoration, running
headers and footers, the body font size, outline headings, heading levels) but otherwise look at
one page at a time. So a long document's pages wait in a :class:`PageStore`, each pickled and
compressed on its own (about a tenth of its size as objects), and each pass takes them out one
by one, keeps what the document-wide decisions need as small values (figure places, furniture
candidates, font-size counts, heading styles), and puts the page back. Pass 3 emits each page
and drops it.

With ``spill``, the packed pages wait in an unnamed temporary file (in ``TMPDIR``) rather
than in memory: at about 11 KiB a page they were the part of a 1,000-page parse that still grew
with its pages once the elements streamed out (``benchmarks/results/large_pdf.md``). The file
has no name, so it is gone when it is closed or the process dies; a disk that cannot take it
leaves the pages in memory.

Ids do not survive a page's trip through pickle, so whatever a pass keys by ``id()`` lives on
the page (``Page.roles``, ``hints``, ``ocr_scores``) and is carried by position
(``Page.__getstate__``). A short document keeps its pages as objects: the passes are the same,
only the trips are skipped.
"""

from __future__ import annotations

import os
import pickle
import tempfile
import zlib
from collections import Counter, OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from typing import IO, Any, NamedTuple, overload

from docsight.document.builder import DocumentBuilder
from docsight.document.model import ParsedDocument
from docsight.document.stream import ElementSink
from docsight.parsers.pdf.emit import emit
from docsight.parsers.pdf.figures import decoration_places, drop_figures_at, figure_places
from docsight.parsers.pdf.furniture import Candidates, furniture_candidates, mark_furniture
from docsight.parsers.pdf.page import Page
from docsight.parsers.pdf.reading import order_units
from docsight.parsers.pdf.roles import (
    Style,
    add_font_sizes,
    body_size,
    heading_levels,
    match_outline,
    numbered_depths,
    page_roles,
    resolve_headings,
    title_roles,
)
from docsight.parsers.pdf.scan import hint_roles, layout_scanned, ocr_heading_levels

#: Documents of at most this many pages keep their pages as objects between the passes: the
#: memory is small and the pickling would only cost time.
LIVE_PAGES = 50
#: Pages the outline pass keeps open at once (an outline entry looks at its page and the two
#: beside it; entries mostly come in page order).
_WINDOW = 4

Place = tuple[int, int, int, int]


class _Spilled(NamedTuple):
    """Where a packed page lies in the store's file."""

    offset: int
    length: int


class PageStore:
    """A document's pages between the parser's passes, in page order, with the little that
    passes 2 needs of each before it takes the page out (its figures' places, its furniture
    candidates). ``packed`` pages are kept pickled and compressed, each on its own; with
    ``spill`` as well, in a temporary file (close the store when done)."""

    def __init__(self, packed: bool = True, spill: bool = False) -> None:
        self.packed = packed
        self.spill = spill and packed
        self._pages: list[bytes | _Spilled | Page | None] = []
        self._file: IO[bytes] | None = None
        self.places: list[set[Place]] = []
        self.furniture: list[Candidates] = []

    def __len__(self) -> int:
        return len(self._pages)

    def add(self, page: Page) -> None:
        """The next page, as pass 1 left it."""
        self.places.append(figure_places(page))
        self.furniture.append(_candidates(page))
        self._pages.append(self._hold(_pack(page)) if self.packed else page)

    def extend(self, other: PageStore) -> None:
        """The pages of ``other`` (a later page range of the same document) after these."""
        if other.packed != self.packed:
            raise ValueError("cannot join packed and unpacked pages")
        for k in range(len(other)):
            held = other._pages[k]
            if isinstance(held, _Spilled):
                held = other._read(held)
            self._pages.append(self._hold(held) if isinstance(held, bytes) else held)
            other._pages[k] = None  # ``other`` is used up: its bytes need not wait twice
        self.places.extend(other.places)
        self.furniture.extend(other.furniture)

    def load(self, i: int) -> Page:
        """Page ``i``: a fresh object when packed (put it back with :meth:`save`)."""
        held = self._pages[i]
        if held is None:
            raise ValueError(f"page {i} was released")
        if isinstance(held, Page):
            return held
        data = self._read(held) if isinstance(held, _Spilled) else held
        page: Page = pickle.loads(zlib.decompress(data))  # our own pass 1's output
        return page

    def save(self, i: int, page: Page) -> None:
        if self.packed:
            # A spilled page's new form goes to the end of the file; the old bytes stay
            # there unused (a few passes' worth: disk, not memory).
            self._pages[i] = self._hold(_pack(page))

    def release(self, i: int) -> None:
        """Page ``i`` is done with."""
        self._pages[i] = None

    def packed_bytes(self) -> int:
        """The packed pages' size, in memory or in the file."""
        return sum(
            len(p) if isinstance(p, bytes) else p.length
            for p in self._pages
            if isinstance(p, bytes | _Spilled)
        )

    def spilled(self) -> int:
        """How many pages wait in the file."""
        return sum(1 for p in self._pages if isinstance(p, _Spilled))

    def close(self) -> None:
        """Let the file go (the pages in it with it)."""
        if self._file is not None:
            self._file.close()
            self._file = None
            self._pages = [None if isinstance(p, _Spilled) else p for p in self._pages]

    def __getstate__(self) -> dict[str, Any]:
        # A store travels (a part of a long file, to the finishing worker) with its pages
        # as bytes; the file stays behind.
        state = dict(self.__dict__)
        state["_pages"] = [self._read(p) if isinstance(p, _Spilled) else p for p in self._pages]
        state["_file"] = None
        return state

    def _hold(self, data: bytes) -> bytes | _Spilled:
        if not self.spill:
            return data
        try:
            if self._file is None:
                # Closed by close() (or with the store): it outlives this call.
                self._file = tempfile.TemporaryFile(prefix="docsight-pages-")  # noqa: SIM115
            offset = self._file.seek(0, os.SEEK_END)
            self._file.write(data)
            self._file.flush()
        except OSError:
            # No room (or no temporary directory): the pages wait in memory from here on.
            self.spill = False
            return data
        return _Spilled(offset, len(data))

    def _read(self, where: _Spilled) -> bytes:
        if self._file is None:
            raise ValueError("the page store was closed")
        data = os.pread(self._file.fileno(), where.length, where.offset)
        if len(data) != where.length:
            raise OSError(f"the page file ended early ({len(data)} of {where.length} bytes)")
        return data

    @contextmanager
    def window(self) -> Iterator[Sequence[Page]]:
        """The pages as a sequence for the outline pass, which reaches across pages: a few are
        held open at a time, and each goes back when it leaves the window or the pass ends. Only
        for a pass that changes a page only where it gives one of its blocks a role."""
        view = _Window(self)
        try:
            yield view
        finally:
            view.close()


class _Window(Sequence[Page]):
    def __init__(self, store: PageStore) -> None:
        self.store = store
        self.open: OrderedDict[int, Page] = OrderedDict()

    def __len__(self) -> int:
        return len(self.store)

    @overload
    def __getitem__(self, i: int) -> Page: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[Page]: ...
    def __getitem__(self, i: int | slice) -> Page | Sequence[Page]:
        if isinstance(i, slice):
            raise TypeError("the window gives one page at a time")
        if i in self.open:
            self.open.move_to_end(i)
            return self.open[i]
        page = self.store.load(i)
        self.open[i] = page
        if len(self.open) > _WINDOW:
            self._put_back(*self.open.popitem(last=False))
        return page

    def close(self) -> None:
        while self.open:
            self._put_back(*self.open.popitem(last=False))

    def _put_back(self, i: int, page: Page) -> None:
        # The outline pass changes a page only where it gives a block a role (splitting it, at
        # times): a page without roles is as it was and need not be packed again.
        if page.roles:
            self.store.save(i, page)


def _pack(page: Page) -> bytes:
    # Level 1: pickles of words and lines shrink about fourfold at a fraction of the time of
    # higher levels, and every pass packs each page again.
    return zlib.compress(pickle.dumps(page, protocol=pickle.HIGHEST_PROTOCOL), 1)


def _candidates(page: Page) -> Candidates:
    return furniture_candidates(page.lines, (page.origin[1], page.height))


def finish_pages(
    store: PageStore,
    builder: DocumentBuilder,
    outline: list[tuple[int, str, int]],
    meta_title: str | None,
    metadata: dict[str, str],
    sink: ElementSink | None = None,
) -> ParsedDocument:
    """Passes 2 and 3 over every page of ``store``: layout and document statistics, then
    emission through ``builder``. The pages are released as they are emitted, and the store
    is closed at the end. With a ``sink``, each page's elements go there once it is emitted
    (:mod:`docsight.document.stream`), and the document comes back without them."""
    with closing(store):
        n = len(store)
        # Figures at the same place on many pages are decoration: their labels rejoin the text,
        # so those pages' furniture candidates are taken again.
        boxes: Counter[Place] = Counter()
        for places in store.places:
            boxes.update(places)
        decoration = decoration_places(boxes, n)
        if decoration:
            for i in range(n):
                if store.places[i] & decoration:
                    page = store.load(i)
                    if drop_figures_at(page, decoration):
                        store.furniture[i] = _candidates(page)
                        store.save(i, page)
        marks = mark_furniture(store.furniture)
        sizes: Counter[float] = Counter()
        for i in range(n):
            page = store.load(i)
            _lay_out(page, marks[i])
            add_font_sizes(page, sizes)
            store.save(i, page)
        body = body_size(sizes)
        with store.window() as pages:
            matched = match_outline(pages, outline)
        candidates: list[Style] = []
        numbered: list[tuple[tuple[int, ...], Style | None]] = []
        ocr_sizes: list[tuple[float, int]] = []
        heads: list[float] = []
        for i in range(n):
            page = store.load(i)
            front = title_roles(page, body, meta_title) if i == 0 else set()
            candidates.extend(page_roles(page, body, front, numbered))
            hint_roles(page, page.roles, ocr_sizes, heads)
            store.save(i, page)
        numbers = numbered_depths(numbered)
        candidates.extend(s for number, s in numbered if s is not None and number in numbers)
        font_level = heading_levels(candidates, matched, body)
        ocr_level = ocr_heading_levels(ocr_sizes, heads)
        if sink is not None:
            builder.stream(sink)
        for i in range(n):
            page = store.load(i)
            store.release(i)
            resolve_headings(page.roles, font_level, ocr_level, numbers)
            emit([page], page.roles, builder)
            builder.flush()
        # Without a credible metadata title the builder uses the TITLE element.
        return builder.build(title=meta_title, metadata=metadata)


def _lay_out(page: Page, furniture: dict[int, str]) -> None:
    """Pass 2 for one page: furniture out of the flow, the rest in reading order as blocks."""
    if page.scanned:
        layout_scanned(page, furniture)
        return
    page.furniture = furniture
    body = [ln for k, ln in enumerate(page.lines) if k not in furniture]
    page.units.extend(order_units(body, page.atoms, page.width))
