#!/usr/bin/env python3
"""A batch of many small files: how the time a file takes changes along the batch (issue 17).

    python benchmarks/batch_compaction.py [--files 400] [--every 0 16 32 64] [--md ...] [--json ...]

Each stored file adds a small file to every table of the collection, and every read in this
process (the unchanged-check, clearing a pending document, the commit) scans all of them, until
the ingest's final optimize compacts them. ``ingest.compact_every`` compacts them every that
many stored files. For each value this script ingests the same generated Markdown files
(paragraphs of ../shared/papers, or of a built-in text when they are absent; no OCR, so the
parent's own work is most of each file's time) into a fresh collection, in a process of its
own, and records the wall time of the ingest, of the compactions and of the final optimize, and
the mean seconds this process spent storing a file (``store``) and checking it (``read``) over
the first and the last tenth of the batch.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from _machine import child_run, load_average, run_record, write_json  # noqa: E402

PAPERS = ROOT.parent / "shared" / "papers"


def make_files(folder: Path, count: int) -> None:
    """``count`` Markdown files of a few distinct paragraphs each (seeded: the same every run)."""
    paragraphs: list[str] = []
    for path in sorted(PAPERS.glob("*.txt")):
        text = path.read_text(errors="replace")
        paragraphs += [p.strip() for p in re.split(r"\n\s*\n", text) if len(p.split()) > 12]
    if not paragraphs:
        words = "store table file read scan compact index batch page chunk query".split()
        rng = random.Random(7)
        paragraphs = [" ".join(rng.choice(words) for _ in range(60)) for _ in range(500)]
    rng = random.Random(1)
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        body = "\n\n".join(rng.sample(paragraphs, 4))
        (folder / f"note-{i:05d}.md").write_text(f"# Note {i}\n\n{body}\n")


def one_run(folder: str, every: int) -> dict[str, Any]:
    """Ingest ``folder`` into a fresh collection with ``compact_every = every`` (this process)."""
    from docsight import DocSight
    from docsight.settings import Settings

    with tempfile.TemporaryDirectory() as tmp:
        ds = DocSight(Path(tmp) / "col", settings=Settings(ingest={"compact_every": every}))
        ds.encoder()  # loaded before the clock starts: the same in every run
        spent = {True: 0.0, False: 0.0}
        calls = {True: 0, False: 0}
        optimize = ds.store.optimize

        def timed(*, indexes: bool = True) -> Any:
            started = time.perf_counter()
            try:
                return optimize(indexes=indexes)
            finally:
                spent[indexes] += time.perf_counter() - started
                calls[indexes] += 1

        ds.store.optimize = timed  # type: ignore[method-assign]
        started = time.perf_counter()
        report = ds.ingest(folder)
        wall = time.perf_counter() - started
    files = [f for f in report.files if f.status == "added"]
    tenth = max(1, len(files) // 10)

    def mean(stage: str, part: list[Any]) -> float:
        return round(sum(f.timings.get(stage, 0.0) for f in part) / len(part), 4)

    first, last = files[:tenth], files[-tenth:]
    return {
        "compact_every": every,
        "files": len(report.files),
        "added": len(files),
        "wall_s": round(wall, 1),
        "compactions": calls[False],
        "compaction_s": round(spent[False], 1),
        "final_optimize_s": round(spent[True], 1),
        "store_s_first": mean("store", first),
        "store_s_last": mean("store", last),
        "read_s_first": mean("read", first),
        "read_s_last": mean("read", last),
        "warnings": report.warnings,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=400)
    parser.add_argument("--every", type=int, nargs="+", default=[0, 16, 32, 64])
    parser.add_argument("--md", type=Path, default=HERE / "results" / "batch_compaction.md")
    parser.add_argument("--json", type=Path, default=HERE / "results" / "batch_compaction.json")
    parser.add_argument("--one", nargs=2, help=argparse.SUPPRESS)  # folder, every: a child run
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_run(args.one[0], int(args.one[1]))))
        return
    runs = []
    load_before = load_average()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "notes"
        make_files(folder, args.files)
        for every in args.every:
            runs.append(child_run(__file__, str(folder), str(every)))
    command = f"python benchmarks/batch_compaction.py --files {args.files} --every " + " ".join(
        map(str, args.every)
    )
    result = run_record(command, load_before) | {"runs": runs}
    write_json(args.json, result)
    lines = [
        "# A batch of many small files (issue 17)",
        "",
        f"    {result['command']}",
        "",
        f"{result['machine'].get('cpu', '')}, load before {load_before}, after "
        f"{result['load_after']}. One Markdown file of four paragraphs each; mean seconds a "
        "file spent in this process's store and read steps over the first and the last tenth "
        "of the batch.",
        "",
        "| compact_every | files | wall s | compactions | their s | final optimize s "
        "| store s: first tenth | last tenth | read s: first tenth | last tenth |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for run in runs:
        lines.append(
            f"| {run['compact_every']} | {run['added']} | {run['wall_s']} | "
            f"{run['compactions']} | {run['compaction_s']} | {run['final_optimize_s']} | "
            f"{run['store_s_first']} | {run['store_s_last']} | {run['read_s_first']} | "
            f"{run['read_s_last']} |"
        )
    args.md.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
