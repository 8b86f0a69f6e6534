"""The text encoder contract."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Encoder(Protocol):
    """Turns texts into L2-normalised float32 vectors.

    Contract: the constructor is cheap (models load on first use); ``fingerprint`` names the vector
    space (model, tokenizer, pooling, truncation) and is stored with a collection, so vectors from
    different spaces are never compared; ``encode_documents`` and ``encode_queries`` return arrays
    of shape ``(len(texts), dim)`` with unit-norm rows and may differ (query prefixes); an empty
    input returns shape ``(0, dim)``. Failures raise :class:`~docsight.errors.EncoderError`.
    """

    name: str

    @property
    def dim(self) -> int: ...

    @property
    def fingerprint(self) -> str: ...

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray: ...

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray: ...


def l2_normalize(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)
