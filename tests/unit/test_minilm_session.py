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
