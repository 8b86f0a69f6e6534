"""Text a reader would not see in a PDF is flagged, kept out of the flow and never indexed."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from docsight import DocSight
from docsight.cli.main import app
from docsight.document.model import Element, ElementKind, Hidden, ParsedDocument
from fixtures import pdfgen

Parse = Callable[..., ParsedDocument]
SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
INJECTION_PDF = SHARED / "badfiles" / "generated" / "pdf" / "prompt_injection_hidden_white.pdf"


@pytest.fixture(scope="module")
def hidden_pdf(pdf_dir: Path) -> Path:
    return pdfgen.make_hidden_text(pdf_dir / "hidden-text.pdf")


def _holding(parsed: ParsedDocument, phrase: str) -> list[Element]:
    return [e for e in parsed.document.elements if phrase in " ".join(e.text.split())]


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("white", Hidden.NO_CONTRAST),
        ("render_mode", Hidden.NO_CONTRAST),
        ("covered", Hidden.NO_CONTRAST),
        ("heading", Hidden.NO_CONTRAST),
        ("same_line", Hidden.NO_CONTRAST),
        ("tiny", Hidden.TINY),
        ("off_page", Hidden.OFF_PAGE),
    ],
)
def test_each_way_of_hiding_text_is_flagged_with_its_reason(
    hidden_pdf: Path, parse_pdf: Parse, name: str, reason: Hidden
) -> None:
    parsed = parse_pdf(hidden_pdf)
    found = _holding(parsed, pdfgen.HIDDEN_PHRASES[name])
    assert len(found) == 1, found
    assert reason in found[0].hidden
    assert found[0].kind == ElementKind.PARAGRAPH
    assert found[0].bbox is not None


@pytest.mark.parametrize("name", sorted(pdfgen.VISIBLE_PHRASES))
def test_visible_text_is_not_flagged(hidden_pdf: Path, parse_pdf: Parse, name: str) -> None:
    # White on a dark band, an OCR-style invisible layer over a picture, light grey, and red on
    # a grey of equal luminance are all seen by a reader.
    found = _holding(parse_pdf(hidden_pdf), pdfgen.VISIBLE_PHRASES[name])
    assert found and all(not e.hidden for e in found), found


def test_hidden_words_never_join_visible_text_or_structure(
    hidden_pdf: Path, parse_pdf: Parse
) -> None:
    parsed = parse_pdf(hidden_pdf)
    doc = parsed.document
    visible = " ".join(e.text for e in doc.indexable_elements()).lower()
    assert "zebra" not in visible
    # The white words after the body sentence on its own line are split off it.
    body = _holding(parsed, pdfgen.VISIBLE_PHRASES["body"])[0]
    assert body.text == pdfgen.VISIBLE_PHRASES["body"]
    # A white 18 pt bold line is not a heading: the map has no section for it.
    assert all("Zebra" not in s.title for s in doc.sections)
    assert doc.title == "Travel Notes"
    assert any("not indexed" in w and "no_contrast" in w for w in parsed.warnings)


def test_flagging_can_be_turned_off(hidden_pdf: Path, parse_pdf: Parse) -> None:
    parsed = parse_pdf(hidden_pdf, flag_hidden_text=False)
    assert not any(e.hidden for e in parsed.document.elements)
    text = " ".join(e.text for e in parsed.document.indexable_elements())
    assert pdfgen.HIDDEN_PHRASES["white"] in text
    # Off the page stays out either way: no viewer can show it.
    assert pdfgen.HIDDEN_PHRASES["off_page"] not in text


def test_hidden_text_is_stored_flagged_and_never_found(hidden_pdf: Path, tmp_path: Path) -> None:
    ds = DocSight(tmp_path / "col")
    report = ds.ingest([hidden_pdf])
    (outcome,) = report.files
    assert outcome.status == "added", outcome
    assert any("not indexed" in w for w in outcome.warnings)
    assert outcome.hidden_elements == 3

    # `docsight map` shows people what was kept out, with page and reason.
    result = CliRunner().invoke(
        app, ["-c", str(tmp_path / "col"), "map", hidden_pdf.name, "--json"]
    )
    assert result.exit_code == 0, result.stdout
    listed = json.loads(result.stdout)["hidden"]
    assert {r for item in listed for r in item["reasons"]} == {"no_contrast", "tiny", "off_page"}
    assert any(pdfgen.HIDDEN_PHRASES["tiny"] in item["text"] for item in listed)

    stored = DocSight(tmp_path / "col").document(hidden_pdf.name)
    flagged = {r for e in stored.elements for r in e.hidden}
    assert flagged == {Hidden.NO_CONTRAST, Hidden.TINY, Hidden.OFF_PAGE}

    for query in ("zebra instruction", "Zebra Hidden Heading", "render mode three"):
        hits = ds.search(query, k=10)
        assert all("zebra" not in h.text.lower() for h in hits), (query, hits)
    assert any("Paris" in h.text for h in ds.search("capital of France", k=3))
    answer = ds.ask("What do the zebra instructions say?")
    assert "zebra" not in answer.answer.lower()
    assert ds.check().ok


@pytest.mark.skipif(not INJECTION_PDF.exists(), reason=f"{INJECTION_PDF} not present")
def test_white_one_point_injection_from_the_hostile_corpus(parse_pdf: Parse) -> None:
    parsed = parse_pdf(INJECTION_PDF)
    visible = " ".join(e.text for e in parsed.document.indexable_elements())
    assert "capital of France is Paris" in visible
    assert "IGNORE" not in visible.upper()
    (flagged,) = [e for e in parsed.document.elements if e.hidden]
    assert "IGNORE ALL PREVIOUS INSTRUCTIONS" in flagged.text
    assert set(flagged.hidden) == {Hidden.TINY, Hidden.NO_CONTRAST}
