"""A document's elements handed over as its pages are done, never all held by the builder.

A long report's elements, as objects, are the largest thing its parse holds (about 35 MiB for
1,000 pages, ``benchmarks/results/large_pdf.md``), yet the rest of the document needs little
of them: the title, the printed page numbers, what classifies the layout, the captions bound
to their tables and figures, and the passages that mention a table, figure, section or page.
A parser that emits page by page (the PDF parser) may therefore have its
:class:`~docsight.document.builder.DocumentBuilder` *stream*: each time the parser is done
with a page, the elements added since go to an :class:`ElementSink` as an
:class:`ElementBatch`, and the builder keeps the :class:`StreamNotes` that
:meth:`~docsight.document.builder.DocumentBuilder.build` needs to finish the map. The document
it builds has no elements; the sink has them all, in order.

A builder that holds its elements notes them all the same way when it builds, so both finish
the map with the same steps, and the map is the same: captions bind only to a table or figure
on their own page (:func:`~docsight.document.relations.bind_captions`) and a batch holds whole
pages, so binding batch by batch binds the same pairs; the other edges are resolved at the
end from the notes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from docsight.document.classify import LayoutTally
from docsight.document.model import (
    FURNITURE_KINDS,
    Asset,
    Edge,
    Element,
    ElementKind,
    Page,
    Section,
)
from docsight.document.pagelabels import printed_numbers
from docsight.document.relations import (
    Mention,
    bind_captions,
    mentions,
    numbered_artifacts,
    resolve_mentions,
)

#: Element kinds an edge can start or end at: kept by id when the elements go.
_LINKED_KINDS = frozenset(
    {ElementKind.CAPTION, ElementKind.TABLE, ElementKind.FIGURE, ElementKind.CHART}
)


@dataclass
class ElementBatch:
    """Elements of whole pages, in reading order, as the builder hands them over."""

    elements: list[Element]
    #: The ``caption_of`` edges among them.
    captions: list[Edge]
    #: Every section opened so far (the batch's elements point into it), and the pages.
    sections: Sequence[Section]
    pages: Sequence[Page]
    #: The document's renders and crops so far, by id (a PDF's are all made before).
    assets: Mapping[str, Asset]


#: Takes each batch; it may change the elements (their text and attrs), not their ids.
ElementSink = Callable[[ElementBatch], None]


@dataclass
class StreamNotes:
    """What the builder keeps of the elements to finish the map: of elements it has handed
    over (streaming), or of all it holds, noted at the end (the same notes either way)."""

    #: Where the batches go; ``None``: the elements are only noted.
    sink: ElementSink | None = None
    #: Elements noted, and the first page still open (no element before it may come).
    count: int = 0
    open_page: int = 0
    title: str | None = None
    numbers: dict[int, set[int]] = field(default_factory=dict)
    layout: LayoutTally = field(default_factory=LayoutTally)
    captions: list[Edge] = field(default_factory=list)
    caption_texts: dict[str, str] = field(default_factory=dict)
    mentions: list[Mention] = field(default_factory=list)
    #: Ids of the elements an edge may name (captions, tables, figures, mentioning passages).
    linked: set[str] = field(default_factory=set)
    hidden: Counter[str] = field(default_factory=Counter)
    hidden_elements: int = 0

    def note(self, batch: Sequence[Element], page_count: int) -> list[Edge]:
        """Note what the map needs of ``batch`` (whole pages, or the whole document); its
        ``caption_of`` edges."""
        if not batch:
            return []
        self.count += len(batch)
        self.open_page = max(self.open_page, batch[-1].page)
        if self.title is None:
            self.title = next((e.text for e in batch if e.kind == ElementKind.TITLE), None)
        for page, shown in printed_numbers(e for e in batch if e.kind in FURNITURE_KINDS).items():
            self.numbers.setdefault(page, set()).update(shown)
        self.layout.add(batch, page_count)
        # Hidden text neither captions nor refers: it would wire invisible claims into the map.
        seen = [e for e in batch if not e.hidden]
        captions = bind_captions(seen)
        self.captions.extend(captions)
        found = mentions(seen)
        self.mentions.extend(found)
        self.linked.update(e.id for e in seen if e.kind in _LINKED_KINDS)
        self.linked.update(m.source for m in found)
        self.caption_texts.update((e.id, e.text) for e in seen if e.kind == ElementKind.CAPTION)
        for e in batch:
            if e.hidden:
                self.hidden_elements += 1
                self.hidden.update(str(r) for r in e.hidden)
        return captions

    def take(
        self,
        batch: list[Element],
        sections: Sequence[Section],
        pages: Sequence[Page],
        assets: Mapping[str, Asset],
    ) -> None:
        """Note ``batch`` and hand it to the sink."""
        captions = self.note(batch, len(pages))
        if batch and self.sink is not None:
            self.sink(ElementBatch(batch, captions, sections, pages, assets))

    def edges(self, sections: Sequence[Section], pages: Sequence[Page]) -> list[Edge]:
        """The map's edges: the captions bound, then the references resolved."""
        numbered = numbered_artifacts(self.captions, self.caption_texts)
        return self.captions + resolve_mentions(self.mentions, numbered, sections, pages)
