"""The born-digital PDF parser on generated PDFs (see ``tests/fixtures/pdfgen.py``)."""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from PIL import Image

from docsight.document.model import Element, ElementKind, ParsedDocument
from docsight.errors import EncryptedDocumentError, LimitExceededError, ParseError
from docsight.ingest.element_chunker import ElementChunker
from fixtures import pdfgen

Parse = Callable[..., ParsedDocument]


def _kinds(parsed: ParsedDocument, kind: ElementKind) -> list[Element]:
    return [e for e in parsed.document.elements if e.kind == kind]


def _one(parsed: ParsedDocument, kind: ElementKind, text: str) -> Element:
    found = [e for e in _kinds(parsed, kind) if text in e.text]
    assert len(found) == 1, f"expected one {kind} containing {text!r}, got {found}"
    return found[0]


def _png(parsed: ParsedDocument, asset_id: str | None) -> Image.Image:
    assert asset_id is not None
    asset = next(a for a in parsed.assets if a.id == asset_id)
    assert asset.media_type == "image/png"
    image = Image.open(io.BytesIO(asset.data))
    image.load()
    assert image.format == "PNG"
    assert (image.width, image.height) == (asset.width, asset.height)
    return image


# --- the report --------------------------------------------------------------------------------


def test_report_structure_is_valid(parsed_report: ParsedDocument) -> None:
    doc = parsed_report.document
    doc.validate_structure()
    assert doc.page_count == 3
    assert doc.parser == "pdf/10"
    assert parsed_report.warnings == []
    assert [e.order for e in doc.elements] == list(range(len(doc.elements)))


def test_report_title_and_metadata(parsed_report: ParsedDocument) -> None:
    doc = parsed_report.document
    assert doc.title == pdfgen.REPORT_TITLE
    title = _kinds(parsed_report, ElementKind.TITLE)
    assert [e.text for e in title] == [pdfgen.REPORT_TITLE]
    assert title[0].page == 0
    assert doc.metadata["author"] == "Docsight Tests"
    assert re.match(r"\d{4}-\d{2}-\d{2}T", doc.metadata["created"])
    # reportlab's placeholder values are not metadata
    assert "subject" not in doc.metadata


def test_report_kinds(parsed_report: ParsedDocument) -> None:
    kinds = {e.kind for e in parsed_report.document.elements}
    assert kinds >= {
        ElementKind.TITLE,
        ElementKind.HEADING,
        ElementKind.PARAGRAPH,
        ElementKind.LIST,
        ElementKind.TABLE,
        ElementKind.FIGURE,
        ElementKind.CAPTION,
        ElementKind.CODE,
        ElementKind.HEADER,
        ElementKind.FOOTER,
    }


def test_headings_follow_the_outline(parsed_report: ParsedDocument) -> None:
    headings = [(e.text, e.level) for e in _kinds(parsed_report, ElementKind.HEADING)]
    assert headings == [
        ("1 Introduction", 1),
        ("1.1 Background", 2),
        ("2 Results", 1),
        ("3 Discussion", 1),
        ("3.1 Limits", 2),
    ]


def test_section_tree(parsed_report: ParsedDocument) -> None:
    doc = parsed_report.document
    listing = _one(parsed_report, ElementKind.LIST, "Resellers")
    assert doc.section_path(listing.section_id) == ["1 Introduction", "1.1 Background"]
    table = _kinds(parsed_report, ElementKind.TABLE)[0]
    assert doc.section_path(table.section_id) == ["2 Results"]
    top = [s.title for s in doc.children(None)]
    assert top == ["1 Introduction", "2 Results", "3 Discussion"]


def test_heading_levels_from_font_sizes_without_outline(
    report_no_outline_pdf: Path, parse_pdf: Parse
) -> None:
    parsed = parse_pdf(report_no_outline_pdf, render_pages=False)
    headings = [(e.text, e.level) for e in _kinds(parsed, ElementKind.HEADING)]
    assert headings == [
        ("1 Introduction", 1),
        ("1.1 Background", 2),
        ("2 Results", 1),
        ("3 Discussion", 1),
        ("3.1 Limits", 2),
    ]
    assert _kinds(parsed, ElementKind.TITLE)[0].text == pdfgen.REPORT_TITLE


