"""Vision components without models: HTML → rows, boxes, images, block assembly, caching, and
how scanned PDF pages are wired into the PDF passes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from docsight.cache import JsonCache
from docsight.document.model import ElementKind
from docsight.errors import MissingDependencyError
from docsight.parsers.pdf.layout import Word, group_lines
from docsight.parsers.pdf.page import Atom, Page
from docsight.parsers.pdf.reading import Block as LineBlock
from docsight.parsers.pdf.roles import Role
from docsight.parsers.pdf.scan import apply_hints, layout_scanned, wants_ocr
from docsight.parsers.raster.assemble import assemble_blocks, merge_lists
from docsight.parsers.raster.page import is_blank, measure_ink, working_image
from docsight.settings import ParseSettings
from docsight.vision.common import (
    Block,
    Ink,
    OcrLine,
    PageLine,
    Region,
    flatten_image,
    pixel_digest,
    to_rgb_array,
)
from docsight.vision.ocr import OcrEngine
from docsight.vision.tables import html_to_rows

W, H = 1200, 1600  # a synthetic page, pixels


def ln(text: str, x0: float, y0: float, x1: float | None = None, h: float = 30) -> OcrLine:
    """An OCR line of body height ``h`` whose width follows its text (~14 px a character)."""
    return OcrLine(text, (x0, y0, x1 if x1 is not None else x0 + 14 * len(text), y0 + h), 0.98)


def kinds(blocks: list[Block]) -> list[tuple[ElementKind, str]]:
    return [(b.kind, b.text) for b in blocks]


# --- HTML → rows --------------------------------------------------------------------------------


def test_html_to_rows_plain_table() -> None:
    html = (
        "<html><body><table><thead><tr><th>A</th><th> B </th></tr></thead>"
        "<tbody><tr><td>1</td><td>2\n3</td></tr></tbody></table></body></html>"
    )
    assert html_to_rows(html) == [["A", "B"], ["1", "2 3"]]


def test_html_to_rows_expands_spans() -> None:
    html = """<table>
      <tr><td rowspan="2">Region</td><td colspan="2">Sales</td></tr>
      <tr><td>Q1</td><td>Q2</td></tr>
      <tr><td>North</td><td>1</td><td>2</td></tr>
    </table>"""
    assert html_to_rows(html) == [
        ["Region", "Sales", "Sales"],
        ["Region", "Q1", "Q2"],
        ["North", "1", "2"],
    ]


def test_html_to_rows_ragged_nested_and_hostile() -> None:
    ragged = "<table><tr><td>a</td></tr><tr><td>b</td><td>c</td></tr></table>"
    assert html_to_rows(ragged) == [["a", ""], ["b", "c"]]
    nested = "<table><tr><td>x<table><tr><td>inner</td></tr></table></td><td>y</td></tr></table>"
    assert html_to_rows(nested) == [["x inner", "y"]]
    huge = '<table><tr><td colspan="999999" rowspan="abc">z</td></tr></table>'
    assert html_to_rows(huge) == [["z"] * 100]
    assert html_to_rows("") == []
    assert html_to_rows("<p>no table</p>") == []
    assert html_to_rows("<table></table>") == []


# --- boxes and images ----------------------------------------------------------------------------


def test_ocr_line_round_trip_and_orientation() -> None:
    line = OcrLine("Elevation (ft)", (50.0, 379.0, 96.0, 628.0), 0.99)
    assert OcrLine.from_json(line.to_json()) == line
    assert line.vertical
    assert not OcrLine("I", (0, 0, 10, 40), 0.9).vertical  # one tall glyph is not a column
    region = Region("table", (1.0, 2.0, 3.0, 4.0), 0.9)
    assert Region.from_json(region.to_json()) == region


def test_block_scaled_scales_every_box() -> None:
    pl = PageLine("x", (10, 20, 30, 40), 0.9, size=10)
    block = Block(ElementKind.PARAGRAPH, "x", (10, 20, 30, 40), lines=[pl]).scaled(2.0)
    assert block.box == (20, 40, 60, 80)
    assert block.lines[0].box == (20, 40, 60, 80) and block.lines[0].size == 20


def test_working_image_downscales_and_reports_the_factor() -> None:
    arr, factor = working_image(Image.new("L", (4400, 1000), 255), max_side=2200)
    assert arr.shape == (500, 2200, 3) and factor == pytest.approx(2.0)
    arr, factor = working_image(Image.new("RGB", (100, 50)))
    assert arr.shape == (50, 100, 3) and factor == 1.0


def test_flatten_image_handles_alpha_and_high_bit_depth() -> None:
    clear = Image.new("RGBA", (4, 4), (0, 0, 0, 0))
    assert flatten_image(clear).getpixel((0, 0)) == (255, 255, 255)
    deep = Image.fromarray(np.array([[0, 1000], [2000, 4000]], dtype=np.uint16))
    out = to_rgb_array(deep)
    assert out.dtype == np.uint8 and out[0, 0, 0] == 0 and out[1, 1, 0] == 255
    assert to_rgb_array(np.zeros((3, 5), dtype=np.uint8)).shape == (3, 5, 3)


def test_pixel_digest_depends_on_shape_and_content() -> None:
    a = np.zeros((2, 6, 3), dtype=np.uint8)
    assert pixel_digest(a) != pixel_digest(a.reshape(4, 3, 3))
    b = a.copy()
    b[0, 0, 0] = 1
    assert pixel_digest(a) != pixel_digest(b) and pixel_digest(a) == pixel_digest(a.copy())


def test_is_blank() -> None:
    page = np.full((400, 300, 3), 250, dtype=np.uint8)
    assert is_blank(page)
    page[100:110, 50:200] = 0  # one line of "text"
    assert not is_blank(page)


def test_measure_ink_stroke_width_and_core_height() -> None:
    img = np.full((100, 400, 3), 255, dtype=np.uint8)
    for x in range(10, 190, 12):
        img[20:50, x : x + 2] = 0  # thin strokes
    for x in range(10, 190, 36):
        img[12:20, x : x + 2] = 0  # sparse "ascenders"
    for x in range(210, 390, 12):
        img[20:50, x : x + 6] = 0  # thick strokes
    thin, thick = measure_ink(
        img, [OcrLine("thin", (5, 5, 195, 55), 1), OcrLine("thick", (205, 5, 395, 55), 1)]
    )
    assert thin.stroke == pytest.approx(2, abs=0.5) and thick.stroke == pytest.approx(6, abs=0.5)
    assert thin.core == 30 and thick.core == 30  # the ascenders do not count


# --- block assembly ------------------------------------------------------------------------------


def test_text_only_page_headings_paragraphs_and_furniture() -> None:
    lines = [
        ln("Annual Report", 100, 100, h=60),
        ln("This is the first paragraph of the page and it runs on.", 100, 200),
        ln("It has a second line that ends the paragraph here.", 100, 232),
        ln("Results", 100, 320, h=42),
        ln("A second paragraph follows the heading and says more.", 100, 380),
        ln("7", 590, 1540, h=28),
    ]
    blocks = assemble_blocks(lines, [], (W, H))
    assert kinds(blocks) == [
        (ElementKind.TITLE, "Annual Report"),
        (
            ElementKind.PARAGRAPH,
            "This is the first paragraph of the page and it runs on. It has a second line "
            "that ends the paragraph here.",
        ),
        (ElementKind.HEADING, "Results"),
        (ElementKind.PARAGRAPH, "A second paragraph follows the heading and says more."),
        (ElementKind.FOOTER, "7"),
    ]
    assert blocks[2].level == 1
    assert blocks[1].score == pytest.approx(0.98)


def test_bold_heading_at_body_size_needs_stroke_weights() -> None:
    lines = [
        ln("Method", 100, 100),
        ln("We measured everything twice and wrote the numbers down.", 100, 140),
    ]
    plain = assemble_blocks(lines, [], (W, H))
    assert [b.kind for b in plain] == [ElementKind.PARAGRAPH]  # nothing sets the line apart
    bold = assemble_blocks(lines, [], (W, H), ink=[Ink(6.0), Ink(3.0)])
    assert kinds(bold)[0] == (ElementKind.HEADING, "Method")


def test_two_columns_read_column_by_column() -> None:
    left = [ln(f"left column line {k} of text", 100, 100 + 32 * k, 520) for k in range(4)]
    right = [ln(f"right column line {k} of text", 640, 100 + 32 * k, 1060) for k in range(4)]
    blocks = assemble_blocks(right + left, [], (W, H))
    assert [b.text.split()[0] for b in blocks] == ["left", "right"]


def test_table_region_uses_the_structure_engine_and_keeps_its_lines() -> None:
    cells = [
        ln("Name", 110, 410), ln("Qty", 400, 410),
        ln("Bolts", 110, 450), ln("12", 400, 450),
        ln("Nuts", 110, 490), ln("30", 400, 490),
    ]  # fmt: skip
    lines = [ln("Parts on hand are listed below in the table.", 100, 340), *cells]
    lines.append(ln("Table 2: Parts.", 100, 560))
    regions = [Region("table", (100, 400, 600, 530), 0.95)]
    seen: list[tuple[Any, list[OcrLine]]] = []

    def table_rows(box: Any, inner: list[OcrLine]) -> list[list[str]]:
        seen.append((box, inner))
        return [["Name", "Qty"], ["Bolts", "12"], ["Nuts", "30"]]

    blocks = assemble_blocks(lines, regions, (W, H), table_rows=table_rows)
    assert [b.kind for b in blocks] == [
        ElementKind.PARAGRAPH,
        ElementKind.TABLE,
        ElementKind.CAPTION,
    ]
    table = blocks[1]
    assert table.rows == [["Name", "Qty"], ["Bolts", "12"], ["Nuts", "30"]]
    assert table.text == "Name | Qty\nBolts | 12\nNuts | 30"
    assert table.markdown is not None and table.markdown.startswith("| Name | Qty |")
    assert len(seen) == 1 and {x.text for x in seen[0][1]} == {c.text for c in cells}


def test_table_falls_back_to_the_whitespace_grid() -> None:
    cells = [ln(t, x, y) for y, row in ((410, ("A", "B")), (450, ("1", "2"))) for x, t in
             zip((110, 400), row, strict=True)]  # fmt: skip
    regions = [Region("table", (100, 400, 600, 490), 0.95)]
    blocks = assemble_blocks(cells, regions, (W, H), table_rows=lambda box, inner: [["junk"]])
    assert [(b.kind, b.rows) for b in blocks] == [(ElementKind.TABLE, [["A", "B"], ["1", "2"]])]
    # A "table" holding a single line is text after all.
    one = assemble_blocks([ln("Just a sentence.", 110, 410)], regions, (W, H))
    assert kinds(one) == [(ElementKind.PARAGRAPH, "Just a sentence.")]


def test_figure_labels_and_full_page_figures() -> None:
    lines = [
        ln("Sales by year", 100, 100, h=40),
        ln("2019", 150, 700), ln("2020", 350, 700), ln("Revenue", 120, 400),
        ln("Figure 3: Sales grew every year.", 100, 800),
    ]  # fmt: skip
    regions = [Region("figure", (100, 300, 700, 760), 0.9)]
    blocks = assemble_blocks(lines, regions, (W, H))
    assert [b.kind for b in blocks] == [
        ElementKind.HEADING,
        ElementKind.FIGURE,
        ElementKind.CAPTION,
    ]
    assert blocks[1].text == "Revenue\n2019\n2020"
    # A figure as large as the page is the page itself (a photo of a slide): text stays text.
    page_figure = [Region("figure", (0, 0, W, H), 0.9)]
    blocks = assemble_blocks(lines, page_figure, (W, H))
    assert ElementKind.FIGURE not in [b.kind for b in blocks]


def test_text_regions_split_paragraphs_and_weak_caption_labels() -> None:
    lines = [
        ln("First paragraph that the layout model marks as one text region.", 100, 100),
        ln("Second paragraph directly below it without any extra spacing.", 100, 131),
    ]
    regions = [
        Region("text", (90, 95, 1100, 130), 0.9),
        Region("table_caption", (90, 131, 1100, 165), 0.8),
    ]
    blocks = assemble_blocks(lines, regions, (W, H))
    # Two blocks, and the second stays a paragraph: a caption label far from any table is noise.
    assert [b.kind for b in blocks] == [ElementKind.PARAGRAPH, ElementKind.PARAGRAPH]
    assert [b.label for b in blocks] == ["text", "table_caption"]


def test_list_items_merge_into_one_list() -> None:
    lines = [
        ln("Steps:", 100, 100),
        ln("• unpack the box", 100, 140),
        ln("• plug it in", 100, 180),
        ln("1. switch it on", 100, 220),
    ]
    blocks = merge_lists(assemble_blocks(lines, [], (W, H)))
    assert [b.kind for b in blocks] == [ElementKind.PARAGRAPH, ElementKind.LIST]
    assert blocks[1].text == "unpack the box\nplug it in\nswitch it on"
    assert blocks[1].markdown == "- unpack the box\n- plug it in\n1. switch it on"


def test_assembly_of_nothing() -> None:
    assert assemble_blocks([], [], (W, H)) == []
    assert assemble_blocks([OcrLine("  ", (0, 0, 5, 5), 0.9)], [], (W, H)) == []


# --- engines: caching, missing extra, lazy imports -----------------------------------------------


class _FakeOcr:
    def __call__(self, arr: np.ndarray) -> Any:
        from types import SimpleNamespace

        return SimpleNamespace(
            boxes=[[[10, 10], [90, 10], [90, 30], [10, 30]]], txts=("hello  world",), scores=(0.97,)
        )


def test_ocr_engine_caches_by_pixels(tmp_path: Path) -> None:
    engine = OcrEngine()
    engine._model = _FakeOcr()
    cache = JsonCache(tmp_path / "c.sqlite")
    image = np.full((40, 100, 3), 255, dtype=np.uint8)
    first = engine.recognize(image, cache)
    assert first == [OcrLine("hello world", (10.0, 10.0, 90.0, 30.0), 0.97)]
    assert engine.recognize(image.copy(), cache) == first
    assert engine.calls == 1
    image[0, 0] = 0
    engine.recognize(image, cache)
    assert engine.calls == 2
    assert cache.count(engine.namespace) == 2
    assert engine.namespace.startswith("ocr/rapidocr-")


def test_ocr_settings_reach_rapidocr_and_the_cache_key(monkeypatch: pytest.MonkeyPatch) -> None:
    from docsight.cache import content_key
    from docsight.vision import ocr

    engine = OcrEngine()
    params = engine.rapidocr_params()
    # Detection is limited on the longest side and never upscales; crops pad to REC_WIDTH.
    assert params["Det.limit_type"] == "max"
    assert params["Det.limit_side_len"] == ocr.DET_SIDE < ocr.MAX_SIDE
    assert params["Rec.rec_img_shape"] == [3, 48, ocr.REC_WIDTH]
    assert params["Rec.rec_batch_num"] == ocr.REC_BATCH
    assert params["Global.use_cls"] is False
    key = content_key("pixels", engine.params)
    monkeypatch.setattr(ocr, "DET_SIDE", ocr.DET_SIDE + 32)
    moved_det = content_key("pixels", engine.params)
    monkeypatch.setattr(ocr, "REC_WIDTH", ocr.REC_WIDTH * 2)
    moved_rec = content_key("pixels", engine.params)
    monkeypatch.setattr(ocr, "REC_BATCH", ocr.REC_BATCH + 5)
    moved_batch = content_key("pixels", engine.params)
    # Cached reads of other settings are not reused.
    assert len({key, moved_det, moved_rec, moved_batch}) == 4


def test_missing_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import docsight.vision.common as common

    def fail(name: str) -> Any:
        raise ImportError(f"No module named {name!r}")

    monkeypatch.setattr(common.importlib, "import_module", fail)
    with pytest.raises(MissingDependencyError) as info:
        OcrEngine().recognize(np.zeros((20, 20, 3), dtype=np.uint8))
    assert info.value.extra == "ocr" and "docsight[ocr]" in info.value.message


def test_importing_vision_loads_no_model_library() -> None:
    code = (
        "import sys\n"
        "import docsight.vision, docsight.parsers.raster.page, docsight.parsers.image\n"
        "import docsight.parsers.pdf\n"
        "heavy = [m for m in ('rapidocr', 'rapid_layout', 'rapid_table', 'cv2', 'onnxruntime')"
        " if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# --- scanned PDF pages in the PDF passes ---------------------------------------------------------


def test_wants_ocr() -> None:
    assert wants_ocr(ParseSettings(), 0) and not wants_ocr(ParseSettings(), 500)
    assert wants_ocr(ParseSettings(ocr="always"), 500)
    assert not wants_ocr(ParseSettings(ocr="never"), 0)
    assert not wants_ocr(ParseSettings(ocr_min_chars=0), 0)


def _block(text: str, top: float, size: float = 10.0) -> LineBlock:
    return LineBlock(group_lines([Word(text, 72, top, 300, top + size * 1.2, size, "ocr")]))


def test_scanned_page_layout_drops_furniture_lines_and_decoration() -> None:
    page = Page(0, 612, 792, scanned=True)
    body, header = _block("Body text here", 100), _block("Running head", 20)
    figure = Atom(ElementKind.FIGURE, 100, 300, 400, 500)
    logo = Atom(ElementKind.FIGURE, 10, 10, 50, 50)
    page.units = [header, body, figure, logo]
    page.lines = [*header.lines, *body.lines]
    page.atoms = [figure]  # the logo was dropped as decoration
    layout_scanned(page, {0: "header"})
    assert page.units == [body, figure]
    assert page.furniture == {0: "header"}


def test_hints_override_roles_with_document_wide_levels() -> None:
    pages = []
    big = [_block("Chapter One", 50, 20), _block("Chapter Two", 50, 19)]
    small = _block("Details", 200, 10.5)
    para = _block("Prose " * 10, 300)
    for k, units in enumerate([[big[0], small, para], [big[1]]]):
        page = Page(k, 612, 792, scanned=True)
        page.units = list(units)
        pages.append(page)
    pages[0].hints = {
        id(big[0]): (ElementKind.TITLE, None),
        id(small): (ElementKind.HEADING, 1),
        id(para): (ElementKind.PARAGRAPH, None),
    }
    pages[1].hints = {id(big[1]): (ElementKind.HEADING, 1)}
    roles = {id(para): Role(ElementKind.HEADING, 2)}  # the font-based guess loses
    apply_hints(pages, roles)
    assert roles[id(para)] == Role(ElementKind.PARAGRAPH)
    # Equal sizes on different pages share a level; bold-at-body-size headings go below.
    assert roles[id(big[0])] == roles[id(big[1])] == Role(ElementKind.HEADING, 1)
    assert roles[id(small)] == Role(ElementKind.HEADING, 2)
    roles = {id(big[0]): Role(ElementKind.TITLE)}
    apply_hints(pages, roles)
    assert roles[id(big[0])] == Role(ElementKind.TITLE)
