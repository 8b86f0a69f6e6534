#!/usr/bin/env python3
"""MiniLM embedding with onnxruntime's thread spinning on and off, alone and beside two busy
worker processes (issue 17).

    python benchmarks/embed_spin.py [--collection DIR] [--every N] [--rounds R]
                                    [--configs 2:on,2:off,1:on,1:off] [--json PATH]

During an ingestion the parent embeds chunks with MiniLM while two worker processes parse
(mostly pure-Python PDF interpretation, one thread each). onnxruntime's idle intra-op threads
spin (busy-wait) between parallel sections by default, which on a machine whose cores the
workers already use takes CPU from them without embedding faster.

For each ``THREADS:on|off`` config (intra-op threads; ``session.intra_op.allow_spinning``) the
parent embeds the chunk texts of an ingested collection (every ``--every``-th one, opened read
only; default the dev evaluation collection) with docsight's encoder, first alone and then while
two processes run a fixed pure-Python work loop (a stand-in for parsing; they count the loops
they finish). Configs alternate within each round so a change of load falls on all of them. It
prints, per config and case: the parent's chunks/s, its CPU ms a chunk (process CPU, all
onnxruntime threads included), the workers' loops/s (what the parent left them) and the load.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from _machine import load_average, machine
from embed_floor import DEFAULT_COLLECTION, chunk_texts

from docsight.encoders.minilm import MiniLMEncoder
from docsight.settings import EmbedSettings


def _work_unit() -> int:
    """A few milliseconds of interpreter work of the kind PDF parsing does: tokens, dicts,
    floats, small objects."""
    total = 0
    state: dict[str, float] = {}
    for i in range(2000):
        token = f"{i % 97}.{i % 13}"
        value = float(token) * 1.5
        state[token] = state.get(token, 0.0) + value
        total += len(token)
    return total + len(state)


def _busy(ready: Any, stop: Any, loops: Any, cpu: Any) -> None:
    start = time.process_time()
    with ready.get_lock():
        ready.value += 1
    done = 0
    while not stop.is_set():
        _work_unit()
        done += 1
        if done % 20 == 0:
            with loops.get_lock():
                loops.value += 20
    with cpu.get_lock():
        cpu.value += time.process_time() - start


def measure(texts: list[str], threads: int, spin: bool, workers: int) -> dict[str, Any]:
    """Embed ``texts`` with a fresh encoder (loaded and warmed first, not counted) while
    ``workers`` busy processes run."""
    encoder = MiniLMEncoder(EmbedSettings(threads=threads, spin=spin))
    encoder.encode_documents(texts[:8])
    ctx = mp.get_context("spawn")
    ready, loops, cpu = ctx.Value("i", 0), ctx.Value("l", 0), ctx.Value("d", 0.0)
    stop = ctx.Event()
    procs = [ctx.Process(target=_busy, args=(ready, stop, loops, cpu)) for _ in range(workers)]
    for p in procs:
        p.start()
    while ready.value < workers:
        time.sleep(0.05)
    time.sleep(0.5 if workers else 0.0)
    loops_before = loops.value
    wall0, cpu0 = time.perf_counter(), time.process_time()
    encoder.encode_documents(texts)
    wall, own = time.perf_counter() - wall0, time.process_time() - cpu0
    loops_done = loops.value - loops_before
    stop.set()
    for p in procs:
        p.join()
    return {
        "threads": threads,
        "spin": spin,
        "workers": workers,
        "chunks": len(texts),
        "wall_s": round(wall, 3),
        "cpu_s": round(own, 3),
        "chunks_per_s": round(len(texts) / wall, 2),
        "cpu_ms_per_chunk": round(1000 * own / len(texts), 1),
        "worker_loops_per_s": round(loops_done / wall, 1),
        "load": load_average(),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--collection", type=Path, default=DEFAULT_COLLECTION)
    ap.add_argument("--every", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--configs", default="2:on,2:off,1:on,1:off")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    configs = [(int(t), s == "on") for t, s in (c.split(":") for c in args.configs.split(","))]
    texts = chunk_texts(args.collection, max(1, args.every))
    rows: list[dict[str, Any]] = []
    load_before = load_average()
    for r in range(args.rounds):
        order = configs if r % 2 == 0 else configs[::-1]
        for threads, spin in order:
            for workers in (0, args.workers):
                row = measure(texts, threads, spin, workers)
                row["round"] = r + 1
                rows.append(row)
                print(
                    f"round {r + 1} threads {threads} spin {'on ' if spin else 'off'} "
                    f"workers {workers}: {row['chunks_per_s']:6.2f} chunks/s "
                    f"{row['cpu_ms_per_chunk']:6.1f} CPU ms/chunk "
                    f"workers {row['worker_loops_per_s']:7.1f} loops/s  load {row['load']}",
                    flush=True,
                )
    print(f"\n{len(texts)} chunks; load before {load_before}, after {load_average()}")
    print("median over rounds:")
    print("| threads | spin | busy workers | chunks/s | CPU ms a chunk | worker loops/s |")
    print("| ---: | --- | ---: | ---: | ---: | ---: |")
    for threads, spin in configs:
        for workers in (0, args.workers):
            same = [
                x
                for x in rows
                if (x["threads"], x["spin"], x["workers"]) == (threads, spin, workers)
            ]
            med = {
                k: statistics.median(x[k] for x in same)
                for k in ("chunks_per_s", "cpu_ms_per_chunk", "worker_loops_per_s")
            }
            print(
                f"| {threads} | {'on' if spin else 'off'} | {workers} | {med['chunks_per_s']:.2f} "
                f"| {med['cpu_ms_per_chunk']:.1f} | {med['worker_loops_per_s']:.1f} |"
            )
    if args.json:
        out = {
            "machine": machine(),
            "command": " ".join(sys.argv),
            "load_before": load_before,
            "load_after": load_average(),
            "rows": rows,
        }
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
