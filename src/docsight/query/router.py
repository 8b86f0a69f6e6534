"""Routers: which of the ten image types a query image is, with confidences.

* :class:`FeatureRouter` (offline): a linear softmax model over :mod:`.features`. Its weights are
  a readable table below, fitted by ``benchmarks/router_accuracy.py --fit`` on generated images
  of every type plus the tuning half of the derived mmquery-dev crops (table, chart, figure), with
  an L1 penalty so each type depends on few features. ``MODEL_VERSION`` changes with the table.
* :class:`VLMRouter`: a zero-shot question to a vision model; its answer is validated and an
  unusable one falls back to :data:`FALLBACK_TYPE`.
* :class:`AllTypesRouter` and :class:`RandomRouter`: ablation baselines.

:func:`select` keeps the best type always and further ones above a confidence floor.
"""

from __future__ import annotations

import hashlib
import logging
import math
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from docsight.errors import ConfigurationError, LLMError
from docsight.llm.base import ChatModel, Message, image_part
from docsight.query.features import FEATURE_NAMES, ImageFeatures, extract_features
from docsight.query.image import (
    FALLBACK_TYPE,
    IMAGE_TYPES,
    ImageType,
    QueryImage,
    Router,
    Routing,
    TypeScore,
)
from docsight.settings import ImageQuerySettings
from docsight.vision.common import ocr_available

logger = logging.getLogger(__name__)

#: Bumped whenever the weight tables or the features change: it is part of the cache namespace.
MODEL_VERSION = "1"


def select(scores: list[TypeScore], max_types: int, min_confidence: float) -> list[TypeScore]:
    """Best first: the top type always, then others with at least ``min_confidence``, at most
    ``max_types`` in all."""
    ranked = sorted(scores, key=lambda s: (-s.confidence, IMAGE_TYPES.index(s.type)))
    if not ranked:
        return []
    kept = [ranked[0]]
    for score in ranked[1 : max(1, max_types)]:
        if score.confidence >= min_confidence:
            kept.append(score)
    return kept


def _fallback(strategy: str) -> Routing:
    return Routing(
        types=[TypeScore(type=FALLBACK_TYPE, confidence=1.0)], strategy=strategy, fallback=True
    )


# --- offline -------------------------------------------------------------------------------------


def parse_weights(text: str) -> dict[str, dict[str, float]]:
    """Read a weight table: ``type: feature=weight ...``, continued on indented lines."""
    table: dict[str, dict[str, float]] = {}
    row: dict[str, float] = {}
    for line in text.splitlines():
        tokens = line.split()
        if not tokens:
            continue
        if not line[0].isspace():
            row = table.setdefault(tokens.pop(0).rstrip(":"), {})
        for token in tokens:
            name, _, value = token.partition("=")
            row[name] = float(value)
    return table


def format_weights(table: dict[str, dict[str, float]], width: int = 96) -> str:
    """The inverse of :func:`parse_weights`, in lines of at most ``width`` characters."""
    lines = []
    for name, row in table.items():
        line = f"{name}:"
        for feature, value in row.items():
            token = f"{feature}={value:g}"
            if len(line) + 1 + len(token) > width:
                lines.append(line)
                line = "   "
            line += f" {token}"
        lines.append(line)
    return "\n".join(lines)


