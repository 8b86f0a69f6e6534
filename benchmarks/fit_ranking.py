"""Fit the offline answerer's candidate weights, with leave-documents-out cross-validation.

The extractive answerer scores every candidate answer (sentence, list item, table row, table
cell) by a formula of measured features whose constants are ``agents.ranking.RankWeights``; the
best candidate's value leads the answer. This script asks every answerable MMLongBench-Doc dev
question once, keeps every candidate with its features and the MMLongBench strict score
(``docsight.evaluation.strict``) of the answer it would give, and then chooses the constants that
make the top candidate right most often:

* coordinate ascent over a grid per constant, starting from the hand-set defaults; a move is
  taken only when it makes at least ``MIN_GAIN`` more training questions right, so noise does not
  move a constant;
* cross-validated: 5 folds of documents, 3 seeds; fitted on the other folds' documents, scored on
  the held-out ones, next to the defaults' score on the same questions;
* dev-fit: fitted and scored on all documents; ``--write`` ships those weights in
  ``answer_weights.json`` only when the cross-validated figure beats the defaults.

Ratio questions (``agents.ratios``) are answered by working, not by a candidate, and are left
out. Which candidates get their cosine measured depends on the weights (the best by words and
rank, ``extractive._EMBEDDED`` of them), so every candidate's cosine is measured once here and
the selection is replayed for each trial.

    python benchmarks/fit_ranking.py --collection DIR [--rows FILE] [--write]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from docsight import DocSight  # noqa: E402
from docsight.agents.extractive import _EMBEDDED, ExtractiveAnswerer  # noqa: E402
from docsight.agents.question import read_intent  # noqa: E402
from docsight.agents.ranking import (  # noqa: E402
    SCHEMA_VERSION,
    WEIGHTS_FILE,
    CellFeatures,
    RankWeights,
    SentenceFeatures,
    cell_score,
    sentence_score,
)
from docsight.agents.ratios import read_ratio  # noqa: E402
from docsight.evaluation.datasets import load_dataset  # noqa: E402
from docsight.evaluation.strict import strict_score  # noqa: E402

DATASET = HERE.parent.parent / "shared" / "data" / "mmlongbench-dev" / "samples.json"

#: The values tried for each constant (the defaults are among them).
GRID: dict[str, tuple[float, ...]] = {
    "lexical": (0.0, 0.25, 0.5, 0.75, 1.0, 1.5),
    "dense": (0.0, 0.25, 0.5, 0.75, 1.0, 1.5),
    "rank": (0.0, 0.025, 0.05, 0.1, 0.2, 0.4),
    "typed_value": (0.0, 0.075, 0.15, 0.3, 0.6),
    "typed_missing": (-0.4, -0.2, -0.1, -0.05, 0.0),
    "period": (0.0, 0.05, 0.1, 0.2, 0.4),
    "caption": (0.25, 0.5, 0.75, 1.0),
    "cell_base": (0.0, 0.15, 0.3, 0.45, 0.6),
    "cell_strength": (0.35, 0.7, 1.05, 1.4),
    "cell_both": (0.0, 0.075, 0.15, 0.3),
    "cell_numeric": (0.0, 0.05, 0.1, 0.2),
}
#: Training questions a move must win (strict score summed) before it is taken; the report
#: also shows the other strictness levels of ``GAINS``.
MIN_GAIN = 1.0
GAINS = (0.01, 1.0, 2.0)
PASSES = 3


def collect(ds: DocSight) -> list[dict[str, Any]]:
    """Every answerable dev question's candidates: features and the strict score of each."""
    evalset = load_dataset(DATASET)
    page_counts = {d.name: d.pages for d in ds.documents()}
    evalset, _ = evalset.restrict_pages(page_counts)
    answerer = ExtractiveAnswerer(ds.encoder, ds.settings.answer, weights=RankWeights())
    rows = []
    for q in evalset.questions:
        if q.doc not in page_counts or not q.answerable or read_ratio(q.question) is not None:
            continue
        started = time.perf_counter()
        sources = ds.context(q.question, doc_names=[q.doc])
        intent = read_intent(q.question)
        scored, _ = answerer.scored(q.question, intent, sources, embedded=10**6)
        cands = []
        for s in scored:
            lead = s.value or (s.cell.value if s.cell is not None else None)
            f = s.features
            cands.append(
                {
                    "cell": isinstance(f, CellFeatures),
                    "f": f.__dict__ if f is not None else {},
                    "strict": strict_score(lead or s.quote, q.answer, q.answer_format),
                }
            )
        rows.append(
            {
                "doc": q.doc,
                "q": q.question,
                "type": intent.type,
                "evidence": q.evidence_sources,
                "cands": cands,
                "seconds": time.perf_counter() - started,
            }
        )
    return rows