def test_hyphenation_is_undone(parsed_report: ParsedDocument) -> None:
    para = _one(parsed_report, ElementKind.PARAGRAPH, "quarterly numbers")
    assert "useful information about every region" in para.text
    assert "infor-" not in para.text
    assert para.font is not None and para.font.size == 11.0 and not para.font.bold


def test_list_items(parsed_report: ParsedDocument) -> None:
    listing = _one(parsed_report, ElementKind.LIST, "Resellers")
    assert listing.text.split("\n") == [
        "Direct sales to large customers",
        "Online orders through the web shop",
        "Resellers in every region",
    ]
    assert listing.markdown is not None and listing.markdown.startswith("- Direct sales")
    assert listing.attrs["items"] == 3


def test_code_block_keeps_lines(parsed_report: ParsedDocument) -> None:
    code = _one(parsed_report, ElementKind.CODE, "def total")
    assert code.text.split("\n")[0] == "def total(rows):"
    assert code.text.split("\n")[1].strip() == "return sum(r.sales for r in rows)"
    assert code.font is not None and code.font.monospace
    assert code.markdown is not None and code.markdown.startswith("```")


def test_table_markdown_and_crop(parsed_report: ParsedDocument) -> None:
    tables = _kinds(parsed_report, ElementKind.TABLE)
    assert len(tables) == 1
    table = tables[0]
    assert table.page == 1
    assert table.markdown is not None
    assert table.markdown.split("\n")[0] == "| Region | Q1 sales | Q2 sales |"
    assert "| South | 98 | 101 |" in table.markdown
    assert table.attrs["rows"] == 4 and table.attrs["cols"] == 3
    assert "North | 120 | 135" in table.text
    assert table.attrs["caption"] == "Table 1: Widget sales by region"
    crop = _png(parsed_report, table.image_id)
    assert crop.width > 200 and crop.height > 50
    # Cell words are not repeated as paragraphs.
    others = [e for e in parsed_report.document.elements if e.kind != ElementKind.TABLE]
    assert not any("Q1 sales" in e.text or "143" in e.text for e in others)


def test_raster_figure_crop(parsed_report: ParsedDocument) -> None:
    figure = next(e for e in _kinds(parsed_report, ElementKind.FIGURE) if e.page == 1)
    assert figure.attrs["caption"] == "Figure 1: Sales trend as a colour gradient"
    assert figure.bbox is not None
    # 240 × 160 pt on a 612 × 792 pt page
    assert figure.bbox.x1 - figure.bbox.x0 == pytest.approx(240 / 612, abs=0.01)
    assert figure.bbox.y1 - figure.bbox.y0 == pytest.approx(160 / 792, abs=0.01)
    crop = _png(parsed_report, figure.image_id)
    scale = 96 / 72  # default render_dpi
    assert crop.width == pytest.approx(240 * scale, abs=3)
    assert crop.height == pytest.approx(160 * scale, abs=3)
    # the crop shows the gradient (red grows left to right), not white page
    middle = crop.height // 2
    left, right = crop.getpixel((5, middle)), crop.getpixel((crop.width - 5, middle))
    assert isinstance(left, tuple) and isinstance(right, tuple) and right[0] > left[0] + 100


def test_vector_chart_labels_become_the_figure_text(parsed_report: ParsedDocument) -> None:
    chart = next(e for e in _kinds(parsed_report, ElementKind.FIGURE) if e.page == 2)
    # The labels leave the text flow and become the figure's own text, in reading order.
    assert chart.text == "North bars\nSouth bars"
    assert chart.attrs["labels"] == chart.text
    assert chart.attrs["caption"].startswith("Figure 2:")
    flow = [e for e in parsed_report.document.elements if e.kind != ElementKind.FIGURE]
    assert not any("North bars" in e.text for e in flow)
    # So the chart's chunk, which carries its caption, can be found by its labels.
    chunks = ElementChunker().chunk(parsed_report.document)
    chart_chunk = next(c for c in chunks if chart.id in c.element_ids)
    assert "North bars" in chart_chunk.text and "Figure 2:" in chart_chunk.text


