"""Adaptive k (ViDoRAG): how many of a channel's results are worth reading.

A channel's scores for one question usually fall into a few that match and a long tail that
does not. A two-component Gaussian mixture fitted to the scores (expectation maximisation, a
few lines of numpy) separates the two; the results from the top down whose posterior of the
high component is at least one half are kept, clamped to ``[k_min, k_max]`` because a handful
of scores fit any distribution loosely.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

_ITERATIONS = 60
#: Variance floor, relative to the spread of the scores (identical scores have none).
_MIN_VARIANCE = 1e-4


def high_component(scores: Sequence[float], iterations: int = _ITERATIONS) -> np.ndarray:
    """Per score, the posterior probability of the higher-mean component of a two-component
    1-D Gaussian mixture (all ones when the scores cannot be split)."""
    x = np.asarray(scores, dtype=np.float64)
    n = len(x)
    if n < 3 or float(x.max() - x.min()) <= 0:
        return np.ones(n)
    spread = float(x.max() - x.min())
    floor = _MIN_VARIANCE * spread * spread
    order = np.sort(x)
    # Start from the top fifth against the rest: matches are usually the few high scores.
    cut = max(1, n // 5)
    mu = np.array([order[:-cut].mean(), order[-cut:].mean()])
    var = np.array([max(order[:-cut].var(), floor), max(order[-cut:].var(), floor)])
    weight = np.array([1.0 - cut / n, cut / n])
    resp = np.zeros((n, 2))
    for _ in range(iterations):
        dens = weight / np.sqrt(2 * np.pi * var) * np.exp(-((x[:, None] - mu) ** 2) / (2 * var))
        total = dens.sum(axis=1, keepdims=True)
        total[total <= 0] = 1e-300
        new = dens / total
        if np.allclose(new, resp, atol=1e-6):
            resp = new
            break
        resp = new
        nk = resp.sum(axis=0)
        if (nk < 1e-9).any():
            break
        weight = nk / n
        mu = (resp * x[:, None]).sum(axis=0) / nk
        var = np.maximum((resp * (x[:, None] - mu) ** 2).sum(axis=0) / nk, floor)
    return resp[:, int(np.argmax(mu))]


def adaptive_k(scores: Sequence[float], k_min: int, k_max: int) -> int:
    """How many of ``scores`` (best first) to keep: the leading run in the high component."""
    if k_min > k_max:
        raise ValueError("k_min must not exceed k_max")
    n = len(scores)
    if n <= k_min:
        return n
    posterior = high_component(scores)
    keep = 0
    for p in posterior:
        if p < 0.5:
            break
        keep += 1
    return max(k_min, min(k_max, keep, n))
