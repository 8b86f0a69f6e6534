"""Word, PowerPoint and Excel parsers on generated files and on the hostile OOXML corpus."""

from __future__ import annotations

import contextlib
import io
import resource
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from PIL import Image

from docsight.document.model import EdgeKind, ElementKind, ParsedDocument
from docsight.errors import DocsightError, LimitExceededError
from docsight.parsers import parser_for
from docsight.parsers.ooxml import check_archive
from docsight.parsers.sniff import DOCX, PPTX, XLSX, detect_media_type
from docsight.settings import ParseSettings
from fixtures import officegen
from fixtures.office_fixtures import office_parser, office_source

K = ElementKind
Parse = Callable[..., ParsedDocument]


def kinds(parsed: ParsedDocument, page: int | None = None) -> list[ElementKind]:
    return [e.kind for e in parsed.document.elements if page is None or e.page == page]


def only(parsed: ParsedDocument, kind: ElementKind) -> list:  # type: ignore[type-arg]
    return [e for e in parsed.document.elements if e.kind == kind]


def assert_png(parsed: ParsedDocument, image_id: str | None, size: tuple[int, int]) -> None:
    asset = next(a for a in parsed.assets if a.id == image_id)
    assert asset.kind == "crop" and asset.media_type == "image/png"
    with Image.open(io.BytesIO(asset.data)) as image:
        assert image.format == "PNG" and image.size == size


def test_registry_and_sniffing_route_office_files(
    docx_file: Path, pptx_file: Path, xlsx_file: Path
) -> None:
    for path, media_type, name in (
        (docx_file, DOCX, "docx"),
        (pptx_file, PPTX, "pptx"),
        (xlsx_file, XLSX, "xlsx"),
    ):
        assert detect_media_type(path.read_bytes(), path) == media_type
        assert parser_for(media_type, path).name == name


# --- Word -----------------------------------------------------------------------------------------


def test_docx_reading_order_and_kinds(parsed_docx: ParsedDocument) -> None:
    assert kinds(parsed_docx) == [
        K.HEADER, K.TITLE, K.HEADING, K.PARAGRAPH, K.HEADING, K.LIST, K.PARAGRAPH, K.LIST,
        K.HEADING, K.CAPTION, K.TABLE, K.FIGURE, K.CHART, K.HEADING, K.PARAGRAPH, K.NOTE,
        K.FOOTER,
    ]  # fmt: skip
    doc = parsed_docx.document
    assert doc.title == officegen.DOC_TITLE and doc.parser == "docx/2"
    assert doc.layout == "vertical"


def test_docx_headings_and_sections(parsed_docx: ParsedDocument) -> None:
    doc = parsed_docx.document
    headings = [(e.text, e.level) for e in only(parsed_docx, K.HEADING)]
    assert headings == [("Introduction", 1), ("Scope", 2), ("Results", 1), ("Appendix", 1)]
    steps = next(e for e in only(parsed_docx, K.LIST) if "Collect" in e.text)
    assert doc.section_path(steps.section_id) == ["Introduction", "Scope"]
    table = only(parsed_docx, K.TABLE)[0]
    assert doc.section_path(table.section_id) == ["Results"]
    assert only(parsed_docx, K.TITLE)[0].section_id is None


def test_docx_lists(parsed_docx: ParsedDocument) -> None:
    bullets, steps = only(parsed_docx, K.LIST)
    assert bullets.text.split("\n") == officegen.BULLETS
    assert bullets.markdown == "- Widgets sold well\n  - North region led\n- Costs stayed flat"
    assert steps.markdown == "1. Collect the data\n2. Clean the data\n3. Publish the report"
    assert steps.attrs["items"] == 3