# Per type: a bias and the weights of the features that matter (the rest are zero). Fitted by
# ``benchmarks/router_accuracy.py --fit`` with an L1 penalty, on raw feature values.
_TEXT_MODEL = """
chart: bias=-2.518 n_colours=-0.022 sat_ink_share=0.681 flat_colour_share=8.829 edge_share=6.014
    h_seg_len=0.404 h_bands=-0.077 top_band=-1.351 rel_line_height=-0.329 char_width_cv=0.526
    words_per_line=4.606 indent_levels=0.634 grid_cells=-0.866 numeric_share=2.2
    numeric_line_share=1.678 percent_share=5.033 panel_labels=0.149 axis_left=1.705
    axis_bottom=2.46
table: bias=-4.955 unique_ratio=-0.384 flat_colour_share=2.828 edge_share=12.914 h_rules=0.452
    v_rules=0.592 h_bands=0.435 top_band=0.481 n_lines=0.793 n_words=0.069 text_rows=1.882
    line_height_cv=-1.06 char_width_cv=-0.605 multi_cell_rows=1.039 aligned_columns=0.074
    grid_cells=1.771 numeric_line_share=1.258 equals_line_share=-0.601 caption_figure=-2.788
    caption_table=1.217 axis_left=-0.08
circuit: bias=-1.53 math_share=0.681 circuit_tokens=9.918
equation: bias=-1.442 multi_cell_rows=0.933 math_share=2.833 equals_line_share=15.006
screenshot: bias=-1.002 bg_dark=1.169 top_band=0.409 ui_words=8.312 error_words=15.865
code: bias=-1.245 bg_dark=1.238 text_ink_share=1.069 text_rows=0.126 char_width_cv=-1.322
    code_line_share=6.852 code_cues=7.314 axis_left=1.402
figure: bias=3.982 log_aspect=0.098 bg_share=-0.122 bg_dark=0.252 ink_share=0.295
    n_colours=0.436 top8_share=-4.572 axis_edge_share=1.457 v_rules=0.15 v_seg_len=0.536
    text_ink_share=-2.134 char_width_cv=0.269 words_per_line=4.561 indent_share=-1.395
    grid_cells=-0.835 pair_rows=-0.551 numeric_share=-0.181 caption_figure=2.091
diagram: bias=3.384 log_aspect=-0.181 bg_share=0.725 ink_share=-0.754 h_rules=-0.251
    v_rules=-1.847 graphic_ink=-2.397 n_words=-0.09 text_area=-1.118 text_rows=-3.785
    line_height_cv=-0.606 char_width_cv=1.685 words_per_line=-2.194 indent_levels=-0.445
    pair_rows=0.736 numeric_share=-0.915 numeric_line_share=-1.013 map_words=-0.481
map: bias=-0.557 bg_share=-1.346 ink_share=1.289 unique_ratio=0.098 sat_ink_share=-1.332
    flat_colour_share=-1.284 graphic_ink=2.34 char_width_cv=-2.465 aligned_columns=-0.176
    indent_levels=0.505 indent_share=2.489 scatter=0.112 map_words=9.294
photograph: bias=4.11 sat_share=1.048 flat_share=-2.43 soft_share=5.532 axis_edge_share=-4.863
    graphic_soft=0.507 n_lines=-0.202 n_words=-0.217
"""
# The same for images without OCR lines (the ``ocr`` extra missing): pixel features only.
_PIXEL_MODEL = """
chart: bias=0.921 n_colours=-0.549 unique_ratio=0.374 sat_ink_share=4.211
    flat_colour_share=14.616 edge_share=15.99 axis_edge_share=-1.918 h_rules=0.461 v_rules=1.796
    h_seg_len=0.608 h_bands=-0.261 top_band=-0.337
table: bias=2.413 n_colours=0.039 unique_ratio=-1.148 sat_ink_share=-0.466
    flat_colour_share=13.21 flat_share=-2.813 edge_share=29.03 axis_edge_share=-1.562
    h_rules=1.387 v_rules=2.475 v_seg_len=-1.197 h_bands=2.429 top_band=0.24
circuit: bias=-9.94 log_aspect=-0.285 unique_ratio=-0.344 sat_ink_share=-1.867
    axis_edge_share=10.615 h_rules=-0.8 h_seg_len=0.81 v_seg_len=3.065
equation: bias=2.704 log_aspect=0.97 n_colours=-0.36 sat_ink_share=-5.892 axis_edge_share=-1.912
    h_rules=-1.126 v_rules=-1.212 h_seg_len=0.237 v_seg_len=0.934
screenshot: bias=-2.176 log_aspect=0.056 bg_share=0.862 bg_dark=2.212 unique_ratio=0.343
    sat_ink_share=4.365 edge_share=-5.043 h_rules=2.059 v_seg_len=-0.553 h_bands=1.181
    top_band=4.045
code: bias=0.948 bg_share=1.432 bg_dark=3.783 ink_share=-1.78 flat_share=-1.554 edge_share=9.037
    h_seg_len=-2.719 h_bands=-0.256 top_band=-0.666
figure: bias=10.531 bg_share=-2.732 bg_dark=1.305 ink_share=2.483 top8_share=-11.672
    unique_ratio=-0.112 sat_ink_share=2.566 edge_share=15.379 axis_edge_share=2.733
    v_rules=1.117 v_seg_len=0.939 h_bands=0.077
diagram: bias=-1.707 log_aspect=-0.499 bg_share=0.451 ink_share=-0.496 n_colours=0.111
    unique_ratio=0.097 edge_share=-32.303 axis_edge_share=5.452 h_rules=-1.618 v_rules=-1.234
    h_seg_len=0.31
map: bias=2.357 bg_share=-6.986 ink_share=6.888 sat_ink_share=-2.042 flat_share=3.714
    edge_share=-5.959 h_seg_len=-0.579 h_bands=-1.158
photograph: bias=5.37 bg_share=-1.352 ink_share=1.238 top8_share=-0.663 sat_share=3.252
    flat_share=-3.418 edge_share=-2.908 soft_share=7.201 axis_edge_share=-6.223 h_bands=0.097
"""
WEIGHTS = parse_weights(_TEXT_MODEL)
PIXEL_WEIGHTS = parse_weights(_PIXEL_MODEL)
#: Softmax temperatures, fitted on leave-one-document-out predictions for the real crops of the
#: tuning half (in-sample probabilities are overconfident).
TEMPERATURE = 2.0
PIXEL_TEMPERATURE = 2.0