def test_headers_and_footers(parsed_report: ParsedDocument) -> None:
    headers = _kinds(parsed_report, ElementKind.HEADER)
    footers = _kinds(parsed_report, ElementKind.FOOTER)
    assert [(e.page, e.text) for e in headers] == [(p, pdfgen.RUNNING_HEADER) for p in range(3)]
    assert [(e.page, e.text) for e in footers] == [(p, f"Page {p + 1} of 3") for p in range(3)]
    assert all(e.section_id is None for e in headers + footers)
    doc = parsed_report.document
    assert not any(e.is_furniture for e in doc.indexable_elements())
    # Furniture frames the page: header first, footer last.
    for page in range(3):
        on_page = doc.elements_on_page(page)
        assert on_page[0].kind == ElementKind.HEADER
        assert on_page[-1].kind == ElementKind.FOOTER


def test_bboxes_and_reading_order_by_page(parsed_report: ParsedDocument) -> None:
    doc = parsed_report.document
    pages = [e.page for e in doc.elements]
    assert pages == sorted(pages)
    for e in doc.elements:
        assert e.bbox is not None
        assert 0.0 <= e.bbox.x0 <= e.bbox.x1 <= 1.0 and 0.0 <= e.bbox.y0 <= e.bbox.y1 <= 1.0
    body = [e for e in doc.elements_on_page(0) if not e.is_furniture]
    tops = [e.bbox.y0 for e in body if e.bbox is not None]
    assert tops == sorted(tops)  # one column: top to bottom


def test_page_renders(parsed_report: ParsedDocument) -> None:
    doc = parsed_report.document
    for page in doc.pages:
        assert (page.width, page.height) == (612.0, 792.0)
        assert page.text_chars > 50
        image = _png(parsed_report, page.image_id)
        assert (image.width, image.height) == (816, 1056)  # 96 dpi


def test_page_renders_kept_or_not_have_the_same_ids(report_pdf: Path) -> None:
    """Ingestion without a visual encoder keeps no page pixels, and then never encodes them; the
    ids do not depend on it, and the recipe makes the pixels a kept render has."""
    import dataclasses

    from docsight.document.model import Asset
    from docsight.index.renders import make_image
    from docsight.parsers.pdf import PdfParser
    from docsight.settings import ParseSettings
    from fixtures.pdf_fixtures import source_file

    source = source_file(report_pdf)
    kept = PdfParser().parse(source, ParseSettings())
    lean = PdfParser().parse(dataclasses.replace(source, page_pixels=False), ParseSettings())
    assert kept.document.model_dump() == lean.document.model_dump()
    pages = {a.id: a for a in kept.assets if a.kind == "page"}
    lean_pages = {a.id: a for a in lean.assets if a.kind == "page"}
    assert set(pages) == set(lean_pages) == {p.image_id for p in kept.document.pages}
    for asset_id, asset in pages.items():
        assert asset.render is not None and lean_pages[asset_id].data == b""
        assert asset_id == Asset.recipe_id(kept.document.id, "page", asset.render)
        made = Image.open(io.BytesIO(make_image(report_pdf, "application/pdf", asset.render)))
        assert made.tobytes() == _png(kept, asset_id).tobytes()


def test_render_limits_and_switches(report_pdf: Path, parse_pdf: Parse) -> None:
    small = parse_pdf(report_pdf, max_render_pixels=100_000, extract_tables=False)
    image = _png(small, small.document.pages[0].image_id)
    assert image.width * image.height <= 100_000
    assert image.width * image.height > 90_000
    assert not _kinds(small, ElementKind.TABLE)
    # without table extraction the cells are ordinary text again
    assert any("Q1 sales" in e.text for e in small.document.elements)

    bare = parse_pdf(report_pdf, render_pages=False, extract_figures=False)
    assert all(p.image_id is None for p in bare.document.pages)
    assert not _kinds(bare, ElementKind.FIGURE)
    assert {a.kind for a in bare.assets} == {"crop"}  # the table crop is rendered on its own
    table = _kinds(bare, ElementKind.TABLE)[0]
    assert _png(bare, table.image_id).width > 200


