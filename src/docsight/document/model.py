"""The document model: Document → Section tree → Page → Element.

A parsed document is a flat list of elements in reading order, each pointing at its page, its
position on the page and the section it belongs to. Sections form a tree through ``parent_id``.
This flat-with-pointers shape serialises cheaply, maps one-to-one onto store tables and still lets
retrieval and agents walk the map (``children``, ``path``, ``elements_of``).

Coordinates: bounding boxes are normalised to [0, 1] with the origin at the top-left of the page, so
they survive re-rendering at any resolution. Pages are 0-based everywhere.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from docsight.document.ids import bytes_sha256, content_id

SCHEMA_VERSION = 2  # 2: Element.hidden


class ElementKind(StrEnum):
    TITLE = "title"
    HEADING = "heading"
    PARAGRAPH = "paragraph"
    LIST = "list"
    TABLE = "table"
    FIGURE = "figure"
    CHART = "chart"
    CAPTION = "caption"
    EQUATION = "equation"
    CODE = "code"
    HEADER = "header"
    FOOTER = "footer"
    #: Content attached to a page but not shown on it: speaker notes, comments.
    NOTE = "note"


#: Page furniture: kept in the model (and shown by ``docsight map``) but never indexed.
FURNITURE_KINDS = frozenset({ElementKind.HEADER, ElementKind.FOOTER})
#: Kinds that open a section.
HEADING_KINDS = frozenset({ElementKind.TITLE, ElementKind.HEADING})


class Hidden(StrEnum):
    """Why text that a parser found would not be seen by a person looking at the page.

    Invisible text is how instructions get smuggled to a model and keywords to a search index,
    so flagged elements stay in the map (``docsight`` shows them) but are never indexed, never
    quoted and never given to a model.
    """

    #: Placed outside the visible page or slide.
    OFF_PAGE = "off_page"
    #: Set in a font too small to read (``ParseSettings.min_font_pt``).
    TINY = "tiny"
    #: Drawn in the colour of what lies behind it: white on white, an invisible text render
    #: mode with nothing printed under it, text covered by an opaque shape.
    NO_CONTRAST = "no_contrast"
    #: Marked hidden by the format itself: a DOCX run with ``vanish``, a hidden PPTX shape.
    MARKED = "marked_hidden"


class BBox(BaseModel):
    """A box on a page, normalised to [0, 1], origin top-left."""

    model_config = ConfigDict(frozen=True)

    x0: float = Field(ge=0.0, le=1.0)
    y0: float = Field(ge=0.0, le=1.0)
    x1: float = Field(ge=0.0, le=1.0)
    y1: float = Field(ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _ordered(self) -> BBox:
        if self.x1 < self.x0 or self.y1 < self.y0:
            raise ValueError(f"bbox corners out of order: {self.as_tuple()}")
        return self

    @classmethod
    def from_absolute(
        cls, x0: float, top: float, x1: float, bottom: float, width: float, height: float
    ) -> BBox:
        """From absolute top-left-origin coordinates on a page of ``width`` × ``height``.

        Values are clamped: PDF objects routinely overhang the page box by a fraction of a point.
        """
        if width <= 0 or height <= 0:
            raise ValueError("page size must be positive")

        def clamp(v: float) -> float:
            return min(1.0, max(0.0, v))

        nx0, nx1 = sorted((clamp(x0 / width), clamp(x1 / width)))
        ny0, ny1 = sorted((clamp(top / height), clamp(bottom / height)))
        return cls(x0=round(nx0, 5), y0=round(ny0, 5), x1=round(nx1, 5), y1=round(ny1, 5))

    def as_tuple(self) -> tuple[float, float, float, float]:
        return (self.x0, self.y0, self.x1, self.y1)

    @property
    def area(self) -> float:
        return (self.x1 - self.x0) * (self.y1 - self.y0)

    def union(self, other: BBox) -> BBox:
        return BBox(
            x0=min(self.x0, other.x0),
            y0=min(self.y0, other.y0),
            x1=max(self.x1, other.x1),
            y1=max(self.y1, other.y1),
        )


class Font(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str | None = None
    size: float | None = None
    bold: bool = False
    italic: bool = False
    monospace: bool = False


class Element(BaseModel):
    """One piece of content: a paragraph, a heading, a table, a figure, ..."""

    id: str
    kind: ElementKind
    text: str = ""
    #: Markdown rendering where it carries more than ``text`` (tables, lists, code).
    markdown: str | None = None
    page: int = Field(ge=0)
    bbox: BBox | None = None
    #: Position in the document's reading order, 0-based and dense.
    order: int = Field(ge=0)
    section_id: str | None = None
    #: Heading level (1 = top) for titles and headings.
    level: int | None = None
    font: Font | None = None
    #: Asset id of the saved crop (figures, tables).
    image_id: str | None = None
    attrs: dict[str, Any] = Field(default_factory=dict)
    #: Why the text would not be visible on the page; empty for visible content.
    hidden: list[Hidden] = Field(default_factory=list)

    @property
    def is_furniture(self) -> bool:
        return self.kind in FURNITURE_KINDS

    @property
    def is_hidden(self) -> bool:
        return bool(self.hidden)

    @property
    def is_indexable(self) -> bool:
        """Content a reader sees: neither page furniture nor hidden text."""
        return not self.is_furniture and not self.hidden

    @staticmethod
    def make_id(doc_id: str, kind: ElementKind | str, page: int, order: int, text: str) -> str:
        return content_id("element", doc_id, str(kind), page, order, text)


class Section(BaseModel):
    id: str
    title: str
    #: 1 = top level. The implicit front matter before the first heading has no section.
    level: int = Field(ge=1)
    parent_id: str | None = None
    heading_element_id: str | None = None
    page: int = Field(ge=0)
    order: int = Field(ge=0)

    @staticmethod
    def make_id(doc_id: str, order: int, title: str) -> str:
        return content_id("section", doc_id, order, title)


class Page(BaseModel):
    index: int = Field(ge=0)
    #: Page size in the source's own unit (PDF points; 0 for formats without pages).
    width: float = 0.0
    height: float = 0.0
    #: Asset id of the page render kept for citations.
    image_id: str | None = None
    #: Characters in the page's text layer, for deciding about OCR.
    text_chars: int = 0
    #: Page numbers as printed on the page ("17", "iv"); two for a scanned spread.
    labels: list[str] = Field(default_factory=list)
    #: A page-level description, for slide-like (horizontal) documents.
    description: str | None = None


class EdgeKind(StrEnum):
    #: A caption (source) describes a table or figure (target).
    CAPTION_OF = "caption_of"
    #: Text (source) mentions a table, figure, section or page (target, or ``target_page``).
    REFERS_TO = "refers_to"


class Edge(BaseModel):
    """A relation between elements of the document map."""

    model_config = ConfigDict(frozen=True)

    kind: EdgeKind
    source: str
    #: Element or section id; ``None`` when the target is a whole page.
    target: str | None = None
    target_page: int | None = Field(default=None, ge=0)
    #: The words that establish the relation ("Table 3", "page 12").
    text: str = ""


Layout = Literal["vertical", "horizontal", "unknown"]


class Document(BaseModel):
    schema_version: int = SCHEMA_VERSION
    id: str
    name: str
    source: str
    media_type: str
    size_bytes: int = 0
    sha256: str
    title: str | None = None
    metadata: dict[str, str] = Field(default_factory=dict)
    parser: str
    #: "vertical": report-like, read top to bottom; "horizontal": slide-like, one idea per page.
    layout: Layout = "unknown"
    pages: list[Page] = Field(default_factory=list)
    sections: list[Section] = Field(default_factory=list)
    elements: list[Element] = Field(default_factory=list)
    edges: list[Edge] = Field(default_factory=list)

    # --- navigation --------------------------------------------------------------------------

    @property
    def page_count(self) -> int:
        return len(self.pages)

    def section_index(self) -> dict[str, Section]:
        return {s.id: s for s in self.sections}

    def section_path(self, section_id: str | None) -> list[str]:
        """Titles from the top-level section down to ``section_id``."""
        return section_path(self.section_index(), section_id)

    def children(self, section_id: str | None) -> list[Section]:
        """Direct subsections of ``section_id`` (``None`` for the top level), in order."""
        return sorted(
            (s for s in self.sections if s.parent_id == section_id), key=lambda s: s.order
        )

    def elements_of(self, section_id: str | None) -> list[Element]:
        return [e for e in self.elements if e.section_id == section_id]

    def elements_on_page(self, page: int) -> list[Element]:
        return [e for e in self.elements if e.page == page]

    def indexable_elements(self) -> Iterator[Element]:
        """Elements in reading order, without page furniture and without hidden text."""
        for element in self.elements:
            if element.is_indexable:
                yield element

    def validate_structure(self, elsewhere: Collection[str] = ()) -> None:
        """Check the invariants every parser must keep; raises ``ValueError``. ``elsewhere``:
        ids of elements held apart from the document (streamed) that edges may name."""
        section_ids = {s.id for s in self.sections}
        for s in self.sections:
            if s.parent_id is not None and s.parent_id not in section_ids:
                raise ValueError(f"section {s.id} has unknown parent {s.parent_id}")
        pages = len(self.pages)
        for expected, e in enumerate(self.elements):
            if e.order != expected:
                raise ValueError(f"element {e.id} has order {e.order}, expected {expected}")
            if pages and e.page >= pages:
                raise ValueError(f"element {e.id} on page {e.page} of a {pages}-page document")
            if e.section_id is not None and e.section_id not in section_ids:
                raise ValueError(f"element {e.id} points at unknown section {e.section_id}")
        if len({e.id for e in self.elements}) != len(self.elements):
            raise ValueError("duplicate element ids")
        targets = {e.id for e in self.elements} | section_ids | set(elsewhere)
        for edge in self.edges:
            if edge.source not in targets or (
                edge.target is not None and edge.target not in targets
            ):
                raise ValueError(f"edge {edge.kind} {edge.source} -> {edge.target} is dangling")
            if edge.target_page is not None and pages and edge.target_page >= pages:
                raise ValueError(f"edge {edge.kind} points at page {edge.target_page}")


def section_path(index: Mapping[str, Section], section_id: str | None) -> list[str]:
    """Titles from the top-level section down to ``section_id``, by the sections' ``index``
    (id → section)."""
    path: list[str] = []
    seen: set[str] = set()
    while section_id and section_id in index and section_id not in seen:
        seen.add(section_id)
        section = index[section_id]
        path.append(section.title)
        section_id = section.parent_id
    return list(reversed(path))


@dataclass(frozen=True)
class Asset:
    """A binary artifact of parsing: a page render or a crop. Stored apart from the model.

    ``render`` is the recipe that makes the same pixels again from the source file (a page
    index, a scale and a crop box for a PDF; a frame and a crop box for an image file): a
    collection that keeps the source stores the recipe instead of the bytes
    (:mod:`docsight.index.renders`). ``data`` is empty for such an asset read back without
    rendering.
    """

    id: str
    doc_id: str
    kind: str  # "page" or "crop"
    media_type: str
    data: bytes = field(repr=False)
    width: int = 0
    height: int = 0
    render: dict[str, Any] | None = None

    @staticmethod
    def make_id(doc_id: str, kind: str, data: bytes) -> str:
        return content_id("asset", doc_id, kind, bytes_sha256(data))

    @staticmethod
    def recipe_id(doc_id: str, kind: str, render: dict[str, Any]) -> str:
        """The id of a render named by its recipe: the document's id is the hash of the file's
        bytes, and the recipe makes the same pixels from them, so this is a content id too.
        It spares encoding a page render whose bytes are not kept only to hash them."""
        return content_id("asset", doc_id, kind, "recipe", json.dumps(render, sort_keys=True))


@dataclass
class ParsedDocument:
    """What a parser returns: the model plus its binary assets."""

    document: Document
    assets: list[Asset] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