def test_docx_table_caption_and_merges(parsed_docx: ParsedDocument) -> None:
    table = only(parsed_docx, K.TABLE)[0]
    lines = (table.markdown or "").split("\n")
    assert lines[0] == "| Region | Q1 sales | Q2 sales |"
    assert "| North | 120 | 135 |" in lines
    # The merged cell repeats its text; the nested table is flattened into its cell.
    assert lines[-1] == "| Total | Total | H1, H2 |"
    caption = only(parsed_docx, K.CAPTION)[0]
    assert caption.text == "Table 1: Sales by region"
    edges = parsed_docx.document.edges
    assert any(
        e.kind == EdgeKind.CAPTION_OF and e.source == caption.id and e.target == table.id
        for e in edges
    )


def test_docx_figure_asset(parsed_docx: ParsedDocument) -> None:
    figure = only(parsed_docx, K.FIGURE)[0]
    assert figure.text == officegen.FIGURE_ALT
    assert_png(parsed_docx, figure.image_id, (120, 80))


def test_docx_chart_data(parsed_docx: ParsedDocument) -> None:
    chart = only(parsed_docx, K.CHART)[0]
    assert chart.page == 1 and chart.attrs["alt"] == officegen.DOC_CHART_ALT
    assert chart.text.startswith("bar clustered chart; series: 2024, 2025")
    assert "| Q3 | 14 | 17.5 |" in (chart.markdown or "")


def test_docx_pages_and_furniture(parsed_docx: ParsedDocument) -> None:
    doc = parsed_docx.document
    assert [(p.width, p.height) for p in doc.pages] == [(0.0, 0.0), (0.0, 0.0)]
    appendix = next(e for e in only(parsed_docx, K.HEADING) if e.text == "Appendix")
    assert appendix.page == 1
    assert all(e.bbox is None for e in doc.elements)
    assert [e.text for e in only(parsed_docx, K.HEADER)] == [officegen.DOC_HEADER]
    assert [e.text for e in only(parsed_docx, K.FOOTER)] == [officegen.DOC_FOOTER]
    # The footnote follows the paragraph citing it, in the same section.
    note = only(parsed_docx, K.NOTE)[0]
    assert (note.text, note.page, note.attrs) == (officegen.FOOTNOTE, 1, {"footnote": "1"})
    assert doc.section_path(note.section_id) == ["Appendix"]
    assert all(not e.is_furniture for e in doc.indexable_elements())


def test_docx_limits(docx_file: Path, parse_office: Parse) -> None:
    with pytest.raises(LimitExceededError, match="pages"):
        parse_office(docx_file, max_pages=1)
    parsed = parse_office(docx_file, extract_figures=False)
    assert parsed.assets == [] and len(only(parsed, K.FIGURE)) == 1


# --- PowerPoint -----------------------------------------------------------------------------------


def test_pptx_slides_are_pages_with_sections(parsed_pptx: ParsedDocument) -> None:
    doc = parsed_pptx.document
    assert [(p.width, p.height) for p in doc.pages] == [(720.0, 540.0)] * 4
    assert doc.title == officegen.DECK_TITLE and doc.layout == "horizontal"
    headings = [(e.text, e.level, e.page) for e in only(parsed_pptx, K.HEADING)]
    assert headings == [
        (officegen.DECK_TITLE, 1, 0),
        ("Key points", 1, 1),
        ("Sales data", 1, 2),
    ]
    # The untitled last slide opens no section of its own.
    last = [e for e in doc.elements if e.page == 3]
    assert [e.kind for e in last] == [K.PARAGRAPH]
    assert doc.section_path(last[0].section_id) == ["Sales data"]


def test_pptx_reading_order_groups_and_bboxes(parsed_pptx: ParsedDocument) -> None:
    assert kinds(parsed_pptx, 1) == [K.HEADING, K.LIST, K.FIGURE, K.PARAGRAPH, K.PARAGRAPH, K.NOTE]
    slide = [e for e in parsed_pptx.document.elements if e.page == 1]
    left, right = slide[3], slide[4]
    assert (left.text, right.text) == ("Left box", "Right box")
    assert left.bbox is not None and right.bbox is not None
    assert left.bbox.x0 == pytest.approx(0.1, abs=1e-3)
    assert right.bbox.x0 == pytest.approx(0.5, abs=1e-3)
    assert left.bbox.y0 == pytest.approx(5.5 / 7.5, abs=1e-3)
    for e in parsed_pptx.document.elements:
        if e.kind == K.NOTE:
            assert e.bbox is None
        else:
            assert e.bbox is not None
            assert all(0.0 <= v <= 1.0 for v in e.bbox.as_tuple())
            assert e.bbox.x1 > e.bbox.x0 and e.bbox.y1 > e.bbox.y0


