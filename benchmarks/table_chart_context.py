#!/usr/bin/env python3
"""Does the gold answer appear in the top-5 retrieved context? MMLongBench dev, by evidence type.

    python benchmarks/table_chart_context.py --collection DIR --label NAME   # retrieve contexts
    python benchmarks/table_chart_context.py --compare A.json B.json         # score and report

For every answerable dev question the script searches within the question's document and checks
(``evaluation.metrics.answer_in_context``) whether the gold answer appears in

* the top-5 chunks, as an answerer sees them (with context assembly where the version has it);
* the top-5 pages, as everything indexed on those pages.

It uses only API that every docsight version since issue 2 has, so the same file can be run with
``PYTHONPATH`` pointing at an older checkout to compare versions on their own collections.
Answers that need computing (ratios, sums) appear in no context; they count against every system.
"""

from __future__ import annotations

import argparse
import ast
import json
import logging
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parent.parent / "shared" / "data" / "mmlongbench-dev"
GROUPS = ("Table", "Chart")


def contexts(ds: object, question: str, doc: str) -> tuple[str, str]:
    hits = ds.search(question, k=5, doc_names=[doc])  # type: ignore[attr-defined]
    try:
        from docsight.agents.context import assemble

        chunk_text = "\n".join(s.text for s in assemble(hits, ds.store))  # type: ignore[attr-defined]
    except ImportError:  # versions before context assembly read the hits as they are
        chunk_text = "\n".join(h.text for h in hits)
    pages = ds.search(question, k=5, doc_names=[doc], unit="page")  # type: ignore[attr-defined]
    wanted = {(h.doc_id, h.page) for h in pages}
    doc_id = pages[0].doc_id if pages else None
    page_text = ""
    if doc_id is not None:
        chunks = ds.store.document_chunks(doc_id)  # type: ignore[attr-defined]
        page_text = "\n".join(c.body for c in chunks if (c.doc_id, c.page) in wanted)
    return chunk_text, page_text


def run(collection: Path, data: Path, label: str) -> dict[str, object]:
    from docsight import DocSight

    ds = DocSight(collection)
    names = {d.name for d in ds.documents()}
    rows = []
    for s in json.loads((data / "samples.json").read_text()):
        pages = ast.literal_eval(s["evidence_pages"]) if s["evidence_pages"] else []
        if not pages or str(s["answer"]).strip().lower() == "not answerable":
            continue
        if s["doc_id"] not in names:
            continue
        sources = s.get("evidence_sources") or "[]"
        kinds = ast.literal_eval(sources) if isinstance(sources, str) else list(sources)
        chunk_text, page_text = contexts(ds, s["question"], s["doc_id"])
        rows.append(
            {
                "question": s["question"],
                "doc": s["doc_id"],
                "answer": s["answer"],
                "sources": kinds,
                "chunk_context": chunk_text,
                "page_context": page_text,
            }
        )
    return {"label": label, "collection": str(collection), "questions": rows}


def summarise(result: dict[str, object]) -> dict[str, dict[str, float]]:
    # Scored here, with this checkout's metric, whichever version retrieved the contexts.
    from docsight.evaluation.metrics import answer_in_context

    groups: dict[str, list[dict[str, object]]] = defaultdict(list)
    for row in result["questions"]:  # type: ignore[union-attr]
        row["in_chunks"] = answer_in_context(row["answer"], str(row["chunk_context"]))
        row["in_pages"] = answer_in_context(row["answer"], str(row["page_context"]))
        groups["all answerable"].append(row)
        for kind in GROUPS:
            if any(kind.lower() in str(k).lower() for k in row["sources"]):  # type: ignore[union-attr]
                groups[f"evidence: {kind.lower()}"].append(row)
        if any(g.lower() in str(k).lower() for g in GROUPS for k in row["sources"]):  # type: ignore[union-attr]
            groups["evidence: table or chart"].append(row)
    return {
        name: {
            "questions": len(rows),
            "answer in top-5 chunks": sum(bool(r["in_chunks"]) for r in rows) / len(rows),
            "answer in top-5 pages": sum(bool(r["in_pages"]) for r in rows) / len(rows),
        }
        for name, rows in groups.items()
        if rows
    }


def report(results: list[dict[str, object]]) -> str:
    lines = [
        "# Gold answer in the top-5 retrieved context (MMLongBench-Doc dev, within each document)",
        "",
        "| group | questions | "
        + " | ".join(f"{r['label']}: chunks | {r['label']}: pages" for r in results)
        + " |",
        "| --- | --- | " + " | ".join("--- | ---" for _ in results) + " |",
    ]
    summaries = [summarise(r) for r in results]
    for group in summaries[0]:
        cells = []
        for s in summaries:
            m = s.get(group, {})
            chunks, pages = m.get("answer in top-5 chunks", 0), m.get("answer in top-5 pages", 0)
            cells.append(f"{chunks:.3f} | {pages:.3f}")
        lines.append(
            f"| {group} | {summaries[0][group]['questions']} | " + " | ".join(cells) + " |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--collection", type=Path)
    ap.add_argument("--label", default="docsight")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--compare", type=Path, nargs="+", help="result files to report side by side")
    args = ap.parse_args()
    logging.disable(logging.INFO)
    if args.compare:
        text = report([json.loads(p.read_text()) for p in args.compare])
        (HERE / "results").mkdir(exist_ok=True)
        (HERE / "results" / "table_chart_context.md").write_text(text)
        print(text)
        return 0
    if args.collection is None:
        ap.error("--collection is required unless --compare is given")
    result = run(args.collection, args.data, args.label)
    out = args.out or HERE / "out" / f"context_{args.label}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"contexts written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