def weight_matrix(table: dict[str, dict[str, float]]) -> tuple[np.ndarray, np.ndarray]:
    """(types × features weights, biases) in :data:`IMAGE_TYPES` and FEATURE_NAMES order."""
    weights = np.zeros((len(IMAGE_TYPES), len(FEATURE_NAMES)))
    bias = np.zeros(len(IMAGE_TYPES))
    index = {name: i for i, name in enumerate(FEATURE_NAMES)}
    for t, row in enumerate(IMAGE_TYPES):
        for name, value in table.get(row, {}).items():
            if name == "bias":
                bias[t] = value
            else:
                weights[t, index[name]] = value
    return weights, bias


def softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(axis=-1, keepdims=True)
    e = np.exp(shifted)
    out: np.ndarray = e / e.sum(axis=-1, keepdims=True)
    return out


class FeatureRouter:
    """The offline router: image features, a linear model per type, a softmax."""

    def __init__(
        self,
        max_types: int = 3,
        min_confidence: float = 0.2,
        *,
        weights: dict[str, dict[str, float]] | None = None,
        temperature: float | None = None,
        pixel_weights: dict[str, dict[str, float]] | None = None,
        pixel_temperature: float | None = None,
    ) -> None:
        self.max_types = max_types
        self.min_confidence = min_confidence
        self._text_model = weight_matrix(weights if weights is not None else WEIGHTS)
        self._pixel_model = weight_matrix(
            pixel_weights if pixel_weights is not None else PIXEL_WEIGHTS
        )
        self._temperature = temperature or TEMPERATURE
        self._pixel_temperature = pixel_temperature or PIXEL_TEMPERATURE
        custom = weights is not None or pixel_weights is not None
        # Without the ocr extra every image gets the pixel-only model: a different answer, so a
        # different cache namespace (installing the extra later must not reuse those entries).
        self._strategy = (
            f"offline/{MODEL_VERSION}"
            + ("" if ocr_available() else "-pixels")
            + ("-custom" if custom else "")
        )

    @property
    def strategy(self) -> str:
        return self._strategy

    def probabilities(self, features: ImageFeatures) -> dict[ImageType, float]:
        """Every type's probability; the pixel-only model when OCR did not run."""
        if features.has_ocr:
            (weights, bias), temperature = self._text_model, self._temperature
        else:
            (weights, bias), temperature = self._pixel_model, self._pixel_temperature
        logits = (weights @ features.vector() + bias) / temperature
        probs = softmax(logits)
        return {t: float(p) for t, p in zip(IMAGE_TYPES, probs, strict=True)}

    def scores(self, image: QueryImage) -> list[TypeScore]:
        """All ten types, best first."""
        probs = self.probabilities(extract_features(image))
        ranked = sorted(IMAGE_TYPES, key=lambda t: -probs[t])
        return [TypeScore(type=t, confidence=round(probs[t], 4)) for t in ranked]

    def route(self, image: QueryImage) -> Routing:
        try:
            scores = self.scores(image)
        except (ValueError, ArithmeticError, IndexError, MemoryError) as exc:
            # The contract is to never raise for a readable image; odd shapes end here.
            logger.warning("offline router failed on %s: %s", image.source, exc)
            return _fallback(self.strategy)
        return Routing(
            types=select(scores, self.max_types, self.min_confidence), strategy=self.strategy
        )


