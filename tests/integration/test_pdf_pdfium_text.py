"""Pages that draw more vector objects than are worth reading (maps, dense charts, vector art)
take their text alone from pdfium's text layer (``parsers/pdf/pdfium_objects.pdfium_glyphs``),
whichever reads the other pages' objects."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from docsight.document.model import ParsedDocument
from docsight.parsers.pdf.extract import MAX_VECTOR_OBJECTS

Parse = Callable[..., ParsedDocument]


def _heavy_page_pdf(path: Path, rotate: int = 0) -> Path:
    """One page: a heading, a paragraph hyphenated across two lines, and a grid of dots that
    puts the page over the vector limit. With ``rotate`` 90 the page is a landscape page as
    scanners and office suites write one: portrait media turned by ``/Rotate``, its content
    drawn turned the other way, so it reads upright on screen."""
    from reportlab.pdfgen.canvas import Canvas

    canvas = Canvas(str(path), pagesize=(612, 792), invariant=True)
    if rotate:
        canvas.setPageRotation(90)
        # Displayed, the page is 792 wide and 612 high; its top edge is the media's left one.
        canvas.rotate(90)
        canvas.translate(0, -612)
    canvas.setFont("Helvetica-Bold", 18)
    canvas.drawString(72, 540, "Survey of coastal lights")
    canvas.setFont("Helvetica", 11)
    canvas.drawString(72, 510, "Every station reported its visitor infor-")
    canvas.drawString(72, 496, "mation to the harbour office each evening.")
    canvas.setFillGray(0.6)
    side = int((MAX_VECTOR_OBJECTS + 200) ** 0.5) + 1
    for i in range(side):
        for j in range(side):
            canvas.rect(400 + i * 3.0, 100 + j * 3.0, 1.2, 1.2, stroke=0, fill=1)
    canvas.showPage()
    canvas.save()
    return path


@pytest.mark.parametrize("rotate", [0, 90])
def test_a_page_over_the_vector_limit_reads_its_text_from_pdfium(
    tmp_path: Path, parse_pdf: Parse, rotate: int
) -> None:
    import pypdfium2 as pdfium

    from docsight.parsers.pdf.extract import vector_objects

    path = _heavy_page_pdf(tmp_path / "heavy.pdf", rotate)
    pdf = pdfium.PdfDocument(str(path))
    try:
        assert vector_objects(pdf[0]) > MAX_VECTOR_OBJECTS
    finally:
        pdf.close()

    parsed = parse_pdf(path)
    text = "\n".join(e.text for e in parsed.document.elements)
    assert "Survey of coastal lights" in text
    # pdfium marks a hyphen that ends a line with a control code; the text keeps the hyphen,
    # so the line join undoes it as for pdfminer's pages.
    assert "visitor information to the harbour office" in text
    assert "\x02" not in text
    heading = next(e for e in parsed.document.elements if "coastal lights" in e.text)
    assert heading.kind.value in ("title", "heading")