def test_two_columns_read_left_then_right(two_column_pdf: Path, parse_pdf: Parse) -> None:
    parsed = parse_pdf(two_column_pdf, render_pages=False)
    elements = parsed.document.elements
    assert elements[0].kind == ElementKind.TITLE
    assert elements[0].text == "A Study of Two Columns"
    text = " ".join(e.text for e in elements[1:])
    markers = re.findall(r"\b(alpha|omega) (\d\d)\b", text)
    assert len(markers) == 60
    expected = [("alpha", f"{n:02d}") for n in range(1, 31)]
    expected += [("omega", f"{n:02d}") for n in range(1, 31)]
    assert markers == expected
    paragraphs = _kinds(parsed, ElementKind.PARAGRAPH)
    # Paragraphs told apart by their first-line indent alone, six per column.
    assert len(paragraphs) == 12
    assert all(
        p.text.count("alpha") in (0, 5) and p.text.count("omega") in (0, 5) for p in paragraphs
    )


def test_scanned_pages_have_renders_but_no_text(image_only_pdf: Path, parse_pdf: Parse) -> None:
    parsed = parse_pdf(image_only_pdf)
    doc = parsed.document
    assert doc.page_count == 2
    assert doc.elements == []
    for page in doc.pages:
        assert page.text_chars == 0
        assert _png(parsed, page.image_id).width == 816


# --- errors and limits -------------------------------------------------------------------------


def test_encrypted_pdf(encrypted_pdf: Path, parse_pdf: Parse) -> None:
    with pytest.raises(EncryptedDocumentError, match=r"encrypted\.pdf: password protected"):
        parse_pdf(encrypted_pdf)


def test_corrupt_pdf(corrupt_pdf: Path, parse_pdf: Parse) -> None:
    with pytest.raises(ParseError, match=r"corrupt\.pdf: not a readable PDF"):
        parse_pdf(corrupt_pdf)


def test_truncated_pdf_never_raises_a_library_error(truncated_pdf: Path, parse_pdf: Parse) -> None:
    try:
        parsed = parse_pdf(truncated_pdf, render_pages=False)
    except ParseError as exc:
        assert "truncated.pdf" in str(exc)
    else:
        parsed.document.validate_structure()


def test_page_limit(pdf_dir: Path, parse_pdf: Parse) -> None:
    path = pdfgen.make_many_pages(pdf_dir / "long.pdf", 6)
    with pytest.raises(LimitExceededError, match=r"long\.pdf: 6 pages"):
        parse_pdf(path, max_pages=5)
    assert parse_pdf(path, max_pages=6, render_pages=False).document.page_count == 6


def test_a_failing_page_becomes_a_warning(
    report_pdf: Path, parse_pdf: Parse, monkeypatch: pytest.MonkeyPatch
) -> None:
    from docsight.parsers.pdf import parser as pdf_parser

    real = pdf_parser.pdfium_objects

    def flaky(pdfium_page: object, page: object) -> object:
        if getattr(page, "index", -1) == 1:
            raise RuntimeError("boom")
        return real(pdfium_page, page)  # type: ignore[arg-type]

    monkeypatch.setattr(pdf_parser, "pdfium_objects", flaky)
    parsed = parse_pdf(report_pdf, render_pages=False)
    assert any("page 2" in w and "boom" in w for w in parsed.warnings)
    # The page falls back to pdfium's text layer and the rest parses as usual.
    assert any("Sales grew in every region" in e.text for e in parsed.document.elements)
    assert any(e.text == "3 Discussion" for e in parsed.document.elements)


def test_a_failing_page_becomes_a_warning_with_pdfminer(
    report_pdf: Path, parse_pdf: Parse, monkeypatch: pytest.MonkeyPatch
) -> None:
    from docsight.parsers.pdf.extract import Objects

    real = Objects.read

    def flaky(plumber_page: object) -> object:
        if getattr(plumber_page, "page_number", 0) == 2:
            raise RuntimeError("boom")
        return real(plumber_page)  # type: ignore[arg-type]

    monkeypatch.setattr(Objects, "read", staticmethod(flaky))
    parsed = parse_pdf(report_pdf, render_pages=False, pdf_objects="pdfminer")
    assert any("page 2" in w and "boom" in w for w in parsed.warnings)
    assert any("Sales grew in every region" in e.text for e in parsed.document.elements)
    assert any(e.text == "3 Discussion" for e in parsed.document.elements)


