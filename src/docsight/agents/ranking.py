"""How the offline answerer weighs its candidate answers, and where the weights come from.

Every candidate (a sentence, a list item, a table row, a table cell) is described by a few
measured features; its score is a fixed formula of them whose constants are :class:`RankWeights`:

* a sentence or row: ``lexical`` times the IDF-weighted share of the question's words it holds,
  ``dense`` times its cosine with the question (for the best few by words), ``rank`` over its
  source's retrieval rank, ``typed_value`` when the question wants a count, number, date or name
  and the candidate holds one, ``typed_missing`` when it wants one and the candidate holds none,
  ``period`` times the share of the question's periods it names; a caption's score is multiplied
  by ``caption``, since a caption names a table rather than answering from it;
* a cell where the question's row and column terms meet (``agents.tables``): ``cell_base`` plus
  ``cell_strength`` times how well row and column match, ``cell_both`` when the question names
  both, ``cell_numeric`` for a count, number or comparison question, ``rank`` over its source's
  rank; all of it times the share of the question's words the cell's row, column, caption and
  section hold.

The constants that ship are chosen by ``benchmarks/fit_ranking.py``: the weights that make the
best candidate the right answer (MMLongBench's strict rule) most often on the dev documents, kept
only when that gain holds on documents left out of the fit (leave-documents-out cross-validation).
``answer_weights.json`` records them with both figures; without it the hand-set defaults below
apply.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from docsight.errors import ConfigurationError

WEIGHTS_FILE = Path(__file__).with_name("answer_weights.json")
SCHEMA_VERSION = 1


@dataclass(frozen=True)
class RankWeights:
    lexical: float = 0.5
    dense: float = 0.5
    rank: float = 0.05
    typed_value: float = 0.15
    typed_missing: float = -0.1
    period: float = 0.1
    caption: float = 0.5
    cell_base: float = 0.3
    cell_strength: float = 0.7
    cell_both: float = 0.15
    cell_numeric: float = 0.1

    @staticmethod
    def names() -> list[str]:
        return [f.name for f in fields(RankWeights)]

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


@dataclass(frozen=True)
class SentenceFeatures:
    """What is measured of a sentence, list item or row (``dense`` is 0 until embedded)."""

    lexical: float
    inverse_rank: float
    #: The question wants a count, number, date or name.
    typed: bool
    has_value: bool
    period: float
    caption: bool
    dense: float = 0.0


@dataclass(frozen=True)
class CellFeatures:
    """What is measured of a table cell answer."""

    strength: float
    both: bool
    numeric: bool
    inverse_rank: float
    #: The share of the question's words found around the cell (1 for a comparison).
    coverage: float


def sentence_score(f: SentenceFeatures, w: RankWeights, *, dense: bool = True) -> float:
    """The score of a sentence; ``dense=False`` leaves the cosine out (to pick which to embed)."""
    score = w.lexical * f.lexical + w.rank * f.inverse_rank + w.period * f.period
    if dense:
        score += w.dense * f.dense
    if f.typed:
        score += w.typed_value if f.has_value else w.typed_missing
    return score * (w.caption if f.caption else 1.0)


def cell_score(f: CellFeatures, w: RankWeights) -> float:
    score = w.cell_base + w.cell_strength * f.strength + w.rank * f.inverse_rank
    if f.both:
        score += w.cell_both
    if f.numeric:
        score += w.cell_numeric
    return score * f.coverage


def load_weights(path: Path = WEIGHTS_FILE) -> RankWeights:
    """The fitted weights, or the defaults when no fit ships."""
    if not path.exists():
        return RankWeights()
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"cannot read the answer ranking weights {path}: {exc}") from exc
    if data.get("schema_version") != SCHEMA_VERSION or sorted(data.get("weights", {})) != sorted(
        RankWeights.names()
    ):
        raise ConfigurationError(
            f"{path} does not hold version {SCHEMA_VERSION} weights for "
            f"{RankWeights.names()}: refit with benchmarks/fit_ranking.py"
        )
    return RankWeights(**{k: float(v) for k, v in data["weights"].items()})
