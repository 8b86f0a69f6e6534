"""Questions asked with an image, end to end: OCR, routing, typed parsing, three streams."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont
from typer.testing import CliRunner

from docsight import DocSight
from docsight.cli.main import app
from docsight.settings import Settings
from docsight.vision.common import ocr_available
from fixtures.corpus_fixtures import write_corpus

needs_ocr = pytest.mark.skipif(
    not ocr_available(), reason="the ocr extra (rapidocr) is not installed"
)
runner = CliRunner()


def _dialog(path: Path) -> Path:
    """A screenshot-like error dialog: a title bar, a message and an OK button."""
    image = Image.new("RGB", (640, 260), (236, 236, 236))
    draw = ImageDraw.Draw(image)
    title, body = ImageFont.load_default(size=22), ImageFont.load_default(size=26)
    draw.rectangle((0, 0, 639, 44), fill=(45, 85, 160))
    draw.text((16, 10), "Widget - Licence check", fill="white", font=title)
    draw.text((30, 80), "Error E42: licence key expired", fill=(160, 0, 0), font=body)
    draw.text((30, 125), "Renew the key to continue.", fill="black", font=body)
    draw.rectangle((500, 190, 610, 235), outline=(90, 90, 90), fill=(250, 250, 250))
    draw.text((535, 198), "OK", fill="black", font=body)
    image.save(path)
    return path


def _table(path: Path) -> Path:
    """A crop of a price table with rules."""
    image = Image.new("RGB", (560, 200), "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=26)
    rows = [["Plan", "Price per month", "Seats"], ["Basic", "$10", "1"], ["Team", "$45", "5"]]
    xs = [20, 170, 420]
    for r, row in enumerate(rows):
        y = 20 + 58 * r
        for x, cell in zip(xs, row, strict=True):
            draw.text((x, y + 12), cell, fill="black", font=font)
        draw.line((10, y, 550, y), fill="black", width=2)
    draw.line((10, 194, 550, 194), fill="black", width=2)
    image.save(path)
    return path


@pytest.fixture()
def collection(tmp_path: Path) -> Path:
    DocSight(tmp_path / "col").ingest([write_corpus(tmp_path / "corpus")])
    return tmp_path / "col"


def _keys(hits: list) -> list[tuple[str, int, str | None]]:
    return [(h.doc_name, h.page, h.chunk_id) for h in hits]


def test_a_query_without_an_image_is_plain_search(collection: Path, tmp_path: Path) -> None:
    ds = DocSight(collection)
    for unit in ("chunk", "page"):
        plain = ds.search("how long is the warranty", k=5, unit=unit)  # type: ignore[arg-type]
        same = ds.search("how long is the warranty", k=5, unit=unit, image=None)  # type: ignore[arg-type]
        assert [h.model_dump() for h in plain] == [h.model_dump() for h in same]
    # Stream A alone, even with an image, ranks exactly as text search does.
    only_a = Settings(collection_dir=collection)
    only_a.image.streams = ["A"]
    with_image = DocSight(collection, settings=only_a).search(
        "how long is the warranty", k=5, image=_dialog(tmp_path / "d.png")
    )
    assert _keys(with_image) == _keys(ds.search("how long is the warranty", k=5))


@needs_ocr
def test_the_image_finds_what_the_question_alone_does_not(collection: Path, tmp_path: Path) -> None:
    from docsight.vision.ocr import OcrEngine

    ds = DocSight(collection)
    dialog = _dialog(tmp_path / "dialog.png")
    question = "What should I do about this?"
    analysis = ds.analyze_image(dialog)
    assert analysis.routing.types, "the router always names at least one type"
    assert "E42" in analysis.symbolic
    hits = ds.search(question, k=3, image=analysis)
    assert hits[0].doc_name == "guide.md" and "E42" in hits[0].text
    assert {"stream_A", "stream_B"} <= set(hits[0].ranks)

    # Asked again, nothing is recomputed: no OCR, no parser, no router run.
    calls = OcrEngine.shared().calls
    again = DocSight(collection).analyze_image(dialog)
    assert again.warm and again.symbolic == analysis.symbolic
    assert OcrEngine.shared().calls == calls

    answer = ds.ask(question, image=dialog)
    assert answer.question == question
    assert answer.citations and answer.citations[0].doc_name == "guide.md"


@needs_ocr
def test_a_table_crop_is_read_as_a_table(collection: Path, tmp_path: Path) -> None:
    ds = DocSight(collection)
    analysis = ds.analyze_image(_table(tmp_path / "table.png"))
    assert "table" in [t.type for t in analysis.routing.types]
    table = next(t for t in analysis.typed if t.type == "table")
    assert "Team" in table.text and "$45" in table.text
    hits = ds.search("How many seats does it include?", k=3, image=analysis)
    assert "Pricing" in hits[0].section_path


@needs_ocr
def test_cli_search_and_ask_with_an_image(collection: Path, tmp_path: Path) -> None:
    dialog = _dialog(tmp_path / "dialog.png")
    base = ["--collection", str(collection)]
    result = runner.invoke(
        app, [*base, "search", "what now?", "--image", str(dialog), "-k", "2", "--json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data) == {"image", "results"} and len(data["results"]) == 2
    assert data["image"]["types"] and "E42" in data["image"]["symbolic"]

    result = runner.invoke(app, [*base, "ask", "what now?", "--image", str(dialog), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["question"] == "what now?" and data["image"]["digest"]

    result = runner.invoke(app, [*base, "search", "what now?", "--image", str(dialog)])
    assert result.exit_code == 0 and "E42" in result.stdout


def test_cli_refuses_a_bad_image_by_name(collection: Path, tmp_path: Path) -> None:
    bad = tmp_path / "screenshot.png"
    bad.write_text("not an image")
    result = runner.invoke(
        app, ["--collection", str(collection), "search", "q", "--image", str(bad), "--json"]
    )
    assert result.exit_code != 0
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "bad_query_image" and "screenshot.png" in error["message"]
