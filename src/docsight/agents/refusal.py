"""Calibrated refusal: is the answer in the sources at all?

One fixed threshold on word coverage cannot tell "the sources answer this" from "the sources
talk about it": a question about a page the document does not have, a year it does not cover or
an object it never mentions reads much like one it answers. Several signals together do better:

* ``coverage`` and ``similarity``: how much of the question the retrieved sources hold (IDF-
  weighted words) and how close the best one is in meaning (``agents.evidence``);
* ``missing_terms``: the share of the question's rare words that no source contains;
* ``missing_numbers``: the share of the question's numbers and years that no source contains;
* ``missing_pages``: the question names pages that its documents do not have;
* ``absent_names``, ``absent_years``: the share of the question's names and years
  (``question.named_words``) that its documents never mention anywhere, not only in the sources
  read, and whether one of them is a year ("the survey of May 2022" asked of a 2018 report);
* ``best``, ``margin``: the best candidate answer's score and its lead over the runner-up;
* ``type_fit``: whether the best candidate holds the kind of answer asked for (a number for
  "how many", a name for "who", a table cell where row and column both match);
* ``cell``: whether it is a table cell.

A logistic model turns them into the probability that the question is answerable; below the
threshold the answer is "Not answerable". Whatever the model says, a question none of whose
words is in any source is refused: the answerer could only quote something unrelated (on the
dev data, 11 questions, 9 of them unanswerable and the other 2 answered wrongly). Weights and
threshold are fitted by ``benchmarks/fit_refusal.py`` with leave-documents-out cross-validation
on the shared dev data and shipped in ``refusal_weights.json``.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

from docsight.errors import ConfigurationError

WEIGHTS_FILE = Path(__file__).with_name("refusal_weights.json")


@dataclass(frozen=True)
class Signals:
    coverage: float
    similarity: float
    missing_terms: float
    missing_numbers: float
    missing_pages: float
    absent_names: float
    absent_years: float
    best: float
    margin: float
    type_fit: float
    cell: float

    def vector(self) -> list[float]:
        return [float(v) for v in asdict(self).values()]

    @staticmethod
    def names() -> list[str]:
        return list(Signals.__dataclass_fields__)


@dataclass(frozen=True)
class RefusalModel:
    weights: tuple[float, ...]
    bias: float
    #: Probability of "answerable" below which the answer is refused.
    threshold: float

    def probability(self, signals: Signals) -> float:
        if nothing_found(signals):
            return 0.0
        z = self.bias + sum(w * x for w, x in zip(self.weights, signals.vector(), strict=True))
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))

    def refuses(self, signals: Signals) -> bool:
        return self.probability(signals) < self.threshold


def nothing_found(signals: Signals) -> bool:
    """No word of the question is in any source."""
    return signals.missing_terms >= 1.0


def load_model(path: Path = WEIGHTS_FILE) -> RefusalModel:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"cannot read the refusal model {path}: {exc}") from exc
    if data.get("features") != Signals.names():
        raise ConfigurationError(
            f"{path} was fitted for {data.get('features')}, this version computes "
            f"{Signals.names()}: refit with benchmarks/fit_refusal.py"
        )
    return RefusalModel(
        weights=tuple(float(w) for w in data["weights"]),
        bias=float(data["bias"]),
        threshold=float(data["threshold"]),
    )
