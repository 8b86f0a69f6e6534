"""Typed parsers and captioners on hand-built query images: synthetic OCR lines over small drawn
pixel arrays, so every rule is checked without the OCR models."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from PIL import Image, ImageDraw
from pydantic import BaseModel

from docsight.errors import ConfigurationError, LLMResponseError
from docsight.llm.base import ChatResult, Message
from docsight.query.image import (
    IMAGE_TYPES,
    Captioner,
    QueryImage,
    Routing,
    TypedParser,
    TypeScore,
    symbolic_block,
)
from docsight.query.typed import create_captioner, create_parsers
from docsight.query.typed.caption import OfflineCaptioner, VLMCaptioner
from docsight.query.typed.common import MAX_TEXT_CHARS, colour_name, parse_number, title_block
from docsight.query.typed.offline import (
    OfflineChartParser,
    OfflineCircuitParser,
    OfflineCodeParser,
    OfflineDiagramParser,
    OfflineEquationParser,
    OfflineFigureParser,
    OfflineMapParser,
    OfflinePhotographParser,
    OfflineScreenshotParser,
    OfflineTableParser,
)
from docsight.query.typed.offline_graphs import classify_part
from docsight.query.typed.offline_text import detect_language, latexify, rebuild_source, variables
from docsight.query.typed.vlm import FallbackParser, VLMTypedParser
from docsight.settings import ImageQuerySettings
from docsight.vision.common import OcrLine


def L(text: str, x0: float, y0: float, x1: float, y1: float) -> OcrLine:
    return OcrLine(text, (x0, y0, x1, y1), 0.99)


def query_image(
    lines: Sequence[OcrLine] = (),
    size: tuple[int, int] = (400, 300),
    draw: Any = None,
    background: str = "white",
) -> QueryImage:
    image = Image.new("RGB", size, background)
    if draw is not None:
        draw(ImageDraw.Draw(image))
    rgb = np.asarray(image).copy()
    return QueryImage("<test>", "0" * 64, rgb, b"png", tuple(lines), ocr=True)


def routing(*kinds: str) -> Routing:
    return Routing(
        types=[TypeScore(type=k, confidence=0.9) for k in kinds],  # type: ignore[arg-type]
        strategy="test",
    )


# --- small pieces -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("43%", 43.0),
        ("$1,250.5", 1250.5),
        ("(12)", -12.0),
        ("−3", -3.0),
        ("2.5bn", 2.5e9),
        ("+9", 9.0),
        ("May 2018", None),
        ("80M", 80e6),
        ("1 2", None),
    ],
)
def test_parse_number(text: str, value: float | None) -> None:
    assert parse_number(text) == value


def test_colour_names() -> None:
    assert colour_name((30, 80, 200)) == "blue"
    assert colour_name((200, 30, 30)) == "red"
    assert colour_name((20, 20, 20)) == "black"
    assert colour_name((128, 128, 128)) == "grey"


def test_title_is_the_tallest_text_near_the_top_with_its_second_line() -> None:
    lines = [
        L("Revenue by segment,", 60, 4, 340, 34),
        L("2023", 170, 36, 230, 66),
        L("Americas", 20, 250, 90, 265),
        L("Europe", 150, 250, 210, 265),
    ]
    assert [ln.text for ln in title_block(lines, 300)] == ["Revenue by segment,", "2023"]


# --- charts -------------------------------------------------------------------------------------


def _bar_chart_lines() -> list[OcrLine]:
    return [
        L("Revenue by segment", 100, 2, 300, 26),
        *(L(str(v), 8, y, 28, y + 14) for v, y in [(30, 40), (20, 100), (10, 160), (0, 220)]),
        L("Americas", 60, 240, 130, 254),
        L("Europe", 170, 240, 220, 254),
        L("Asia", 265, 240, 300, 254),
        L("24.5", 80, 80, 110, 94),
        L("18", 185, 120, 205, 134),
        L("7", 278, 170, 288, 184),
    ]


def test_chart_pairs_values_with_categories_by_position() -> None:
    result = OfflineChartParser().parse(query_image(_bar_chart_lines()))
    assert result is not None and result.parser == "offline-chart/1"
    f = result.fields
    assert f["title"] == "Revenue by segment"
    assert f["y_ticks"] == ["30", "20", "10", "0"]
    assert f["x_labels"] == ["Americas", "Europe", "Asia"]
    assert [(v["category"], v["value"]) for v in f["values"]] == [
        ("Americas", "24.5"),
        ("Europe", "18"),
        ("Asia", "7"),
    ]
    assert "| Americas | 24.5 |" in result.text
    assert result.text.startswith("Title: Revenue by segment")


def test_horizontal_bars_without_printed_values_are_measured_on_the_pixels() -> None:
    # Value axis 0..300 along the bottom at x = 100..400; bars of 250, 120 and 60.
    bars = {"Alpha": 250, "Beta": 120, "Gamma": 60}

    def draw(d: ImageDraw.ImageDraw) -> None:
        for k, value in enumerate(bars.values()):
            y = 30 + 50 * k
            d.rectangle([100, y, 100 + value, y + 24], fill=(70, 100, 160))

    lines = [L(name, 20, 34 + 50 * k, 80, 50 + 50 * k) for k, name in enumerate(bars)]
    lines += [L(str(v), 100 + v - 10, 200, 100 + v + 10, 214) for v in (0, 100, 200, 300)]
    result = OfflineChartParser().parse(query_image(lines, size=(440, 230), draw=draw))
    assert result is not None
    values = {v["category"]: v for v in result.fields["values"]}
    assert set(values) == set(bars)
    for name, true in bars.items():
        assert values[name]["estimated"] is True
        assert abs(float(values[name]["value"].lstrip("≈")) - true) <= 6
    assert result.fields["orientation"] == "horizontal"
    assert "| Alpha | ≈" in result.text


def test_matrix_chart_reads_row_labels_and_column_headers() -> None:
    lines = [
        L("U.S.", 80, 3, 114, 24),
        L("Both", 181, 3, 230, 25),
        L("Russia", 271, 4, 322, 23),
        L("West", 2, 34, 42, 56),
        L("43%", 80, 35, 115, 53),
        L("29%", 185, 33, 222, 57),
        L("21%", 277, 33, 313, 55),
        L("East", 6, 86, 42, 108),
        L("23", 85, 88, 106, 104),
        L("36", 190, 86, 212, 106),
        L("38", 280, 86, 302, 106),
    ]
    result = OfflineChartParser().parse(query_image(lines, size=(343, 119)))
    assert result is not None
    assert "| category | U.S. | Both | Russia |" in result.text
    assert "| West | 43% | 29% | 21% |" in result.text
    assert "| East | 23 | 36 | 38 |" in result.text


def test_series_are_told_apart_by_colour_and_named_by_coloured_legend_labels() -> None:
    blue, red = (30, 70, 200), (200, 40, 40)
    labels = {  # value label boxes, each with a patch of its series' ink
        "62": ((10, 50, 40, 66), red),
        "34": ((10, 100, 40, 116), blue),
        "59": ((160, 55, 190, 71), red),
        "27": ((160, 110, 190, 126), blue),
        "Rep": ((60, 5, 120, 21), red),
        "Dem": ((60, 150, 120, 166), blue),
    }

    def draw(d: ImageDraw.ImageDraw) -> None:
        for box, colour in labels.values():
            x0, y0, x1, y1 = box
            d.rectangle([x0 + 4, y0 + 4, x1 - 4, y1 - 4], fill=colour)

    lines = [L(t, *box) for t, (box, _) in labels.items()]
    lines += [L("2017", 10, 180, 45, 195), L("2018", 158, 180, 193, 195)]
    result = OfflineChartParser().parse(query_image(lines, size=(220, 200), draw=draw))
    assert result is not None
    assert set(result.fields["series"]) == {"Rep", "Dem"}
    assert "| 2017 | 62 | 34 |" in result.text or "| 2017 | 34 | 62 |" in result.text
    pairs = {(v["category"], v["series"]): v["value"] for v in result.fields["values"]}
    assert pairs[("2018", "Rep")] == "59" and pairs[("2018", "Dem")] == "27"


def test_chart_without_text_gives_nothing() -> None:
    assert OfflineChartParser().parse(query_image()) is None


# --- code ---------------------------------------------------------------------------------------


def _code_lines(rows: Sequence[tuple[int, str]], cw: float = 10.0) -> list[OcrLine]:
    """OCR lines of code: ``(indent in characters, text)``, 10 px per character."""
    return [
        L(text, 20 + indent * cw, 10 + 24 * k, 20 + (indent + len(text)) * cw, 28 + 24 * k)
        for k, (indent, text) in enumerate(rows)
    ]


def test_code_indentation_is_rebuilt_from_line_offsets() -> None:
    rows = [
        (0, "def total(items):"),
        (4, "result = 0"),
        (4, "for item in items:"),
        (8, "result += item.price"),
        (4, "return result"),
    ]
    source = rebuild_source(_code_lines(rows))
    assert source.splitlines() == [" " * n + t for n, t in rows]
    result = OfflineCodeParser().parse(query_image(_code_lines(rows), size=(400, 160)))
    assert result is not None
    assert result.fields["language"] == "python"
    assert result.fields["source"] == source
    assert result.text.startswith("Language: python\ndef total(items):")


def test_code_indent_snaps_to_two_spaces_when_the_code_uses_them() -> None:
    rows = [(0, "function add(a, b) {"), (2, "const c = a + b;"), (2, "return c;"), (0, "}")]
    source = rebuild_source(_code_lines(rows, cw=9.0))
    assert source.splitlines()[1] == "  const c = a + b;"


@pytest.mark.parametrize(
    ("source", "language"),
    [
        ("function add(a, b) {\n  const c = a + b;\n  console.log(c);\n}\n", "javascript"),
        ('#include <stdio.h>\nint main(void) {\n    printf("hi");\n}\n', "c"),
        ("public class Hello {\n    public static void main(String[] args) {}\n}\n", "java"),
        ("SELECT name, count(*) FROM users WHERE age > 30 GROUP BY name;", "sql"),
        ("package main\nfunc main() {\n    x := 1\n    fmt.Println(x)\n}\n", "go"),
        ('fn main() {\n    let mut x = 5;\n    println!("{}", x);\n}\n', "rust"),
        ("#!/bin/bash\nfor f in *.txt; do\n  echo $f\ndone\n", "bash"),
        ("The quarterly report shows steady growth across all regions.", "text"),
    ],
)
def test_language_detection(source: str, language: str) -> None:
    assert detect_language(source)[0] == language


# --- equations ----------------------------------------------------------------------------------


def test_math_symbols_become_latex_commands() -> None:
    latex = latexify("σ² = 1/n ∑ (xᵢ − μ)² ≤ α × β")
    assert latex == r"\sigma^{2} = 1/n \sum(x_{i} - \mu)^{2} \leq \alpha \times \beta"
    assert variables(latex) == [r"\sigma", "n", "x_{i}", r"\mu", r"\alpha", r"\beta"]


def test_equation_superscripts_come_from_box_position_and_the_number_is_kept() -> None:
    lines = [
        L("E = mc", 40, 40, 160, 80),
        L("2", 162, 30, 176, 50),  # small and high, right after the line
        L("(3)", 330, 45, 370, 75),
    ]
    result = OfflineEquationParser().parse(query_image(lines, size=(380, 120)))
    assert result is not None
    assert result.fields["latex"] == "E = mc^{2}"
    assert result.fields["variables"] == ["E", "m", "c"]
    assert result.fields["number"] == "3"
    assert result.text.splitlines()[0] == "E = mc^{2}"


# --- screenshots --------------------------------------------------------------------------------


def test_screenshot_errors_codes_menus_fields_and_buttons() -> None:
    def draw(d: ImageDraw.ImageDraw) -> None:
        d.rectangle([110, 96, 330, 122], outline=(90, 90, 90), width=1)  # the Name input

    lines = [
        L("Backup Utility", 10, 4, 130, 20),
        L("File Edit View Tools Help", 10, 26, 220, 40),
        L("Choose File > Save As to keep a copy", 10, 60, 300, 76),
        L("Name", 20, 100, 60, 118),
        L("Email:", 20, 130, 70, 148),
        L("Error 0x80070005: Access is denied.", 10, 170, 290, 186),
        L("Server replied HTTP 404 for /backup", 10, 192, 290, 208),
        L("OK", 250, 230, 280, 246),
        L("Cancel", 300, 230, 350, 246),
    ]
    result = OfflineScreenshotParser().parse(query_image(lines, draw=draw))
    assert result is not None
    f = result.fields
    assert f["errors"][0] == "Error 0x80070005: Access is denied."
    assert {"0x80070005", "HTTP 404"} <= set(f["codes"])
    assert f["menus"][0] == "Choose File > Save As"
    assert "Menu bar: File | Edit | View | Tools | Help" in f["menus"]
    assert f["fields"] == ["Name", "Email"]
    assert f["buttons"] == ["OK", "Cancel"]
    assert f["strings"][0] == "Backup Utility"
    assert result.text.startswith("Errors: Error 0x80070005")


# --- diagrams, circuits, maps -------------------------------------------------------------------

_NODES = [L("Start", 45, 90, 95, 110), L("Finish", 300, 90, 360, 110)]


def _boxes(d: ImageDraw.ImageDraw) -> None:
    d.rectangle([20, 70, 120, 130], outline="black", width=2)
    d.rectangle([280, 70, 380, 130], outline="black", width=2)


def test_diagram_edge_follows_a_drawn_arrow_between_two_boxes() -> None:
    def draw(d: ImageDraw.ImageDraw) -> None:
        _boxes(d)
        d.line([122, 100, 268, 100], fill="black", width=2)
        d.polygon([(278, 100), (262, 92), (262, 108)], fill="black")

    result = OfflineDiagramParser().parse(query_image(_NODES, size=(400, 200), draw=draw))
    assert result is not None
    assert result.fields["nodes"] == ["Start", "Finish"]
    assert result.fields["edges"] == ["Start -> Finish"]
    assert "Edges: Start -> Finish" in result.text


def test_diagram_arrow_direction_and_missing_edges() -> None:
    def reverse(d: ImageDraw.ImageDraw) -> None:
        d.line([110, 100, 290, 100], fill="black", width=2)
        d.polygon([(102, 100), (118, 92), (118, 108)], fill="black")

    parsed = OfflineDiagramParser().parse(query_image(_NODES, size=(400, 200), draw=reverse))
    assert parsed is not None and parsed.fields["edges"] == ["Finish -> Start"]
    alone = OfflineDiagramParser().parse(query_image(_NODES, size=(400, 200), draw=_boxes))
    assert alone is not None and alone.fields["edges"] == []


def test_diagram_elbow_connector_joins_its_boxes_without_a_direction() -> None:
    def draw(d: ImageDraw.ImageDraw) -> None:
        d.rectangle([20, 20, 120, 60], outline="black", width=2)
        d.rectangle([280, 140, 380, 180], outline="black", width=2)
        d.line([120, 40, 330, 40], fill="black", width=2)
        d.line([330, 40, 330, 140], fill="black", width=2)

    lines = [L("Alpha", 45, 30, 95, 50), L("Beta", 305, 150, 355, 170)]
    result = OfflineDiagramParser().parse(query_image(lines, size=(400, 200), draw=draw))
    assert result is not None and result.fields["edges"] == ["Alpha -- Beta"]


def test_circuit_parts_pair_designators_with_values() -> None:
    labels = ("R1", "C12", "U3A", "GND", "Vcc", "10kΩ", "100nF", "4k7")
    assert [classify_part(t) for t in labels] == [
        "designator", "designator", "designator", "net", "net", "value", "value", "value",
    ]  # fmt: skip
    lines = [
        L("R1", 40, 40, 60, 54),
        L("10kΩ", 40, 56, 80, 70),
        L("C2 100nF", 200, 40, 280, 54),
        L("GND", 120, 160, 150, 174),
        L("Power stage", 10, 5, 100, 19),
    ]
    result = OfflineCircuitParser().parse(query_image(lines, size=(320, 200)))
    assert result is not None
    assert result.fields["parts"] == ["R1 10kΩ", "C2 100nF"]
    assert result.fields["nets"] == ["GND"]
    assert result.text.startswith("Parts: R1 10kΩ; C2 100nF\nNets: GND")


def test_map_places_scale_and_legend() -> None:
    lines = [
        L("Lake District", 40, 40, 150, 58),
        L("Keswick", 200, 90, 270, 106),
        L("Windermere", 120, 160, 220, 176),
        L("1200", 300, 30, 340, 44),
        L("0 10 20 km", 20, 260, 110, 274),
        L("Legend", 280, 200, 340, 216),
        L("National park", 280, 222, 380, 238),
    ]
    result = OfflineMapParser().parse(query_image(lines))
    assert result is not None
    f = result.fields
    assert f["places"] == ["Lake District", "Keswick", "Windermere"]
    assert f["scale"] == ["20 km"]
    assert f["legend"] == ["National park"]


# --- figures, photographs, tables ---------------------------------------------------------------


def test_figure_panels_from_printed_labels_and_caption() -> None:
    lines = [
        L("(b) Recall", 210, 5, 300, 20),
        L("(a) Accuracy", 10, 8, 110, 23),
        L("epochs", 60, 150, 110, 164),
        L("epochs", 260, 150, 310, 164),
        L("Figure 2: Accuracy and recall over training epochs for three models.", 5, 180, 395, 196),
    ]
    result = OfflineFigureParser().parse(query_image(lines, size=(400, 200)))
    assert result is not None
    panels = result.fields["panels"]
    assert [p["name"] for p in panels] == ["(a)", "(b)"]
    assert panels[0]["labels"] == ["Accuracy", "epochs"]
    assert result.fields["caption"].startswith("Figure 2: Accuracy and recall")
    assert result.text.splitlines()[0] == "Panels: 2"


def test_figure_panels_from_whitespace_gutters() -> None:
    def draw(d: ImageDraw.ImageDraw) -> None:
        d.rectangle([10, 10, 180, 180], fill=(40, 90, 160))
        d.rectangle([220, 10, 390, 180], fill=(160, 60, 40))

    lines = [L("Before", 60, 185, 120, 199), L("After", 280, 185, 330, 199)]
    result = OfflineFigureParser().parse(query_image(lines, size=(400, 200), draw=draw))
    assert result is not None
    assert [p["labels"] for p in result.fields["panels"]] == [["Before"], ["After"]]


def test_photograph_reports_visible_text_colours_and_cues_but_no_objects() -> None:
    def draw(d: ImageDraw.ImageDraw) -> None:
        d.rectangle([0, 0, 400, 110], fill=(70, 130, 220))
        d.rectangle([0, 110, 400, 300], fill=(60, 150, 60))

    lines = [L("MAIN STREET", 150, 150, 260, 170)]
    result = OfflinePhotographParser().parse(query_image(lines, draw=draw))
    assert result is not None
    f = result.fields
    assert f["objects"] == []
    assert f["text"] == ["MAIN STREET"]
    assert f["colours"][:2] == ["green", "blue"]
    assert "blue upper part (sky or water)" in f["cues"] and "much green (vegetation)" in f["cues"]
    assert result.text.startswith("Visible text: MAIN STREET")


def test_table_from_box_alignment_without_the_table_model(monkeypatch: pytest.MonkeyPatch) -> None:
    import docsight.query.typed.offline_tables as tables

    monkeypatch.setattr(tables, "_engine_rows", lambda image, lines: [])
    lines = [
        L("Table 1: Visitors per station in 2023 across the northern coast", 5, 2, 395, 18),
        L("Station", 10, 30, 80, 44), L("Visitors", 200, 30, 270, 44),
        L("North Point", 10, 50, 110, 64), L("1250", 200, 50, 240, 64),
        L("Gull Rock", 10, 70, 90, 84), L("980", 200, 70, 230, 84),
    ]  # fmt: skip
    result = OfflineTableParser().parse(query_image(lines, size=(400, 100)))
    assert result is not None
    assert result.fields["header"] == ["Station", "Visitors"]
    assert result.fields["rows"] == [["North Point", "1250"], ["Gull Rock", "980"]]
    assert "| North Point | 1250 |" in result.text
    assert result.text.startswith("Table 1: Visitors per station")


# --- compactness and contracts ------------------------------------------------------------------


def test_every_parser_keeps_its_text_compact_and_none_without_content() -> None:
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa".split()
    lines = [
        L(
            f"{words[k % 10]} {k} = {k * 3} Error E{k:03d} > item",
            10 + (k % 3) * 8,
            12 * k,
            380,
            12 * k + 10,
        )
        for k in range(400)
    ]
    image = query_image(lines, size=(400, 4800))
    parsers = create_parsers(ImageQuerySettings())
    texts = []
    for kind, parser in parsers.items():
        result = parser.parse(image)
        assert result is not None, kind
        assert result.type == kind and result.parser == parser.version
        assert len(result.text) <= MAX_TEXT_CHARS + 200, kind
        texts.append(result)
        if kind != "photograph":
            assert parser.parse(query_image()) is None, kind
    block = symbolic_block(texts)
    assert block.count("\n[") >= len(IMAGE_TYPES) - 1 and block.startswith("[CHART] ")


class StubChat:
    """A ChatModel that answers ``chat_json`` from a list (exceptions are raised)."""

    model = "stub-vlm"

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.calls: list[list[Message]] = []

    def chat(self, messages: list[Message], **_: Any) -> ChatResult:
        raise NotImplementedError

    def chat_json(self, messages: list[Message], schema: type[BaseModel], **_: Any) -> Any:
        self.calls.append(messages)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return schema.model_validate(answer)


def test_create_parsers_filters_types_and_rejects_unknown_names() -> None:
    assert list(create_parsers(ImageQuerySettings())) == list(IMAGE_TYPES)
    chosen = create_parsers(ImageQuerySettings(parsers=["table", "chart"]))
    assert list(chosen) == ["chart", "table"]
    assert all(isinstance(p, TypedParser) for p in chosen.values())
    assert create_parsers(ImageQuerySettings(parsers=[])) == {}
    with pytest.raises(ConfigurationError, match=r"unknown typed parser.*histogram.*valid: chart"):
        create_parsers(ImageQuerySettings(parsers=["chart", "histogram"]))
    with_vlm = create_parsers(ImageQuerySettings(parsers=["code"]), StubChat())
    assert isinstance(with_vlm["code"], FallbackParser)
    assert with_vlm["code"].version == "vlm:stub-vlm/1+offline-code/1"


def test_fallback_parser_uses_offline_when_the_model_fails_or_says_nothing() -> None:
    lines = _code_lines([(0, "def f(x):"), (4, "return x")])
    image = query_image(lines, size=(300, 80))
    chat = StubChat(
        {"language": "python", "source": "def f(x):\n    return x"},
        LLMResponseError("bad json"),
        {"language": "python", "source": "   "},
    )
    parser = FallbackParser(VLMTypedParser(chat, "code"), OfflineCodeParser())
    first = parser.parse(image)
    assert first is not None and first.parser == "vlm:stub-vlm/1"
    assert first.text == "Language: python\ndef f(x):\n    return x"
    second = parser.parse(image)
    assert second is not None and second.parser == "offline-code/1"
    third = parser.parse(image)
    assert third is not None and third.parser == "offline-code/1"
    prompt = chat.calls[0][1]["content"]
    assert (
        prompt[1]["type"] == "image_url"
        and "<ocr>\ndef f(x):\nreturn x\n</ocr>" in prompt[0]["text"]
    )
    with pytest.raises(ConfigurationError):
        FallbackParser(VLMTypedParser(chat, "code"), OfflineChartParser())


def test_create_captioner_modes() -> None:
    assert create_captioner(ImageQuerySettings(caption="none"), StubChat()) is None
    assert isinstance(create_captioner(ImageQuerySettings(caption="offline")), OfflineCaptioner)
    assert isinstance(create_captioner(ImageQuerySettings()), OfflineCaptioner)
    auto = create_captioner(ImageQuerySettings(), StubChat())
    assert isinstance(auto, VLMCaptioner) and isinstance(auto, Captioner)
    assert auto.version == "vlm:stub-vlm/1+offline-caption/1"
    vlm = create_captioner(ImageQuerySettings(caption="vlm"), StubChat())
    assert isinstance(vlm, VLMCaptioner) and vlm.version == "vlm:stub-vlm/1"
    with pytest.raises(ConfigurationError, match="DOCSIGHT_VLM_MODEL"):
        create_captioner(ImageQuerySettings(caption="vlm"), None)


def test_offline_caption_names_the_type_title_and_categories() -> None:
    image = query_image(_bar_chart_lines())
    caption = OfflineCaptioner().caption(image, routing("chart", "table"))
    assert caption == (
        "A chart titled 'Revenue by segment' with categories Americas, Europe and Asia. "
        "It also reads as a table."
    )


def test_offline_caption_of_a_photograph_uses_colours_cues_and_visible_text() -> None:
    def draw(d: ImageDraw.ImageDraw) -> None:
        d.rectangle([0, 0, 400, 110], fill=(70, 130, 220))
        d.rectangle([0, 110, 400, 300], fill=(60, 150, 60))

    image = query_image([L("MAIN STREET", 150, 150, 260, 170)], draw=draw)
    caption = OfflineCaptioner().caption(image, routing("photograph"))
    assert caption is not None
    assert caption.startswith("A blue upper part (sky or water), much green (vegetation)")
    assert "mostly green and blue" in caption and caption.endswith("Visible text: MAIN STREET.")


def test_vlm_captioner_falls_back_when_the_model_fails() -> None:
    image = query_image(_bar_chart_lines())
    chat = StubChat({"caption": "  A bar chart of revenue by segment.  "}, LLMResponseError("x"))
    captioner = VLMCaptioner(chat, fallback=OfflineCaptioner())
    assert captioner.caption(image, routing("chart")) == "A bar chart of revenue by segment."
    fallback = captioner.caption(image, routing("chart"))
    assert fallback is not None and fallback.startswith("A chart titled 'Revenue by segment'")
    assert VLMCaptioner(StubChat(LLMResponseError("x"))).caption(image, routing("chart")) is None
