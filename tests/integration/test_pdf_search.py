"""Search and answers over ingested PDFs: regions, figure labels, printed page numbers, renders."""

from __future__ import annotations

import io
from pathlib import Path

from PIL import Image

from docsight import DocSight


def test_table_is_found_with_its_region(pdf_collection: Path) -> None:
    hits = DocSight(pdf_collection).search(
        "widget sales by region table", k=3, doc_names=["report.pdf"]
    )
    table = next(h for h in hits if h.kind == "table")
    assert table.page == 1
    assert table.text.startswith("Table 1: Widget sales by region")
    assert "| --- |" in table.text
    assert table.bbox is not None and 0.05 < table.bbox.y0 < table.bbox.y1 < 0.7


def test_figure_labels_are_searchable(pdf_collection: Path) -> None:
    hits = DocSight(pdf_collection).search("North bars South bars", k=3)
    figure = hits[0]
    assert figure.kind == "figure" and figure.page == 2 and figure.doc_name == "report.pdf"
    assert "Figure 2" in figure.text


def test_printed_page_numbers_resolve_page_references(pdf_collection: Path) -> None:
    ds = DocSight(pdf_collection)
    survey = ds.document("numbered.pdf")
    assert [p.labels for p in survey.pages] == [[], ["1"], ["2"], ["3"], ["4"]]
    hits = ds.search("What is described on page 2?", k=3, doc_names=["numbered.pdf"], unit="page")
    # printed "2" is the third physical page (rail sidings), the physical second page comes next
    assert [h.page for h in hits[:2]] == [2, 1]
    assert "rail sidings" in hits[0].text.lower()
    assert hits[0].ranks.get("locate") == 1
    cover = ds.search("What is on the cover?", k=1, doc_names=["numbered.pdf"], unit="page")
    assert cover[0].page == 0


def test_page_renders_are_kept_for_citations(pdf_collection: Path) -> None:
    png = DocSight(pdf_collection).page_image("report.pdf", 1)
    assert png is not None
    image = Image.open(io.BytesIO(png))
    assert image.format == "PNG" and image.width > 500 and image.height > image.width


def test_answer_cites_the_page_and_region(pdf_collection: Path) -> None:
    answer = DocSight(pdf_collection).ask("Which sales channels are widgets sold through?")
    assert answer.answerable
    cited = answer.citations[0]
    assert cited.doc_name == "report.pdf" and cited.page == 0
    assert cited.bbox is not None
    assert "Online orders" in answer.answer or "Resellers" in answer.answer