# --- real documents ----------------------------------------------------------------------------


@pytest.mark.shared_data
def test_real_documents(shared_data: Path, parse_pdf: Parse) -> None:
    paper = shared_data / "mmlongbench-dev" / "documents" / "2023.acl-long.386.pdf"
    manual = shared_data / "smoke" / "slides-and-manuals" / "R-intro.pdf"
    if not paper.is_file() or not manual.is_file():
        pytest.skip("the ACL paper or R-intro.pdf is missing from the shared data")

    parsed = parse_pdf(paper, render_pages=False)
    doc = parsed.document
    doc.validate_structure()
    assert doc.title == "Fact-Checking Complex Claims with Program-Guided Reasoning"
    page0 = [e for e in doc.elements_on_page(0) if not e.is_furniture]
    texts = [e.text for e in page0]
    # two columns: the left column's introduction comes before the right column's text
    intro = texts.index("1 Introduction")
    right = next(i for i, t in enumerate(texts) if t.startswith("Instead, a human fact-checker"))
    assert intro < right
    headings = [e.text for e in _kinds(parsed, ElementKind.HEADING)]
    assert "2 Related Work" in headings and "3.1 Problem Formulation" in headings
    assert len(_kinds(parsed, ElementKind.TABLE)) >= 2

    parsed = parse_pdf(manual, render_pages=False)
    doc = parsed.document
    chapter = next(s for s in doc.sections if s.title == "1 Introduction and preliminaries")
    assert chapter.level == 1
    assert "1.1 The R environment" in [s.title for s in doc.children(chapter.id)]


def test_row_labels_left_of_shaded_number_columns_join_the_table(
    tmp_path: Path, parse_pdf: Parse
) -> None:
    """Bands shade only the figures; the labels on their left are the table's first column,
    while a column of prose beside such a table stays prose."""
    pdf = pdfgen.make_shaded_statement(tmp_path / "statement.pdf")
    table = _kinds(parse_pdf(pdf, render_pages=False), ElementKind.TABLE)
    assert len(table) == 1 and table[0].markdown is not None
    for label, this_year, last_year in pdfgen.STATEMENT_ROWS:
        assert f"| {label} | {this_year} | {last_year} |" in table[0].markdown

    beside = pdfgen.make_shaded_statement(tmp_path / "beside.pdf", prose_beside=True)
    parsed = parse_pdf(beside, render_pages=False)
    (numbers,) = _kinds(parsed, ElementKind.TABLE)
    assert "Management" not in (numbers.markdown or "")
    assert numbers.markdown is not None and "| 6,489 | 7,500 |" in numbers.markdown
    assert any("Management discusses" in e.text for e in _kinds(parsed, ElementKind.PARAGRAPH))


def test_subsections_in_body_type_are_headings_by_their_numbers(
    tmp_path: Path, parse_pdf: Parse
) -> None:
    """Papers set subsection headings in body type ("4.1 TASKS"), marked only by their number;
    with no outline to name them, the numbers running in sequence make them headings."""
    parsed = parse_pdf(pdfgen.make_numbered_sections(tmp_path / "numbered.pdf"))
    doc = parsed.document
    headings = [e for e in doc.elements if e.kind == ElementKind.HEADING]
    assert [e.text for e in headings] == [h for page in pdfgen.NUMBERED_SECTIONS for h in page]
    # Set alike, "1.1.1" goes one level under "1.1" by its number.
    assert [e.level for e in headings] == [1, 2, 3, 2, 1, 2, 2]
    parents = {s.title: s.parent_id for s in doc.sections}
    by_title = {s.title: s.id for s in doc.sections}
    assert parents["2.1 SAMPLING"] == by_title["2 METHOD"]
    assert parents["1.1.1 EARLIER SOUNDINGS"] == by_title["1.1 SCOPE OF THE STUDY"]
    # A number with no neighbour among the document's opens a paragraph, not a section.
    lone = next(e for e in doc.elements if e.text == pdfgen.LONE_NUMBER)
    assert lone.kind == ElementKind.PARAGRAPH
    assert lone.section_id == by_title["1.2 PRIOR SURVEYS"]
