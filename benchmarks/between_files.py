#!/usr/bin/env python3
"""What a compaction between files costs on a large collection, with and without the ``large``
extra (issue 17).

    python benchmarks/between_files.py [--docs 20000] [--files 3] [--rounds 2]
                                       [--md ...] [--json ...]

A long ingest compacts the collection every ``ingest.compact_every`` stored files
(``store.optimize(indexes=False)``). With Lance's own package (the ``large`` extra) that
compaction is bounded (``docsight.index.compaction``). Without it, it is lancedb's optimize,
which rewrites a table whole below a million rows: so tables past 32,768 rows
(``compaction.TARGET_ROWS``) are left to the final optimize, and the smaller ones, the
documents and graphs tables of a collection of fewer than 32,768 documents, are rewritten.

The collection is built as ``lookup_indexes.py`` builds it (``--docs`` documents of 50 chunks,
copies of one real document's rows). Then, for each round, the two ways in turn: ``--files``
times, one more document is stored and the compaction between files timed. Without the
package is forced by making ``compaction.bounded_compaction`` answer no.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _machine import load_average, run_record, write_json  # noqa: E402
from lookup_indexes import build, optimized_by, store_one  # noqa: E402


def measure(docs: int, files: int, rounds: int) -> dict[str, Any]:
    from docsight.index import compaction

    if not compaction.bounded_compaction():
        raise SystemExit("this benchmark needs the large extra (pylance) to compare both ways")
    times: dict[str, list[float]] = {"lancedb": [], "bounded": []}
    number = 0
    with tempfile.TemporaryDirectory() as tmp:
        store, built = build(Path(tmp) / "collection", docs, 50)
        for _ in range(rounds):
            for way in ("lancedb", "bounded"):
                with optimized_by(way == "lancedb"):
                    for _ in range(files):
                        store_one(store, number, 50)
                        number += 1
                        started = time.perf_counter()
                        store.optimize(indexes=False)
                        times[way].append(round(time.perf_counter() - started, 3))
    return {"docs": docs, **built, "compaction_s": times}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--files", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--md", type=Path, default=HERE / "results" / "between_files.md")
    parser.add_argument("--json", type=Path, default=HERE / "results" / "between_files.json")
    args = parser.parse_args()
    load_before = load_average()
    run = measure(args.docs, args.files, args.rounds)
    print(json.dumps(run), flush=True)
    command = (
        f"python benchmarks/between_files.py --docs {args.docs} --files {args.files} "
        f"--rounds {args.rounds}"
    )
    result = run_record(command, load_before, onnxruntime=False) | {"run": run}
    write_json(args.json, result)
    rows = ", ".join(f"{n} {c:,}" for n, c in run["rows"].items())
    lines = [
        "# A compaction between files on a large collection (issue 17)",
        "",
        f"    {command}",
        "",
        f"{result['date']}; {result['machine'].get('cpu', '')}; load before {load_before}, "
        f"after {result['load_after']}. Rows: {rows}.",
        "",
        "| way | seconds per compaction, in order | median |",
        "| --- | --- | ---: |",
    ]
    for way, values in run["compaction_s"].items():
        lines.append(f"| {way} | {', '.join(map(str, values))} | {np.median(values):.2f} |")
    args.md.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
