"""An encoder that remembers the vectors of texts it encoded recently.

Answering embeds the same texts again and again: every question about a document weighs the
sources retrieval found (``agents.evidence.measure``) and ranks their sentences
(``agents.extractive``), and questions about one document find mostly the same sources and
sentences. A conversation, the server answering several users, and an evaluation all ask
that way. The text is the key, so a cached vector is exactly the one the wrapped encoder gives;
documents and queries are kept apart, as an encoder may embed them differently.

Ingestion does not use it: its chunks are new texts by construction.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from docsight.encoders.base import Encoder

#: Texts remembered per kind: 4,096 MiniLM vectors are 6 MB.
DEFAULT_SIZE = 4096


class CachedEncoder:
    """``inner`` with a least-recently-used memory of ``size`` vectors per kind (documents,
    queries). Thread-safe: the memory is locked, the encoding of misses is not (the wrapped
    encoder guards itself), so two threads may both encode a text neither has cached."""

    def __init__(self, inner: Encoder, size: int = DEFAULT_SIZE) -> None:
        if size < 1:
            raise ValueError(f"cache size must be at least 1, not {size}")
        self.inner = inner
        self.name = inner.name
        self.size = size
        self._lock = threading.Lock()
        self._memory: dict[str, OrderedDict[str, np.ndarray]] = {
            "documents": OrderedDict(),
            "queries": OrderedDict(),
        }
        self.hits = 0
        self.misses = 0

    @property
    def dim(self) -> int:
        return self.inner.dim

    @property
    def fingerprint(self) -> str:
        return self.inner.fingerprint

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode("documents", texts)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode("queries", texts)

    def _encode(self, kind: str, texts: Sequence[str]) -> np.ndarray:
        memory = self._memory[kind]
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for text in texts:
                vector = memory.get(text)
                if vector is not None:
                    memory.move_to_end(text)
                    found[text] = vector
        missing = list(dict.fromkeys(t for t in texts if t not in found))
        if missing:
            encode = (
                self.inner.encode_documents if kind == "documents" else self.inner.encode_queries
            )
            vectors = encode(missing)
            with self._lock:
                for text, vector in zip(missing, vectors, strict=True):
                    # Copies, so a caller writing into the array it got cannot change the memory.
                    found[text] = memory[text] = np.array(vector, dtype=np.float32)
                    memory.move_to_end(text)
                while len(memory) > self.size:
                    memory.popitem(last=False)
        with self._lock:
            self.hits += len(texts) - len(missing)
            self.misses += len(missing)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([found[t] for t in texts]).astype(np.float32, copy=False)


__all__ = ["DEFAULT_SIZE", "CachedEncoder"]