# --- vision model --------------------------------------------------------------------------------

_DEFINITIONS: dict[ImageType, str] = {
    "chart": "a plot of data: bar, line, pie, scatter or area chart, with axes or value labels",
    "table": "rows and columns of values or text, with or without ruling lines",
    "circuit": "an electrical or electronic schematic (resistors, capacitors, wires, labels)",
    "equation": "mathematical formulas or equations",
    "screenshot": "a capture of a computer or phone screen: windows, dialogs, menus, terminals",
    "code": "program source code or a configuration file",
    "figure": "a figure from a document: an illustration, multi-panel figure or page layout",
    "diagram": "boxes, shapes and arrows: flowcharts, architectures, processes",
    "map": "a geographic map with regions, places or routes",
    "photograph": "a photo of real scenes, people or objects",
}
#: Names models use for the types; anything else is dropped.
_SYNONYMS: dict[str, ImageType] = {
    "photo": "photograph",
    "image": "photograph",
    "picture": "photograph",
    "graph": "chart",
    "plot": "chart",
    "formula": "equation",
    "math": "equation",
    "schematic": "circuit",
    "flowchart": "diagram",
    "source code": "code",
    "screen": "screenshot",
    "illustration": "figure",
}


class _TypeEntry(BaseModel):
    # Loose on purpose: one unknown type or a stringly confidence must not fail the whole answer
    # (that would trigger a repair round trip); :func:`validate_answer` cleans it instead.
    type: Any = None
    confidence: Any = None


class RouterAnswer(BaseModel):
    """What the vision model is asked for."""

    types: list[_TypeEntry] = Field(
        default_factory=list,
        description='the image types, most likely first: [{"type": <type>, "confidence": <0-1>}]',
    )


def _type_name(value: Any) -> ImageType | None:
    if not isinstance(value, str):
        return None
    name = " ".join(value.strip().lower().replace("_", " ").replace("-", " ").split())
    if name in IMAGE_TYPES:
        return name  # type: ignore[return-value]
    if name.endswith("s") and name[:-1] in IMAGE_TYPES:
        return name[:-1]  # type: ignore[return-value]
    return _SYNONYMS.get(name) or _SYNONYMS.get(name.rstrip("s"))


def _confidence(value: Any) -> float:
    """A number clipped to [0, 1]; a missing one is 0.5, an unreadable one 0."""
    if value is None:
        return 0.5
    if isinstance(value, str):
        value = value.strip().rstrip("%")
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    if math.isnan(number):
        return 0.0
    if number > 1.0 and number <= 100.0 and isinstance(value, str):
        number /= 100.0  # "85%"
    return min(1.0, max(0.0, number))


def validate_answer(answer: RouterAnswer) -> list[TypeScore]:
    """Known types only, confidences in [0, 1], one entry per type (the highest), best first."""
    best: dict[ImageType, float] = {}
    for entry in answer.types:
        name = _type_name(entry.type)
        if name is None:
            continue
        best[name] = max(best.get(name, 0.0), _confidence(entry.confidence))
    ranked = sorted(best, key=lambda t: (-best[t], IMAGE_TYPES.index(t)))
    return [TypeScore(type=t, confidence=best[t]) for t in ranked]


