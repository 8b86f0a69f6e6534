#!/usr/bin/env python3
"""Ingest the hostile-file corpus (../shared/data/badfiles) and summarise what happened.

    python benchmarks/badfiles.py [--data ../shared/data/badfiles] [--timeout 20] [--memory 1536]

Every file is named explicitly, so all of them are tried, not only the document types a folder
walk picks up. Parsing runs in worker processes under the given limits: ``ingest.timeout_s`` for
every file (no extra time per page, so each file's budget is the same), ``ingest.memory_mb``, and
the default CPU budget (twice the wall clock); the collection is a temporary directory. The e2e
test ``tests/e2e/test_badfiles.py`` runs the same ingest with the same limits.
Writes benchmarks/results/badfiles.md: outcomes, error codes, the files that crashed or hung a
worker, the slowest files, peak memory of the workers and of this process, and total time.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "badfiles"
#: Outcomes that mean a worker was killed or died.
WORKER_LOSSES = ("timeout", "out_of_memory", "cpu_limit", "worker_crashed")
#: Measured once, before parsing moved into workers (not re-run by this script).
BASELINE = """\
Before worker isolation (the same files ingested in-process, one by one, in a child process
under an 8 GiB address-space limit and a 60 s watchdog; measured once, not re-run here):
`generated/pdf/flate_bomb_content_4GiB_2layer.pdf` killed the process (SIGABRT from PDFium),
`generated/pdf/flate_bomb_content_1GiB.pdf` took 18 s and 2.4 GiB, and three text files hung for
more than 60 s (`md_link_refs_pathological.md`, `md_long_line_2MB.md`, `txt_long_line_3MB.txt`:
quadratic sentence splitting and chunk slicing); 217 files failed with a reason, none of them a
misnamed file (a PNG named `.pdf` was read as an image).
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--timeout", type=float, default=20.0, help="ingest.timeout_s")
    parser.add_argument("--memory", type=int, default=1536, help="ingest.memory_mb")
    parser.add_argument("--workers", type=int, default=0, help="ingest.workers (0: auto)")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "badfiles.md")
    args = parser.parse_args()
    if not args.data.is_dir():
        sys.exit(f"no corpus at {args.data}")

    from docsight import DocSight
    from docsight.settings import Settings

    files = sorted(p for p in args.data.rglob("*") if p.is_file())
    settings = Settings(
        ingest={
            "timeout_s": args.timeout,
            "per_page_s": 0,
            "memory_mb": args.memory,
            "workers": args.workers,
        }
    )
    with tempfile.TemporaryDirectory(prefix="docsight-badfiles-") as tmp:
        ds = DocSight(Path(tmp) / "col", settings=settings)
        started = time.perf_counter()
        report = ds.ingest(files)
        seconds = time.perf_counter() - started
        documents = len(ds.documents())
    main_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    text = render(report, files, args, settings, seconds, main_peak, documents)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)


def render(
    report: object,
    files: list[Path],
    args: argparse.Namespace,
    settings: object,
    seconds: float,
    main_peak: float,
    documents: int,
) -> str:
    outcomes = report.files  # type: ignore[attr-defined]
    limits = settings.ingest  # type: ignore[attr-defined]
    root = args.data

    def rel(path: str) -> str:
        try:
            return str(Path(path).relative_to(root))
        except ValueError:
            return path

    statuses = Counter(f.status for f in outcomes)
    codes = Counter(f.error_code for f in outcomes if f.status == "failed")
    peaks = [f.peak_memory_mb for f in outcomes if f.peak_memory_mb is not None]
    lines = [
        "# Hostile files: ingestion under worker isolation",
        "",
        f"Corpus: `{root.name}/` ({len(files)} files, every file named explicitly). "
        f"Run on {platform.system()} {platform.machine()}, {os.cpu_count()} cores (shared), "
        f"Python {platform.python_version()}, `python benchmarks/badfiles.py "
        f"--timeout {args.timeout:g} --memory {args.memory}`.",
        "",
        f"Limits: `ingest.timeout_s={limits.timeout_s:g}`, `ingest.memory_mb={limits.memory_mb}`, "
        f"`ingest.per_page_s={limits.per_page_s:g}`, CPU {limits.budget()[1]:g} s, "
        f"workers={limits.worker_count()}.",
        "",
        f"**Total: {seconds:.0f} s** for {len(outcomes)} files ({documents} documents stored); "
        f"the main process survived. Peak memory: workers {max(peaks, default=0):.0f} MiB "
        f"(largest per-file peak), main process {main_peak:.0f} MiB.",
        "",
        "| outcome | files |",
        "| --- | ---: |",
        *(f"| {status} | {n} |" for status, n in statuses.most_common()),
        "",
        "| error code | files |",
        "| --- | ---: |",
        *(f"| {code} | {n} |" for code, n in codes.most_common()),
        "",
        BASELINE,
        "## Files that crashed, hung or bloated a worker",
        "",
        "| file | code | seconds | peak MiB | reason |",
        "| --- | --- | ---: | ---: | --- |",
    ]
    lost = [f for f in outcomes if f.error_code in WORKER_LOSSES]
    for f in lost:
        lines.append(
            f"| {rel(f.path)} | {f.error_code} | {f.seconds:.1f} | "
            f"{_mb(f.peak_memory_mb)} | {_cell(f.reason)} |"
        )
    if not lost:
        lines.append("| (none) | | | | |")
    lines += [
        "",
        "## Slowest files",
        "",
        "| file | status | seconds | peak MiB | note |",
        "| --- | --- | ---: | ---: | --- |",
    ]
    for f in sorted(outcomes, key=lambda f: -f.seconds)[:15]:
        note = f"{f.error_code}: {f.reason}" if f.error_code else (f.reason or "")
        lines.append(
            f"| {rel(f.path)} | {f.status} | {f.seconds:.1f} | {_mb(f.peak_memory_mb)} | "
            f"{_cell(note)} |"
        )
    lines += [
        "",
        "## Largest worker memory",
        "",
        "| file | status | peak MiB |",
        "| --- | --- | ---: |",
    ]
    by_memory = [f for f in outcomes if f.peak_memory_mb is not None]
    for f in sorted(by_memory, key=lambda f: -(f.peak_memory_mb or 0))[:10]:
        lines.append(f"| {rel(f.path)} | {f.status} | {_mb(f.peak_memory_mb)} |")
    return "\n".join(lines) + "\n"


def _mb(value: float | None) -> str:
    return f"{value:.0f}" if value is not None else ""


def _cell(text: str | None) -> str:
    text = " ".join((text or "").split()).replace("|", "\\|")
    return text[:160] + ("…" if len(text) > 160 else "")


if __name__ == "__main__":
    main()
