#!/usr/bin/env python3
"""Ingestion throughput on Ray (1 and 2 workers) against the local engine, on the same files.

    python benchmarks/ray_ingest.py [--docs DIR] [--files N] [--runs local,ray1,ray2]
                                    [--json PATH] [--md PATH]

Takes the ``--files`` smallest PDFs of ``--docs`` (default: the 8 smallest MMLongBench-Doc dev
PDFs in ../shared/data) and ingests them into a fresh local collection once per run:

* ``local``: the default engine, worker processes on this machine (2 workers on 2 cores);
* ``rayN``: ``ingest.engine = "ray"`` on a local Ray cluster of N CPUs (``ray.init(num_cpus=N)``):
  N parse tasks at a time, each with its supervised worker, and one embedding actor (which
  reserves no CPU, as the local engine's embedding shares the workers' cores).

For each run: pages, wall seconds of the ingest (and of the cluster start, apart), pages/s, and
the CPU seconds of this process and every process under it (Ray's daemons, its workers and their
parse workers, read from /proc before the cluster stops), so the CPU a page costs on each engine
is comparable. The machine's other load is recorded beside it: this machine has 2 cores that
other sessions share, so only the ratios between runs of one invocation mean much.

Results go to ``benchmarks/results/ray_ingest.{md,json}`` (or ``--json``/``--md``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shlex
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from _machine import machine, machine_busy_s, others_share, uptime  # benchmarks/

from docsight import DocSight, Settings

HERE = Path(__file__).resolve().parent
DEFAULT_DOCS = HERE.parent.parent / "shared" / "data" / "mmlongbench-dev" / "documents"
RESULTS = HERE / "results"
_TICK = os.sysconf("SC_CLK_TCK")


def tree_cpu_s(root: int | None = None) -> float:
    """CPU seconds of ``root`` (this process) and every live process under it, each with its
    reaped children (user + system, from /proc/<pid>/stat). Live children are counted as
    themselves, reaped ones through their parent's cumulative fields: nothing twice."""
    root = root or os.getpid()
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        pid = int(entry)
        parents[pid] = int(fields[1])
        # utime, stime, cutime, cstime are fields 14-17 of stat (11-14 after the name).
        cpu[pid] = sum(int(v) for v in fields[11:15]) / _TICK
    total, frontier = 0.0, [root]
    seen: set[int] = set()
    while frontier:
        pid = frontier.pop()
        if pid in seen:
            continue
        seen.add(pid)
        total += cpu.get(pid, 0.0)
        frontier.extend(child for child, parent in parents.items() if parent == pid)
    return total


def pick_files(docs: Path, n: int) -> list[Path]:
    pdfs = sorted(docs.glob("*.pdf"), key=lambda p: (p.stat().st_size, p.name))
    if not pdfs:
        sys.exit(f"no PDFs in {docs}")
    return pdfs[:n]


def run(name: str, files: list[Path], folder: Path) -> dict[str, Any]:
    """One ingestion of ``files`` into a fresh collection; ``name`` is local or rayN."""
    ray: Any = None
    start_s = 0.0
    ingest: dict[str, Any] = {}
    if name.startswith("ray"):
        import ray

        cpus = int(name[3:])
        started = time.perf_counter()
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "lancedb fork", RuntimeWarning)
            ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False)
        start_s = time.perf_counter() - started
        ingest = {"engine": "ray"}
    ds = DocSight(folder / name, settings=Settings(ingest=ingest))
    cpu0, busy0, wall0 = tree_cpu_s(), machine_busy_s(), time.perf_counter()
    report = ds.ingest(files)
    wall = time.perf_counter() - wall0
    cpu = tree_cpu_s() - cpu0
    busy = machine_busy_s() - busy0
    if ray is not None:
        ray.shutdown()
    pages = sum(f.pages for f in report.files)
    failed = [f"{f.name}: {f.reason}" for f in report.files if f.status == "failed"]
    # Wall seconds per stage summed over the files: parse and embed overlap across files, the
    # driver's graph and store do not (they are its serial part).
    stages = {
        stage: round(sum(f.timings.get(stage, 0.0) for f in report.files), 1)
        for stage in ("parse", "describe", "embed", "embed.remote", "graph", "store")
    }
    return {
        "run": name,
        "files": len(report.files),
        "pages": pages,
        "chunks": sum(f.chunks for f in report.files),
        "failed": failed,
        "cluster_start_s": round(start_s, 2),
        "wall_s": round(wall, 2),
        "pages_per_s": round(pages / wall, 3) if wall else None,
        "cpu_s": round(cpu, 1),
        "cpu_s_per_page": round(cpu / pages, 3) if pages else None,
        "stage_wall_s": stages,
        "others_share": round(others_share(busy, cpu, wall) or 0.0, 3),
        "load_after": uptime(),
    }


