"""Image questions: stream texts, weights, score fusion, and the cached analysis."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from docsight.cache import JsonCache
from docsight.errors import QueryImageError
from docsight.query.analyze import ImageAnalysis, ImageQueryAnalyzer
from docsight.query.image import (
    QueryImage,
    Routing,
    TypedText,
    TypeScore,
    load_query_image,
    symbolic_block,
)
from docsight.retrieval.hit import Hit
from docsight.retrieval.multimodal import (
    fuse,
    plan_streams,
    question_with_image,
    search_streams,
    stream_texts,
    stream_weights,
)
from docsight.settings import ImageQuerySettings


def _routing(*pairs: tuple[str, float]) -> Routing:
    return Routing(
        types=[TypeScore.model_validate({"type": t, "confidence": c}) for t, c in pairs],
        strategy="test",
    )


def _analysis(
    routing: Routing, typed: list[TypedText] | None = None, caption: str | None = None
) -> ImageAnalysis:
    return ImageAnalysis(
        source="x.png", digest="d", routing=routing, typed=tuple(typed or []), caption=caption
    )


def _hit(key: str, score: float, rank: int) -> Hit:
    return Hit(
        doc_id="doc", doc_name="doc.pdf", page=0, chunk_id=key, rank=rank, score=score, text=key
    )


CHART = TypedText(type="chart", text="Revenue | 2023 | 40", parser="t/1")


def test_symbolic_block_tags_each_type_in_upper_case() -> None:
    code = TypedText(type="code", text="def f(): pass", parser="t/1")
    empty = TypedText(type="map", text="  ", parser="t/1")
    assert (
        symbolic_block([CHART, code, empty]) == "[CHART] Revenue | 2023 | 40\n[CODE] def f(): pass"
    )


def test_stream_texts_skip_streams_that_add_nothing() -> None:
    settings = ImageQuerySettings()
    analysis = _analysis(_routing(("chart", 0.9)), [CHART], caption=None)
    queries = stream_texts("What was revenue?", analysis, settings)
    assert queries == {
        "A": "What was revenue?",
        "B": "What was revenue?\n[CHART] Revenue | 2023 | 40",
    }
    only_b = settings.model_copy(update={"streams": ["B"]})
    assert list(stream_texts("q", analysis, only_b)) == ["B"]
    # Nothing usable from the image and A disabled: fall back to the question.
    nothing = _analysis(_routing(("photograph", 1.0)))
    assert stream_texts("q", nothing, only_b) == {"A": "q"}


def test_stream_text_is_clipped_to_max_words() -> None:
    long = TypedText(type="code", text=" ".join(f"w{i}" for i in range(500)), parser="t/1")
    settings = ImageQuerySettings(max_stream_words=20)
    queries = stream_texts("q", _analysis(_routing(("code", 1.0)), [long]), settings)
    assert len(queries["B"].split()) == 1 + 20  # "q" plus 20 words ("[CODE]" is one)


def test_weights_follow_the_router_and_keep_a_minimum_for_a() -> None:
    settings = ImageQuerySettings(min_weight_a=0.3)
    sure_chart = stream_weights(_routing(("chart", 1.0)), ["A", "B", "C"], settings)
    photo = stream_weights(_routing(("photograph", 1.0)), ["A", "B", "C"], settings)
    unsure = stream_weights(_routing(("figure", 0.5)), ["A", "B", "C"], settings)
    for weights in (sure_chart, photo, unsure):
        assert sum(weights.values()) == pytest.approx(1.0)
        assert weights["A"] == pytest.approx(0.3)
    assert sure_chart["B"] > sure_chart["C"]
    assert photo["C"] > photo["B"]
    assert unsure["B"] == pytest.approx(unsure["C"])  # "figure" claims no structure
    # A missing stream's share goes to the ones searched.
    assert stream_weights(_routing(("chart", 1.0)), ["A", "B"], settings) == pytest.approx(
        {"A": 0.3, "B": 0.7}
    )
    assert stream_weights(_routing(("chart", 1.0)), ["A"], settings) == {"A": 1.0}


def test_weighted_fusion_by_hand() -> None:
    a = [_hit("x", 0.9, 1), _hit("y", 0.5, 2), _hit("z", 0.1, 3)]
    b = [_hit("z", 4.0, 1), _hit("x", 2.0, 2)]
    fused = dict(fuse({"A": a, "B": b}, {"A": 0.4, "B": 0.6}, "weighted"))
    # min-max: A x=1, y=0.5, z=0; B z=1, x=0 (y absent = 0)
    assert fused[("chunk", "x")] == pytest.approx(0.4)
    assert fused[("chunk", "y")] == pytest.approx(0.2)
    assert fused[("chunk", "z")] == pytest.approx(0.6)
    order = [key for key, _ in fuse({"A": a, "B": b}, {"A": 0.4, "B": 0.6}, "weighted")]
    assert order == [("chunk", "z"), ("chunk", "x"), ("chunk", "y")]


def test_rrf_fusion_by_hand() -> None:
    a = [_hit("x", 0.9, 1), _hit("y", 0.5, 2)]
    b = [_hit("y", 4.0, 1)]
    fused = dict(fuse({"A": a, "B": b}, {}, "rrf", rrf_k=60))
    assert fused[("chunk", "y")] == pytest.approx(1 / 62 + 1 / 61)
    assert fused[("chunk", "x")] == pytest.approx(1 / 61)
    with pytest.raises(ValueError, match="fusion mode"):
        fuse({"A": a}, {}, "max")


def test_search_streams_reads_out_hits_with_stream_scores() -> None:
    settings = ImageQuerySettings(fusion="weighted", min_weight_a=0.3)
    analysis = _analysis(_routing(("chart", 1.0)), [CHART])
    plan = plan_streams("revenue", analysis, settings)
    lists = {
        "revenue": [_hit("x", 0.9, 1), _hit("y", 0.2, 2)],
        "revenue\n[CHART] Revenue | 2023 | 40": [_hit("y", 0.8, 1), _hit("x", 0.1, 2)],
    }
    asked: list[tuple[str, int]] = []

    def search(text: str, n: int) -> list[Hit]:
        asked.append((text, n))
        return lists[text]

    hits = search_streams(plan, search, k=2, settings=settings, candidates=50)
    assert [n for _, n in asked] == [50, 50]
    assert [h.chunk_id for h in hits] == ["y", "x"]  # B outweighs A for a sure chart
    assert [h.rank for h in hits] == [1, 2]
    assert hits[0].ranks == {"stream_A": 2, "stream_B": 1}
    assert hits[0].scores["stream_B"] == 0.8


def test_question_with_image_marks_image_content_as_such() -> None:
    settings = ImageQuerySettings()
    asked = question_with_image(
        "Which year?", _analysis(_routing(("chart", 1)), [CHART], "A bar chart"), settings
    )
    assert asked.startswith("Which year?\n\n(The question comes with an image.")
    assert "A bar chart" in asked and "[CHART] Revenue" in asked and asked.endswith(")")
    assert question_with_image("Which year?", _analysis(_routing(("photograph", 1))), settings) == (
        "Which year?"
    )


# --- analysis and its cache -----------------------------------------------------------------------


class CountingRouter:
    strategy = "counting/1"

    def __init__(self, routing: Routing) -> None:
        self.routing = routing
        self.calls = 0

    def route(self, image: QueryImage) -> Routing:
        self.calls += 1
        return self.routing


class CountingParser:
    def __init__(self, kind: str, text: str | None, version: str = "1") -> None:
        self.type = kind
        self.version = version
        self.text = text
        self.calls = 0

    def parse(self, image: QueryImage) -> TypedText | None:
        self.calls += 1
        if self.text is None:
            return None
        return TypedText.model_validate({"type": self.type, "text": self.text, "parser": "c"})


class CountingCaptioner:
    version = "cap/1"

    def __init__(self) -> None:
        self.calls = 0

    def caption(self, image: QueryImage, routing: Routing) -> str | None:
        self.calls += 1
        return f"an image of a {routing.top.type}, {image.width} pixels wide"


def _png(tmp_path: Path, color: tuple[int, int, int] = (200, 30, 30), size=(64, 48)) -> Path:
    path = tmp_path / "query.png"
    Image.new("RGB", size, color).save(path)
    return path


def _analyzer(cache: JsonCache, **parts: object) -> ImageQueryAnalyzer:
    routing = _routing(("chart", 0.8), ("table", 0.5))
    defaults = {
        "router": CountingRouter(routing),
        "parsers": {
            "chart": CountingParser("chart", "bars"),
            "table": CountingParser("table", None),
        },
        "captioner": CountingCaptioner(),
    }
    defaults.update(parts)
    return ImageQueryAnalyzer(ImageQuerySettings(), cache=cache, **defaults)  # type: ignore[arg-type]


def test_analysis_is_cached_and_warm_queries_call_nothing(tmp_path: Path) -> None:
    cache = JsonCache(tmp_path / "cache.sqlite")
    image = _png(tmp_path)
    cold_analyzer = _analyzer(cache)
    cold = cold_analyzer.analyze(image)
    assert [t.type for t in cold.routing.types] == ["chart", "table"]
    assert [t.text for t in cold.typed] == ["bars"]  # the table parser found nothing
    assert cold.caption == "an image of a chart, 64 pixels wide"
    assert not cold.warm and cold.cached["route"] is False

    warm_analyzer = _analyzer(cache)  # new parts, same cache: nothing may run
    warm = warm_analyzer.analyze(image)
    assert warm.warm
    assert warm.symbolic == cold.symbolic and warm.caption == cold.caption
    assert warm_analyzer.router.calls == 0  # type: ignore[attr-defined]
    assert all(p.calls == 0 for p in warm_analyzer.parsers.values())  # type: ignore[attr-defined]
    assert warm_analyzer.captioner.calls == 0  # type: ignore[union-attr]


def test_cache_keys_separate_router_strategies_and_parser_versions(tmp_path: Path) -> None:
    cache = JsonCache(tmp_path / "cache.sqlite")
    image = _png(tmp_path)
    _analyzer(cache).analyze(image)
    other_router = CountingRouter(_routing(("code", 1.0)))
    other_router.strategy = "other/1"  # type: ignore[misc]
    parsers = {
        "code": CountingParser("code", "print(1)"),
        "chart": CountingParser("chart", "v2", "2"),
    }
    analysis = _analyzer(cache, router=other_router, parsers=parsers).analyze(image)
    assert other_router.calls == 1 and [t.type for t in analysis.routing.types] == ["code"]
    chart_v2 = CountingParser("chart", "v2", "2")
    analysis = _analyzer(cache, parsers={"chart": chart_v2}).analyze(image)
    assert chart_v2.calls == 1 and analysis.typed[0].text == "v2"


def test_a_failing_parser_is_reported_and_the_others_still_count(tmp_path: Path) -> None:
    from docsight.errors import LLMError

    class Broken(CountingParser):
        def parse(self, image: QueryImage) -> TypedText | None:
            raise LLMError("endpoint down")

    parsers = {"chart": CountingParser("chart", "bars"), "table": Broken("table", None)}
    analysis = _analyzer(JsonCache(tmp_path / "c.sqlite"), parsers=parsers).analyze(_png(tmp_path))
    assert [t.type for t in analysis.typed] == ["chart"]
    assert any("table parser failed" in w for w in analysis.warnings)


def test_fallback_routing_is_not_cached(tmp_path: Path) -> None:
    cache = JsonCache(tmp_path / "c.sqlite")
    fallback = Routing(
        types=[TypeScore(type="photograph", confidence=1.0)], strategy="vlm:x", fallback=True
    )
    router = CountingRouter(fallback)
    for _ in range(2):
        analysis = _analyzer(cache, router=router).analyze(_png(tmp_path))
    assert router.calls == 2
    assert any("unusable" in w for w in analysis.warnings)


# --- loading ------------------------------------------------------------------------------------


def test_query_images_are_checked_and_named_in_errors(tmp_path: Path) -> None:
    settings = ImageQuerySettings(max_pixels=10_000, max_side=100)
    with pytest.raises(QueryImageError, match=r"missing\.png: no such file"):
        load_query_image(tmp_path / "missing.png", settings, ocr=False)
    fake = tmp_path / "notes.png"
    fake.write_text("this is text, not a PNG")
    with pytest.raises(QueryImageError, match=r"notes\.png: not an image: its content is none of"):
        load_query_image(fake, settings, ocr=False)
    big = tmp_path / "big.png"
    Image.new("RGB", (200, 100)).save(big)
    with pytest.raises(QueryImageError, match=r"200×100 pixels.*max_pixels"):
        load_query_image(big, settings, ocr=False)
    pdf = tmp_path / "doc.png"
    pdf.write_bytes(b"%PDF-1.7\n%\xe2\xe3\n1 0 obj<<>>endobj\n")
    with pytest.raises(QueryImageError, match=r"doc\.png"):
        load_query_image(pdf, settings, ocr=False)


def test_query_images_are_scaled_flattened_and_hashed_by_bytes(tmp_path: Path) -> None:
    rgba = Image.new("RGBA", (400, 100), (0, 0, 0, 0))
    buffer = io.BytesIO()
    rgba.save(buffer, format="PNG")
    image = load_query_image(buffer.getvalue(), ImageQuerySettings(max_side=200), ocr=False)
    assert (image.width, image.height) == (200, 50)
    assert np.all(image.rgb == 255)  # transparent pixels on white
    again = load_query_image(buffer.getvalue(), ImageQuerySettings(max_side=200), ocr=False)
    assert image.digest == again.digest and image.ocr is False and image.lines == ()
    assert image.png.startswith(b"\x89PNG")


def test_a_slow_parser_does_not_hold_up_the_answer(tmp_path: Path) -> None:
    import threading
    import time

    release = threading.Event()

    class Slow(CountingParser):
        def parse(self, image: QueryImage) -> TypedText | None:
            release.wait(60)
            return None

    # Time enough for the fast parser on a loaded machine; far less than the slow one's wait.
    settings = ImageQuerySettings(parser_timeout=2.0)
    parsers = {"chart": CountingParser("chart", "bars"), "table": Slow("table", None)}
    analyzer = ImageQueryAnalyzer(
        settings,
        cache=JsonCache(tmp_path / "c.sqlite"),
        router=CountingRouter(_routing(("chart", 0.8), ("table", 0.5))),
        parsers=parsers,  # type: ignore[arg-type]
        captioner=CountingCaptioner(),
    )
    started = time.monotonic()
    analysis = analyzer.analyze(_png(tmp_path))
    elapsed = time.monotonic() - started
    release.set()
    assert elapsed < 30.0  # the slow parser alone would hold it for 60 s
    assert [t.type for t in analysis.typed] == ["chart"]
    assert any("table parser took longer" in w for w in analysis.warnings)
