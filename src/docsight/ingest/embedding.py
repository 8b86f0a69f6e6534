"""The ingest's embedding: a small next file's embedded on a thread while this one is stored.

This process embeds each file's chunks, then builds its graph and stores its rows, one file
after another. For a small file the graph and the store take about as long as the embedding
(0.15 s against 0.25 s for a four-paragraph note), and while they run, onnxruntime's threads
are idle. So when the next file's chunks have already come back from the workers and are few
(:data:`AHEAD_CHUNKS`), they are embedded on a thread of their own while the current file is
stored. The vectors are the same either way (the same texts, in one call).

A file's own embedding, when it was not done ahead, runs in the calling thread as before, and
the thread is idle then (the next file is looked at only once this one has its vectors): two
files' embeddings never share the cores, and Ctrl-C stops a long embedding between its
batches. The graph's summaries go through the thread, behind whatever it is doing. A larger
next file waits for its turn: its embedding dominates its own time anyway, and embedding it
early would hold its vectors and onnxruntime's working memory beside the current file's
store. The bound also keeps Ctrl-C prompt: an embedding under way on the thread is waited
for, and one of 64 chunks ends within seconds.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from docsight.encoders.base import Encoder

#: The most chunks a next file may have to be embedded ahead of its turn.
AHEAD_CHUNKS = 64


def embed_texts(texts: Sequence[str], encoder: Encoder) -> np.ndarray:
    """One vector per text; each distinct text is embedded once (repetitive files, such as a
    megabyte of one repeated phrase, would otherwise cost thousands of identical inferences)."""
    if not texts:
        return np.zeros((0, encoder.dim), dtype=np.float32)
    distinct = list(dict.fromkeys(texts))
    if len(distinct) == len(texts):
        return encoder.encode_documents(list(texts))
    vectors = encoder.encode_documents(distinct)
    row = {text: i for i, text in enumerate(distinct)}
    return vectors[[row[text] for text in texts]]


class IngestEmbedder:
    """A file's chunks embedded in its turn in the caller's thread, or, for a small next
    file, ahead of its turn on a thread of its own (see the module)."""

    def __init__(self, encoder: Callable[[], Encoder]) -> None:
        self._encoder = encoder
        self._pool: ThreadPoolExecutor | None = None
        self._ahead: dict[int, tuple[list[str], Future[tuple[np.ndarray, float]]]] = {}

    def ahead(self, key: int, texts: Sequence[str]) -> bool:
        """Start embedding file ``key``'s chunk texts now, if they are few enough."""
        if key in self._ahead or not texts or len(texts) > AHEAD_CHUNKS:
            return False
        texts = list(texts)
        self._ahead[key] = (texts, self._submit(texts))
        return True

    def vectors(self, key: int, texts: Sequence[str]) -> tuple[np.ndarray, float | None]:
        """File ``key``'s vectors: those embedded ahead (of the same texts), or made now in
        this thread; and, when ahead, the seconds that embedding took on its thread (the
        caller waited less)."""
        started = self._ahead.pop(key, None)
        if started is not None:
            if started[0] == list(texts):
                vectors, seconds = started[1].result()
                return vectors, seconds
            started[1].cancel()
        return embed_texts(texts, self._encoder()), None

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` on the embedding thread, after whatever it is doing, and wait."""
        return self._submit(texts).result()[0]

    def forget(self, key: int) -> None:
        """File ``key`` ended without its vectors (failed, or a copy of another file)."""
        started = self._ahead.pop(key, None)
        if started is not None:
            started[1].cancel()

    def close(self) -> None:
        """Drop what has not started; wait for an embedding under way (small, see above)."""
        self._ahead.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def _submit(self, texts: Sequence[str]) -> Future[tuple[np.ndarray, float]]:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="docsight-embed")
        texts = list(texts)

        def task() -> tuple[np.ndarray, float]:
            started = time.perf_counter()
            vectors = embed_texts(texts, self._encoder())
            return vectors, time.perf_counter() - started

        return self._pool.submit(task)
