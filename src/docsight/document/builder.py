"""Assemble a :class:`Document` from content found in reading order.

Every parser emits elements one after another through a :class:`DocumentBuilder`; the builder gives
them dense reading-order indexes and content-hash ids, opens a section at every heading (a stack of
open sections keyed by heading level) and collects binary assets. Parsers therefore only decide
*what* each piece of content is, never how the map is wired.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from docsight.document.model import (
    Asset,
    BBox,
    Document,
    Element,
    ElementKind,
    Font,
    Hidden,
    Layout,
    Page,
    ParsedDocument,
    Section,
)
from docsight.document.pagelabels import labels_from_numbers
from docsight.document.pixels import AssetsWithPixels, PixelFile
from docsight.document.stream import ElementSink, StreamNotes


class DocumentBuilder:
    def __init__(
        self,
        *,
        doc_id: str,
        name: str,
        source: str,
        media_type: str,
        sha256: str,
        parser: str,
        size_bytes: int = 0,
        keep_page_pixels: bool = True,
        keep_crop_pixels: bool = True,
    ) -> None:
        self.doc_id = doc_id
        self.name = name
        self.source = source
        self.media_type = media_type
        self.sha256 = sha256
        self.parser = parser
        self.size_bytes = size_bytes
        self.pages: list[Page] = []
        self.sections: list[Section] = []
        self.elements: list[Element] = []
        #: One object per distinct font: a report's ten thousand elements share a handful, and
        #: a font object of its own cost each about 1 KB (a fifth of a long document's memory).
        self._fonts: dict[Font, Font] = {}
        self.assets: dict[str, Asset] = {}
        self.warnings: list[str] = []
        #: Parsers that know the layout (a slide deck is horizontal) set it; otherwise it is
        #: classified from the pages (see ``document.classify``).
        self.layout: Layout = "unknown"
        #: ``False``: page renders that carry a render recipe keep their id and recipe but not
        #: their PNG bytes (see :meth:`add_asset`).
        self.keep_page_pixels = keep_page_pixels
        #: ``False``: crops that carry a render recipe keep their bytes in a temporary file
        #: while parsing (see :meth:`keep_asset`); the element stream's readers get them back
        #: with each batch, and the document comes with the crops' ids and recipes alone.
        self.keep_crop_pixels = keep_crop_pixels
        self._pixels: PixelFile | None = None
        self._open: list[Section] = []  # stack of open sections, shallowest first
        #: Set by :meth:`stream`: the elements go to a sink as the parser finishes pages.
        self._stream: StreamNotes | None = None

    # --- pages and assets ----------------------------------------------------------------------

    def add_page(self, width: float = 0.0, height: float = 0.0, text_chars: int = 0) -> int:
        index = len(self.pages)
        self.pages.append(Page(index=index, width=width, height=height, text_chars=text_chars))
        return index

    def update_page(self, page: int, **fields: Any) -> None:
        """Set fields of a page added earlier (its render, its text-layer size, ...)."""
        self.pages[page] = self.pages[page].model_copy(update=fields)

    def set_page_image(self, page: int, asset_id: str) -> None:
        self.update_page(page, image_id=asset_id)

    def add_asset(
        self,
        kind: str,
        media_type: str,
        data: bytes | Callable[[], bytes],
        width: int = 0,
        height: int = 0,
        render: dict[str, Any] | None = None,
    ) -> str:
        """Add a render or crop; ``render`` is the recipe that makes it again from the source
        file (see :class:`Asset`). ``data`` is the bytes, or a function that encodes them.

        A page render with a recipe is named by the recipe (:meth:`Asset.recipe_id`), not by
        its bytes. Without ``keep_page_pixels`` it keeps no bytes and its ``data`` function is
        never called: ingestion stores such a render as its recipe anyway, holding a PNG of
        every page until the end of a 1,000-page parse cost hundreds of MiB, and encoding one
        only to hash it was about a quarter of a text PDF's parse without models
        (``benchmarks/results/parse_cpu.md``, section 5).
        """
        if kind == "page" and render is not None:
            asset_id = Asset.recipe_id(self.doc_id, kind, render)
            if not self.keep_page_pixels:
                data = b""
        else:
            data = data() if callable(data) else data
            asset_id = Asset.make_id(self.doc_id, kind, data)
        if asset_id not in self.assets:
            self.keep_asset(
                Asset(
                    id=asset_id,
                    doc_id=self.doc_id,
                    kind=kind,
                    media_type=media_type,
                    data=data() if callable(data) else data,
                    width=width,
                    height=height,
                    render=render,
                )
            )
        return asset_id

    def keep_asset(self, asset: Asset) -> None:
        """Keep ``asset`` (made by this builder or, for a document parsed in parts, by another);
        an asset met again keeps its first record. Without ``keep_crop_pixels`` a crop with a
        recipe goes to a temporary file, and its record keeps no bytes. When the file cannot
        take them (a full disk), the bytes stay with the record: only memory is spent."""
        if asset.id in self.assets:
            return
        if not self.keep_crop_pixels and asset.kind != "page" and asset.render and asset.data:
            try:
                if self._pixels is None:
                    self._pixels = PixelFile()
                self._pixels.put(asset.id, asset.data)
            except OSError:
                pass  # kept in memory below, as with keep_crop_pixels
            else:
                asset = dataclasses.replace(asset, data=b"")
        self.assets[asset.id] = asset

    def _readable_assets(self) -> Mapping[str, Asset]:
        """The assets with their bytes, for the readers of a batch of elements."""
        if self._pixels is None:
            return self.assets
        return AssetsWithPixels(self.assets, self._pixels)

    # --- content -------------------------------------------------------------------------------

    @property
    def current_section_id(self) -> str | None:
        return self._open[-1].id if self._open else None

    def add(
        self,
        kind: ElementKind,
        text: str,
        *,
        page: int,
        bbox: BBox | None = None,
        level: int | None = None,
        font: Font | None = None,
        markdown: str | None = None,
        image_id: str | None = None,
        attrs: dict[str, Any] | None = None,
        hidden: Iterable[Hidden] = (),
    ) -> Element:
        """Append the next element in reading order.

        ``hidden`` gives the reasons a reader would not see the text, in any order. Hidden text is
        kept as a plain paragraph: a heading nobody can see must not restructure the map (section
        paths are prefixed to every indexed chunk) or name the document.
        """
        if page < 0 or (self.pages and page >= len(self.pages)):
            raise ValueError(f"page {page} out of range for {len(self.pages)} pages")
        if self._stream is not None and page < self._stream.open_page:
            raise ValueError(f"page {page} was handed over already (streaming, see flush)")
        reasons = sorted(set(hidden))
        if reasons and kind in (ElementKind.TITLE, ElementKind.HEADING, ElementKind.CAPTION):
            kind, level = ElementKind.PARAGRAPH, None
        order = self.element_count
        element_id = Element.make_id(self.doc_id, kind, page, order, text)
        if kind == ElementKind.HEADING:
            level = max(1, level or 1)
            section_id = self._open_section(text, level, page, element_id)
        elif kind == ElementKind.TITLE or kind in (ElementKind.HEADER, ElementKind.FOOTER):
            # The document title is the map's root, not a section of it; furniture belongs to
            # no section.
            section_id = None
        else:
            section_id = self.current_section_id
        element = Element(
            id=element_id,
            kind=kind,
            text=text,
            markdown=markdown,
            page=page,
            bbox=bbox,
            order=order,
            section_id=section_id,
            level=level,
            font=self._fonts.setdefault(font, font) if font is not None else None,
            image_id=image_id,
            attrs=attrs or {},
            hidden=reasons,
        )
        self.elements.append(element)
        return element

    def _open_section(self, title: str, level: int, page: int, element_id: str) -> str:
        while self._open and self._open[-1].level >= level:
            self._open.pop()
        parent = self._open[-1].id if self._open else None
        order = len(self.sections)
        section = Section(
            id=Section.make_id(self.doc_id, order, title),
            title=" ".join(title.split())[:300],
            level=level,
            parent_id=parent,
            heading_element_id=element_id,
            page=page,
            order=order,
        )
        self.sections.append(section)
        self._open.append(section)
        return section.id

    def warn(self, message: str) -> None:
        self.warnings.append(message)

    # --- streaming -----------------------------------------------------------------------------

    def stream(self, sink: ElementSink) -> None:
        """Hand the elements to ``sink`` at each :meth:`flush` instead of holding them; see
        :mod:`docsight.document.stream`. Only for a parser that adds elements in page order."""
        self._stream = StreamNotes(sink)

    @property
    def element_count(self) -> int:
        """Elements added so far, handed over or not."""
        return len(self.elements) + (self._stream.count if self._stream is not None else 0)

    def flush(self) -> None:
        """The parser is done with every page that has an element so far: when streaming,
        those elements go to the sink (an element for an earlier page is an error from now
        on). Without :meth:`stream`, nothing happens."""
        if self._stream is None or not self.elements:
            return
        batch, self.elements = self.elements, []
        pages = [a.page for a in batch]
        if any(a > b for a, b in itertools.pairwise(pages)):
            raise ValueError("a streaming builder takes elements in page order")
        self._stream.take(batch, self.sections, self.pages, self._readable_assets())
        # The last page may not take more (a batch holds whole pages).
        self._stream.open_page = pages[-1] + 1

    # --- result --------------------------------------------------------------------------------

    def build(
        self, *, title: str | None = None, metadata: dict[str, str] | None = None
    ) -> ParsedDocument:
        """The document. When streaming, the last elements go to the sink first, and the
        document comes without elements; either way its map is finished from the notes taken
        of the elements (:class:`~docsight.document.stream.StreamNotes`)."""
        streamed = self._stream is not None
        notes = self._stream or StreamNotes()
        if streamed:
            self.flush()
        else:
            notes.note(self.elements, len(self.pages))
        if title is None:
            title = notes.title
        if self.pages and not any(p.labels for p in self.pages):
            # Parsers that know the labels (a PDF's /PageLabels) set them; otherwise they are
            # read off the page-number furniture.
            for index, labels in enumerate(labels_from_numbers(notes.numbers, len(self.pages))):
                if labels:
                    self.update_page(index, labels=labels)
        layout = self.layout
        if layout == "unknown":
            layout = notes.layout.decide(self.media_type, self.pages)
        edges = notes.edges(self.sections, self.pages)
        document = Document(
            id=self.doc_id,
            title=title,
            metadata=metadata or {},
            pages=self.pages,
            sections=self.sections,
            elements=self.elements,
            edges=edges,
            layout=layout,
            name=self.name,
            source=self.source,
            media_type=self.media_type,
            sha256=self.sha256,
            parser=self.parser,
            size_bytes=self.size_bytes,
        )
        # Streamed, the elements' own invariants (order, pages, sections) hold by construction;
        # the edges are checked against the elements they may name.
        document.validate_structure(elsewhere=notes.linked if streamed else ())
        hidden, reasons = notes.hidden_elements, sorted(notes.hidden)
        if hidden:
            self.warn(
                f"{hidden} element(s) of text a reader would not see "
                f"({', '.join(reasons)}); kept in the map, not indexed"
            )
        assets = list(self.assets.values())
        if self._pixels is not None:
            if not streamed:  # no stream has read them: the document's readers need them
                assets = list(self._readable_assets().values())
            self._pixels.close()
            self._pixels = None
        return ParsedDocument(document=document, assets=assets, warnings=self.warnings)
