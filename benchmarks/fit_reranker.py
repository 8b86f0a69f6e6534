"""Fit the offline feature reranker, with leave-documents-out cross-validation.

For every MMLongBench-Doc dev question with page labels, the fused top candidates (pages, within
the question's document) and their features (``docsight.retrieval.rerank.features``) are
computed once. A pairwise logistic model (each labelled page against each unlabelled one of the
same question) is fitted:

* per fold, on the other folds' documents, and scored on the held-out documents
  (``--folds`` folds, ``--seeds`` shuffles) — the cross-validated estimate;
* on all questions — the dev-fit score and the weights that ship.

The weights are written to ``src/docsight/retrieval/rerank_weights.json`` only with ``--write``;
the report goes to ``benchmarks/results/rerank.json``.

    python benchmarks/fit_reranker.py --collection DIR [--write]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE))

from retrieval_cv import load_questions  # noqa: E402

from docsight import DocSight  # noqa: E402
from docsight.evaluation.metrics import ndcg_at_k  # noqa: E402
from docsight.retrieval.rerank import (  # noqa: E402
    WEIGHTS_FILE,
    feature_names,
    features,
    page_evidence,
)
from docsight.settings import Settings  # noqa: E402

L2_GRID = (0.001, 0.01, 0.1, 1.0)


def collect(ds: DocSight, names: list[str], candidates: int) -> list[dict]:
    page_counts = {d.name: d.pages for d in ds.documents()}
    rows = []
    for _, q in load_questions(names, page_counts):
        hits = ds.search(q.question, k=candidates, doc_names=[q.doc], unit="page")
        pages = [(h.doc_id, h.page) for h in hits]
        by_page: dict[tuple[str, int], list] = {key: [] for key in pages}
        for chunk in ds.store.chunks_on_pages(pages):
            by_page.setdefault((chunk.doc_id, chunk.page), []).append(chunk)
        x = features(q.question, hits, [page_evidence(by_page[k]) for k in pages])
        rows.append(
            {
                "doc": q.doc,
                "pages": [h.page for h in hits],
                "gold": set(q.evidence_pages),
                "x": x,
            }
        )
    return rows


def fit(rows: list[dict], l2: float) -> np.ndarray:
    """Pairwise logistic regression (Newton steps) on labelled-minus-unlabelled differences."""
    diffs = []
    for r in rows:
        pos = [i for i, p in enumerate(r["pages"]) if p in r["gold"]]
        neg = [i for i, p in enumerate(r["pages"]) if p not in r["gold"]]
        for i in pos:
            for j in neg:
                diffs.append(r["x"][i] - r["x"][j])
    d = np.asarray(diffs)
    w = np.zeros(d.shape[1])
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-(d @ w)))
        grad = -d.T @ (1 - p) / len(d) + l2 * w
        hess = (d * (p * (1 - p))[:, None]).T @ d / len(d) + l2 * np.eye(len(w))
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w


def score(rows: list[dict], w: np.ndarray | None) -> list[float]:
    out = []
    for r in rows:
        order = (
            r["pages"]
            if w is None
            else [r["pages"][i] for i in np.argsort(-(r["x"] @ w), kind="stable")]
        )
        out.append(ndcg_at_k(order, r["gold"], 10))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--collection", type=Path, required=True)
    parser.add_argument("--datasets", default="mmlongbench")
    parser.add_argument("--candidates", type=int, default=30)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--write", action="store_true", help=f"write {WEIGHTS_FILE.name}")
    args = parser.parse_args()

    settings = Settings()
    settings.retrieval.rerank = "none"  # features are computed over the fused order
    ds = DocSight(args.collection, settings=settings)
    started = time.perf_counter()
    rows = collect(ds, args.datasets.split(","), args.candidates)
    print(f"{len(rows)} questions, features in {time.perf_counter() - started:.1f} s")
    docs = sorted({r["doc"] for r in rows})
    fused = statistics.fmean(score(rows, None))

    def cv(l2: float, seed: int) -> float:
        order = docs[:]
        random.Random(seed).shuffle(order)
        fold_of = {d: i % args.folds for i, d in enumerate(order)}
        held_out: list[float] = []
        for fold in range(args.folds):
            train = [r for r in rows if fold_of[r["doc"]] != fold]
            test = [r for r in rows if fold_of[r["doc"]] == fold]
            held_out += score(test, fit(train, l2))
        return statistics.fmean(held_out)

    report: dict = {
        "questions": len(rows),
        "documents": len(docs),
        "candidates": args.candidates,
        "fused_ndcg@10": round(fused, 4),
        "by_l2": {},
    }
    for l2 in L2_GRID:
        estimates = [cv(l2, s) for s in range(args.seeds)]
        fit_all = statistics.fmean(score(rows, fit(rows, l2)))
        report["by_l2"][str(l2)] = {
            "dev_fit": round(fit_all, 4),
            "cross_validated": round(statistics.fmean(estimates), 4),
            "per_seed": [round(e, 4) for e in estimates],
        }
        print(f"l2={l2}: dev-fit {fit_all:.4f}  cross-validated {statistics.fmean(estimates):.4f}")
    # The regularisation is chosen by the cross-validated score, then fitted on everything.
    best = max(L2_GRID, key=lambda l2: report["by_l2"][str(l2)]["cross_validated"])
    weights = fit(rows, best)
    report["chosen_l2"] = best
    report["weights"] = dict(
        zip(feature_names(), [round(float(w), 6) for w in weights], strict=True)
    )
    print(f"fused {fused:.4f}; chosen l2={best}: {report['by_l2'][str(best)]}")
    out = HERE / "results" / "rerank.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    if args.write:
        WEIGHTS_FILE.write_text(
            json.dumps(
                {
                    "features": feature_names(),
                    "weights": [round(float(w), 6) for w in weights],
                    "fitted_on": (
                        f"{args.datasets} dev, {len(rows)} questions, {len(docs)} documents"
                    ),
                    "l2": best,
                    "cross_validated_ndcg@10": report["by_l2"][str(best)]["cross_validated"],
                    "fused_ndcg@10": report["fused_ndcg@10"],
                },
                indent=2,
            )
            + "\n"
        )
        print(f"wrote {WEIGHTS_FILE}")


if __name__ == "__main__":
    main()
