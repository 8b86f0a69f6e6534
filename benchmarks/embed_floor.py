#!/usr/bin/env python3
"""docsight's MiniLM encoder against a bare onnxruntime loop over the same chunks (issue 17).

    python benchmarks/embed_floor.py [--collection DIR] [--every N] [--rounds R] [--json P] [--md P]

Reads the chunk texts of an ingested collection (opened through the public API, read only; default
the dev evaluation collection in ``.docsight-eval/``), keeps every ``--every``-th one, and times in
one process, alternating ``--rounds`` times (bare, docsight, docsight, bare, ...) so a change of
load on the shared machine falls on both sides:

(a) the floor: the model file and tokenizer file the encoder uses, run by onnxruntime with its
    default session options, texts tokenized in one call, sorted by token length, batches of 32
    padded to their longest text, mean-pooled and L2-normalised in numpy: no docsight code in
    the loop;
(b) ``MiniLMEncoder.encode_documents`` with the default settings.

Both include tokenizing. It prints chunks/s of each, the ratio (b)/(a), the smallest cosine
between the two sides' vectors (the comparison is fair only if they agree), the load before and
after, the onnxruntime version and the threads each side used. The default run writes
``benchmarks/results/embed_floor.{md,json}``; other runs write only where ``--json``/``--md`` say.

Two other measurements share the loop:

* ``--options THREADS`` times the loop with other session options (graph optimization level,
  memory arena, memory pattern, execution mode) and batch sizes, each checked against the
  current options' vectors;
* ``--contention 2x2:2,2x1:2`` embeds with docsight's encoder while worker processes keep
  sessions of the given threads busy (WORKERSxTHREADS:PARENT_THREADS), as parse workers do
  during an ingestion, to show what oversubscribing the cores costs.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shlex
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from _machine import busiest, load_average, machine, machine_busy_s, others_share, own_cpu_s

from docsight import DocSight, Settings
from docsight.encoders.minilm import MiniLMEncoder, model_path, tokenizer_path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
DEFAULT_COLLECTION = HERE.parent / ".docsight-eval" / "documents-6b948ce627"
#: The floor's batch size: a common choice for a small encoder on a CPU.
BARE_BATCH = 32


def chunk_texts(collection: Path, every: int) -> list[str]:
    ds = DocSight(collection, settings=Settings())
    texts: list[str] = []
    for doc in ds.documents():
        texts.extend(c.text for c in ds.store.document_chunks(doc.id))
    return texts[::every]


class Bare:
    """The floor: onnxruntime and tokenizers as their documentation shows them, nothing else."""

    def __init__(
        self, max_tokens: int, options: dict[str, Any] | None = None, batch: int = BARE_BATCH
    ) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(tokenizer_path()))
        self.tokenizer.enable_truncation(max_length=max_tokens)
        self.tokenizer.no_padding()
        self.batch = batch
        session_options = ort.SessionOptions()
        session_options.log_severity_level = 3
        for name, value in (options or {}).items():
            setattr(session_options, name, value)
        self.session = ort.InferenceSession(
            str(model_path()), session_options, providers=["CPUExecutionProvider"]
        )

    def encode(self, texts: list[str]) -> np.ndarray:
        ids = [e.ids for e in self.tokenizer.encode_batch(texts)]
        order = sorted(range(len(texts)), key=lambda i: len(ids[i]))
        out = np.zeros((len(texts), 384), dtype=np.float32)
        for start in range(0, len(order), self.batch):
            idx = order[start : start + self.batch]
            width = max(len(ids[i]) for i in idx)
            input_ids = np.zeros((len(idx), width), dtype=np.int64)
            mask = np.zeros((len(idx), width), dtype=np.int64)
            for row, i in enumerate(idx):
                input_ids[row, : len(ids[i])] = ids[i]
                mask[row, : len(ids[i])] = 1
            hidden = self.session.run(
                ["last_hidden_state"],
                {
                    "input_ids": input_ids,
                    "attention_mask": mask,
                    "token_type_ids": np.zeros_like(input_ids),
                },
            )[0]
            m = mask[:, :, None].astype(np.float32)
            pooled = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
            out[idx] = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
        return out


def timed(fn: Any, texts: list[str]) -> tuple[np.ndarray, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    vectors = fn(texts)
    return vectors, time.perf_counter() - wall, time.process_time() - cpu


def run(texts: list[str], rounds: int) -> dict[str, Any]:
    settings = Settings().embed
    bare = Bare(settings.max_tokens)
    encoder = MiniLMEncoder(settings)
    # Warm both sessions (first-run allocations) outside the clock.
    bare.encode(texts[:8])
    encoder.encode_documents(texts[:8])
    sides: dict[str, dict[str, list[float]]] = {
        "bare": {"wall": [], "cpu": []},
        "docsight": {"wall": [], "cpu": []},
    }
    vectors: dict[str, np.ndarray] = {}
    for r in range(rounds):
        # bare, docsight, docsight, bare, ...: a load that rises or falls hits both alike.
        names = ("bare", "docsight") if r % 2 == 0 else ("docsight", "bare")
        for name in names:
            fn = bare.encode if name == "bare" else encoder.encode_documents
            vec, wall, cpu = timed(fn, texts)
            sides[name]["wall"].append(wall)
            sides[name]["cpu"].append(cpu)
            vectors[name] = vec
            sys.stdout.write(
                f"round {r + 1} {name:8s} {len(texts) / wall:6.1f} chunks/s  wall {wall:6.1f} s"
                f"  cpu {cpu:6.1f} s  load {load_average()}\n"
            )
            sys.stdout.flush()
    cosine = np.sum(vectors["bare"] * vectors["docsight"], axis=1)
    result: dict[str, Any] = {
        "rounds": rounds,
        "lengths": [len(e.ids) for e in bare.tokenizer.encode_batch(texts)],
    }
    for name, times in sides.items():
        wall = sum(times["wall"])
        result[name] = {
            "wall_s": times["wall"],
            "cpu_s": times["cpu"],
            "chunks_per_s": len(texts) * rounds / wall,
            "best_chunks_per_s": len(texts) / min(times["wall"]),
            "cpu_ms_per_chunk": 1000 * sum(times["cpu"]) / (len(texts) * rounds),
        }
    result["ratio"] = result["docsight"]["chunks_per_s"] / result["bare"]["chunks_per_s"]
    result["ratio_best"] = (
        result["docsight"]["best_chunks_per_s"] / result["bare"]["best_chunks_per_s"]
    )
    result["ratio_per_round"] = [
        b / d for b, d in zip(sides["bare"]["wall"], sides["docsight"]["wall"], strict=True)
    ]
    result["cosine_min"] = float(cosine.min())
    result["max_abs_diff"] = float(np.abs(vectors["bare"] - vectors["docsight"]).max())
    result["threads"] = {
        "bare": "onnxruntime default (intra-op 0: one per physical core)",
        "docsight": f"intra-op {settings.threads or os.cpu_count()}, inter-op 1",
    }
    return result


# --- contention: embedding while parse workers run their models ----------------------------------


def _worker_load(texts: list[str], threads: int, max_tokens: int, stop: Any, done: Any) -> None:
    """A stand-in for a parse worker's OCR/layout session: the same kind of onnxruntime CPU
    session (MiniLM's, at ``threads`` intra-op threads), run until ``stop`` is set; chunks done
    are added to ``done``."""
    bare = Bare(max_tokens, {"intra_op_num_threads": threads, "inter_op_num_threads": 1})
    step = BARE_BATCH
    k = 0
    while not stop.is_set():
        piece = texts[k : k + step] or texts[:step]
        k = (k + step) % max(1, len(texts))
        bare.encode(piece)
        with done.get_lock():
            done.value += len(piece)


def contention(
    texts: list[str], workers: int, worker_threads: int, parent_threads: int
) -> dict[str, Any]:
    """The parent embeds ``texts`` with docsight's encoder at ``parent_threads`` while
    ``workers`` processes keep a session of ``worker_threads`` threads busy: the parent's
    chunks/s, the workers' chunks/s and the CPU seconds of all of them."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    stop = ctx.Event()
    done = ctx.Value("l", 0)
    settings = Settings().embed.model_copy(update={"threads": parent_threads})
    encoder = MiniLMEncoder(settings)
    encoder.encode_documents(texts[:8])
    procs = [
        ctx.Process(
            target=_worker_load, args=(texts, worker_threads, settings.max_tokens, stop, done)
        )
        for _ in range(workers)
    ]
    for p in procs:
        p.start()
    # Let the workers load their sessions and start before the clock.
    deadline = time.monotonic() + 60
    while done.value == 0 and time.monotonic() < deadline:
        time.sleep(0.2)
    own0 = own_cpu_s()
    kids0 = [_proc_cpu_s(p.pid) for p in procs]
    started_done = done.value
    wall = time.perf_counter()
    encoder.encode_documents(texts)
    wall = time.perf_counter() - wall
    worker_chunks = done.value - started_done
    kids = sum(_proc_cpu_s(p.pid) - k for p, k in zip(procs, kids0, strict=True))
    parent_cpu = own_cpu_s() - own0
    stop.set()
    for p in procs:
        p.join(timeout=60)
    return {
        "workers": workers,
        "worker_threads": worker_threads,
        "parent_threads": parent_threads,
        "wall_s": wall,
        "parent_chunks_per_s": len(texts) / wall,
        "worker_chunks_per_s": worker_chunks / wall,
        "total_chunks_per_s": (len(texts) + worker_chunks) / wall,
        "cpu_s": parent_cpu + kids,
        "cpu_ms_per_chunk": 1000 * (parent_cpu + kids) / (len(texts) + worker_chunks),
    }


def _proc_cpu_s(pid: int | None) -> float:
    """CPU seconds (user + system, all threads) of a live process, from /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# --- session options ------------------------------------------------------------------------------


def option_variants(threads: int) -> dict[str, tuple[dict[str, Any], int]]:
    """Session options and batch sizes to compare, each against the encoder's current ones."""
    import onnxruntime as ort

    level = ort.GraphOptimizationLevel
    base = {"intra_op_num_threads": threads, "inter_op_num_threads": 1}
    return {
        "current (all optimizations, arena, memory pattern, batch 32)": (base, 32),
        "extended optimizations": (
            {**base, "graph_optimization_level": level.ORT_ENABLE_EXTENDED},
            32,
        ),
        "basic optimizations": ({**base, "graph_optimization_level": level.ORT_ENABLE_BASIC}, 32),
        "no CPU memory arena": ({**base, "enable_cpu_mem_arena": False}, 32),
        "no memory pattern": ({**base, "enable_mem_pattern": False}, 32),
        "parallel execution mode": (
            {**base, "execution_mode": ort.ExecutionMode.ORT_PARALLEL, "inter_op_num_threads": 2},
            32,
        ),
        "batch 8": (base, 8),
        "batch 16": (base, 16),
        "batch 64": (base, 64),
    }


def options_run(texts: list[str], threads: int, rounds: int) -> list[dict[str, Any]]:
    settings = Settings().embed
    runners = {
        name: Bare(settings.max_tokens, options, batch)
        for name, (options, batch) in option_variants(threads).items()
    }
    for runner in runners.values():
        runner.encode(texts[:8])
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in runners}
    reference: np.ndarray | None = None
    diff: dict[str, float] = {}
    names = list(runners)
    for r in range(rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            vectors, wall, cpu = timed(runners[name].encode, texts)
            if reference is None:
                reference = vectors
            diff[name] = max(diff.get(name, 0.0), float(np.abs(vectors - reference).max()))
            times[name].append((wall, cpu))
            sys.stdout.write(f"round {r + 1} {name}: {len(texts) / wall:.1f} chunks/s\n")
            sys.stdout.flush()
    return [
        {
            "variant": name,
            "wall_s": [w for w, _ in times[name]],
            "chunks_per_s": len(texts) * len(times[name]) / sum(w for w, _ in times[name]),
            "cpu_ms_per_chunk": 1000 * sum(c for _, c in times[name]) / (len(texts) * rounds),
            "max_abs_diff": diff[name],
        }
        for name in names
    ]


def markdown(result: dict[str, Any]) -> str:
    env = result["environment"]
    m = env["machine"]
    r = result["run"]
    t = result["texts"]
    out = [
        "# Embedding against a bare onnxruntime loop (`benchmarks/embed_floor.py`)",
        "",
        f"`{result['command']}` at {m['commit']}{' (dirty)' if m['dirty'] else ''}, "
        f"{result['date']}.",
        "",
        f"{m['cores']} cores ({m['cpu']}), onnxruntime {m['onnxruntime']}, Python {m['python']}. "
        f"Load average before {env['load_before']}, after {env['load_after']}; other processes "
        f"took {100 * (env['others_cpu_share'] or 0):.0f} % of the machine's CPU during the run.",
        "",
        f"{t['chunks']} chunk texts ({t['tokens']:,} word pieces, {t['mean_tokens']:.0f} a chunk "
        f"on average, {t['at_limit']} at the 256 limit) from `{t['collection']}`"
        f"{', every ' + str(t['every']) + 'th' if t['every'] > 1 else ''}; "
        f"{r['rounds']} rounds, the two sides alternating.",
        "",
        "| | threads | chunks/s | best round | CPU ms a chunk |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    for name, label in (("bare", "(a) bare onnxruntime loop"), ("docsight", "(b) docsight")):
        s = r[name]
        out.append(
            f"| {label} | {r['threads'][name]} | {s['chunks_per_s']:.1f} | "
            f"{s['best_chunks_per_s']:.1f} | {s['cpu_ms_per_chunk']:.1f} |"
        )
    out += [
        "",
        f"docsight / bare: **{100 * r['ratio']:.0f} %** over all rounds "
        f"({100 * r['ratio_best']:.0f} % best against best; per round "
        + ", ".join(f"{100 * x:.0f} %" for x in r["ratio_per_round"])
        + "). The target of issue 17 is at least 90 %.",
        "",
        f"The vectors agree: smallest cosine between the two sides {r['cosine_min']:.6f}, "
        f"largest difference of a component {r['max_abs_diff']:.1e}.",
    ]
    if result.get("notes"):
        out += ["", *result["notes"]]
    return "\n".join(out) + "\n"


T = TypeVar("T")


def _timed(environment: dict[str, Any], work: Callable[[], T]) -> T:
    """Run ``work``, then record the load after it and the CPU other processes took meanwhile."""
    busy0, own0, started = machine_busy_s(), own_cpu_s(), time.perf_counter()
    out = work()
    environment["load_after"] = load_average()
    environment["others_cpu_share"] = others_share(
        machine_busy_s() - busy0, own_cpu_s() - own0, time.perf_counter() - started
    )
    return out


def _result(environment: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """A run's record: the command, the date and the machine's state, then its figures."""
    return {
        "command": shlex.join(["python", *sys.argv]),
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "environment": environment,
        **fields,
    }


def _publish(
    text: str, result: dict[str, Any], json_path: Path | None, md_path: Path | None
) -> int:
    """Print the report and write it (and the record) where asked."""
    sys.stdout.write(text)
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(result, indent=1) + "\n")
    if md_path is not None:
        md_path.write_text(text)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--collection", type=Path, default=DEFAULT_COLLECTION)
    parser.add_argument("--every", type=int, default=1, help="keep every N-th chunk")
    parser.add_argument("--rounds", type=int, default=2, help="times each side runs")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--md", type=Path, default=None)
    parser.add_argument("--note", action="append", default=[], help="a line for the results")
    parser.add_argument(
        "--contention",
        default="",
        help="instead: embed while parse-worker stand-ins run, for each WORKERSxTHREADS:PARENT "
        "in a comma-separated list (e.g. 2x2:2,2x1:2); writes only where --json/--md say",
    )
    parser.add_argument(
        "--options",
        type=int,
        default=0,
        metavar="THREADS",
        help="instead: compare session options and batch sizes at THREADS intra-op threads; "
        "writes only where --json/--md say",
    )
    args = parser.parse_args(argv)
    if args.contention:
        return main_contention(args)
    if args.options:
        return main_options(args)
    if not args.collection.is_dir():
        parser.error(f"no collection at {args.collection} (ingest the dev PDFs into it first)")
    default_run = args.collection == DEFAULT_COLLECTION
    json_path = args.json or (RESULTS / "embed_floor.json" if default_run else None)
    md_path = args.md or (json_path.with_suffix(".md") if json_path else None)

    texts = chunk_texts(args.collection, max(1, args.every))
    if not texts:
        parser.error(f"{args.collection} has no chunks")
    environment: dict[str, Any] = {
        "machine": machine(),
        "load_before": load_average(),
        "busiest_before": busiest(),
    }
    sys.stdout.write(f"{len(texts)} chunks; load before {environment['load_before']}\n")
    result_run = _timed(environment, lambda: run(texts, max(1, args.rounds)))
    result = _result(
        environment,
        texts={
            "collection": str(args.collection.relative_to(HERE.parent))
            if args.collection.is_relative_to(HERE.parent)
            else str(args.collection),
            "every": args.every,
            "chunks": len(texts),
            "tokens": sum(result_run["lengths"]),
            "mean_tokens": statistics.fmean(result_run["lengths"]),
            "at_limit": sum(n >= Settings().embed.max_tokens for n in result_run.pop("lengths")),
        },
        run=result_run,
        notes=args.note,
    )
    return _publish(markdown(result), result, json_path, md_path)


def main_contention(args: argparse.Namespace) -> int:
    configs = []
    for item in args.contention.split(","):
        shape, parent = item.split(":")
        workers, threads = shape.split("x")
        configs.append((int(workers), int(threads), int(parent)))
    texts = chunk_texts(args.collection, max(1, args.every))
    environment: dict[str, Any] = {"machine": machine(), "load_before": load_average()}
    sys.stdout.write(f"{len(texts)} chunks; load before {environment['load_before']}\n")
    rows: list[dict[str, Any]] = []

    def rounds() -> None:
        for r in range(max(1, args.rounds)):
            # Alternate the order of the configurations so a change of load hits them alike.
            for workers, threads, parent in configs if r % 2 == 0 else configs[::-1]:
                row = contention(texts, workers, threads, parent)
                row["round"] = r + 1
                row["load"] = load_average()
                rows.append(row)
                sys.stdout.write(
                    f"round {r + 1}: {workers} workers x {threads} threads, parent {parent}: "
                    f"parent {row['parent_chunks_per_s']:.1f} chunks/s, workers "
                    f"{row['worker_chunks_per_s']:.1f}, all {row['total_chunks_per_s']:.1f}, "
                    f"{row['cpu_ms_per_chunk']:.0f} CPU ms a chunk; load {row['load']}\n"
                )
                sys.stdout.flush()

    _timed(environment, rounds)
    result = _result(environment, chunks=len(texts), rows=rows, notes=args.note)
    return _publish(markdown_contention(result), result, args.json, args.md)


def main_options(args: argparse.Namespace) -> int:
    texts = chunk_texts(args.collection, max(1, args.every))
    environment: dict[str, Any] = {"machine": machine(), "load_before": load_average()}
    sys.stdout.write(f"{len(texts)} chunks; load before {environment['load_before']}\n")
    rows = _timed(environment, lambda: options_run(texts, args.options, max(1, args.rounds)))
    result = _result(
        environment, chunks=len(texts), threads=args.options, rows=rows, notes=args.note
    )
    m = environment["machine"]
    current = rows[0]["chunks_per_s"]
    out = [
        f"## Session options at {args.options} intra-op thread(s) (`--options`)",
        "",
        f"`{result['command']}` at {m['commit']}{' (dirty)' if m['dirty'] else ''}, "
        f"{result['date']}. Load average before {environment['load_before']}, after "
        f"{environment['load_after']}; other processes took "
        f"{100 * (environment['others_cpu_share'] or 0):.0f} % of the machine's CPU. "
        f"{len(texts)} chunks, {args.rounds} rounds alternating; the loop is the floor's.",
        "",
        "| variant | chunks/s | vs current | CPU ms a chunk | largest difference |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        out.append(
            f"| {row['variant']} | {row['chunks_per_s']:.1f} | "
            f"{100 * row['chunks_per_s'] / current:.0f} % | {row['cpu_ms_per_chunk']:.1f} | "
            f"{row['max_abs_diff']:.1e} |"
        )
    if args.note:
        out += ["", *args.note]
    return _publish("\n".join(out) + "\n", result, args.json, args.md)


def markdown_contention(result: dict[str, Any]) -> str:
    env = result["environment"]
    m = env["machine"]
    out = [
        "## Embedding while the parse workers run their models (`benchmarks/embed_floor.py "
        "--contention`)",
        "",
        f"`{result['command']}` at {m['commit']}{' (dirty)' if m['dirty'] else ''}, "
        f"{result['date']}. {m['cores']} cores, onnxruntime {m['onnxruntime']}. Load average "
        f"before {env['load_before']}, after {env['load_after']}; other processes took "
        f"{100 * (env['others_cpu_share'] or 0):.0f} % of the machine's CPU during the run.",
        "",
        f"The parent embeds {result['chunks']} chunks with docsight's encoder while each worker "
        "process keeps an onnxruntime session busy (MiniLM's int8 model stands in for the OCR "
        "and layout sessions: the same runtime and thread pool). Summed over rounds:",
        "",
        "| workers × threads | parent threads | threads in all | parent chunks/s | "
        "workers chunks/s | all chunks/s | CPU ms a chunk |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    keys: dict[tuple[int, int, int], list[dict[str, Any]]] = {}
    for row in result["rows"]:
        keys.setdefault((row["workers"], row["worker_threads"], row["parent_threads"]), []).append(
            row
        )
    for (workers, threads, parent), rows in keys.items():
        wall = sum(r["wall_s"] for r in rows)
        parent_chunks = result["chunks"] * len(rows)
        worker_chunks = sum(r["worker_chunks_per_s"] * r["wall_s"] for r in rows)
        cpu = sum(r["cpu_s"] for r in rows)
        out.append(
            f"| {workers} × {threads} | {parent} | {workers * threads + parent} | "
            f"{parent_chunks / wall:.1f} | {worker_chunks / wall:.1f} | "
            f"{(parent_chunks + worker_chunks) / wall:.1f} | "
            f"{1000 * cpu / (parent_chunks + worker_chunks):.0f} |"
        )
    if result.get("notes"):
        out += ["", *result["notes"]]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
