"""The MiniLM encoder's session options (issue 17: the int8 model's best options) change no
vector beyond rounding: its vectors match those of the options it had before (onnxruntime's full
graph optimizations) within 1e-5."""

from __future__ import annotations

import numpy as np
import pytest

from docsight.encoders.minilm import MiniLMEncoder, model_path
from docsight.settings import EmbedSettings

TEXTS = [
    "Revenue ($ million) 2024: 468.5",
    "The harbour lighthouse was surveyed in spring; its lamp and lens were found sound.",
    "Property and equipment, net ........................ 253 282",
    "x",
    " ".join(["Operating income rose as gross margin widened on lower freight costs."] * 30),
]


def _previous_options_session() -> object:
    """A session built as the encoder built it before: every graph optimization."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    return ort.InferenceSession(str(model_path()), options, providers=["CPUExecutionProvider"])


def test_vectors_match_those_of_the_previous_session_options() -> None:
    ort = pytest.importorskip("onnxruntime")
    encoder = MiniLMEncoder(EmbedSettings(threads=1))
    now = encoder.encode_documents(TEXTS)
    encoder._session = _previous_options_session()  # same tokenizer, batching and pooling
    before = encoder.encode_documents(TEXTS)
    assert now.shape == before.shape == (len(TEXTS), 384)
    assert np.abs(now - before).max() < 1e-5
    fresh = MiniLMEncoder(EmbedSettings(threads=1))
    fresh._load()
    level = fresh._session.get_session_options().graph_optimization_level
    assert level == ort.GraphOptimizationLevel.ORT_ENABLE_BASIC


def test_wide_inputs_go_in_smaller_batches_with_the_same_vectors() -> None:
    """Batches hold at most batch_area texts × tokens²: the widest inputs (256 word pieces) go
    two at a time instead of 32, so onnxruntime's arena never needs a 32 × 256² attention;
    the vectors are those of unbounded batches within rounding."""
    pytest.importorskip("onnxruntime")
    texts = [
        " ".join(["Operating income rose as margins widened on lower freight costs."] * n)
        for n in (1, 2, 3, 5, 8, 13, 21, 30, 30, 30)
        for _ in range(5)
    ] + TEXTS
    encoder = MiniLMEncoder(EmbedSettings(threads=1))
    shapes: list[tuple[int, int]] = []
    encoder._load()
    session = encoder._session

    class Recording:
        def run(self, names: list[str], feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
            shapes.append(feeds["input_ids"].shape)
            return session.run(names, feeds)  # type: ignore[attr-defined]

    encoder._session = Recording()
    bounded = encoder.encode_documents(texts)
    area = encoder.settings.batch_area
    assert sum(n for n, _ in shapes) == len(texts)
    assert all(n * width * width <= area or n == 1 for n, width in shapes)
    assert max(width for _, width in shapes) == 256
    assert max(n for n, width in shapes if width == 256) == area // 256**2 == 2
    shapes.clear()
    encoder.settings = EmbedSettings(threads=1, batch_area=10**9)
    unbounded = encoder.encode_documents(texts)
    assert max(n for n, _ in shapes) == 32  # the old batching: batch_size alone
    assert np.abs(bounded - unbounded).max() < 1e-5


def _spinning(encoder: MiniLMEncoder) -> tuple[str, str]:
    encoder._load()
    options = encoder._session.get_session_options()
    return (
        options.get_session_config_entry("session.intra_op.allow_spinning"),
        options.get_session_config_entry("session.inter_op.allow_spinning"),
    )


def test_thread_spinning_follows_the_setting_and_is_off_by_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``embed.spin`` (``DOCSIGHT_EMBED_SPIN``) reaches both onnxruntime spinning entries; off by
    default (benchmarks/results/parse_cpu.md); the vectors do not depend on it."""
    pytest.importorskip("onnxruntime")
    from docsight.settings import Settings

    assert EmbedSettings().spin is False
    assert _spinning(MiniLMEncoder(Settings().embed)) == ("0", "0")
    monkeypatch.setenv("DOCSIGHT_EMBED_SPIN", "1")
    spinning = MiniLMEncoder(Settings().embed)
    assert spinning.settings.spin is True
    assert _spinning(spinning) == ("1", "1")
    idle = MiniLMEncoder(EmbedSettings(threads=2, spin=False))
    busy = MiniLMEncoder(EmbedSettings(threads=2, spin=True))
    assert np.abs(idle.encode_documents(TEXTS) - busy.encode_documents(TEXTS)).max() < 1e-6
