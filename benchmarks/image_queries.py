#!/usr/bin/env python3
"""Image + text questions (VISA): three fused text streams against the question alone.

    python benchmarks/image_queries.py [--limit N] [--variants default,a-only,...]

Runs on ``../shared/data/mmquery-dev`` (95 questions, each with a crop of its evidence region; a
derived set, not a published benchmark) against the MMLongBench-Doc dev collection that
``docsight eval`` builds (``.docsight-eval/documents-<fingerprint>``; run ``docsight eval retrieval
../shared/data/mmquery-dev --docs ../shared/data/mmlongbench-dev/documents`` once first, or pass
``--collection``). Every variant is scored in-document and corpus-wide on page nDCG@10, recall@1/5
and MRR, with query latency:

* **cold**: the variant's router, parsers and captioner run with an empty cache. OCR of the query
  images is cold for the first variant only and then shared (OCR is not what the variants vary);
  the first row's cold latency is the true first-query cost.
* **warm**: the same questions again; nothing is recomputed (no OCR or model call).

Writes ``benchmarks/results/image_queries.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SHARED = HERE.parent.parent / "shared" / "data"
OUT = HERE / "out" / "image-queries"
RESULTS = HERE / "results"

ALL_TYPES = [
    "chart", "table", "circuit", "equation", "screenshot",
    "code", "figure", "diagram", "map", "photograph",
]  # fmt: skip

#: name → (description, ImageQuerySettings overrides, use images)
VARIANTS: dict[str, tuple[str, dict[str, Any], bool]] = {
    "a-only": ("stream A alone (the question's text)", {}, False),
    "default": ("A+B+C, weighted fusion, offline router top-3", {}, True),
    "rrf": ("A+B+C, RRF (k=60)", {"fusion": "rrf"}, True),
    "ab": ("A+B", {"streams": ["A", "B"]}, True),
    "ac": ("A+C", {"streams": ["A", "C"]}, True),
    "b-only": ("B alone", {"streams": ["B"]}, True),
    "c-only": ("C alone", {"streams": ["C"]}, True),
    "top1": ("router top-1", {"max_types": 1}, True),
    "top2": ("router top-2", {"max_types": 2}, True),
    "all": ("router: all types", {"router": "all"}, True),
    "random": ("router: seeded random (seed 0)", {"router": "random"}, True),
}


class SplitCache:
    """OCR lines in one shared cache, everything else in the variant's own."""

    def __init__(self, shared: Any, own: Any) -> None:
        self.shared, self.own = shared, own

    def _pick(self, namespace: str) -> Any:
        return self.shared if namespace.startswith("ocr/") else self.own

    def get(self, namespace: str, key: str) -> Any:
        return self._pick(namespace).get(namespace, key)

    def put(self, namespace: str, key: str, value: Any) -> None:
        self._pick(namespace).put(namespace, key, value)

    def memo(self, namespace: str, key: str, compute: Any) -> Any:
        return self._pick(namespace).memo(namespace, key, compute)


def run_variant(
    name: str, overrides: dict[str, Any], images: bool, collection: Path, evalset: Any, ocr: Any
) -> dict[str, Any]:
    from docsight import DocSight
    from docsight.cache import JsonCache
    from docsight.evaluation.runner import aggregate, percentile
    from docsight.evaluation.scoring import score_pages
    from docsight.evaluation.types import QuestionResult
    from docsight.query.analyze import ImageQueryAnalyzer
    from docsight.settings import Settings

    settings = Settings(collection_dir=collection)
    settings.image = settings.image.model_copy(update=overrides)
    ds = DocSight(collection, settings=settings)
    own = OUT / f"{name}.sqlite"
    own.unlink(missing_ok=True)
    cache = SplitCache(ocr, JsonCache(own))
    row: dict[str, Any] = {"variant": name, "overrides": overrides, "images": images}
    types_seen: dict[str, int] = {}
    for pass_name, scope in (("cold", "document"), ("warm", "document"), ("warm", "corpus")):
        analyzer = ImageQueryAnalyzer(settings.image, cache=cache)  # type: ignore[arg-type]
        results, latencies, image_seconds = [], [], []
        for q in evalset.questions:
            started = time.perf_counter()
            analysis = analyzer.analyze(q.image) if images and q.image else None
            if analysis is not None:
                image_seconds.append(time.perf_counter() - started)
                if pass_name == "cold":
                    for t in analysis.routing.types:
                        types_seen[t.type] = types_seen.get(t.type, 0) + 1
            docs = [q.doc] if scope == "document" and q.doc else None
            hits = ds.search(q.question, k=10, doc_names=docs, unit="page", image=analysis)
            latencies.append(time.perf_counter() - started)
            retrieved = [f"{h.doc_name}#{h.page}" for h in hits]
            result = QuestionResult(id=q.id, question=q.question)
            result.metrics.update(score_pages(retrieved, q, 10))
            results.append(result)
        summary = aggregate(results)
        key = f"{scope}" if pass_name == "warm" else "cold"
        row[key] = {m: summary.get(m) for m in ("recall@1", "recall@5", "ndcg@10", "mrr")}
        row[f"{pass_name}_{scope}_latency"] = {
            "p50": round(statistics.median(latencies), 4),
            "p95": round(percentile(latencies, 0.95), 4),
            "image_p50": round(statistics.median(image_seconds), 4) if image_seconds else 0.0,
        }
    if row["cold"] != row["document"]:
        raise SystemExit(f"{name}: warm and cold runs disagree: {row['cold']} vs {row['document']}")
    row["types_routed"] = types_seen
    return row