def test_pptx_bullets_table_picture(parsed_pptx: ParsedDocument) -> None:
    bullets = only(parsed_pptx, K.LIST)[0]
    assert bullets.markdown == (
        "- Growth is strong\n  - North grew 12%\n  - South grew 3%\n- Costs are flat"
    )
    table = only(parsed_pptx, K.TABLE)[0]
    assert (table.markdown or "").split("\n")[0] == "| Region | Q1 sales | Q2 sales |"
    assert "| East | 143 | 150 |" in (table.markdown or "")
    figure = only(parsed_pptx, K.FIGURE)[0]
    assert figure.text == officegen.PICTURE_ALT
    assert figure.bbox is not None and figure.bbox.x0 == pytest.approx(0.6, abs=1e-3)
    assert_png(parsed_pptx, figure.image_id, (120, 80))


def test_pptx_chart_data_and_notes(parsed_pptx: ParsedDocument) -> None:
    chart = only(parsed_pptx, K.CHART)[0]
    assert chart.page == 2
    assert "Quarterly sales" in chart.text and "2024, 2025" in chart.text
    assert "column" in chart.text and "\n" not in chart.text
    assert (chart.markdown or "").split("\n") == [
        "| Category | 2024 | 2025 |",
        "| --- | --- | --- |",
        "| Q1 | 10 | 11 |",
        "| Q2 | 12 | 15 |",
        "| Q3 | 14 | 17.5 |",
        "| Q4 | 13 | 16 |",
    ]
    assert chart.attrs["series"] == 2 and chart.attrs["categories"] == 4
    number = only(parsed_pptx, K.FOOTER)[0]
    assert (number.text, number.page, number.attrs["placeholder"]) == ("3", 2, "slide_number")
    assert number not in list(parsed_pptx.document.indexable_elements())
    notes = only(parsed_pptx, K.NOTE)
    assert [(n.text, n.page) for n in notes] == [(officegen.SLIDE_NOTES, 1)]
    assert parsed_pptx.document.section_path(notes[0].section_id) == ["Key points"]


def test_pptx_slide_limit(pptx_file: Path, parse_office: Parse) -> None:
    with pytest.raises(LimitExceededError, match="4 slides"):
        parse_office(pptx_file, max_pages=2)


# --- Excel ----------------------------------------------------------------------------------------


def test_xlsx_sheets_and_regions(parsed_xlsx: ParsedDocument) -> None:
    doc = parsed_xlsx.document
    assert [e.text for e in only(parsed_xlsx, K.HEADING)] == ["Sales", "Notes", "Secret"]
    assert len(doc.pages) == 3
    tables = [e for e in only(parsed_xlsx, K.TABLE) if e.page == 0]
    assert [t.attrs["range"] for t in tables] == ["A1:C5", "E1:E2", "A8:B10"]
    assert all(t.attrs["sheet"] == "Sales" for t in tables)
    assert (tables[0].markdown or "").split("\n")[0] == "| Region | Q1 sales | Q2 sales |"
    assert (tables[2].markdown or "").split("\n")[-1] == "| Gear | 25 |"
    assert doc.section_path(tables[2].section_id) == ["Sales"]


def test_xlsx_formulas_give_values(parsed_xlsx: ParsedDocument) -> None:
    total = only(parsed_xlsx, K.TABLE)[0]
    assert f"| Total | {officegen.FORMULA_VALUE} | n/a |" in (total.markdown or "")
    for e in parsed_xlsx.document.elements:
        assert "SUM(" not in e.text and "SUM(" not in (e.markdown or "")


