#!/usr/bin/env python3
"""What writing one document costs as a collection grows: appended rows against merged ones,
and the process's memory between documents (issue 17).

    python benchmarks/store_writes.py [--docs 24] [--chunks 2000]
                                      [--json benchmarks/results/store_writes.json]
                                      [--md benchmarks/results/store_writes.md]

A collection is grown one document at a time, as in ``compaction.py`` (documents of ``--chunks``
chunks of about 1,700 characters with 384-float unit vectors, the store's ``optimize`` after
each, as every ingest ends with it). Measured per document: the wall seconds of the store's
``put_document`` and the rise of the process's anonymous resident memory during it (a 10 ms
sampler), and that memory before it, with freed memory given back (``malloc_trim``): what the
process keeps between documents, as an ingest's parent does between files.

Three ways, each in a process of its own:

* ``merge``: rows merged into each table by id (``merge_insert``), what the store did before:
  each write joins its rows with every id the table holds;
* ``append``: what the store does, rows of a pending document appended after the document's
  earlier rows (if any) are removed;
* ``held``: ``append`` with glibc's mmap threshold held (``docsight._memory
  .hold_mmap_threshold``), as ingestion runs.
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests"))

from compaction import DIM, _Peak, _texts, growth_main  # noqa: E402

MODES = ("merge", "append", "held")


def run_mode(mode: str, docs: int, chunks: int) -> list[dict[str, Any]]:
    """Grow a collection in a temporary directory; one record per document written."""
    from docsight._memory import hold_mmap_threshold, release_freed_memory
    from docsight.index.lance import LanceStore
    from fixtures.stored import paragraph_document

    rng = random.Random(7)
    vectors_rng = np.random.default_rng(7)
    vocabulary = [
        "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(3, 10)))
        for _ in range(20_000)
    ]
    if mode == "held":
        hold_mmap_threshold()
    records = []
    with tempfile.TemporaryDirectory() as tmp:
        store = LanceStore(Path(tmp) / "collection")
        store.bind_encoder("benchmark", DIM)
        if mode == "merge":

            def merged(name: str, data: Any, schema: Any) -> None:
                store._write(name, data, schema, append=False)

            store._append = merged  # type: ignore[method-assign]
        for n in range(docs):
            doc_id = f"{n + 1:032x}"
            parsed, doc_chunks = paragraph_document(
                doc_id, f"report-{n}.pdf", _texts(rng, vocabulary, chunks), per_page=6
            )
            vectors = vectors_rng.normal(size=(chunks, DIM)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            release_freed_memory()
            started = time.perf_counter()
            with _Peak() as peak:
                store.put_document(parsed, doc_chunks, vectors, "benchmark/1")
            seconds = time.perf_counter() - started
            del parsed, doc_chunks, vectors
            store.optimize()
            records.append(
                {
                    "documents": n + 1,
                    "chunk_rows": store._table("chunks").count_rows(),  # type: ignore[union-attr]
                    "put_s": round(seconds, 3),
                    "rise_mib": round(peak.peak - peak.start, 1),
                    "anon_mib": round(peak.start, 1),
                }
            )
            print(json.dumps({"mode": mode, **records[-1]}), file=sys.stderr, flush=True)
    return records


def _markdown(result: dict[str, Any]) -> str:
    modes = result["modes"]
    docs = len(next(iter(modes.values())))
    shown = sorted({1, 2, 5, 10, 20, docs} & set(range(1, docs + 1)))
    lines = [
        "# Writing a document as a collection grows: appended or merged rows (issue 17)",
        "",
        f"`{result['command']}`",
        "",
        f"Commit {result['commit']}, {result['machine'].get('cpu', '')}, "
        f"load {result['load']}. One document of {result['chunks']:,} chunks per ingest (then the "
        "store's optimize, not timed); wall seconds of `put_document` and the rise of anonymous "
        "resident memory during it.",
        "",
        "| documents | chunk rows before | merge: s | merge: MiB | append: s | append: MiB "
        "| held: s | held: MiB | resting MiB: merge | append | held |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for d in shown:
        a, b, c = (modes[m][d - 1] for m in MODES)
        before = a["chunk_rows"] - result["chunks"]
        lines.append(
            f"| {d} | {before:,} | {a['put_s']:.2f} | {a['rise_mib']:.0f} "
            f"| {b['put_s']:.2f} | {b['rise_mib']:.0f} | {c['put_s']:.2f} | {c['rise_mib']:.0f} "
            f"| {a['anon_mib']:.0f} | {b['anon_mib']:.0f} | {c['anon_mib']:.0f} |"
        )
    total = {m: sum(r["put_s"] for r in rs) for m, rs in modes.items()}
    peak = {m: max(r["rise_mib"] for r in rs) for m, rs in modes.items()}
    lines += [
        "",
        "All {} writes: {}.".format(
            docs,
            "; ".join(
                f"{m} {total[m]:.1f} s, highest rise {peak[m]:.0f} MiB, resting memory "
                f"{modes[m][0]['anon_mib']:.0f} MiB before the first, "
                f"{modes[m][-1]['anon_mib']:.0f} before the last"
                for m in MODES
            ),
        ),
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    growth_main(__file__, MODES, run_mode, _markdown, __doc__ or "", docs=24)


if __name__ == "__main__":
    main()
