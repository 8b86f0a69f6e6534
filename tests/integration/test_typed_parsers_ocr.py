"""Typed parsers on rendered images read by the real OCR, and the vision-model parsers and
captioner over real HTTP to the scripted endpoint (with their fallback to the offline ones)."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont

from docsight.llm.client import OpenAIChatClient
from docsight.query.image import QueryImage, Routing, TypeScore, load_query_image
from docsight.query.typed import create_captioner, create_parsers
from docsight.query.typed.offline import (
    OfflineChartParser,
    OfflineCodeParser,
    OfflineScreenshotParser,
    OfflineTableParser,
)
from docsight.settings import ImageQuerySettings
from docsight.vision.common import ocr_available
from fixtures.fake_llm import FakeLLM, error, ok
from fixtures.llm_fixtures import llm_settings

needs_ocr = pytest.mark.skipif(
    not ocr_available(), reason="the ocr extra is not installed (pip install 'docsight[ocr]')"
)

CATEGORIES = ["Americas", "Europe", "Asia"]
VALUES = [42, 31, 18]
CODE = [
    "def total(items):",
    "    result = 0",
    "    for item in items:",
    "        if item.price > 0:",
    "            result += item.price",
    "    return result",
]


def _font(family: str, size: int) -> ImageFont.FreeTypeFont:
    from matplotlib import font_manager

    path = font_manager.findfont(font_manager.FontProperties(family=family))
    return ImageFont.truetype(path, size)


def _png(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def _bar_chart() -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.6), dpi=110)
    bars = ax.bar(CATEGORIES, VALUES, color="#3b6ea8")
    ax.bar_label(bars, fontsize=11)
    ax.set_title("Revenue by segment, 2023", fontsize=14)
    ax.set_yticks([0, 10, 20, 30, 40, 50])
    ax.spines[["top", "right"]].set_visible(False)
    out = io.BytesIO()
    fig.savefig(out, format="png")
    plt.close(fig)
    return out.getvalue()


def _code() -> bytes:
    font = _font("DejaVu Sans Mono", 20)
    image = Image.new("RGB", (560, 40 + 32 * len(CODE)), "white")
    draw = ImageDraw.Draw(image)
    for k, line in enumerate(CODE):
        draw.text((20, 20 + 32 * k), line, font=font, fill="black")
    return _png(image)


TABLE = [
    ["Station", "Region", "Visitors"],
    ["North Point", "Highland", "1250"],
    ["Gull Rock", "Coastal", "980"],
    ["Eastern Cape", "Lowland", "2140"],
]


def _table() -> bytes:
    font = _font("DejaVu Sans", 20)
    widths, row_h = [190, 160, 130], 44
    image = Image.new("RGB", (sum(widths) + 40, row_h * len(TABLE) + 40), "white")
    draw = ImageDraw.Draw(image)
    for r, row in enumerate(TABLE):
        x = 20
        for c, cell in enumerate(row):
            y = 20 + r * row_h
            draw.rectangle([x, y, x + widths[c], y + row_h], outline="black", width=1)
            draw.text((x + 10, y + 10), cell, font=font, fill="black")
            x += widths[c]
    return _png(image)


def _dialog() -> bytes:
    font, bold = _font("DejaVu Sans", 18), _font("DejaVu Sans", 20)
    image = Image.new("RGB", (620, 300), (236, 236, 236))
    draw = ImageDraw.Draw(image)
    draw.rectangle([0, 0, 620, 40], fill=(40, 70, 130))
    draw.text((14, 8), "Backup Utility", font=bold, fill="white")
    draw.text((20, 64), "File name:", font=font, fill="black")
    draw.rectangle([140, 58, 560, 92], fill="white", outline=(120, 120, 120))
    draw.text((150, 64), "weekly-archive.zip", font=font, fill="black")
    draw.text((20, 130), "Error 0x80070005: Access is denied.", font=bold, fill=(170, 0, 0))
    draw.text((20, 166), "The backup could not be written to the network drive.", font=font)
    for x, label in ((380, "OK"), (480, "Cancel")):
        draw.rectangle([x, 236, x + 90, 276], fill="white", outline=(120, 120, 120))
        draw.text((x + 18, 246), label, font=font, fill="black")
    return _png(image)


@pytest.fixture(scope="module")
def images() -> dict[str, QueryImage]:
    """The rendered images, loaded (and OCR'd when the extra is installed) once."""
    made: dict[str, Callable[[], bytes]] = {
        "chart": _bar_chart,
        "code": _code,
        "table": _table,
        "dialog": _dialog,
    }
    return {k: load_query_image(make(), ocr=ocr_available()) for k, make in made.items()}


# --- offline parsers on real OCR ----------------------------------------------------------------


@needs_ocr
def test_bar_chart_values_title_and_ticks(images: dict[str, QueryImage]) -> None:
    result = OfflineChartParser().parse(images["chart"])
    assert result is not None
    f = result.fields
    assert f["title"] == "Revenue by segment, 2023"
    assert [(v["category"], v["value"]) for v in f["values"]] == list(
        zip(CATEGORIES, map(str, VALUES), strict=True)
    )
    assert {"0", "10", "20", "30", "40"} <= set(f["y_ticks"])
    assert "| Americas | 42 |" in result.text


@needs_ocr
def test_code_language_and_indentation(images: dict[str, QueryImage]) -> None:
    result = OfflineCodeParser().parse(images["code"])
    assert result is not None
    assert result.fields["language"] == "python"
    lines = result.fields["source"].splitlines()
    assert len(lines) == len(CODE)
    # OCR may misread a character; the layout is what is checked.
    indents = [len(x) - len(x.lstrip()) for x in lines]
    assert indents == [len(x) - len(x.lstrip()) for x in CODE]
    assert lines[0].startswith("def total") and lines[-1].strip().startswith("return")


@needs_ocr
def test_table_rows_from_the_structure_engine(images: dict[str, QueryImage]) -> None:
    result = OfflineTableParser().parse(images["table"])
    assert result is not None
    assert result.fields["header"] == TABLE[0]
    assert result.fields["rows"] == TABLE[1:]
    assert "| Gull Rock | Coastal | 980 |" in result.text


@needs_ocr
def test_dialog_error_code_field_and_buttons(images: dict[str, QueryImage]) -> None:
    result = OfflineScreenshotParser().parse(images["dialog"])
    assert result is not None
    f = result.fields
    assert f["title"] == "Backup Utility"
    assert any("Access is denied" in e for e in f["errors"])
    assert "0x80070005" in f["codes"]
    assert "File name" in f["fields"]
    assert {"OK", "Cancel"} <= set(f["buttons"])
    assert result.text.startswith("Errors: Error 0x80070005")


# --- vision-model parsers and captioner over HTTP -----------------------------------------------


@pytest.fixture
def chat(fake_llm: FakeLLM) -> Iterator[OpenAIChatClient]:
    client = OpenAIChatClient(
        llm_settings(fake_llm.base_url, model="vision-model", cache=False, max_retries=0)
    )
    yield client
    client.close()


CHART_ANSWER = {
    "title": "Revenue by segment, 2023",
    "x_axis": "Segment",
    "y_axis": "Revenue ($m)",
    "series": [
        {
            "name": "2023",
            "points": [{"label": c, "value": v} for c, v in zip(CATEGORIES, VALUES, strict=False)],
        }
    ],
}


def test_vlm_chart_parser_asks_with_the_image_and_renders_the_answer(
    images: dict[str, QueryImage], chat: OpenAIChatClient, fake_llm: FakeLLM
) -> None:
    parser = create_parsers(ImageQuerySettings(parsers=["chart"]), chat)["chart"]
    assert parser.version == "vlm:vision-model/1+offline-chart/1"
    fake_llm.script(ok(json.dumps(CHART_ANSWER)))
    result = parser.parse(images["chart"])
    assert result is not None and result.parser == "vlm:vision-model/1"
    assert result.text.splitlines()[:2] == [
        "Title: Revenue by segment, 2023",
        "Axes: Segment; Revenue ($m)",
    ]
    assert "| Americas | 42 |" in result.text
    assert result.fields["values"][2] == {"category": "Asia", "value": "18", "series": "2023"}
    body = fake_llm.chat_requests[0].body
    assert body["model"] == "vision-model"
    content = body["messages"][-1]["content"]
    assert content[1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert "This image is a chart." in content[0]["text"]
    if images["chart"].lines:
        assert "<ocr>\n" in content[0]["text"] and "Americas" in content[0]["text"]


@needs_ocr
@pytest.mark.parametrize(
    "replies",
    [
        [ok("The chart shows revenue."), ok("Sorry, I cannot produce JSON.")],  # repair fails
        [ok(json.dumps({"title": "", "series": []}))],  # valid but empty
        [error(500, "model crashed")],
    ],
    ids=["malformed", "empty", "http-error"],
)
def test_vlm_parser_falls_back_to_the_offline_parser(
    images: dict[str, QueryImage], chat: OpenAIChatClient, fake_llm: FakeLLM, replies: list
) -> None:
    fake_llm.script(*replies)
    result = create_parsers(ImageQuerySettings(parsers=["chart"]), chat)["chart"].parse(
        images["chart"]
    )
    assert fake_llm.pending == 0
    assert result is not None and result.parser == "offline-chart/1"
    assert "| Europe | 31 |" in result.text


def test_vlm_captioner_and_its_offline_fallback(
    images: dict[str, QueryImage], chat: OpenAIChatClient, fake_llm: FakeLLM
) -> None:
    routing = Routing(types=[TypeScore(type="chart", confidence=0.9)], strategy="test")
    captioner = create_captioner(ImageQuerySettings(), chat)
    assert captioner is not None
    assert captioner.version == "vlm:vision-model/1+offline-caption/1"
    fake_llm.script(ok('{"caption": "A bar chart of revenue by segment for 2023."}'))
    assert captioner.caption(images["chart"], routing) == (
        "A bar chart of revenue by segment for 2023."
    )
    assert "chart" in fake_llm.chat_requests[0].body["messages"][-1]["content"][0]["text"]
    fake_llm.script(error(500, "down"))
    fallback = captioner.caption(images["chart"], routing)
    assert fallback is not None and fallback.startswith("A chart")
    if images["chart"].lines:
        assert fallback == (
            "A chart titled 'Revenue by segment, 2023' with categories Americas, Europe and Asia."
        )


@pytest.mark.shared_data
def test_real_query_crops_parse_without_errors(shared_data: Path) -> None:
    """A few real crops (never copied into the repository) through every offline parser."""
    crops = sorted((shared_data / "mmquery-dev" / "query_images").glob("*.png"))[:3]
    if not crops or not ocr_available():
        pytest.skip("no mmquery-dev query images or no OCR")
    parsers = create_parsers(ImageQuerySettings())
    for path in crops:
        image = load_query_image(path)
        for kind, parser in parsers.items():
            result = parser.parse(image)
            assert result is None or (result.type == kind and result.text.strip())