def router_prompt() -> str:
    types = "\n".join(f"- {t}: {d}" for t, d in _DEFINITIONS.items())
    return (
        "A user asked a question about documents and attached this image. Which types of image "
        "is it? Choose from these types only:\n"
        f"{types}\n"
        "Name one to three types, most likely first, each with your confidence from 0 to 1. "
        'Answer as JSON: {"types": [{"type": "chart", "confidence": 0.9}]}.'
    )


class VLMRouter:
    """Asks a vision model; an error or an empty answer falls back to :data:`FALLBACK_TYPE`."""

    def __init__(
        self,
        chat: ChatModel,
        max_tokens: int = 200,
        *,
        max_types: int = 3,
        min_confidence: float = 0.2,
    ) -> None:
        self.chat = chat
        self.max_tokens = max_tokens
        self.max_types = max_types
        self.min_confidence = min_confidence

    @property
    def strategy(self) -> str:
        return f"vlm:{self.chat.model}"

    def route(self, image: QueryImage) -> Routing:
        messages: list[Message] = [
            {
                "role": "system",
                "content": "You classify images for a document search engine. Be factual.",
            },
            {
                "role": "user",
                "content": [{"type": "text", "text": router_prompt()}, image_part(image.png)],
            },
        ]
        try:
            answer = self.chat.chat_json(messages, RouterAnswer, max_tokens=self.max_tokens)
        except LLMError as exc:
            logger.warning("vision router failed on %s: %s", image.source, exc.message)
            return _fallback(self.strategy)
        scores = validate_answer(answer)
        if not scores:
            return _fallback(self.strategy)
        return Routing(
            types=select(scores, self.max_types, self.min_confidence), strategy=self.strategy
        )


# --- baselines -----------------------------------------------------------------------------------


class AllTypesRouter:
    """Every type with confidence 1.0: the "parse as everything" ablation.

    1.0 rather than 1/10 because the ablation asks what routing adds over running every parser
    and trusting each fully; a uniform 0.1 would also shrink every confidence-weighted stream and
    mix a second effect into the comparison. ``max_types`` does not apply.
    """

    strategy = "all"

    def route(self, image: QueryImage) -> Routing:
        return Routing(
            types=[TypeScore(type=t, confidence=1.0) for t in IMAGE_TYPES], strategy=self.strategy
        )


class RandomRouter:
    """Random types and confidences, the same for the same seed and image (a lower baseline)."""

    def __init__(self, seed: int = 0, max_types: int = 3, min_confidence: float = 0.2) -> None:
        self.seed = seed
        self.max_types = max_types
        self.min_confidence = min_confidence

    @property
    def strategy(self) -> str:
        return f"random:{self.seed}"

    def route(self, image: QueryImage) -> Routing:
        key = hashlib.sha256(f"{self.seed}:{image.digest}".encode()).digest()
        rng = np.random.default_rng(int.from_bytes(key[:8], "big"))
        probs = rng.dirichlet(np.ones(len(IMAGE_TYPES)))
        order = rng.permutation(len(IMAGE_TYPES))
        scores = [
            TypeScore(type=IMAGE_TYPES[i], confidence=float(p))
            for i, p in zip(order, np.sort(probs)[::-1], strict=True)
        ]
        return Routing(
            types=select(scores, self.max_types, self.min_confidence), strategy=self.strategy
        )


def create_router(settings: ImageQuerySettings, chat: ChatModel | None = None) -> Router:
    """The router ``settings.router`` names; ``chat`` is the vision model, when configured."""
    kind = settings.router
    max_types, min_confidence = settings.max_types, settings.min_confidence
    if kind == "all":
        return AllTypesRouter()
    if kind == "random":
        return RandomRouter(settings.random_seed, max_types, min_confidence)
    if kind == "vlm" or (kind == "auto" and chat is not None):
        if chat is None:
            raise ConfigurationError(
                "the image router 'vlm' needs a vision model: set DOCSIGHT_VLM_MODEL (and "
                "DOCSIGHT_VLM_BASE_URL for a local endpoint), or use DOCSIGHT_IMAGE_ROUTER=offline"
            )
        return VLMRouter(chat, max_types=max_types, min_confidence=min_confidence)
    return FeatureRouter(max_types, min_confidence)
