"""The offline text encoder keeps the Encoder contract, and how texts are batched never changes
a vector (batches are grouped by token length and padded per batch)."""

from __future__ import annotations

import numpy as np
import pytest

from docsight.agents.evidence import clip_words
from docsight.encoders.base import Encoder
from docsight.encoders.cache import CachedEncoder
from docsight.encoders.minilm import MiniLMEncoder
from docsight.settings import EmbedSettings

TEXTS = [
    "Revenue rose 19% to $44.5 billion in fiscal 2021.",
    "Net income.................................... $ 629,551 $ 268,395 $ 289,985",
    "Cash",
    "The pump's rated pressure limit is 380 kPa; above it the relief valve opens and the seal "
    "may fail, so the controller stops the motor and raises alarm E47 on the panel.",
    "",
]


@pytest.mark.parametrize("cached", [False, True], ids=["minilm", "minilm-cached"])
def test_minilm_keeps_the_contract(cached: bool) -> None:
    encoder: Encoder = CachedEncoder(MiniLMEncoder()) if cached else MiniLMEncoder()
    assert isinstance(encoder, Encoder)
    vectors = encoder.encode_documents(TEXTS)
    assert vectors.shape == (len(TEXTS), encoder.dim) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert encoder.encode_queries([]).shape == (0, encoder.dim)
    # Asked again (from memory when cached), the vectors are the same.
    assert np.allclose(encoder.encode_documents(TEXTS[::-1])[::-1], vectors, atol=1e-5)


def test_batching_never_changes_a_vector() -> None:
    together = MiniLMEncoder(EmbedSettings(batch_size=32)).encode_documents(TEXTS)
    one_by_one = MiniLMEncoder(EmbedSettings(batch_size=1)).encode_documents(TEXTS)
    in_pairs = MiniLMEncoder(EmbedSettings(batch_size=2)).encode_documents(TEXTS[::-1])[::-1]
    assert np.allclose(together, one_by_one, atol=1e-5)
    assert np.allclose(together, in_pairs, atol=1e-5)
    # Different texts stay apart: nothing was mixed up while sorting by length.
    assert float(together[0] @ together[3]) < 0.9


def test_clip_words_drops_leaders_and_keeps_the_opening() -> None:
    assert clip_words("Net income.......... $ 629,551 and more", 3) == "Net income $"
    assert clip_words("A short sentence.", 10) == "A short sentence."
    assert clip_words("Fill in ________ here", 10) == "Fill in here"
    long_numbers = " ".join(["1,234,567.89"] * 40)
    assert len(clip_words(long_numbers, 10)) <= 80
