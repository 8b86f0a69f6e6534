"""Routing generated query images with real OCR, and the vision router over real HTTP."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from docsight.llm import OpenAIChatClient
from docsight.query.image import FALLBACK_TYPE, QueryImage, load_query_image
from docsight.query.router import FeatureRouter, VLMRouter
from docsight.vision.common import ocr_available
from fixtures.fake_llm import FakeLLM, ok
from fixtures.llm_fixtures import llm_settings
from fixtures.querygen import generate

#: Types whose content OCR reads well; seed 11 is used by no fit or benchmark.
CHECKED = ["code", "equation", "table", "chart", "screenshot"]
PER_TYPE = 3
SEED = 11

needs_ocr = pytest.mark.skipif(
    not ocr_available(), reason="the ocr extra is not installed (pip install 'docsight[ocr]')"
)


@pytest.fixture(scope="module")
def routed(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, list[str]]]:
    """(label, types routed) for a small generated set, OCR included."""
    out = tmp_path_factory.mktemp("querygen")
    router = FeatureRouter()
    results = []
    for path, label in generate(out, per_type=PER_TYPE, seed=SEED, types=CHECKED):
        routing = router.route(load_query_image(path))
        results.append((label, [s.type for s in routing.types]))
    return results


@needs_ocr
def test_generated_images_are_routed_to_their_type(routed: list[tuple[str, list[str]]]) -> None:
    top1 = sum(types[0] == label for label, types in routed) / len(routed)
    selected = sum(label in types for label, types in routed) / len(routed)
    assert top1 >= 0.8, routed
    assert selected >= 0.9, routed


@needs_ocr
@pytest.mark.parametrize("image_type", CHECKED)
def test_each_type_is_recognised(routed: list[tuple[str, list[str]]], image_type: str) -> None:
    hits = Counter(types[0] == label for label, types in routed if label == image_type)
    # At least two of the three images of every type get the right top type.
    assert hits[True] >= 2, [t for label, t in routed if label == image_type]


# --- vision router over HTTP ---------------------------------------------------------------------


@pytest.fixture
def client(fake_llm: FakeLLM) -> Iterator[OpenAIChatClient]:
    c = OpenAIChatClient(llm_settings(fake_llm.base_url, cache=False, max_retries=0))
    yield c
    c.close()


@pytest.fixture
def small_image(tmp_path: Path) -> QueryImage:
    from PIL import Image

    path = tmp_path / "chart.png"
    Image.new("RGB", (64, 48), "white").save(path)
    return load_query_image(path, ocr=False)


def test_vlm_router_over_http(
    fake_llm: FakeLLM, client: OpenAIChatClient, small_image: QueryImage
) -> None:
    fake_llm.script(
        ok(
            "Here you go:\n```json\n"
            + json.dumps(
                {
                    "types": [
                        {"type": "chart", "confidence": 0.82},
                        {"type": "Table", "confidence": 0.35},
                        {"type": "sticker", "confidence": 0.5},
                        {"type": "figure", "confidence": 0.05},
                    ]
                }
            )
            + "\n```"
        )
    )
    routing = VLMRouter(client, max_tokens=50).route(small_image)
    assert routing.strategy == "vlm:fake-model" and not routing.fallback
    assert [(s.type, s.confidence) for s in routing.types] == [("chart", 0.82), ("table", 0.35)]
    body = fake_llm.chat_requests[0].body
    assert body["max_tokens"] == 50
    parts = body["messages"][-1]["content"]
    assert parts[1]["image_url"]["url"].startswith("data:image/png;base64,")


def test_vlm_router_falls_back_when_the_model_never_answers_json(
    fake_llm: FakeLLM, client: OpenAIChatClient, small_image: QueryImage
) -> None:
    fake_llm.script(ok("It looks like a chart to me."), ok("Definitely a chart."))
    routing = VLMRouter(client).route(small_image)
    assert routing.fallback and routing.top.type == FALLBACK_TYPE
    assert len(fake_llm.chat_requests) == 2  # the answer and one repair attempt
