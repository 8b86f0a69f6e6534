"""A streaming DocumentBuilder hands its elements over page by page and builds the same map."""

from __future__ import annotations

import pytest

from docsight.document import BBox, ElementKind, Font
from docsight.document.builder import DocumentBuilder
from docsight.document.model import Element, Hidden
from docsight.document.stream import ElementBatch


def _builder(media_type: str = "application/pdf") -> DocumentBuilder:
    return DocumentBuilder(
        doc_id="f" * 32,
        name="r.pdf",
        source="/r.pdf",
        media_type=media_type,
        sha256="f" * 64,
        parser="t/1",
    )


def _report(b: DocumentBuilder, landscape: bool = False) -> None:
    """Five pages with all the map is made of: a title, numbered sections, captions on both
    sides, mentions of tables, figures, sections and pages, printed page numbers, hidden text
    that mentions a table, and body type."""
    for _ in range(5):
        b.add_page(792, 612) if landscape else b.add_page(612, 792)
    body = Font(name="Body", size=10.0)
    b.add(ElementKind.TITLE, "Annual report", page=0, font=Font(name="T", size=24.0))
    for page in range(5):
        b.add(ElementKind.HEADER, "Annual report 2025", page=page)
        if page == 0:
            b.add(ElementKind.HEADING, "1 Introduction", page=0, level=1)
            b.add(ElementKind.PARAGRAPH, "See Table 1, Fig. 2 and page 5.", page=0, font=body)
        if page == 1:
            b.add(ElementKind.HEADING, "2 Results", page=1, level=1)
            b.add(ElementKind.CAPTION, "Table 1: Sales by region", page=1)
            b.add(ElementKind.TABLE, "a | b", page=1, bbox=BBox(x0=0.1, y0=0.2, x1=0.9, y1=0.5))
            b.add(ElementKind.PARAGRAPH, "Hidden: Table 1 is wrong.", page=1, hidden=[Hidden.TINY])
        if page == 2:
            b.add(ElementKind.HEADING, "2.1 Trends", page=2, level=2)
            b.add(ElementKind.FIGURE, "", page=2, image_id="crop")
            b.add(ElementKind.CAPTION, "Figure 2. Trend", page=2)
            b.add(ElementKind.PARAGRAPH, "As Section 2.1 shows, sales rose.", page=2, font=body)
        if page >= 3:
            b.add(ElementKind.PARAGRAPH, "words " * (30 + page), page=page, font=body)
        b.add(ElementKind.FOOTER, str(page + 3), page=page)
        b.flush()


@pytest.mark.parametrize("landscape", [False, True])
def test_streaming_builds_the_map_a_whole_build_makes(landscape: bool) -> None:
    whole_builder = _builder()
    _report(whole_builder, landscape)
    whole = whole_builder.build()

    batches: list[ElementBatch] = []
    streaming = _builder()
    streaming.stream(batches.append)
    _report(streaming, landscape)
    streamed = streaming.build()

    assert streamed.document.elements == []
    # One batch per page, each whole pages, and their captions bound within them.
    assert [sorted({e.page for e in b.elements}) for b in batches] == [[k] for k in range(5)]
    elements: list[Element] = [e for b in batches for e in b.elements]
    document = streamed.document.model_copy(update={"elements": elements})
    assert document == whole.document
    assert streamed.warnings == whole.warnings and any("would not see" in w for w in whole.warnings)
    assert [c for b in batches for c in b.captions] == [
        e for e in whole.document.edges if e.kind == "caption_of"
    ]
    assert len(whole.document.edges) >= 5 and whole.document.pages[0].labels == ["3"]
    assert whole.document.title == "Annual report"
    assert whole.document.layout == ("horizontal" if landscape else "vertical")


def test_a_streaming_builder_takes_elements_in_page_order_only() -> None:
    b = _builder()
    b.stream(lambda batch: None)
    for _ in range(3):
        b.add_page(612, 792)
    b.add(ElementKind.PARAGRAPH, "one", page=1)
    b.flush()
    with pytest.raises(ValueError, match="handed over"):
        b.add(ElementKind.PARAGRAPH, "back", page=1)
    b.add(ElementKind.PARAGRAPH, "three", page=2)
    # Orders keep counting over the batches.
    assert b.add(ElementKind.PARAGRAPH, "four", page=2).order == 2 and b.element_count == 3

    c = _builder()
    c.stream(lambda batch: None)
    for _ in range(3):
        c.add_page(612, 792)
    c.add(ElementKind.PARAGRAPH, "later", page=2)
    c.add(ElementKind.PARAGRAPH, "earlier", page=1)
    with pytest.raises(ValueError, match="page order"):
        c.flush()
