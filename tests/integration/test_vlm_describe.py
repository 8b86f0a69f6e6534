"""Ingestion-time descriptions from a vision model, over real HTTP to a scripted endpoint."""

from __future__ import annotations

import io
import json
from pathlib import Path

from PIL import Image, ImageDraw

from docsight.document import BBox, ElementKind
from docsight.document.builder import DocumentBuilder
from docsight.document.model import ParsedDocument
from docsight.document.stream import ElementSink
from docsight.ingest.describe import enrich
from docsight.ingest.streamed import StreamedParse
from docsight.ingest.vlm import VisionDescriber
from docsight.llm.client import OpenAIChatClient
from docsight.parsers.base import ParseContext
from docsight.settings import ParseSettings, VLMSettings
from fixtures.fake_llm import FakeLLM, error, ok


def _png(color: str, size: tuple[int, int] = (320, 200)) -> bytes:
    image = Image.new("RGB", size, color)
    ImageDraw.Draw(image).rectangle([20, 20, 120, 180], fill="navy")
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def _deck(sink: ElementSink | None = None, *, elements: bool = True) -> ParsedDocument:
    """A two-page deck; with a ``sink``, its elements stream there page by page."""
    b = DocumentBuilder(
        doc_id="a" * 32,
        name="deck.pdf",
        source="/deck.pdf",
        media_type="application/pdf",
        sha256="a" * 64,
        parser="t/1",
    )
    if sink is not None:
        b.stream(sink)
    for i in range(2):
        b.add_page(612, 792)  # portrait and wordy-looking: offline, this reads as a report
        b.set_page_image(
            i, b.add_asset("page", "image/png", _png("white" if i else "ivory"), 320, 200)
        )
    crop = b.add_asset("crop", "image/png", _png("lightyellow"), 320, 200)
    if elements:
        b.add(ElementKind.HEADING, "Market share", page=0, level=1)
        box = BBox(x0=0.1, y0=0.2, x1=0.9, y1=0.8)
        b.add(ElementKind.FIGURE, "", page=0, image_id=crop, bbox=box)
        b.flush()
        b.add(ElementKind.HEADING, "Outlook", page=1, level=1)
    return b.build()


def _streamed(fake: FakeLLM, spool: Path, waits: list[bool]) -> StreamedParse:
    """The sink a worker gives a streamed parse, with the vision model."""
    return StreamedParse(
        Path("/deck.pdf"),
        str(spool),
        media_type="application/pdf",
        settings=ParseSettings(ocr="never"),
        context=ParseContext(vlm=_describer(fake)),
        budget=lambda pictures: None,
        vision_wait=waits.append,
    )


def _describer(fake: FakeLLM, **fields: object) -> VisionDescriber:
    settings = VLMSettings(
        model="vision", base_url=fake.base_url, cache=False, max_retries=0, **fields
    )
    return VisionDescriber(OpenAIChatClient(settings), settings)


def test_vision_model_sets_layout_and_describes_pictures_and_pages(fake_llm: FakeLLM) -> None:
    fake_llm.script(
        ok(json.dumps({"layout": "horizontal"})),
        ok(
            json.dumps(
                {"picture_class": "chart", "description": "Bar chart: Acme 42%, Globex 31%."}
            )
        ),
        ok(json.dumps({"description": "Slide one: market share by vendor."})),
        ok(json.dumps({"description": "Slide two: outlook."})),
    )
    parsed = _deck()
    assert parsed.document.layout == "vertical"
    enrich(parsed, _describer(fake_llm))
    doc = parsed.document
    assert doc.layout == "horizontal"
    figure = next(e for e in doc.elements if e.kind == ElementKind.FIGURE)
    assert figure.attrs == {**figure.attrs, "picture_class": "chart", "described_by": "vlm"}
    assert figure.attrs["description"] == "Bar chart: Acme 42%, Globex 31%."
    assert [p.description for p in doc.pages] == [
        "Slide one: market share by vendor.",
        "Slide two: outlook.",
    ]
    first = fake_llm.chat_requests[0].body["messages"][1]["content"]
    images = [part for part in first if part["type"] == "image_url"]
    assert len(images) == 2 and images[0]["image_url"]["url"].startswith("data:image/png;base64,")
    assert parsed.warnings == []


