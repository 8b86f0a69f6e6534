"""Retrieval and readout choices, measured the way users meet them: on documents not tuned on.

Every configuration in a grid is run over every question of the shared evaluation sets against
one collection (only retrieval and answer settings vary, so nothing is ingested again). Then:

* **dev-fit**: the best configuration's mean over all questions, the number you would report if
  you tuned on the test set;
* **cross-validated**: leave-documents-out, ``--folds`` folds over the documents (``--seeds``
  shuffles): on each fold the configuration with the best mean on the other folds' documents is
  chosen, and scored on the held-out documents. This is the estimate for unseen documents.

A choice is a gain only when the cross-validated score rises. Per-configuration means and
query latency (p50/p95, milliseconds) are reported too, as ablations.

    python benchmarks/retrieval_cv.py --collection DIR --grid channels
    python benchmarks/retrieval_cv.py --collection DIR --grid readout

``--collection`` must hold the MMLongBench-Doc dev documents (``docsight eval retrieval
../shared/data/mmlongbench-dev/samples.json`` builds one under ``.docsight-eval``).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from docsight import DocSight  # noqa: E402
from docsight.evaluation.datasets import load_dataset  # noqa: E402
from docsight.evaluation.metrics import answer_in_context, ndcg_at_k, recall_at_k  # noqa: E402
from docsight.evaluation.types import EvalQuestion  # noqa: E402
from docsight.settings import Settings  # noqa: E402

SHARED = HERE.parent.parent / "shared" / "data"
DATASETS = {
    "mmlongbench": SHARED / "mmlongbench-dev" / "samples.json",
    "mmdocir": SHARED / "mmlongbench-dev" / "mmdocir.jsonl",
    "mmquery": SHARED / "mmquery-dev",
}

OLD = ["bm25", "dense", "page_bm25", "page_ref"]
NEW = ["bm25", "dense", "page_bm25", "locate"]


def _channels(channels: list[str], expand: bool = True, **weights: float) -> dict[str, Any]:
    return {
        "retrieval": {
            "channels": channels,
            "weights": {"page_ref": 3.0, "locate": 3.0, **weights},
            "expand": expand,
        }
    }


#: Grids: name → {configuration name → settings overrides}.
GRIDS: dict[str, dict[str, dict[str, Any]]] = {
    "channels": {
        "issue-3 channels": _channels(OLD, expand=False),
        "+ locate": _channels(NEW, expand=False),
        "+ locate + expand": _channels(NEW),
        "default (+ bm25 x1.5)": _channels(NEW, bm25=1.5),
        "default - expand": _channels(NEW, expand=False, bm25=1.5),
        "default, page_ref for locate": _channels(OLD, bm25=1.5),
        "default - page_bm25": _channels(["bm25", "dense", "locate"], bm25=1.5),
        "default - dense": _channels(["bm25", "page_bm25", "locate"], bm25=1.5),
        "default + tree x0.5": _channels([*NEW, "tree"], bm25=1.5, tree=0.5),
        "default + tree": _channels([*NEW, "tree"], bm25=1.5),
        "default + graph": _channels([*NEW, "graph"], bm25=1.5),
        "default, graph for dense": _channels(["bm25", "graph", "page_bm25", "locate"], bm25=1.5),
        "default + rerank features": {
            "retrieval": {**_channels(NEW, bm25=1.5)["retrieval"], "rerank": "features"}
        },
        "default + tree x0.5 + rerank features": {
            "retrieval": {
                **_channels([*NEW, "tree"], bm25=1.5, tree=0.5)["retrieval"],
                "rerank": "features",
            }
        },
    },
    "weights": {
        f"bm25 x{b} page_bm25 x{p} dense x{d} tree x{t}": _channels(
            [*NEW, "tree"] if t else NEW, bm25=b, page_bm25=p, dense=d, tree=t
        )
        for b in (1.0, 1.5, 2.0)
        for p in (0.5, 1.0)
        for d in (0.75, 1.0)
        for t in (0.0, 0.5)
    },
    "readout": {
        **{
            f"budget {b} neighbours {n} page_hits {h}": {
                **_channels(NEW, bm25=1.5),
                "answer": {"context_tokens": b, "neighbours": n, "page_hits": h},
            }
            for b in (2000, 3000)
            for n in (0, 1)
            for h in (1, 2, 3)
        },
        "fixed top 6, no graph": {
            **_channels(NEW, bm25=1.5),
            "answer": {"adaptive": False, "context_tokens": 3000, "neighbours": 0, "page_hits": 99},
        },
        "adaptive, no graph": {
            **_channels(NEW, bm25=1.5),
            "answer": {"context_tokens": 3000, "neighbours": 0, "page_hits": 99},
        },
        "adaptive k_max 12": {
            **_channels(NEW, bm25=1.5),
            "answer": {"context_tokens": 3000, "k_max": 12},
        },
    },
    "corpus": {
        "issue-3 channels": _channels(OLD, expand=False),
        "+ locate + expand": _channels(NEW),
        "default (+ bm25 x1.5)": _channels(NEW, bm25=1.5),
        "default + tree x0.5": _channels([*NEW, "tree"], bm25=1.5, tree=0.5),
        "default + tree": _channels([*NEW, "tree"], bm25=1.5),
        **{
            f"default, document prior {w}": {
                "retrieval": {**_channels(NEW, bm25=1.5)["retrieval"], "document_prior": w}
            }
            for w in (1.0, 2.0, 4.0)
        },
        "default, 5 documents for locate": {
            "retrieval": {**_channels(NEW, bm25=1.5)["retrieval"], "scope_documents": 5}
        },
    },
}


def _settings(overrides: dict[str, Any]) -> Settings:
    """Default settings with the groups in ``overrides`` updated field by field."""
    settings = Settings()
    for group, fields in overrides.items():
        current = getattr(settings, group)
        setattr(settings, group, current.model_copy(update=fields))
    return settings


def load_questions(
    names: list[str], page_counts: dict[str, int], evidence: set[str] | None = None
) -> list[tuple[str, EvalQuestion]]:
    """Answerable questions with page labels on documents of the collection; with
    ``evidence``, only questions with one of those evidence types ("table", "chart", ...)."""
    out: list[tuple[str, EvalQuestion]] = []
    for name in names:
        evalset = load_dataset(DATASETS[name])
        evalset, _ = evalset.restrict_pages(page_counts)
        for q in evalset.questions:
            if not (q.answerable and q.evidence_pages and q.doc in page_counts):
                continue
            kinds = {s.lower() for s in q.evidence_sources}
            if evidence and not any(k.startswith(tuple(evidence)) for k in kinds):
                continue
            out.append((name, q))
    return out


def run_pages(
    ds: DocSight, questions: list[tuple[str, EvalQuestion]], scope: str
) -> tuple[list[dict[str, float]], list[float]]:
    scores, times = [], []
    for _, q in questions:
        started = time.perf_counter()
        hits = ds.search(
            q.question, k=10, doc_names=[q.doc] if scope == "document" else None, unit="page"
        )
        times.append(time.perf_counter() - started)
        retrieved = [f"{h.doc_name}#{h.page}" for h in hits]
        gold = {f"{q.doc}#{p}" for p in q.evidence_pages}
        scores.append(
            {"ndcg@10": ndcg_at_k(retrieved, gold, 10), "recall@5": recall_at_k(retrieved, gold, 5)}
        )
    return scores, times


def run_context(
    ds: DocSight, questions: list[tuple[str, EvalQuestion]], scope: str
) -> tuple[list[dict[str, float]], list[float]]:
    scores, times = [], []
    for _, q in questions:
        started = time.perf_counter()
        sources = ds.context(q.question, doc_names=[q.doc] if scope == "document" else None)
        times.append(time.perf_counter() - started)
        text = "\n".join(s.text for s in sources)
        scores.append(
            {
                "answer_in_sources": float(answer_in_context(q.answer, text)),
                "source_chars": float(len(text)),
                "sources": float(len(sources)),
            }
        )
    return scores, times


def cross_validate(
    results: dict[str, list[dict[str, float]]],
    docs: list[str],
    metric: str,
    folds: int,
    seeds: int,
    allowed: Callable[[str], bool] = lambda name: True,
) -> dict[str, Any]:
    """Leave-documents-out selection of the configuration by ``metric``."""
    names = [n for n in results if allowed(n)]
    unique_docs = sorted(set(docs))
    estimates, picks = [], []
    for seed in range(seeds):
        order = unique_docs[:]
        random.Random(seed).shuffle(order)
        fold_of = {d: i % folds for i, d in enumerate(order)}
        held_out: list[float] = []
        for fold in range(folds):
            train = [i for i, d in enumerate(docs) if fold_of[d] != fold]
            test = [i for i, d in enumerate(docs) if fold_of[d] == fold]
            if not test:
                continue
            best = max(names, key=lambda n: statistics.fmean(results[n][i][metric] for i in train))
            picks.append(best)
            held_out.extend(results[best][i][metric] for i in test)
        estimates.append(statistics.fmean(held_out))
    dev = {n: statistics.fmean(r[metric] for r in results[n]) for n in names}
    best = max(dev, key=lambda n: dev[n])
    return {
        "metric": metric,
        "dev_fit": round(dev[best], 4),
        "dev_fit_config": best,
        "cross_validated": round(statistics.fmean(estimates), 4),
        "cross_validated_per_seed": [round(e, 4) for e in estimates],
        "picked": {n: picks.count(n) for n in dict.fromkeys(picks)},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--collection", type=Path)
    parser.add_argument("--grid", default="channels", choices=sorted(GRIDS))
    parser.add_argument(
        "--datasets", default="mmlongbench", help="comma-separated: " + ",".join(DATASETS)
    )
    parser.add_argument("--scope", default="document", choices=["document", "corpus"])
    parser.add_argument("--kind", default="pages", choices=["pages", "context"])
    parser.add_argument(
        "--evidence", default="", help="only questions with these evidence types, e.g. table,chart"
    )
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument(
        "--report", type=Path, help="only write the Markdown table of an earlier run's JSON"
    )
    args = parser.parse_args()
    if args.report is not None:
        summary = json.loads(args.report.read_text())
        args.report.with_suffix(".md").write_text(markdown(summary))
        return

    if args.collection is None:
        parser.error("--collection is required")
    base = DocSight(args.collection)
    page_counts = {d.name: d.pages for d in base.documents()}
    evidence = {e.strip().lower() for e in args.evidence.split(",") if e.strip()} or None
    questions = load_questions(args.datasets.split(","), page_counts, evidence)
    docs = [q.doc or "" for _, q in questions]
    results: dict[str, list[dict[str, float]]] = {}
    latency: dict[str, dict[str, float]] = {}
    for name, overrides in GRIDS[args.grid].items():
        ds = DocSight(args.collection, settings=_settings(overrides))
        run = run_pages if args.kind == "pages" else run_context
        ds.search("warm up", k=1)  # load the encoder and open the tables outside the timing
        scores, times = run(ds, questions, args.scope)
        results[name] = scores
        ordered = sorted(times)
        latency[name] = {
            "p50_ms": round(1000 * ordered[len(ordered) // 2], 1),
            "p95_ms": round(1000 * ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 1),
        }
        means = {m: round(statistics.fmean(s[m] for s in scores), 4) for m in scores[0]}
        print(f"{name:32s} {means} {latency[name]}", flush=True)
    metric = "ndcg@10" if args.kind == "pages" else "answer_in_sources"
    cv = cross_validate(results, docs, metric, args.folds, args.seeds)
    print(json.dumps(cv, indent=2))
    summary = {
        "grid": args.grid,
        "kind": args.kind,
        "scope": args.scope,
        "datasets": args.datasets,
        "evidence": sorted(evidence) if evidence else None,
        "questions": len(questions),
        "documents": len(set(docs)),
        "configs": {
            n: {
                **{m: round(statistics.fmean(s[m] for s in r), 4) for m in r[0]},
                **latency[n],
            }
            for n, r in results.items()
        },
        "cv": cv,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    stem = f"retrieval_cv-{args.grid}-{args.kind}-{args.scope}-{args.datasets.replace(',', '+')}"
    if evidence:
        stem += "-" + "+".join(sorted(evidence))
    (args.out / f"{stem}.json").write_text(json.dumps(summary, indent=2) + "\n")
    (args.out / f"{stem}.md").write_text(markdown(summary))


def command(summary: dict[str, Any]) -> str:
    """The command line that reproduces a run (the collection path is the caller's)."""
    parts = [f"--grid {summary['grid']}", f"--kind {summary['kind']}"]
    parts.append(f"--scope {summary['scope']}")
    parts.append(f"--datasets {summary['datasets']}")
    if summary.get("evidence"):
        parts.append(f"--evidence {','.join(summary['evidence'])}")
    return "python benchmarks/retrieval_cv.py --collection DIR " + " ".join(parts)


def markdown(summary: dict[str, Any]) -> str:
    """The run as a table: one row per configuration, then the cross-validation."""
    configs = summary["configs"]
    metrics = [m for m in next(iter(configs.values())) if not m.endswith("_ms")]
    evidence = summary.get("evidence")
    lines = [
        f"# Grid `{summary['grid']}`: {summary['kind']}, {summary['scope']} scope",
        "",
        f"`{command(summary)}`",
        "",
        f"{summary['questions']} questions on {summary['documents']} documents "
        f"({summary['datasets']}" + (f", evidence {'/'.join(evidence)}" if evidence else "") + "). "
        "Latency is per question on this 2-core machine.",
        "",
        "| configuration | " + " | ".join(metrics) + " | p50 ms | p95 ms |",
        "| --- | " + " | ".join("---:" for _ in metrics) + " | ---: | ---: |",
    ]
    for name, row in configs.items():
        cells = [f"{row[m]:.0f}" if m == "source_chars" else f"{row[m]:.3f}" for m in metrics]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {row['p50_ms']} | {row['p95_ms']} |")
    cv = summary["cv"]
    picked = ", ".join(f"{n} ({k})" for n, k in cv["picked"].items())
    seeds = ", ".join(f"{e:.3f}" for e in cv["cross_validated_per_seed"])
    lines += [
        "",
        f"**{cv['metric']}**: dev-fit {cv['dev_fit']:.3f} ({cv['dev_fit_config']}); "
        f"leave-documents-out cross-validated {cv['cross_validated']:.3f} (per seed {seeds}).",
        "",
        f"Configuration chosen per fold: {picked}.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
