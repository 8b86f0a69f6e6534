"""Image routers without OCR or HTTP: selection, answer validation, baselines, features."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from PIL import Image, ImageDraw

from docsight.document.ids import bytes_sha256
from docsight.errors import ConfigurationError, LLMResponseError, LLMTimeoutError
from docsight.llm.base import ChatResult, M, Message
from docsight.query.features import FEATURE_NAMES, PIXEL_FEATURES, compute_features
from docsight.query.image import (
    FALLBACK_TYPE,
    IMAGE_TYPES,
    QueryImage,
    Router,
    TypeScore,
    to_png,
)
from docsight.query.router import (
    PIXEL_WEIGHTS,
    WEIGHTS,
    AllTypesRouter,
    FeatureRouter,
    RandomRouter,
    RouterAnswer,
    VLMRouter,
    create_router,
    format_weights,
    parse_weights,
    select,
    validate_answer,
    weight_matrix,
)
from docsight.settings import ImageQuerySettings
from docsight.vision.common import OcrLine


def _image(rgb: np.ndarray, lines: tuple[OcrLine, ...] = (), *, ocr: bool = True) -> QueryImage:
    png = to_png(rgb)
    return QueryImage(
        source="test.png", digest=bytes_sha256(png), rgb=rgb, png=png, lines=lines, ocr=ocr
    )


def _blank(w: int = 200, h: int = 120, colour: int = 255) -> np.ndarray:
    return np.full((h, w, 3), colour, dtype=np.uint8)


def _ts(*pairs: tuple[str, float]) -> list[TypeScore]:
    return [TypeScore(type=t, confidence=c) for t, c in pairs]  # type: ignore[arg-type]


# --- select --------------------------------------------------------------------------------------


def test_select_keeps_top_always_then_confident_ones_up_to_max() -> None:
    scores = _ts(("chart", 0.15), ("table", 0.5), ("figure", 0.3), ("map", 0.25))
    assert [s.type for s in select(scores, 3, 0.2)] == ["table", "figure", "map"]
    assert [s.type for s in select(scores, 2, 0.2)] == ["table", "figure"]
    assert [s.type for s in select(scores, 3, 0.4)] == ["table"]
    # The best type is kept however unsure the router is.
    assert [s.type for s in select(_ts(("code", 0.05), ("map", 0.01)), 3, 0.2)] == ["code"]
    assert select([], 3, 0.2) == []


def test_select_breaks_ties_in_taxonomy_order() -> None:
    scores = _ts(("photograph", 0.4), ("chart", 0.4))
    assert [s.type for s in select(scores, 1, 0.0)] == ["chart"]


# --- VLM answer validation -----------------------------------------------------------------------


def _answer(*entries: dict[str, Any]) -> RouterAnswer:
    return RouterAnswer.model_validate({"types": list(entries)})


def test_validation_drops_unknown_clips_and_merges() -> None:
    answer = _answer(
        {"type": "Chart", "confidence": 1.7},
        {"type": "hologram", "confidence": 0.9},
        {"type": "table", "confidence": -0.3},
        {"type": "chart", "confidence": 0.4},
        {"type": "photo", "confidence": "0.6"},
        {"type": 42, "confidence": 0.9},
        {"type": "equations", "confidence": "85%"},
        {"type": "map", "confidence": float("nan")},
    )
    scores = validate_answer(answer)
    assert [(s.type, s.confidence) for s in scores] == [
        ("chart", 1.0),
        ("equation", 0.85),
        ("photograph", 0.6),
        ("table", 0.0),
        ("map", 0.0),
    ]


def test_validation_of_an_answer_without_confidence() -> None:
    scores = validate_answer(_answer({"type": "code"}))
    assert [(s.type, s.confidence) for s in scores] == [("code", 0.5)]


class FakeChat:
    """A ChatModel in-process: returns scripted objects or raises scripted errors."""

    def __init__(self, *replies: Any, model: str = "tiny-vlm") -> None:
        self.model = model
        self.replies = list(replies)
        self.calls: list[list[Message]] = []

    def chat(self, messages: list[Message], **_: Any) -> ChatResult:
        raise AssertionError("the router must ask for JSON")

    def chat_json(
        self, messages: list[Message], schema: type[M], *, max_tokens: int | None = None
    ) -> M:
        self.calls.append(messages)
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return schema.model_validate(reply)


@pytest.fixture
def picture() -> QueryImage:
    return _image(_blank())


def test_vlm_router_sends_the_image_and_selects(picture: QueryImage) -> None:
    chat = FakeChat(
        {
            "types": [
                {"type": "chart", "confidence": 0.9},
                {"type": "table", "confidence": 0.3},
                {"type": "figure", "confidence": 0.1},
            ]
        }
    )
    router = VLMRouter(chat, max_tokens=64, max_types=3, min_confidence=0.2)
    assert isinstance(router, Router)
    routing = router.route(picture)
    assert routing.strategy == "vlm:tiny-vlm" and not routing.fallback
    assert [(s.type, s.confidence) for s in routing.types] == [("chart", 0.9), ("table", 0.3)]
    content = chat.calls[0][-1]["content"]
    assert any(p.get("type") == "image_url" for p in content)
    assert content[1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert all(t in content[0]["text"] for t in IMAGE_TYPES)


@pytest.mark.parametrize(
    "reply",
    [
        {"types": []},
        {"types": [{"type": "hologram", "confidence": 0.9}]},
        {},
        LLMResponseError("no JSON"),
        LLMTimeoutError("slow"),
    ],
)
def test_vlm_router_falls_back_on_unusable_answers(picture: QueryImage, reply: Any) -> None:
    routing = VLMRouter(FakeChat(reply)).route(picture)
    assert routing.fallback
    assert [(s.type, s.confidence) for s in routing.types] == [(FALLBACK_TYPE, 1.0)]
    assert routing.strategy == "vlm:tiny-vlm"


# --- baselines and factory -----------------------------------------------------------------------


def test_all_types_router_returns_everything(picture: QueryImage) -> None:
    routing = AllTypesRouter().route(picture)
    assert [s.type for s in routing.types] == list(IMAGE_TYPES)
    assert {s.confidence for s in routing.types} == {1.0}
    assert routing.strategy == "all"


def test_random_router_is_deterministic_per_seed_and_image() -> None:
    a, b = _image(_blank()), _image(_blank(colour=0))
    first = RandomRouter(7).route(a)
    assert RandomRouter(7).route(a) == first
    assert first.strategy == "random:7"
    assert 1 <= len(first.types) <= 3
    confidences = [s.confidence for s in first.types]
    assert confidences == sorted(confidences, reverse=True)
    others = {str(RandomRouter(s).route(a).types) for s in range(8)}
    others |= {str(RandomRouter(7).route(b).types)}
    assert len(others) > 1


def test_create_router_follows_settings() -> None:
    chat = FakeChat()
    assert isinstance(create_router(ImageQuerySettings(router="auto"), None), FeatureRouter)
    assert isinstance(create_router(ImageQuerySettings(router="auto"), chat), VLMRouter)
    assert isinstance(create_router(ImageQuerySettings(router="offline"), chat), FeatureRouter)
    assert isinstance(create_router(ImageQuerySettings(router="all"), chat), AllTypesRouter)
    rnd = create_router(ImageQuerySettings(router="random", random_seed=3, max_types=2), None)
    assert isinstance(rnd, RandomRouter) and rnd.strategy == "random:3" and rnd.max_types == 2
    vlm = create_router(ImageQuerySettings(router="vlm", max_types=1, min_confidence=0.5), chat)
    assert isinstance(vlm, VLMRouter) and vlm.max_types == 1 and vlm.min_confidence == 0.5
    with pytest.raises(ConfigurationError, match="DOCSIGHT_VLM_MODEL"):
        create_router(ImageQuerySettings(router="vlm"), None)


def test_feature_router_applies_settings_and_never_raises() -> None:
    router = FeatureRouter(max_types=2, min_confidence=0.0)
    assert router.strategy.startswith("offline/")
    slivers = (_blank(1, 1), _blank(3, 700), _blank(3000, 2), np.zeros((40, 40, 3), dtype=np.uint8))
    for rgb in slivers:
        routing = router.route(_image(rgb))
        assert 1 <= len(routing.types) <= 2
    ranking = router.scores(_image(_blank()))
    assert sorted(s.type for s in ranking) == sorted(IMAGE_TYPES)
    assert abs(sum(s.confidence for s in ranking) - 1.0) < 1e-3


# --- features ------------------------------------------------------------------------------------


def _grid(w: int = 600, h: int = 400, rows: int = 8, cols: int = 5) -> np.ndarray:
    img = Image.new("RGB", (w, h), "white")
    draw = ImageDraw.Draw(img)
    for r in range(rows + 1):
        y = 10 + r * (h - 20) // rows
        draw.line([10, y, w - 10, y], fill="black")
    for c in range(cols + 1):
        x = 10 + c * (w - 20) // cols
        draw.line([x, 10, x, h - 10], fill="black")
    return np.asarray(img)


def _noise(w: int = 600, h: int = 400) -> np.ndarray:
    rng = np.random.default_rng(0)
    return rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)


def test_rules_are_found_on_a_drawn_grid_not_on_noise() -> None:
    grid = compute_features(_grid())
    noise = compute_features(_noise())
    assert round(np.expm1(grid.h_rules)) == 9 and round(np.expm1(grid.v_rules)) == 6
    assert noise.h_rules == 0 and noise.v_rules == 0
    assert grid.axis_edge_share > 0.9 and grid.bg_share > 0.9
    # Noise is all colours and no background; the grid is two colours.
    assert noise.unique_ratio > grid.unique_ratio and noise.bg_share < 0.1
    assert noise.soft_share > 0.05 > grid.soft_share


def test_rules_survive_scaling_of_large_images() -> None:
    big = compute_features(_grid(2000, 1600))
    assert round(np.expm1(big.h_rules)) == 9 and round(np.expm1(big.v_rules)) == 6


def test_colour_statistics() -> None:
    bars = Image.new("RGB", (400, 300), "white")
    draw = ImageDraw.Draw(bars)
    for i, colour in enumerate(["#1f77b4", "#ff7f0e", "#2ca02c"]):
        draw.rectangle([40 + i * 110, 300 - 60 * (i + 2), 120 + i * 110, 290], fill=colour)
    f = compute_features(np.asarray(bars))
    assert f.sat_share > 0.2 and f.flat_colour_share > 0.2
    dark = compute_features(_blank(colour=30))
    assert dark.bg_dark == 1.0 and compute_features(_blank()).bg_dark == 0.0


def _line(text: str, x0: float, y0: float, x1: float, y1: float) -> OcrLine:
    return OcrLine(text, (x0, y0, x1, y1), 0.99)


def test_code_lines_and_indentation() -> None:
    code = [
        "def load(path, limit=None):",
        "    rows = []",
        "    for item in open(path):",
        "        rows.append(item.strip())",
        "    return rows[:limit]",
    ]
    lines = tuple(
        _line(
            t.strip(),
            10 + 9 * (len(t) - len(t.lstrip())),
            10 + 20 * i,
            10 + 9 * len(t),
            26 + 20 * i,
        )
        for i, t in enumerate(code)
    )
    f = compute_features(_blank(400, 130), lines)
    prose = tuple(
        _line(t, 10, 10 + 20 * i, 380, 26 + 20 * i)
        for i, t in enumerate(
            [
                "The company reported higher revenue in all",
                "of its regions during the year, and the",
                "board expects further growth next year.",
            ]
        )
    )
    g = compute_features(_blank(400, 130), prose)
    assert f.code_line_share >= 0.6 and g.code_line_share == 0.0
    assert f.indent_levels > g.indent_levels and f.indent_share > 0.5
    assert g.prose_share == 1.0 and f.prose_share == 0.0


def test_axis_labels_and_table_rows() -> None:
    axis = tuple(
        _line(str(v), 5, 20 + 50 * i, 30, 34 + 50 * i) for i, v in enumerate([100, 75, 50, 25, 0])
    )
    bottom = tuple(
        _line(str(y), 60 + 70 * i, 270, 95 + 70 * i, 284) for i, y in enumerate(range(2019, 2024))
    )
    chart = compute_features(_blank(450, 300), axis + bottom)
    assert chart.axis_left == 1.0 and chart.axis_bottom == 1.0
    cells = tuple(
        _line(text, 10 + 120 * c, 10 + 25 * r, 10 + 120 * c + 8 * len(text), 24 + 25 * r)
        for r in range(6)
        for c, text in enumerate(
            [f"Row {r}", f"{(r * 37) % 11 + 0.5:.1f}", f"{(r * r * 53) % 17 + 1000:,}"]
        )
    )
    table = compute_features(_blank(400, 170), cells)
    assert table.multi_cell_rows == 1.0 and table.axis_left == 0.0
    assert table.numeric_share > 0.5 and np.expm1(table.aligned_columns) >= 3


def test_text_cues() -> None:
    lines = (
        _line("File Edit View Help", 0, 0, 200, 14),
        _line("Error: permission denied", 0, 30, 200, 44),
        _line("R1 10kΩ C2 Vcc GND", 0, 60, 200, 74),
        _line("(a) (b) Figure 3: results", 0, 90, 200, 104),
        _line("∑ α = β + γ", 0, 120, 200, 134),
    )
    f = compute_features(_blank(220, 140), lines)
    assert f.ui_words > 0.5 and f.error_words > 0.3 and f.circuit_tokens > 0.2
    assert f.panel_labels > 0.5 and f.caption_figure == 0.0 and f.math_share > 0.3
    assert (
        compute_features(_blank(), (_line("Figure 3: results", 0, 0, 90, 12),)).caption_figure
        == 1.0
    )


def test_features_without_text_are_zero_and_vector_matches_names() -> None:
    f = compute_features(_blank(), (), ocr=False)
    assert f.has_ocr == 0.0 and f.n_lines == 0.0 and f.code_line_share == 0.0
    assert f.vector().shape == (len(FEATURE_NAMES),)
    assert list(f.as_dict()) == list(FEATURE_NAMES)


# --- the shipped model ---------------------------------------------------------------------------


def test_weight_tables_name_known_types_and_features() -> None:
    for table in (WEIGHTS, PIXEL_WEIGHTS):
        assert set(table) == set(IMAGE_TYPES)
        for row in table.values():
            assert set(row) <= {*FEATURE_NAMES, "bias"}
    assert set().union(*PIXEL_WEIGHTS.values()) <= {*PIXEL_FEATURES, "bias"}
    assert parse_weights(format_weights(WEIGHTS)) == WEIGHTS
    with pytest.raises(KeyError):
        weight_matrix({"chart": {"no_such_feature": 1.0}})


def _drawn_text(lines: list[str], *, mono: bool, bg: str = "white") -> QueryImage:
    """Text drawn with a DejaVu font, and OCR lines where it was drawn (no OCR engine needed)."""
    from fixtures.querygen import font

    fnt = font("mono" if mono else "sans", 16)
    img = Image.new("RGB", (560, 30 + 24 * len(lines)), bg)
    draw = ImageDraw.Draw(img)
    ocr = []
    for i, text in enumerate(lines):
        indent = len(text) - len(text.lstrip())
        x, y = 12 + 10 * indent, 12 + 24 * i
        draw.text((x, y), text.strip(), font=fnt, fill="black" if bg == "white" else "white")
        x0, y0, x1, y1 = draw.textbbox((x, y), text.strip(), font=fnt)
        ocr.append(_line(text.strip(), x0, y0, x1, y1))
    return _image(np.asarray(img), tuple(ocr))


def test_the_model_reads_code_prose_and_photographs() -> None:
    router = FeatureRouter()
    code = _drawn_text(
        [
            "def load_rows(path, limit=None):",
            "    rows = []",
            "    with open(path) as fh:",
            "        for line in fh:",
            "            rows.append(line.strip())",
            "    return rows[:limit]",
        ],
        mono=True,
    )
    assert router.route(code).top.type == "code"
    error = _drawn_text(
        ["File  Edit  View  Help", "Error: could not open file (Permission denied)", "OK  Cancel"],
        mono=False,
    )
    assert router.route(error).top.type == "screenshot"
    rng = np.random.default_rng(3)
    smooth = np.asarray(
        Image.fromarray(rng.integers(0, 256, (12, 16, 3), dtype=np.uint8)).resize(
            (320, 240), Image.Resampling.BICUBIC
        )
    )
    noisy = np.clip(smooth + rng.normal(0, 6, smooth.shape), 0, 255).astype(np.uint8)
    assert router.route(_image(noisy, ocr=True)).top.type == "photograph"
    # Without OCR the weaker pixel-only model answers (document figures are often photographs).
    routing = router.route(_image(noisy, ocr=False))
    assert "photograph" in [s.type for s in routing.types]
    assert routing.strategy == router.strategy


def test_every_router_meets_the_protocol() -> None:
    for router in (FeatureRouter(), AllTypesRouter(), RandomRouter(1), VLMRouter(FakeChat())):
        assert isinstance(router, Router)