class Question:
    """One question's candidates as arrays, scored fast for any weights."""

    def __init__(self, row: dict[str, Any]) -> None:
        cands = row["cands"]
        self.cands = cands
        self.doc = row["doc"]
        self.n = len(cands)
        self.cell = np.array([c["cell"] for c in cands], dtype=bool)

        def col(name: str, cell: bool) -> np.ndarray:
            return np.array(
                [float(c["f"].get(name, 0.0)) if c["cell"] == cell else 0.0 for c in cands]
            )

        self.lexical = col("lexical", False)
        self.dense = col("dense", False)
        self.s_rank = col("inverse_rank", False)
        self.typed = col("typed", False) > 0
        self.has_value = col("has_value", False) > 0
        self.period = col("period", False)
        self.caption = col("caption", False) > 0
        self.strength = col("strength", True)
        self.both = col("both", True)
        self.numeric = col("numeric", True)
        self.c_rank = col("inverse_rank", True)
        self.coverage = col("coverage", True)
        self.strict = np.array([c["strict"] for c in cands])

    def scores(self, w: RankWeights) -> np.ndarray:
        """Every candidate's score under ``w``, as ``ExtractiveAnswerer.scored`` computes it."""
        sent = ~self.cell
        prior = np.where(sent, w.lexical * self.lexical + w.rank * self.s_rank, -np.inf)
        embedded = np.zeros(self.n, dtype=bool)
        embedded[np.argsort(-prior, kind="stable")[: min(_EMBEDDED, int(sent.sum()))]] = True
        s = prior + w.period * self.period + np.where(embedded, w.dense * self.dense, 0.0)
        s = s + np.where(self.typed, np.where(self.has_value, w.typed_value, w.typed_missing), 0.0)
        s = s * np.where(self.caption, w.caption, 1.0)
        c = w.cell_base + w.cell_strength * self.strength + w.rank * self.c_rank
        c = (c + w.cell_both * self.both + w.cell_numeric * self.numeric) * self.coverage
        return np.where(sent, s, c)

    def library_scores(self, w: RankWeights) -> np.ndarray:
        """The same scores through ``agents.ranking``'s own functions, one candidate at a time
        (slow): :meth:`scores` is their vectorised twin, checked against them in ``main``."""
        sent = ~self.cell
        prior = np.where(sent, w.lexical * self.lexical + w.rank * self.s_rank, -np.inf)
        embedded = set(np.argsort(-prior, kind="stable")[: int(sent.sum())][:_EMBEDDED].tolist())
        out = []
        for i, c in enumerate(self.cands):
            if c["cell"]:
                out.append(cell_score(CellFeatures(**c["f"]), w))
            else:
                f = SentenceFeatures(**c["f"])
                out.append(sentence_score(f if i in embedded else replace(f, dense=0.0), w))
        return np.array(out)

    def top(self, w: RankWeights, k: int = 1) -> float:
        """The best strict score among the ``k`` candidates these weights put first."""
        if not self.n:
            return 0.0
        order = np.argsort(-self.scores(w), kind="stable")[:k]
        return float(self.strict[order].max())


def total(questions: list[Question], w: RankWeights) -> float:
    return sum(q.top(w) for q in questions)


def fit(questions: list[Question], gain: float = MIN_GAIN) -> RankWeights:
    """Coordinate ascent over ``GRID`` from the defaults, moving only for ``gain`` more right."""
    w = RankWeights()
    best = total(questions, w)
    for _ in range(PASSES):
        moved = False
        for name, values in GRID.items():
            for v in values:
                if v == getattr(w, name):
                    continue
                trial = replace(w, **{name: v})
                got = total(questions, trial)
                if got >= best + gain:
                    w, best, moved = trial, got, True
        if not moved:
            break
    return w


def cross_validate(
    questions: list[Question], folds: int, seeds: int, gain: float = MIN_GAIN
) -> dict[str, float]:
    docs = sorted({q.doc for q in questions})
    fitted, default = [], []
    for seed in range(seeds):
        order = docs[:]
        random.Random(seed).shuffle(order)
        fold_of = {d: i % folds for i, d in enumerate(order)}
        got = 0.0
        for fold in range(folds):
            train = [q for q in questions if fold_of[q.doc] != fold]
            test = [q for q in questions if fold_of[q.doc] == fold]
            got += total(test, fit(train, gain))
        fitted.append(got / len(questions))
        default.append(total(questions, RankWeights()) / len(questions))
    return {
        "fitted": round(statistics.fmean(fitted), 4),
        "fitted_min": round(min(fitted), 4),
        "fitted_max": round(max(fitted), 4),
        "defaults": round(statistics.fmean(default), 4),
    }