def test_xlsx_hidden_sheet_is_marked(parsed_xlsx: ParsedDocument) -> None:
    secret = [e for e in parsed_xlsx.document.elements if e.page == 2]
    assert [e.text for e in secret] == ["Secret", "hidden value"]
    assert all(e.attrs.get("hidden") is True for e in secret)
    assert not any(e.attrs.get("hidden") for e in parsed_xlsx.document.elements if e.page < 2)


def test_xlsx_cell_budget_and_table_pieces(office_dir: Path, parse_office: Parse) -> None:
    path = officegen.make_xlsx(office_dir / "big.xlsx", extra_rows=2000)
    parsed = parse_office(path)
    pieces = [t for t in only(parsed, K.TABLE) if t.attrs.get("region") == "A13:E2013"]
    assert len(pieces) > 10
    assert all((t.markdown or "").startswith("| Id | Item | Units |") for t in pieces)
    assert pieces[0].attrs["range"].startswith("A14:") and pieces[-1].attrs["range"].endswith(
        "E2013"
    )
    cut = parse_office(path, max_sheet_cells=1000)
    assert any("max_sheet_cells" in w for w in cut.warnings)
    rows = sum(t.attrs["rows"] - 1 for t in only(cut, K.TABLE) if t.attrs.get("sheet") == "Sales")
    assert rows < 300


def test_xlsx_scattered_cells_are_listed_not_gridded(office_dir: Path, parse_office: Parse) -> None:
    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    assert ws is not None
    for i in range(1, 901):  # a diagonal: no empty row or column separates the cells
        ws.cell(row=i, column=i, value=f"d{i}")
    path = office_dir / "diagonal.xlsx"
    wb.save(path)
    parsed = parse_office(path, max_sheet_cells=2000)  # rows count against the budget too
    assert not parsed.warnings
    table = only(parsed, K.TABLE)[0]
    assert table.attrs["sparse"] and table.attrs["range"] == "A1:AHP900"
    assert table.text.split("\n")[:2] == ["A1: d1", "B2: d2"] and table.markdown is None


# --- hostile files --------------------------------------------------------------------------------

BOMBS = ("zipbomb", "single_run_300MB", "15000_members")


def test_hostile_ooxml_corpus(shared_data: Path) -> None:
    folder = shared_data / "badfiles" / "generated" / "ooxml"
    if not folder.is_dir():
        pytest.skip(f"{folder} not found")
    secret = Path("/etc/hostname").read_text().strip() if Path("/etc/hostname").exists() else ""
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    outcomes: dict[str, str] = {}
    for path in sorted(folder.iterdir()):
        if path.suffix.lower() not in (".docx", ".pptx", ".xlsx"):
            continue
        data = path.read_bytes()
        if any(b in path.name for b in BOMBS):
            # Refused from the central directory alone, before anything is inflated.
            with pytest.raises(LimitExceededError):
                check_archive(path, data, ParseSettings())
        started = time.perf_counter()
        with contextlib.suppress(DocsightError):
            detect_media_type(data, path)  # must not raise anything else either
        try:
            parsed = office_parser(path).parse(office_source(path), ParseSettings())  # type: ignore[attr-defined]
        except DocsightError as exc:
            outcomes[path.name] = type(exc).__name__
        else:
            outcomes[path.name] = "ok"
            parsed.document.validate_structure()
            text = " ".join(e.text for e in parsed.document.elements)
            assert not secret or secret not in text, f"{path.name} leaked a local file"
            assert "HYPERLINK" not in text
        elapsed = time.perf_counter() - started
        limit = 1.0 if "sparse" in path.name else 5.0
        assert elapsed < limit, f"{path.name} took {elapsed:.2f}s"
    rss_growth_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 1024
    assert rss_growth_mb < 500, f"peak memory grew by {rss_growth_mb:.0f} MB"
    assert outcomes["docx_good.docx"] == outcomes["pptx_good.pptx"] == "ok"
    assert outcomes["xlsx_sparse_A1_XFD1048576.xlsx"] == "ok"
    assert outcomes["xlsx_formula_injection.xlsx"] == "ok"