def markdown(result: dict[str, Any]) -> str:
    m = result["machine"]
    lines = [
        "# Ingestion on Ray against the local engine",
        "",
        f"`{result['command']}` on {result['date']}, commit {m['commit']}"
        + (" (uncommitted changes)" if m["dirty"] else "")
        + f"; {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB, Ray {result['ray']}.",
        "",
        f"{len(result['files'])} PDFs of MMLongBench-Doc dev (the smallest by size): "
        + ", ".join(result["files"])
        + ".",
        "",
        "| run | pages | wall s | pages/s | CPU s | CPU s/page | others' CPU share | "
        "cluster start s |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in result["runs"]:
        lines.append(
            f"| {r['run']} | {r['pages']} | {r['wall_s']:.1f} | {r['pages_per_s']:.2f} | "
            f"{r['cpu_s']:.0f} | {r['cpu_s_per_page']:.2f} | {r['others_share']:.0%} | "
            f"{r['cluster_start_s']:.1f} |"
        )
    lines += [
        "",
        "Wall seconds per stage, summed over the files (parsing and embedding of different "
        "files overlap; graph and store are the driver's serial part):",
        "",
        "| run | parse | describe | embed (local) | embed (actor) | graph | store |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in result["runs"]:
        st = r["stage_wall_s"]
        lines.append(
            f"| {r['run']} | {st['parse']:.1f} | {st['describe']:.1f} | {st['embed']:.1f} | "
            f"{st['embed.remote']:.1f} | {st['graph']:.1f} | {st['store']:.1f} |"
        )
    lines += [
        "",
        "- `local`: the default engine, 2 worker processes and the parent's embedding on 2 "
        "cores. `rayN`: a local Ray cluster of N CPUs, N parse tasks at a time (each in its "
        "supervised worker) and one embedding actor.",
        "- CPU s: this process and every process under it (for Ray: its daemons, workers and "
        "their parse workers), read from /proc; the cluster start is outside the wall and CPU "
        "columns.",
        "- Others' CPU share: the machine's CPU that other processes took during the run. This "
        "machine has only 2 cores, shared with other sessions: Ray cannot show scaling here, "
        "only its overhead against the local engine; ratios within one invocation are the "
        "readable figure.",
    ]
    for r in result["runs"]:
        if r["failed"]:
            lines.append(f"- {r['run']}: failed files: " + "; ".join(r["failed"]))
    return "\n".join(lines) + "\n"


def _env_prefix() -> str:
    """Thread settings that change what a run measures, as they would be typed before it."""
    names = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "DOCSIGHT_INGEST_MODEL_THREADS")
    return "".join(f"{n}={shlex.quote(os.environ[n])} " for n in names if n in os.environ)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--docs", type=Path, default=DEFAULT_DOCS)
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--runs", default="local,ray1,ray2")
    ap.add_argument("--json", type=Path, default=RESULTS / "ray_ingest.json")
    ap.add_argument("--md", type=Path, default=RESULTS / "ray_ingest.md")
    args = ap.parse_args()
    import ray

    files = pick_files(args.docs, args.files)
    result: dict[str, Any] = {
        "command": _env_prefix()
        + "python "
        + shlex.join(["benchmarks/ray_ingest.py", *sys.argv[1:]]),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(),
        "ray": ray.__version__,
        "load_before": uptime(),
        "files": [f.name for f in files],
        "runs": [],
    }
    with tempfile.TemporaryDirectory(prefix="ray-ingest-") as tmp:
        for name in args.runs.split(","):
            row = run(name.strip(), files, Path(tmp))
            print(json.dumps(row), flush=True)
            result["runs"].append(row)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n")
    args.md.write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