def markdown(report: dict[str, Any]) -> str:
    cv, fit_ = report["cross_validated"], report["dev_fit"]
    lines = [
        "# The offline answerer's candidate weights (`benchmarks/fit_ranking.py`)",
        "",
        f"{report['questions']} answerable MMLongBench-Doc dev questions on "
        f"{report['documents']} documents (ratio questions, answered by working, left out). "
        "The figure is the share whose top candidate gives the right answer by MMLongBench's "
        "strict rule, before refusal. Cross-validated: 5 folds of documents, 3 seeds (mean, "
        "and the range over seeds).",
        "",
        "| weights | dev-fit | cross-validated |",
        "| --- | ---: | ---: |",
        f"| hand-set defaults | {fit_['defaults']:.3f} | {cv['defaults']:.3f} |",
    ]
    for level in report["gains"]:
        lines.append(
            f"| fitted, a move taken for {level['gain']} more right "
            f"{'(shipped rule)' if level['gain'] == MIN_GAIN else ''} | "
            f"{level['dev_fit']:.3f} | {level['cv']['fitted']:.3f} "
            f"({level['cv']['fitted_min']:.3f}-{level['cv']['fitted_max']:.3f}) |"
        )
    lines += [
        "",
        f"The right answer is among the candidates for {report['reachable']:.3f} of the "
        f"questions, among the top 5 (defaults) for {report['top5']:.3f}.",
        "",
        "| constant | default | fitted on all documents |",
        "| --- | ---: | ---: |",
    ]
    for name, value in report["weights"].items():
        lines.append(f"| {name} | {getattr(RankWeights(), name)} | {value} |")
    lines += ["", f"Shipped: {report['shipped']}."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--collection", type=Path)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--write", action="store_true", help=f"write {WEIGHTS_FILE.name}")
    parser.add_argument(
        "--rows",
        type=Path,
        help="candidates per question: read from this JSON file when it exists (no collection "
        "needed), else computed and written there",
    )
    args = parser.parse_args()
    started = time.perf_counter()
    if args.rows and args.rows.exists():
        rows = json.loads(args.rows.read_text())
    else:
        if args.collection is None:
            parser.error("--collection is needed to collect the candidates")
        rows = collect(DocSight(args.collection))
        if args.rows:
            args.rows.write_text(json.dumps(rows) + "\n")
    print(f"{len(rows)} questions in {time.perf_counter() - started:.0f} s")
    questions = [Question(r) for r in rows]
    # The fit scores with a vectorised copy of the formula; it must agree with the library's.
    for w in (RankWeights(), replace(RankWeights(), caption=0.25, rank=0.4, cell_base=0.6)):
        for q in questions:
            if q.n and not np.allclose(q.scores(w), q.library_scores(w)):
                sys.exit(f"the vectorised scores differ from agents.ranking's on {q.doc}")
    n = len(questions)
    defaults = RankWeights()
    fitted = fit(questions)
    cv = cross_validate(questions, args.folds, args.seeds)
    gains = [
        {
            "gain": g,
            "dev_fit": round(total(questions, fit(questions, g)) / n, 4),
            "cv": cross_validate(questions, args.folds, args.seeds, g),
        }
        for g in GAINS
    ]
    top5 = sum(q.top(defaults, 5) for q in questions)
    better = cv["fitted"] > cv["defaults"]
    report = {
        "questions": n,
        "documents": len({q.doc for q in questions}),
        "dev_fit": {
            "defaults": round(total(questions, defaults) / n, 4),
            "fitted": round(total(questions, fitted) / n, 4),
        },
        "cross_validated": cv,
        "gains": gains,
        "reachable": round(sum(float(q.strict.max()) if q.n else 0.0 for q in questions) / n, 4),
        "top5": round(top5 / n, 4),
        "weights": fitted.as_dict(),
        "shipped": (
            "the fitted weights (they beat the defaults on held-out documents)"
            if better and args.write
            else "the defaults (the fit does not beat them on held-out documents)"
            if not better
            else "nothing written (run with --write)"
        ),
    }
    print(json.dumps(report, indent=2))
    out = HERE / "results" / "answer_ranking.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    out.with_suffix(".md").write_text(markdown(report))
    if args.write and better:
        WEIGHTS_FILE.write_text(
            json.dumps(
                {
                    "schema_version": SCHEMA_VERSION,
                    "weights": fitted.as_dict(),
                    "fitted_on": f"MMLongBench-Doc dev, {report['documents']} documents, "
                    f"{n} answerable questions",
                    "dev_fit": report["dev_fit"],
                    "cross_validated": cv,
                },
                indent=2,
            )
            + "\n"
        )
        print(f"wrote {WEIGHTS_FILE}")


if __name__ == "__main__":
    main()