def markdown(rows: list[dict[str, Any]], questions: int, seconds: float) -> str:
    lines = [
        "# Image + text questions: three fused streams (VISA) on mmquery-dev",
        "",
        f"{questions} questions from `../shared/data/mmquery-dev` (each a question plus a crop of "
        "its evidence region: table, chart or figure), searched against the 23 MMLongBench-Doc "
        "dev documents. **A derived set, not a published benchmark.** Pages ranked within the "
        "question's document (in-document) and over all 990 pages (corpus). Offline: OCR "
        "(rapidocr), the offline router and typed parsers, the offline captioner; no model "
        "endpoint. 2-core CPU.",
        "",
        "Latency is per question, image analysis plus three searches. *Cold*: the variant's "
        "router, parsers and captioner run (OCR of the query image is cold in the first image "
        "row only, then shared); *warm*: everything from the cache, no OCR or model call.",
        "",
        "| variant | in-doc nDCG@10 | in-doc R@5 | corpus nDCG@10 | corpus R@5 | corpus R@1 "
        "| cold p50 / p95 s | warm p50 / p95 s |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        cold, warm = r["cold_document_latency"], r["warm_document_latency"]
        lines.append(
            f"| {r['description']} | {r['document']['ndcg@10']:.3f} | "
            f"{r['document']['recall@5']:.3f} | {r['corpus']['ndcg@10']:.3f} | "
            f"{r['corpus']['recall@5']:.3f} | {r['corpus']['recall@1']:.3f} | "
            f"{cold['p50']:.2f} / {cold['p95']:.2f} | {warm['p50']:.3f} / {warm['p95']:.3f} |"
        )
    lines += ["", f"Total benchmark time {seconds:.0f} s.", ""]
    routed = next((r["types_routed"] for r in rows if r["variant"] == "default"), None)
    if routed:
        lines.append(
            "Types the default router named (top-3 with confidence ≥ min_confidence): "
            + ", ".join(f"{t} {n}" for t, n in sorted(routed.items(), key=lambda kv: -kv[1]))
            + "."
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=SHARED / "mmquery-dev")
    parser.add_argument("--docs", type=Path, default=SHARED / "mmlongbench-dev" / "documents")
    parser.add_argument("--collection", type=Path, default=None)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--variants", default=None, help="comma-separated names")
    parser.add_argument("--leave-one-out", action="store_true", help="also drop each parser")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    if not args.data.is_dir():
        print(f"no data at {args.data}", file=sys.stderr)
        return 2
    from docsight.cache import JsonCache
    from docsight.evaluation.datasets import load_dataset
    from docsight.evaluation.runner import default_collection
    from docsight.settings import Settings

    collection = args.collection or default_collection(args.docs, Settings())
    if not (collection / "collection.json").is_file():
        print(
            f"no collection at {collection}; run `docsight eval retrieval` first", file=sys.stderr
        )
        return 2
    evalset = load_dataset(args.data)
    if args.limit:
        evalset = evalset.model_copy(update={"questions": evalset.questions[: args.limit]})
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    ocr = JsonCache(OUT / "ocr.sqlite")
    names = args.variants.split(",") if args.variants else list(VARIANTS)
    plan = [(n, *VARIANTS[n]) for n in names]
    if args.leave_one_out:
        for t in ALL_TYPES:
            keep = [x for x in ALL_TYPES if x != t]
            plan.append(
                (f"without-{t}", f"default without the {t} parser", {"parsers": keep}, True)
            )
    started = time.perf_counter()
    rows = []
    for name, description, overrides, images in plan:
        t0 = time.perf_counter()
        row = run_variant(name, overrides, images, collection, evalset, ocr)
        row["description"] = description
        rows.append(row)
        print(
            f"{name:>22}: in-doc nDCG@10 {row['document']['ndcg@10']:.3f} "
            f"R@5 {row['document']['recall@5']:.3f} | "
            f"corpus nDCG@10 {row['corpus']['ndcg@10']:.3f} "
            f"R@5 {row['corpus']['recall@5']:.3f} | cold p50 "
            f"{row['cold_document_latency']['p50']:.2f} s, warm p50 "
            f"{row['warm_document_latency']['p50']:.3f} s ({time.perf_counter() - t0:.0f} s)",
            flush=True,
        )
    seconds = time.perf_counter() - started
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "image_queries.json").write_text(json.dumps(rows, indent=2) + "\n")
    (RESULTS / "image_queries.md").write_text(markdown(rows, len(evalset.questions), seconds))
    print(f"wrote {RESULTS / 'image_queries.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
