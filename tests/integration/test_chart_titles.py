"""A chart's title above the chart is its caption, not a section heading (issue 13).

Survey reports set a bold title and a small subtitle over every chart. Read as headings, they cut
the text into one section per chart: citations then name the chart instead of the topic, and the
map lists every figure "with no caption".
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from docsight.document.map import document_map
from docsight.document.model import ElementKind, ParsedDocument
from fixtures import pdfgen
from fixtures.pdfgen import CHART_SECTIONS, CHART_TITLES


@pytest.fixture(scope="module")
def chart_report(
    tmp_path_factory: pytest.TempPathFactory, parse_pdf: Callable[..., ParsedDocument]
) -> ParsedDocument:
    path = pdfgen.make_chart_report(tmp_path_factory.mktemp("charts") / "survey.pdf")
    return parse_pdf(path, render_pages=False)


def test_sections_are_the_real_headings_only(chart_report: ParsedDocument) -> None:
    doc = chart_report.document
    assert [s.title for s in doc.sections] == list(CHART_SECTIONS)
    headings = [e.text for e in doc.elements if e.kind == ElementKind.HEADING]
    assert headings == list(CHART_SECTIONS)


def test_chart_titles_are_captions_with_their_subtitle(chart_report: ParsedDocument) -> None:
    captions = [e for e in chart_report.document.elements if e.kind == ElementKind.CAPTION]
    assert [c.text.split(" % ")[0] for c in captions] == list(CHART_TITLES)
    # The subtitle says what the numbers are: it belongs to the caption.
    assert captions[0].text.endswith("% who say the harbour project has ... local shops")


def test_the_pictured_chart_is_listed_with_its_title(chart_report: ParsedDocument) -> None:
    data = document_map(chart_report.document)
    (section,) = [s for s in data["sections"] if s["title"] == CHART_SECTIONS[0]]
    figures = [a for a in section["artifacts"] if a["kind"] == "figure"]
    assert len(figures) == 1 and figures[0]["caption"].startswith(CHART_TITLES[0])


def test_text_after_a_chart_stays_in_its_section(chart_report: ParsedDocument) -> None:
    doc = chart_report.document
    titles = {s.id: s.title for s in doc.sections}
    for phrase in ("Shop owners agree", "Older residents worry"):
        (element,) = [e for e in doc.elements if e.text.startswith(phrase)]
        assert titles[element.section_id] == CHART_SECTIONS[0], phrase


def test_a_heading_over_body_text_stays_a_heading(report_pdf: Path, parse_pdf: Callable) -> None:
    # The report fixture has a figure right under "2 Results"' table and captions "Figure N:".
    doc = parse_pdf(report_pdf, render_pages=False).document
    assert [e.text for e in doc.elements if e.kind == ElementKind.HEADING] == [
        "1 Introduction",
        "1.1 Background",
        "2 Results",
        "3 Discussion",
        "3.1 Limits",
    ]
