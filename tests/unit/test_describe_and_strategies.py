from __future__ import annotations

import io

import numpy as np
from PIL import Image, ImageDraw

from docsight.document import BBox, ElementKind
from docsight.document.builder import DocumentBuilder
from docsight.document.model import Element, ParsedDocument
from docsight.ingest.describe import classify_picture, describe_table, enrich
from docsight.ingest.element_chunker import ElementChunker, InterleavedChunker
from docsight.ingest.page_chunker import AutoChunker, PageChunker
from docsight.settings import ChunkSettings

TABLE_MD = (
    "| Metric | 2023 | 2024 |\n| --- | --- | --- |\n"
    "| Revenue | 412.0 | 468.5 |\n| Staff | 1,840 | 2,015 |"
)


def _png(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def _element(text: str = "", kind: ElementKind = ElementKind.FIGURE) -> Element:
    return Element(id="x" * 32, kind=kind, text=text, page=0, order=0)


def test_table_description_reads_rows_with_headers() -> None:
    table = _element("", ElementKind.TABLE).model_copy(update={"markdown": TABLE_MD})
    assert describe_table(table, "Table 1: Highlights.") == (
        "Table 1: Highlights. Columns: Metric, 2023, 2024. "
        "Revenue: 2023 412.0; 2024 468.5. Staff: 2023 1,840; 2024 2,015."
    )


def test_picture_classes_from_pixels_and_labels() -> None:
    blank = _png(Image.new("RGB", (200, 120), "white"))
    assert classify_picture(blank, _element(), 0.2) == "blank"
    chart_img = Image.new("RGB", (300, 200), "white")
    draw = ImageDraw.Draw(chart_img)
    for i, h in enumerate((60, 120, 90)):
        draw.rectangle([30 + i * 80, 180 - h, 80 + i * 80, 180], fill=(40, 90, 160))
    chart = _png(chart_img)
    assert classify_picture(chart, _element("Sales 2021 2022 2023 10 20"), 0.2) == "chart"
    rng = np.random.default_rng(0)
    photo = _png(Image.fromarray(rng.integers(0, 255, (120, 160, 3), dtype=np.uint8)))
    assert classify_picture(photo, _element(), 0.3) == "picture"
    assert classify_picture(chart, _element("ACME"), 0.005) == "logo"


def _builder() -> DocumentBuilder:
    return DocumentBuilder(
        doc_id="f" * 32,
        name="d.pdf",
        source="/d.pdf",
        media_type="application/pdf",
        sha256="f" * 64,
        parser="t/1",
    )


def _report() -> ParsedDocument:
    b = _builder()
    b.add_page(612, 792)
    b.add(ElementKind.HEADING, "Results", page=0, level=1)
    b.add(
        ElementKind.PARAGRAPH,
        "Revenue grew strongly as the table below shows for both years.",
        page=0,
    )
    b.add(ElementKind.CAPTION, "Table 1: Highlights.", page=0)
    b.add(
        ElementKind.TABLE,
        "rows",
        page=0,
        markdown=TABLE_MD,
        bbox=BBox(x0=0.1, y0=0.3, x1=0.9, y1=0.5),
    )
    logo = b.add_asset("crop", "image/png", _png(Image.new("RGB", (40, 20), (200, 30, 30))), 40, 20)
    b.add(
        ElementKind.FIGURE,
        "ACME",
        page=0,
        image_id=logo,
        bbox=BBox(x0=0.85, y0=0.02, x1=0.95, y1=0.06),
    )
    b.add(
        ElementKind.PARAGRAPH, "Costs were flat over the same period and margins improved.", page=0
    )
    return enrich(b.build())


def test_element_strategy_placeholders_artifacts_and_no_logos() -> None:
    parsed = _report()
    figure = next(e for e in parsed.document.elements if e.kind == ElementKind.FIGURE)
    assert figure.attrs["picture_class"] == "logo"
    chunks = ElementChunker(ChunkSettings(min_words=5)).chunk(parsed.document)
    assert [c.kind for c in chunks] == ["table", "text"]
    table, text = chunks
    assert "Revenue: 2023 412.0; 2024 468.5." in table.text and "| Revenue |" in table.body
    assert "[Table: Table 1: Highlights.](#el-" in text.body
    assert text.body.endswith("Costs were flat over the same period and margins improved.")
    assert "ACME" not in text.body + table.body


def test_interleaved_keeps_artifacts_inline() -> None:
    chunks = InterleavedChunker(ChunkSettings(min_words=5)).chunk(_report().document)
    assert len(chunks) == 1 and chunks[0].strategy == "interleaved"
    body = chunks[0].body
    assert (
        body.index("Revenue grew") < body.index("| Revenue | 412.0") < body.index("Costs were flat")
    )


def test_page_and_auto_strategies() -> None:
    b = _builder()
    for i in range(3):
        b.add_page(768, 432)
        b.set_page_image(i, b.add_asset("page", "image/png", _png(Image.new("RGB", (8, 8))), 8, 8))
        b.add(ElementKind.HEADING, f"Slide {i + 1}", page=i, level=1)
        b.add(ElementKind.LIST, "- point a\n- point b", page=i)
    slides = enrich(b.build())
    assert slides.document.layout == "horizontal"
    assert slides.document.pages[1].description == "Page 2: Slide 2. - point a - point b"
    pages = PageChunker().chunk(slides.document)
    # each slide: its text, and its image retrieved through the page description
    assert [(c.page, c.kind) for c in pages] == [
        (p, kind) for p in range(3) for kind in ("page", "page_image")
    ]
    assert pages[0].body == "# Slide 1\n- point a\n- point b"
    assert pages[1].text.startswith("Page 1: Slide 1.")
    auto = AutoChunker()
    assert {c.kind for c in auto.chunk(slides.document)} == {"page", "page_image"}
    assert {c.kind for c in auto.chunk(_report().document)} == {"table", "text"}