def test_a_streamed_parse_asks_the_vision_model_what_enrich_asks(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    """A worker's streamed parse describes batch by batch and decides the page descriptions
    once the layout is known: the same answers land where ``enrich`` puts them."""
    fake_llm.script(
        ok(json.dumps({"layout": "horizontal"})),
        ok(json.dumps({"picture_class": "chart", "description": "Bar chart: Acme 42%."})),
        ok(json.dumps({"description": "Slide one."})),
        ok(json.dumps({"description": "Slide two."})),
    )
    waits: list[bool] = []
    stream = _streamed(fake_llm, tmp_path, waits)
    windows = stream.finish(_deck(stream))
    parsed, _ = windows.whole()
    doc = parsed.document
    assert doc.layout == "horizontal"
    figure = next(e for e in doc.elements if e.kind == ElementKind.FIGURE)
    assert figure.attrs["description"] == "Bar chart: Acme 42%."
    assert figure.attrs["described_by"] == "vlm"
    assert [p.description for p in doc.pages] == ["Slide one.", "Slide two."]
    # The job's clock paused around each wait for the model, and started again.
    assert waits and waits == [True, False] * (len(waits) // 2)
    assert parsed.warnings == [] and len(fake_llm.chat_requests) == 4
    windows.discard()


def test_a_streamed_document_without_elements_still_gets_the_models_layout(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    fake_llm.script(
        ok(json.dumps({"layout": "horizontal"})),
        ok(json.dumps({"description": "A blank slide."})),
        ok(json.dumps({"description": "Another."})),
    )
    stream = _streamed(fake_llm, tmp_path, [])
    windows = stream.finish(_deck(stream, elements=False))
    assert windows.n_elements == 0 and windows.head.document.layout == "horizontal"
    assert [p.description for p in windows.head.document.pages] == ["A blank slide.", "Another."]
    windows.discard()


def test_failures_keep_offline_descriptions_and_warn(fake_llm: FakeLLM) -> None:
    fake_llm.script(error(500), error(500), error(500), error(500))
    parsed = _deck()
    enrich(parsed, _describer(fake_llm))
    figure = next(e for e in parsed.document.elements if e.kind == ElementKind.FIGURE)
    assert figure.attrs["description"].startswith(("Picture on page 1", "Chart on page 1"))
    assert "described_by" not in figure.attrs
    assert parsed.document.layout == "vertical"
    assert any("vision model failed" in w for w in parsed.warnings)


def test_call_budget_per_document(fake_llm: FakeLLM) -> None:
    fake_llm.script(ok(json.dumps({"layout": "vertical"})))
    enrich(_deck(), _describer(fake_llm, max_calls_per_document=1))
    assert len(fake_llm.chat_requests) == 1


def test_tables_get_a_model_summary_before_their_rows(fake_llm: FakeLLM) -> None:
    b = DocumentBuilder(
        doc_id="b" * 32,
        name="t.md",
        source="/t.md",
        media_type="text/markdown",
        sha256="b" * 64,
        parser="t/1",
    )
    b.add_page()
    b.add(
        ElementKind.TABLE, "x", page=0, markdown="| Plan | Price |\n| --- | --- |\n| Team | $45 |"
    )
    parsed = b.build()
    fake_llm.script(ok(json.dumps({"description": "Prices of the plans."})))
    enrich(parsed, _describer(fake_llm))
    table = parsed.document.elements[0]
    assert (
        table.attrs["description"]
        == "Prices of the plans. Table. Columns: Plan, Price. Team: Price $45."
    )
    prompt = fake_llm.chat_requests[0].body["messages"][1]["content"][0]["text"]
    assert "| Team | $45 |" in prompt and "<context>" in prompt
