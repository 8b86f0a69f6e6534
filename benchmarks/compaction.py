#!/usr/bin/env python3
"""What the final optimize of an ingest costs as a collection grows (issue 17).

    python benchmarks/compaction.py [--docs 40] [--chunks 2000]
                                    [--json benchmarks/results/compaction.json]
                                    [--md benchmarks/results/compaction.md]

A collection is grown one document at a time, as a user ingests file after file, and the
store's ``optimize`` (what every ingest that changed something ends with) runs after each
document. Each document has ``--chunks`` chunks of about 1,700 characters with 384-float unit
vectors, written through the store's own ``put_document``. Measured per optimize: wall seconds,
the rise of the process's anonymous resident memory above where it started (a 10 ms sampler;
file-backed pages of the table files read are not counted, as the kernel can drop them), and
the chunks table's rows and files afterwards.

Three ways, each in a process of its own (``--modes`` picks some):

* ``bounded``: Lance's package (the ``large`` extra) compacts only files below
  ``compaction.TARGET_ROWS`` rows, copying encoded pages, and keeps the full-text index in
  segments of about ``compaction.SEGMENT_BYTES``;
* ``one-segment``: the same, with the full-text index merged into one segment at every
  optimize (as before the segments);
* ``lancedb``: lancedb's own optimize (the default install), which rewrites every file below a
  million rows, decoding and encoding them again.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests"))

from _machine import git, load_average, machine, status_mib  # noqa: E402

DIM = 384


def _anon_mib() -> float:
    return status_mib("RssAnon") or 0.0


class _Peak:
    """The highest anonymous resident memory seen while the block runs."""

    def __enter__(self) -> _Peak:
        self.start = _anon_mib()
        self.peak = self.start
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, _anon_mib())
            time.sleep(0.01)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _anon_mib())


def _texts(rng: random.Random, vocabulary: list[str], n: int) -> list[str]:
    return [" ".join(rng.choices(vocabulary, k=240)) + "." for _ in range(n)]


def run_mode(mode: str, docs: int, chunks: int) -> list[dict[str, Any]]:
    """Grow a collection in a temporary directory; one record per optimize."""
    from docsight.index import compaction
    from docsight.index.lance import LanceStore
    from fixtures.stored import paragraph_document

    if mode != "lancedb" and not compaction.bounded_compaction():
        raise SystemExit(f"the {mode} mode needs pylance 9: pip install '.[large]'")
    if mode == "lancedb":
        compaction.bounded_compaction = lambda: False  # type: ignore[assignment]
    if mode == "one-segment":
        compaction.SEGMENT_BYTES = 1 << 62
    rng = random.Random(7)
    vectors_rng = np.random.default_rng(7)
    vocabulary = [
        "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(3, 10)))
        for _ in range(20_000)
    ]
    records = []
    with tempfile.TemporaryDirectory() as tmp:
        store = LanceStore(Path(tmp) / "collection")
        store.bind_encoder("benchmark", DIM)
        for n in range(docs):
            doc_id = f"{n + 1:032x}"
            parsed, doc_chunks = paragraph_document(
                doc_id, f"report-{n}.pdf", _texts(rng, vocabulary, chunks), per_page=6
            )
            vectors = vectors_rng.normal(size=(chunks, DIM)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            store.put_document(parsed, doc_chunks, vectors, "benchmark/1")
            del parsed, doc_chunks, vectors
            started = time.perf_counter()
            with _Peak() as peak:
                store.optimize()
            seconds = time.perf_counter() - started
            table = store._table("chunks")
            assert table is not None
            stats = table.stats()
            segments = 0
            if mode != "lancedb":
                found = [i for i in table.to_lance().describe_indices() if i.segments]
                segments = sum(len(i.segments) for i in found if "Inverted" in i.type_url)
            records.append(
                {
                    "documents": n + 1,
                    "chunk_rows": stats["num_rows"],
                    "files": stats["fragment_stats"]["num_fragments"],
                    "text_segments": segments,
                    "optimize_s": round(seconds, 3),
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
    head = "| documents | chunk rows |"
    rule = "| ---: | ---: |"
    for mode in modes:
        head += f" {mode}: s | {mode}: MiB | {mode}: files |"
        rule += " ---: | ---: | ---: |"
        if mode != "lancedb":
            head += f" {mode}: text segments |"
            rule += " ---: |"
    lines = [
        "# The final optimize as a collection grows (issue 17)",
        "",
        f"{result['command']}",
        "",
        f"Commit {result['commit']}, {result['machine'].get('cpu', '')}, "
        f"load {result['load']}. One document of {result['chunks']:,} chunks per ingest, then "
        "the store's optimize; wall seconds and the rise of anonymous resident memory during it.",
        "",
        head,
        rule,
    ]
    for d in shown:
        first = next(iter(modes.values()))[d - 1]
        row = f"| {d} | {first['chunk_rows']:,} |"
        for mode, records in modes.items():
            r = records[d - 1]
            row += f" {r['optimize_s']:.2f} | {r['rise_mib']:.0f} | {r['files']} |"
            if mode != "lancedb":
                row += f" {r.get('text_segments', '')} |"
        lines.append(row)
    summary = "; ".join(
        f"{mode} {sum(r['optimize_s'] for r in rs):.1f} s, highest rise "
        f"{max(r['rise_mib'] for r in rs):.0f} MiB"
        for mode, rs in modes.items()
    )
    lines += ["", f"All {docs} optimizes: {summary}.", ""]
    return "\n".join(lines)


def growth_main(
    script: str,
    modes: tuple[str, ...],
    run: Callable[[str, int, int], list[dict[str, Any]]],
    markdown: Callable[[dict[str, Any]], str],
    description: str,
    docs: int,
) -> None:
    """The command line of a benchmark that grows a collection in each of ``modes``, one
    process per mode (this one, and ``store_writes.py``)."""
    parser = argparse.ArgumentParser(description=description.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=docs)
    parser.add_argument("--chunks", type=int, default=2000)
    parser.add_argument("--mode", choices=modes, help=argparse.SUPPRESS)
    parser.add_argument("--modes", nargs="+", choices=modes, default=list(modes))
    parser.add_argument("--json", type=Path)
    parser.add_argument("--md", type=Path)
    args = parser.parse_args()
    if args.mode:  # one mode, in this process: what the parent runs in children
        print(json.dumps(run(args.mode, args.docs, args.chunks)))
        return
    results = {}
    for mode in args.modes:
        sizes = ["--docs", str(args.docs), "--chunks", str(args.chunks)]
        out = subprocess.run(
            [sys.executable, script, "--mode", mode, *sizes],
            check=True,
            stdout=subprocess.PIPE,
            text=True,
        ).stdout
        results[mode] = json.loads(out.strip().splitlines()[-1])
    name = Path(script).name
    command = f"python benchmarks/{name} --docs {args.docs} --chunks {args.chunks}"
    if list(args.modes) != list(modes):
        command += " --modes " + " ".join(args.modes)
    result = {
        "command": command,
        "commit": git("rev-parse", "--short", "HEAD"),
        "machine": machine(onnxruntime=False),
        "load": load_average(),
        "chunks": args.chunks,
        "modes": results,
    }
    text = markdown(result)
    print(text)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    if args.md:
        args.md.write_text(text)


def main() -> None:
    modes = ("lancedb", "one-segment", "bounded")
    growth_main(__file__, modes, run_mode, _markdown, __doc__ or "", docs=40)


if __name__ == "__main__":
    main()
