from __future__ import annotations

from docsight.document import BBox, ElementKind, Font
from docsight.document.builder import DocumentBuilder
from docsight.document.classify import classify_layout
from docsight.document.model import EdgeKind


def _builder(media_type: str = "application/pdf") -> DocumentBuilder:
    return DocumentBuilder(
        doc_id="e" * 32,
        name="r.pdf",
        source="/r.pdf",
        media_type=media_type,
        sha256="e" * 64,
        parser="t/1",
    )


def test_captions_bind_to_their_table_or_figure_and_references_resolve() -> None:
    b = _builder()
    for _ in range(4):
        b.add_page(612, 792)
    b.add(ElementKind.HEADING, "1 Introduction", page=0, level=1)
    b.add(
        ElementKind.PARAGRAPH,
        "Results are in Table 1 and Fig. 2; see Section 2.1 and page 4.",
        page=0,
    )
    b.add(ElementKind.HEADING, "2 Results", page=1, level=1)
    b.add(ElementKind.HEADING, "2.1 Sales", page=1, level=2)
    cap_t = b.add(ElementKind.CAPTION, "Table 1: Sales by region", page=1)
    table = b.add(ElementKind.TABLE, "a | b", page=1)
    figure = b.add(ElementKind.FIGURE, "", page=2)
    cap_f = b.add(ElementKind.CAPTION, "Figure 2. Trend", page=2)
    b.add(ElementKind.PARAGRAPH, "Table 9 does not exist.", page=2)
    for page in range(4):
        b.add(ElementKind.FOOTER, str(page + 1), page=page)
    doc = b.build().document
    captions = [(e.source, e.target) for e in doc.edges if e.kind == EdgeKind.CAPTION_OF]
    assert captions == [(cap_t.id, table.id), (cap_f.id, figure.id)]
    refs = {e.text: (e.target, e.target_page) for e in doc.edges if e.kind == EdgeKind.REFERS_TO}
    section_21 = next(s.id for s in doc.sections if s.title == "2.1 Sales")
    assert refs == {
        "Table 1": (table.id, None),
        "Fig. 2": (figure.id, None),
        "Section 2.1": (section_21, None),
        "page 4": (None, 3),
    }
    doc.validate_structure()


def test_caption_prefers_the_conventional_side_and_binds_once() -> None:
    b = _builder()
    b.add_page(612, 792)
    first = b.add(ElementKind.FIGURE, "", page=0)
    caption = b.add(ElementKind.CAPTION, "Figure 1: A", page=0)
    second = b.add(ElementKind.FIGURE, "", page=0)
    b.add(ElementKind.CAPTION, "Figure 2: B", page=0)
    doc = b.build().document
    bound = {e.source: e.target for e in doc.edges}
    # figures are captioned below: "Figure 1" describes the figure above it
    assert bound[caption.id] == first.id
    assert second.id in bound.values()


def test_layout_classification() -> None:
    slides = _builder()
    for i in range(5):
        slides.add_page(768, 432)
        slides.add(ElementKind.HEADING, f"Slide {i}", page=i, level=1)
        slides.add(ElementKind.LIST, "- one point\n- two points", page=i, font=Font(size=24))
    assert slides.build().document.layout == "horizontal"

    report = _builder()
    for i in range(5):
        report.add_page(612, 792)
        report.add(
            ElementKind.PARAGRAPH,
            "word " * 400,
            page=i,
            font=Font(size=10),
            bbox=BBox(x0=0.1, y0=0.1, x1=0.9, y1=0.9),
        )
    assert report.build().document.layout == "vertical"
    assert classify_layout("text/markdown", [], []) == "vertical"

    preset = _builder()
    preset.add_page(612, 792)
    preset.layout = "horizontal"
    assert preset.build().document.layout == "horizontal"
