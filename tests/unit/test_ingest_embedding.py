"""The ingest's embedding thread (``docsight.ingest.embedding``), with a recording encoder."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import numpy as np
import pytest

from docsight.ingest.embedding import AHEAD_CHUNKS, IngestEmbedder, embed_texts


class RecordingEncoder:
    """Vectors from the texts' lengths; remembers each call and the thread it ran on."""

    dim = 3
    fingerprint = "recording/1"

    def __init__(self, gate: threading.Event | None = None) -> None:
        self.calls: list[tuple[list[str], str]] = []
        self.gate = gate

    def encode_documents(self, texts: list[str]) -> np.ndarray:
        if self.gate is not None:
            self.gate.wait(5)
        self.calls.append((list(texts), threading.current_thread().name))
        return np.array([[len(t), 1.0, 0.0] for t in texts], dtype=np.float32)


@pytest.fixture
def encoder() -> RecordingEncoder:
    return RecordingEncoder()


@pytest.fixture
def embedder(encoder: RecordingEncoder) -> Iterator[IngestEmbedder]:
    made = IngestEmbedder(lambda: encoder)  # type: ignore[arg-type,return-value]
    yield made
    made.close()


def test_repeated_texts_are_embedded_once() -> None:
    encoder = RecordingEncoder()
    vectors = embed_texts(["aa", "b", "aa"], encoder)  # type: ignore[arg-type]
    assert encoder.calls[0][0] == ["aa", "b"]
    assert vectors[:, 0].tolist() == [2.0, 1.0, 2.0]
    assert embed_texts([], encoder).shape == (0, 3)  # type: ignore[arg-type]


def test_a_small_file_is_embedded_ahead_and_used_once(
    encoder: RecordingEncoder, embedder: IngestEmbedder
) -> None:
    assert embedder.ahead(1, ["one", "three"])
    vectors, seconds = embedder.vectors(1, ["one", "three"])
    assert vectors[:, 0].tolist() == [3.0, 5.0]
    assert seconds is not None and seconds >= 0
    assert embedder.vectors(1, ["one", "three"])[1] is None  # used once: made anew
    assert len(encoder.calls) == 2
    assert encoder.calls[1][1] == threading.current_thread().name  # in its turn: here
    assert encoder.calls[0][1].startswith("docsight-embed")


def test_a_large_file_waits_for_its_turn(
    encoder: RecordingEncoder, embedder: IngestEmbedder
) -> None:
    texts = [f"chunk {i}" for i in range(AHEAD_CHUNKS + 1)]
    assert not embedder.ahead(2, texts)
    assert not embedder.ahead(3, [])
    assert encoder.calls == []
    vectors, seconds = embedder.vectors(2, texts)
    assert len(vectors) == AHEAD_CHUNKS + 1 and seconds is None


def test_other_texts_than_those_embedded_ahead_are_embedded_anew(
    embedder: IngestEmbedder,
) -> None:
    embedder.ahead(4, ["old"])
    vectors, seconds = embedder.vectors(4, ["newer"])
    assert vectors[:, 0].tolist() == [5.0] and seconds is None


def test_every_call_runs_on_the_one_thread_in_order() -> None:
    gate = threading.Event()
    encoder = RecordingEncoder(gate)
    embedder = IngestEmbedder(lambda: encoder)  # type: ignore[arg-type,return-value]
    try:
        embedder.ahead(5, ["next file"])
        gate.set()
        embedder.encode(["a summary"])  # the graph's, queued behind the file embedded ahead
        assert [texts for texts, _ in encoder.calls] == [["next file"], ["a summary"]]
        assert len({thread for _, thread in encoder.calls}) == 1
    finally:
        embedder.close()


def test_a_forgotten_file_is_dropped_and_close_ends_the_thread() -> None:
    gate = threading.Event()
    encoder = RecordingEncoder(gate)
    embedder = IngestEmbedder(lambda: encoder)  # type: ignore[arg-type,return-value]
    embedder.ahead(6, ["running"])
    embedder.ahead(7, ["queued"])
    embedder.forget(7)  # not started yet: cancelled
    gate.set()
    embedder.close()
    assert [texts for texts, _ in encoder.calls] == [["running"]]
    assert not any(t.name.startswith("docsight-embed") for t in threading.enumerate())
