#!/usr/bin/env python3
"""A batch of small files with and without embedding the next file ahead (issue 17).

    python benchmarks/embed_ahead.py [--files 100] [--rounds 3] [--md ...] [--json ...]

While the ingesting process builds and stores one file's graph and rows, it embeds the next
file's chunks on its embedding thread when they are back from the workers and few
(``docsight.ingest.embedding``). This script ingests the same generated Markdown files (those of
``batch_compaction.py``) into a fresh collection, in a process of its own, with that look-ahead
on (``AHEAD_CHUNKS`` as shipped) and off (``AHEAD_CHUNKS = 0``), alternating, ``--rounds``
times each, and records each run's wall seconds, the CPU seconds of the process and its
workers, and how many files were embedded ahead. This VM's speed moves between minutes (other
guests take up to a fifth of its CPU), so the two settings alternate and the medians compare.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _machine import child_run, load_average, run_record, write_json  # noqa: E402
from batch_compaction import make_files  # noqa: E402


def one_run(folder: str, ahead: bool) -> dict[str, Any]:
    """Ingest ``folder`` into a fresh collection, with the look-ahead on or off (this process)."""
    import docsight.ingest.embedding as embedding
    from docsight import DocSight

    if not ahead:
        embedding.AHEAD_CHUNKS = 0
    with tempfile.TemporaryDirectory() as tmp:
        ds = DocSight(Path(tmp) / "col")
        ds.encoder()  # loaded before the clock starts, in both settings
        own = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        report = ds.ingest(folder)
        wall = time.perf_counter() - started
        own_after = resource.getrusage(resource.RUSAGE_SELF)
        kids_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (own_after.ru_utime + own_after.ru_stime - own.ru_utime - own.ru_stime) + (
        kids_after.ru_utime + kids_after.ru_stime - kids.ru_utime - kids.ru_stime
    )
    added = [f for f in report.files if f.status == "added"]
    return {
        "ahead": ahead,
        "files": len(report.files),
        "added": len(added),
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
        "embedded_ahead": sum(int(f.timings.get("count.embedded_ahead", 0)) for f in added),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--md", type=Path, default=HERE / "results" / "embed_ahead.md")
    parser.add_argument("--json", type=Path, default=HERE / "results" / "embed_ahead.json")
    parser.add_argument("--one", nargs=2, help=argparse.SUPPRESS)  # folder, on/off: a child run
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_run(args.one[0], args.one[1] == "on")))
        return
    runs = []
    load_before = load_average()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "notes"
        make_files(folder, args.files)
        for _ in range(args.rounds):
            for setting in ("off", "on"):
                runs.append(child_run(__file__, str(folder), setting))

    def median(ahead: bool, key: str) -> float:
        return round(statistics.median(r[key] for r in runs if r["ahead"] == ahead), 1)

    command = f"python benchmarks/embed_ahead.py --files {args.files} --rounds {args.rounds}"
    result = run_record(command, load_before) | {
        "runs": runs,
        "median": {
            setting: {k: median(ahead, k) for k in ("wall_s", "cpu_s", "embedded_ahead")}
            for setting, ahead in (("off", False), ("on", True))
        },
    }
    write_json(args.json, result)
    lines = [
        "# Small files embedded ahead (issue 17)",
        "",
        f"    {result['command']}",
        "",
        f"{result['machine'].get('cpu', '')}, commit {result['machine'].get('commit', '')}; "
        f"load before {load_before}, after {result['load_after']}.",
        "",
        "| look-ahead | wall s (runs in order) | median wall s | median CPU s "
        "| files embedded ahead |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    for setting, ahead in (("off", False), ("on", True)):
        walls = ", ".join(str(r["wall_s"]) for r in runs if r["ahead"] == ahead)
        m = result["median"][setting]
        lines.append(
            f"| {setting} | {walls} | {m['wall_s']} | {m['cpu_s']} | {m['embedded_ahead']:.0f} |"
        )
    args.md.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
