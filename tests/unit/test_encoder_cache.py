"""The answering encoder remembers recent texts' vectors (encoders.cache): a remembered vector
is the wrapped encoder's own, documents and queries are kept apart, and the memory is bounded."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from docsight.encoders.base import Encoder, l2_normalize
from docsight.encoders.cache import CachedEncoder


class _Counting:
    """Vectors from the text's letters; queries differ from documents, as a prefix would."""

    name = "counting"
    dim = 8
    fingerprint = "counting-8"

    def __init__(self) -> None:
        self.encoded: list[str] = []

    def _vec(self, text: str, shift: int) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for ch in text:
            v[(ord(ch) + shift) % self.dim] += 1.0
        v[shift % self.dim] += 0.5
        return v

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.encoded.extend(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return l2_normalize(np.stack([self._vec(t, 0) for t in texts]))

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        self.encoded.extend(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return l2_normalize(np.stack([self._vec(t, 3) for t in texts]))


def test_remembered_vectors_are_the_encoders_own() -> None:
    inner = _Counting()
    cached = CachedEncoder(inner, size=16)
    assert isinstance(cached, Encoder)
    assert (cached.name, cached.dim, cached.fingerprint) == ("counting", 8, "counting-8")
    texts = ["revenue rose", "net income", "revenue rose", "cash"]
    first = cached.encode_documents(texts)
    # Each text encoded once, even when it comes twice in one call.
    assert inner.encoded == ["revenue rose", "net income", "cash"]
    again = cached.encode_documents(["cash", "net income", "new text"])
    assert inner.encoded[3:] == ["new text"]
    assert np.array_equal(again[:2], first[[3, 1]])
    assert np.allclose(again, inner.encode_documents(["cash", "net income", "new text"]))
    assert (cached.hits, cached.misses) == (3, 4)
    # A query is not a document: it is encoded as a query, and remembered apart.
    query = cached.encode_queries(["cash"])
    assert not np.allclose(query[0], first[3])
    assert cached.encode_queries([]).shape == (0, 8) and cached.encode_documents([]).shape == (0, 8)


def test_the_memory_is_bounded_and_forgets_the_least_recently_used() -> None:
    inner = _Counting()
    cached = CachedEncoder(inner, size=2)
    cached.encode_documents(["a", "b"])
    cached.encode_documents(["a"])  # "a" used last: "b" is the one forgotten
    cached.encode_documents(["c"])
    inner.encoded.clear()
    cached.encode_documents(["a", "b", "c"])
    assert inner.encoded == ["b"]


def test_a_caller_cannot_change_what_is_remembered() -> None:
    cached = CachedEncoder(_Counting(), size=4)
    got = cached.encode_documents(["cash"])
    kept = got.copy()
    got[:] = 0.0
    assert np.array_equal(cached.encode_documents(["cash"]), kept)
    with pytest.raises(ValueError, match="at least 1"):
        CachedEncoder(_Counting(), size=0)


def test_threads_sharing_the_memory_get_the_encoders_vectors() -> None:
    # The server answers several users with one collection: their questions share the memory.
    from concurrent.futures import ThreadPoolExecutor

    inner = _Counting()
    cached = CachedEncoder(inner, size=8)  # smaller than the texts: entries are evicted meanwhile
    texts = [f"text {i % 12}" for i in range(60)]
    expected = {t: inner.encode_documents([t])[0] for t in set(texts)}

    def ask(start: int) -> list[tuple[str, np.ndarray]]:
        batch = texts[start : start + 7]
        return list(zip(batch, cached.encode_documents(batch), strict=True))

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = [pair for got in pool.map(ask, range(0, 54, 3)) for pair in got]
    assert results and all(np.array_equal(v, expected[t]) for t, v in results)
    assert len(cached._memory["documents"]) <= 8
