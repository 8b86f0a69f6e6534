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
    one at a time instead of 32, so onnxruntime's arena never needs a 32 × 256² attention;
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
        def run(
            self, names: list[str], feeds: dict[str, np.ndarray], *options: object
        ) -> list[np.ndarray]:
            shapes.append(feeds["input_ids"].shape)
            return session.run(names, feeds, *options)  # type: ignore[attr-defined]

    encoder._session = Recording()
    bounded = encoder.encode_documents(texts)
    area = encoder.settings.batch_area
    assert sum(n for n, _ in shapes) == len(texts)
    assert all(n * width * width <= area or n == 1 for n, width in shapes)
    assert max(width for _, width in shapes) == 256
    assert max(n for n, width in shapes if width == 256) == max(1, area // 256**2)
    assert max(n for n, width in shapes if width <= 128) > max(n for n, w in shapes if w == 256)
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


def _varied_texts(n: int) -> list[str]:
    """Texts of 3 to 260 words: batches of many shapes, as a document's chunks give."""
    words = (
        "revenue margin freight harbour lighthouse lamp lens survey operating income rose "
        "widened lower costs net property equipment"
    ).split()
    return [
        " ".join(words[(i * 7 + j) % len(words)] for j in range(3 + (i * 37) % 258))
        for i in range(n)
    ]


def test_a_call_of_many_batches_gives_the_arena_back() -> None:
    """onnxruntime's arena kept every block batches of other shapes made it allocate: 100
    varied texts left the process about 100 MiB larger, for as long as it lived. The last batch
    of such a call shrinks the arena, so the process holds barely more than before."""
    pytest.importorskip("onnxruntime")
    from docsight._memory import process_memory, release_freed_memory

    if process_memory() is None:
        pytest.skip("no /proc/self/statm to read resident memory from")
    encoder = MiniLMEncoder(EmbedSettings(threads=1))
    encoder.encode_documents(["warm up: the model and its first arena block"])
    release_freed_memory()
    before = process_memory()
    vectors = encoder.encode_documents(_varied_texts(100))
    release_freed_memory()
    after = process_memory()
    assert before is not None and after is not None
    assert vectors.shape == (100, 384)
    assert after[0] - before[0] < 40, (before, after)


def test_only_the_last_batch_of_a_call_of_several_shrinks_the_arena() -> None:
    """Inside a call the arena keeps its blocks for the next batch (shrinking after each would
    allocate them again); a call of one batch (a query) keeps them for the next call."""
    pytest.importorskip("onnxruntime")
    encoder = MiniLMEncoder(EmbedSettings(threads=1))
    encoder._load()
    session = encoder._session
    calls: list[bool] = []

    class Recording:
        def run(
            self, names: list[str], feeds: dict[str, np.ndarray], *options: object
        ) -> list[np.ndarray]:
            calls.append(bool(options))
            return session.run(names, feeds, *options)  # type: ignore[attr-defined]

    encoder._session = Recording()
    encoder.encode_documents(_varied_texts(40))
    assert len(calls) > 2
    assert calls == [False] * (len(calls) - 1) + [True]
    calls.clear()
    encoder.encode_queries(["what was the revenue in 2024?"])
    assert calls == [False]
