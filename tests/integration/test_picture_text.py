"""Words inside pictures on born-digital pages become searchable through OCR."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import reportlab
from PIL import Image, ImageDraw, ImageFont
from reportlab.lib.pagesizes import letter
from reportlab.lib.utils import ImageReader
from reportlab.pdfgen.canvas import Canvas

from docsight import DocSight, Settings

pytestmark = pytest.mark.slow


def _picture_of_words() -> bytes:
    font = ImageFont.truetype(str(Path(reportlab.__file__).parent / "fonts" / "Vera.ttf"), 34)
    image = Image.new("RGB", (900, 360), "white")
    draw = ImageDraw.Draw(image)
    draw.rectangle([10, 10, 890, 350], outline="navy", width=4)
    draw.text((40, 60), "Quarterly turbine output", font=font, fill="black")
    draw.text((40, 160), "Osterholz plant 412 megawatt", font=font, fill="darkred")
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def test_raster_picture_text_is_read_and_searchable(tmp_path: Path) -> None:
    pdf = tmp_path / "note.pdf"
    c = Canvas(str(pdf), pagesize=letter)
    c.setFont("Helvetica", 11)
    c.drawString(72, 720, "This note shows a screenshot of the plant dashboard below.")
    c.drawImage(ImageReader(io.BytesIO(_picture_of_words())), 72, 380, width=450, height=180)
    c.showPage()
    c.save()

    ds = DocSight(tmp_path / "col")
    report = ds.ingest([pdf])
    assert report.added, report
    figure = next(e for e in ds.document("note.pdf").elements if e.kind == "figure")
    assert figure.attrs.get("ocr") is True
    assert "Osterholz" in figure.text and "412" in figure.text
    hit = ds.search("Osterholz plant megawatt", k=1)[0]
    assert hit.kind == "figure" and hit.page == 0

    off = DocSight(tmp_path / "col2", settings=Settings(parse={"ocr": "never"}))
    off.ingest([pdf])
    figure = next(e for e in off.document("note.pdf").elements if e.kind == "figure")
    assert "Osterholz" not in figure.text
