"""The visual encoder contract: page images and query text into one vector space.

Retrievers that embed the page image (ColPali and its relatives, multimodal embedding models
served by vLLM) rank pages of long, visually rich documents well ahead of text retrievers over
OCR text (MMDocIR's published recall@5: 0.81-0.82 against 0.63-0.66). No such model ships inside
an installable package, so docsight's offline default has no visual encoder (``none``); users who
have one plug it in here, and the ``visual`` retrieval channel uses it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol, runtime_checkable

import numpy as np

#: ``single``: one vector per page or query (cosine); ``multi``: a matrix of token vectors per
#: page or query, compared by late interaction (MaxSim).
VectorKind = Literal["single", "multi"]


@runtime_checkable
class VisualEncoder(Protocol):
    """Embeds page images and query texts into one space.

    Contract:

    * The constructor is cheap: models load, and endpoints are first called, on first use.
    * ``fingerprint`` names the vector space (backend, model, resolution, pooling) and is stored
      with the collection, so pages embedded by one model are never compared with queries
      embedded by another; changing it requires an explicit re-embedding.
    * ``kind == "single"``: ``encode_pages`` and ``encode_queries`` return one float32 array of
      shape ``(n, dim)`` with unit-norm rows. ``kind == "multi"``: they return a list of ``n``
      float32 arrays of shape ``(tokens_i, dim)``, each row unit-norm, scored by MaxSim.
    * ``encode_pages`` takes encoded images (PNG or JPEG bytes) and batches them itself, within
      ``batch_size`` images at a time, so memory stays bounded whatever the input length.
    * An empty input returns an empty result of the right kind.
    * Failures (unreachable endpoint, unreadable image, missing weights) raise
      :class:`~docsight.errors.EncoderError` naming what failed.
    """

    name: str
    kind: VectorKind

    @property
    def dim(self) -> int: ...

    @property
    def fingerprint(self) -> str: ...

    def encode_pages(self, images: Sequence[bytes]) -> np.ndarray | list[np.ndarray]: ...

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray | list[np.ndarray]: ...


def maxsim(query: np.ndarray, page: np.ndarray) -> float:
    """Late-interaction score: for each query token the best-matching page token, summed."""
    if query.size == 0 or page.size == 0:
        return 0.0
    return float((query @ page.T).max(axis=1).sum())


def maxsim_many(query: np.ndarray, pages: Sequence[np.ndarray]) -> np.ndarray:
    """MaxSim of one query against many pages, as an array of scores."""
    return np.array([maxsim(query, page) for page in pages], dtype=np.float32)


__all__ = ["VectorKind", "VisualEncoder", "maxsim", "maxsim_many"]
