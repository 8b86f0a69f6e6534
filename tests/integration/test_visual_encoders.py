"""Conformance of the visual encoder backends, through their real code paths.

Every backend passes the same tests (kinds and shapes, unit norms, empty input, determinism,
fingerprints, batching, errors, MaxSim self-ranking):

* ``openai`` against the loopback fake of a vLLM embeddings endpoint (always runs);
* ``colpali`` on a tiny random-weight ColQwen2 built offline and loaded from its directory
  (``visual`` mark; skipped without torch and colpali-engine).

Backend-specific tests follow: the request body vLLM receives, retries and faults for
``openai``; model-class selection, dependency errors and padding for ``colpali``.
"""

from __future__ import annotations

import base64
import importlib.util
import io
import json
import math
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from docsight.encoders import VISUAL_ENCODERS, create_visual_encoder
from docsight.encoders.visual import VisualEncoder, maxsim_many
from docsight.errors import ConfigurationError, EncoderError, MissingDependencyError
from docsight.settings import VisualSettings
from fixtures.fake_embeddings import (
    FakeEmbeddings,
    Part,
    error,
    hang,
    malformed_body,
    rate_limited,
)

# --- page images -------------------------------------------------------------------------------


def page_png(seed: int, size: tuple[int, int] = (320, 420), mode: str = "RGB") -> bytes:
    """A page-like image: a tinted background with a few dark 'text' bars placed by ``seed``."""
    rng = np.random.default_rng(seed)
    pixels = np.full((size[1], size[0], 3), 235, dtype=np.uint8)
    pixels[..., seed % 3] = 180 + (seed * 37) % 70
    for _ in range(6):
        top = int(rng.integers(0, size[1] - 12))
        left = int(rng.integers(0, size[0] // 2))
        pixels[top : top + 8, left : left + int(rng.integers(40, size[0] // 2))] = 30
    image = Image.fromarray(pixels).convert(mode)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def page_jpeg(seed: int, size: tuple[int, int] = (300, 300)) -> bytes:
    buffer = io.BytesIO()
    Image.open(io.BytesIO(page_png(seed, size))).save(buffer, format="JPEG", quality=85)
    return buffer.getvalue()


def mixed_pages(n: int) -> list[bytes]:
    """Pages of several sizes, modes and formats, as ingestion hands them over."""
    makers: list[Callable[[int], bytes]] = [
        lambda s: page_png(s),
        lambda s: page_png(s, (500, 260)),
        lambda s: page_jpeg(s),
        lambda s: page_png(s, (200, 280), mode="RGBA"),
        lambda s: page_png(s, (260, 200), mode="L"),
    ]
    return [makers[i % len(makers)](i) for i in range(n)]


# --- backends ----------------------------------------------------------------------------------


@dataclass
class Backend:
    """How the conformance tests drive one backend."""

    name: str
    #: ``make(variant=0, **settings)``: an encoder; another ``variant`` is another model.
    make: Callable[..., VisualEncoder]
    #: Requests (openai) or forward passes (colpali) an encoder has made so far.
    calls: Callable[[VisualEncoder], int]
    #: Calls expected for ``n`` pages with ``batch_size`` b.
    expected_calls: Callable[[int, int], int]
    #: An encoder whose backend fails (endpoint error, missing weights).
    broken: Callable[[], VisualEncoder]


def _visual_stack_problem() -> str | None:
    for package in ("torch", "colpali_engine", "transformers", "tokenizers"):
        if importlib.util.find_spec(package) is None:
            return f"{package} is not installed (pip install 'docsight[visual]')"
    try:
        import colpali_engine.models  # noqa: F401
    except Exception as exc:  # a torchvision built for another torch fails here
        return f"colpali_engine does not import: {exc}"
    return None


@pytest.fixture
def fake_endpoint() -> Iterator[FakeEmbeddings]:
    with FakeEmbeddings(dim=24) as fake:
        yield fake


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Two tiny ColQwen2 checkpoints of one architecture (different random weights)."""
    problem = _visual_stack_problem()
    if problem:
        pytest.skip(problem)
    from fixtures.tiny_colpali import build_tiny_colqwen2

    root = tmp_path_factory.mktemp("tiny-colqwen2")
    return [build_tiny_colqwen2(root / f"seed{seed}", seed=seed) for seed in (0, 1)]


def _openai_backend(fake: FakeEmbeddings) -> Backend:
    def make(variant: int = 0, **fields: Any) -> VisualEncoder:
        settings = VisualSettings(
            **{
                "backend": "openai",
                "base_url": fake.base_url,
                "model": f"fake-mm-embed-{variant}",
                "timeout": 10,
                "max_side": 256,
                **fields,
            }
        )
        encoder = create_visual_encoder(settings)
        assert encoder is not None
        return encoder

    def calls(encoder: VisualEncoder) -> int:
        model = encoder.model  # type: ignore[attr-defined]
        return sum(1 for r in fake.embedding_requests if r.body.get("model") == model)

    def broken() -> VisualEncoder:
        encoder = make(variant=99)
        encoder.max_retries = 1  # type: ignore[attr-defined]
        encoder.backoff_s = 0.01  # type: ignore[attr-defined]
        fake.script(error(500, "model crashed"), error(500, "model crashed"))
        return encoder

    return Backend("openai", make, calls, lambda n, b: n, broken)


def _colpali_backend(models: list[Path], tmp: Path) -> Backend:
    def make(variant: int = 0, **fields: Any) -> VisualEncoder:
        settings = VisualSettings(
            **{
                "backend": "colpali",
                "model_path": models[variant],
                "device": "cpu",
                "max_side": 128,
                **fields,
            }
        )
        encoder = create_visual_encoder(settings)
        assert encoder is not None
        return encoder

    def broken() -> VisualEncoder:
        # A directory with the configuration but no weights: what an interrupted copy leaves.
        target = tmp / "no-weights"
        target.mkdir(exist_ok=True)
        (target / "config.json").write_bytes((models[0] / "config.json").read_bytes())
        return make(model_path=target)

    return Backend(
        "colpali",
        make,
        lambda encoder: encoder.forward_passes,  # type: ignore[attr-defined]
        lambda n, b: math.ceil(n / b),
        broken,
    )


@pytest.fixture(params=["openai", pytest.param("colpali", marks=pytest.mark.visual)])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param == "openai":
        return _openai_backend(request.getfixturevalue("fake_endpoint"))
    models = request.getfixturevalue("tiny_models")
    return _colpali_backend(models, tmp_path)


def as_list(vectors: np.ndarray | list[np.ndarray]) -> list[np.ndarray]:
    """Per-item arrays of either kind: a single vector becomes a one-row matrix."""
    if isinstance(vectors, np.ndarray):
        return [row[None, :] for row in vectors]
    return list(vectors)


# --- conformance -------------------------------------------------------------------------------


def test_kinds_and_shapes(backend: Backend) -> None:
    encoder = backend.make()
    assert isinstance(encoder, VisualEncoder)
    assert encoder.name == backend.name
    pages = encoder.encode_pages(mixed_pages(5))
    queries = encoder.encode_queries(["revenue in 2024", "the wiring diagram", ""])
    dim = encoder.dim
    assert dim > 0
    if encoder.kind == "single":
        for result, n in ((pages, 5), (queries, 3)):
            assert isinstance(result, np.ndarray)
            assert result.dtype == np.float32
            assert result.shape == (n, dim)
    else:
        assert encoder.kind == "multi"
        for result, n in ((pages, 5), (queries, 3)):
            assert isinstance(result, list) and len(result) == n
            for matrix in result:
                assert matrix.dtype == np.float32
                assert matrix.ndim == 2 and matrix.shape[0] > 0 and matrix.shape[1] == dim


def test_unit_norms(backend: Backend) -> None:
    encoder = backend.make()
    for result in (encoder.encode_pages(mixed_pages(4)), encoder.encode_queries(["a", "b c"])):
        for matrix in as_list(result):
            np.testing.assert_allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)
            assert np.isfinite(matrix).all()


def test_empty_input(backend: Backend) -> None:
    encoder = backend.make()
    for result in (encoder.encode_pages([]), encoder.encode_queries([])):
        if encoder.kind == "single":
            assert isinstance(result, np.ndarray) and result.shape == (0, encoder.dim)
            assert result.dtype == np.float32
        else:
            assert result == []


def test_deterministic_and_order_preserving(backend: Backend) -> None:
    encoder = backend.make(batch_size=2)
    images = mixed_pages(5)
    first = as_list(encoder.encode_pages(images))
    # The same images in reverse order, through another encoder of the same settings.
    again = as_list(backend.make(batch_size=2).encode_pages(images[::-1]))[::-1]
    for a, b in zip(first, again, strict=True):
        assert a.shape == b.shape
        # Batches differ (and so does padding): equal up to float noise.
        np.testing.assert_allclose(a, b, atol=2e-3)
    # (Compared whole: a causal model's first prompt token is the same on every page.)
    assert not np.allclose(first[0].mean(axis=0), first[1].mean(axis=0)), "pages not told apart"


def test_fingerprint_stable_and_differs_by_model_and_resolution(backend: Backend) -> None:
    one, same = backend.make(), backend.make()
    assert one.fingerprint == same.fingerprint
    assert one.fingerprint.startswith(("openai-visual:", "colpali:"))
    assert backend.make(variant=1).fingerprint != one.fingerprint
    assert backend.make(max_side=512).fingerprint != one.fingerprint
    # Batching and timeouts do not change the vectors, so they are not part of the space.
    assert backend.make(batch_size=7, timeout=3).fingerprint == one.fingerprint


@pytest.mark.parametrize(("n", "batch_size"), [(5, 2), (4, 4), (3, 1)])
def test_batching_honoured(backend: Backend, n: int, batch_size: int) -> None:
    encoder = backend.make(batch_size=batch_size)
    _ = encoder.dim  # a probe, if the backend needs one, is not part of the count
    before = backend.calls(encoder)
    encoder.encode_pages(mixed_pages(n))
    assert backend.calls(encoder) - before == backend.expected_calls(n, batch_size)


def test_unreadable_image_is_an_encoder_error(backend: Backend) -> None:
    encoder = backend.make()
    with pytest.raises(EncoderError, match="page image 1"):
        encoder.encode_pages([page_png(0), b"%PDF-1.7 not an image"])


def test_backend_failure_is_an_encoder_error(backend: Backend) -> None:
    encoder = backend.broken()
    with pytest.raises(EncoderError) as caught:
        encoder.encode_pages([page_png(1)])
    assert isinstance(caught.value.code, str) and caught.value.code == "encoder_error"


def test_maxsim_ranks_each_page_first_for_itself(backend: Backend) -> None:
    encoder = backend.make()
    pages = as_list(encoder.encode_pages([page_png(seed) for seed in range(6)]))
    for i, page in enumerate(pages):
        scores = maxsim_many(page, pages)
        assert int(np.argmax(scores)) == i
        # A page's own MaxSim is one per token: every token finds itself.
        assert scores[i] == pytest.approx(page.shape[0], rel=1e-4)


def test_registered_and_none_by_default() -> None:
    assert {"openai", "colpali"} <= set(VISUAL_ENCODERS.names())
    assert VISUAL_ENCODERS.entry("colpali").extra == "visual"
    assert create_visual_encoder(VisualSettings()) is None


# --- openai: what vLLM receives ----------------------------------------------------------------


@pytest.fixture
def fake() -> Iterator[FakeEmbeddings]:
    with FakeEmbeddings(dim=12) as server:
        yield server


def openai_encoder(fake: FakeEmbeddings, **fields: Any) -> Any:
    settings = VisualSettings(
        **{"backend": "openai", "base_url": fake.base_url, "model": "mm-embed", **fields}
    )
    encoder = create_visual_encoder(settings)
    encoder.backoff_s = 0.01  # type: ignore[union-attr]
    return encoder


def decode_data_url(url: str) -> tuple[str, Image.Image]:
    header, _, payload = url.partition(",")
    assert header.startswith("data:image/") and header.endswith(";base64")
    return header[5:-7], Image.open(io.BytesIO(base64.b64decode(payload)))


def test_openai_request_carries_image_data_urls(fake: FakeEmbeddings) -> None:
    encoder = openai_encoder(fake, max_side=256, api_key="sk-test")
    encoder.encode_pages([page_png(3, (1200, 1600)), page_jpeg(4, (300, 200))])
    requests = fake.embedding_requests
    assert len(requests) == 2
    for request in requests:
        assert request.path == "/v1/embeddings"
        assert request.headers["authorization"] == "Bearer sk-test"
        body = request.body
        assert body["model"] == "mm-embed" and body["encoding_format"] == "float"
        assert "input" not in body
        (message,) = body["messages"]
        assert message["role"] == "user"
        (part,) = message["content"]
        assert part["type"] == "image_url"
    urls = sorted(
        (r.body["messages"][0]["content"][0]["image_url"]["url"] for r in requests), key=len
    )
    mimes = {decode_data_url(url)[0] for url in urls}
    assert mimes == {"image/png", "image/jpeg"}, "PNG pages stay PNG, JPEG scans stay JPEG"
    sizes = {decode_data_url(url)[1].size for url in urls}
    # Both scaled to a longest side of 256, aspect ratio kept.
    assert sizes == {(192, 256), (256, 171)}


def test_openai_queries_go_as_text_messages(fake: FakeEmbeddings) -> None:
    encoder = openai_encoder(fake)
    vectors = encoder.encode_queries(["what was the revenue?"])
    (request,) = fake.embedding_requests
    assert request.body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "what was the revenue?"}]}
    ]
    expected = fake.vector("mm-embed", [Part("text", b"what was the revenue?")])
    np.testing.assert_allclose(vectors[0], expected / np.linalg.norm(expected), atol=1e-6)
    assert encoder.dim == 12 and len(fake.embedding_requests) == 1, "dim learned, no probe"


def test_openai_results_keep_input_order_under_concurrency(fake: FakeEmbeddings) -> None:
    # Each image's vector is one-hot at an index read from its pixels; answers arrive in any
    # order, results must not.
    def embed(model: str, parts: list[Part]) -> list[float]:
        image = Image.open(io.BytesIO(parts[0].data)).convert("RGB")
        index = round(image.getpixel((0, 0))[0] / 20)
        vector = [0.0] * 12
        vector[index] = 5.0
        return vector

    fake.embed_fn = embed
    fake.script(*[hang(0.05 * (9 - i)) for i in range(9)])  # earlier requests answer later
    images = []
    for i in range(9):
        buffer = io.BytesIO()
        Image.new("RGB", (64, 64), (20 * i, 0, 0)).save(buffer, format="PNG")
        images.append(buffer.getvalue())
    vectors = openai_encoder(fake, batch_size=4).encode_pages(images)
    assert [int(np.argmax(v)) for v in vectors] == list(range(9))
    assert 1 < fake.max_in_flight <= 4


def test_fake_endpoint_can_aim_a_query_at_a_page(fake: FakeEmbeddings) -> None:
    # What an end-to-end test of the visual channel needs from the fake: a query whose vector
    # is a given page's, although the client scaled and re-encoded that page.
    pages = [page_png(seed, (900, 1200)) for seed in range(6)]
    fake.aim("where is the wiring diagram?", pages[3])
    encoder = openai_encoder(fake, max_side=300)
    page_vectors = encoder.encode_pages(pages)
    (query,) = encoder.encode_queries(["where is the wiring diagram?"])
    scores = page_vectors @ query
    assert int(np.argmax(scores)) == 3 and scores[3] == pytest.approx(1.0, abs=1e-5)
    assert np.sort(scores)[-2] < 0.9


def test_openai_retries_429_and_5xx_then_succeeds(fake: FakeEmbeddings) -> None:
    fake.script(rate_limited(retry_after=0), error(503), error(502))
    vectors = openai_encoder(fake).encode_pages([page_png(0)])
    assert vectors.shape == (1, 12)
    assert len(fake.embedding_requests) == 4


def test_openai_retries_are_bounded(fake: FakeEmbeddings) -> None:
    fake.script(*[error(500, "CUDA out of memory")] * 10)
    encoder = openai_encoder(fake)
    with pytest.raises(EncoderError, match=r"HTTP 500.*CUDA out of memory") as caught:
        encoder.encode_pages([page_png(0)])
    assert fake.base_url + "/embeddings" in caught.value.message
    assert len(fake.embedding_requests) == 1 + encoder.max_retries


def test_openai_client_errors_are_not_retried(fake: FakeEmbeddings) -> None:
    fake.script(error(400, "this model does not accept images"))
    with pytest.raises(EncoderError, match="does not accept images"):
        openai_encoder(fake).encode_pages([page_png(0)])
    assert len(fake.embedding_requests) == 1


def test_openai_long_retry_after_is_not_waited_for(fake: FakeEmbeddings) -> None:
    fake.script(rate_limited(retry_after=3600))
    started = time.monotonic()
    with pytest.raises(EncoderError, match="HTTP 429"):
        openai_encoder(fake).encode_pages([page_png(0)])
    assert time.monotonic() - started < 5


def test_openai_hang_times_out(fake: FakeEmbeddings) -> None:
    fake.script(hang(30))
    started = time.monotonic()
    with pytest.raises(EncoderError, match="timed out"):
        openai_encoder(fake, timeout=0.5).encode_pages([page_png(0)])
    assert time.monotonic() - started < 5


def test_openai_malformed_and_inconsistent_answers(fake: FakeEmbeddings) -> None:
    fake.script(malformed_body())
    with pytest.raises(EncoderError, match="not JSON"):
        openai_encoder(fake).encode_pages([page_png(0)])
    fake.script(malformed_body(json.dumps({"object": "list", "data": []}).encode()))
    with pytest.raises(EncoderError, match="malformed"):
        openai_encoder(fake).encode_pages([page_png(0)])
    # A server whose model changed under us: another dimension.
    encoder = openai_encoder(fake)
    encoder.encode_pages([page_png(0)])
    fake.dim = 7
    with pytest.raises(EncoderError, match="7 dimensions"):
        encoder.encode_pages([page_png(1)])


def test_openai_unreachable_endpoint_names_it() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings = VisualSettings(
        backend="openai", base_url=f"http://127.0.0.1:{port}/v1", model="m", timeout=2
    )
    encoder: Any = create_visual_encoder(settings)
    encoder.backoff_s = 0.01
    with pytest.raises(EncoderError, match=f"127.0.0.1:{port}/v1/embeddings is unreachable"):
        encoder.encode_queries(["x"])


@pytest.mark.parametrize(
    ("fields", "missing"),
    [
        ({}, "DOCSIGHT_VISUAL_BASE_URL and DOCSIGHT_VISUAL_MODEL"),
        ({"base_url": "http://127.0.0.1:9/v1"}, "DOCSIGHT_VISUAL_MODEL"),
        ({"model": "m"}, "DOCSIGHT_VISUAL_BASE_URL"),
    ],
)
def test_openai_configuration_names_the_variables(fields: dict[str, str], missing: str) -> None:
    with pytest.raises(ConfigurationError, match=missing):
        create_visual_encoder(VisualSettings(backend="openai", **fields))


# --- colpali: loading --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"architectures": ["ColQwen2"], "model_type": "qwen2_vl"}, "ColQwen2"),
        ({"architectures": ["ColPali"], "model_type": "paligemma"}, "ColPali"),
        (
            {"architectures": ["Qwen2_5_VLForConditionalGeneration"], "model_type": "qwen2_5_vl"},
            "ColQwen2_5",
        ),
        ({"model_type": "idefics3"}, "ColIdefics3"),
    ],
)
def test_colpali_class_from_config(tmp_path: Path, config: dict[str, Any], expected: str) -> None:
    from docsight.encoders.visual_colpali import model_class_for

    assert model_class_for(config, tmp_path) == expected


def test_colpali_refuses_unknown_and_single_vector_models(tmp_path: Path) -> None:
    from docsight.encoders.visual_colpali import model_class_for

    with pytest.raises(EncoderError, match="single-vector"):
        model_class_for({"architectures": ["BiQwen2"], "model_type": "qwen2_vl"}, tmp_path)
    with pytest.raises(EncoderError, match=r"llama.*supported: ColPali"):
        model_class_for({"architectures": ["LlamaForCausalLM"], "model_type": "llama"}, tmp_path)


def test_colpali_configuration_and_directory_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="DOCSIGHT_VISUAL_MODEL_PATH"):
        create_visual_encoder(VisualSettings(backend="colpali"))
    missing: Any = create_visual_encoder(
        VisualSettings(backend="colpali", model_path=tmp_path / "nowhere")
    )
    with pytest.raises(EncoderError, match="is not a directory"):
        _ = missing.fingerprint
    empty: Any = create_visual_encoder(VisualSettings(backend="colpali", model_path=tmp_path))
    with pytest.raises(EncoderError, match=r"no config\.json"):
        _ = empty.fingerprint


def test_colpali_fingerprint_reads_files_not_weights(tmp_path: Path) -> None:
    # Works without torch: the fingerprint is what `docsight check` compares, cheaply.
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "qwen2_vl"}))
    (tmp_path / "model.safetensors").write_bytes(b"\0" * 4096)
    encoder: Any = create_visual_encoder(VisualSettings(backend="colpali", model_path=tmp_path))
    first = encoder.fingerprint
    assert first.startswith("colpali:ColQwen2:") and first.endswith(":1024")
    (tmp_path / "model.safetensors").write_bytes(b"\1" * 4096)  # another checkpoint
    again: Any = create_visual_encoder(VisualSettings(backend="colpali", model_path=tmp_path))
    assert again.fingerprint != first


def test_colpali_without_the_extra_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import docsight.encoders.visual_colpali as module

    real = importlib.util.find_spec
    monkeypatch.setattr(
        module.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "torch" else real(name, *a),
    )
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "qwen2_vl"}))
    encoder: Any = create_visual_encoder(VisualSettings(backend="colpali", model_path=tmp_path))
    with pytest.raises(MissingDependencyError, match=r"docsight\[visual\]"):
        encoder.encode_pages([page_png(0)])


@pytest.mark.visual
def test_colpali_padding_is_dropped(tiny_models: list[Path]) -> None:
    # Pages of different sizes share a batch; each keeps exactly the tokens it has alone.
    settings = VisualSettings(
        backend="colpali", model_path=tiny_models[0], device="cpu", max_side=256, batch_size=4
    )
    encoder: Any = create_visual_encoder(settings)
    images = [page_png(1, (600, 800)), page_png(2, (200, 120)), page_png(3, (400, 400))]
    together = encoder.encode_pages(images)
    alone = [encoder.encode_pages([image])[0] for image in images]
    assert len({m.shape[0] for m in together}) == 3
    for a, b in zip(together, alone, strict=True):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, atol=2e-3)
    queries = encoder.encode_queries(["a much longer question about the page", "short"])
    assert queries[0].shape[0] > queries[1].shape[0]


@pytest.mark.visual
def test_colpali_device_and_scaling(tiny_models: list[Path]) -> None:
    import torch

    auto: Any = create_visual_encoder(
        VisualSettings(backend="colpali", model_path=tiny_models[0], max_side=64)
    )
    small = auto.encode_pages([page_png(5, (1400, 1800))])[0]
    assert auto.device in {"cpu", "cuda", "mps"}
    if not torch.cuda.is_available():
        assert auto.device in {"cpu", "mps"}
    large: Any = create_visual_encoder(
        VisualSettings(backend="colpali", model_path=tiny_models[0], max_side=512, device="cpu")
    )
    assert large.encode_pages([page_png(5, (1400, 1800))])[0].shape[0] > small.shape[0]
    if not torch.cuda.is_available():
        gpu: Any = create_visual_encoder(
            VisualSettings(backend="colpali", model_path=tiny_models[0], device="cuda")
        )
        with pytest.raises(EncoderError, match="no CUDA device"):
            gpu.encode_queries(["x"])
