#!/usr/bin/env python3
"""Memory and speed of ingesting one large PDF (issue 17: "flat memory on a 1,000-page file").

    python benchmarks/large_pdf.py [--pages 1000] [--workers N] [--pages-per-part N] [--floor]
                                   [--pdf PATH] [--json P] [--md P]

Generates a born-digital report of ``--pages`` pages with ``scripts/make_large_pdf.py`` (or takes
``--pdf``), ingests it into a fresh temporary collection through the public API with the default
settings (``--workers`` sets ``ingest.workers``), and samples the resident memory (VmRSS from
/proc) of this process and of every worker process four times a second. It prints and writes:

* pages, chunks, wall seconds and pages/s of the whole ingestion, and the wall and CPU seconds
  of each stage the file went through (from ``FileOutcome.timings``);
* the peak RSS of the parent and of the workers, and the peaks the ingest report gives: the
  worker's own (VmHWM) and the parent's while it handled the file;
* the RSS of parent and workers at 25/50/75/100 % of the run's wall time, and the worker's RSS
  when 25/50/75/100 % of the pages were parsed: flat memory means the second row stays level
  while pages go by;
* with ``--floor``, the floor of issue 17 timed in the same run after the ingestion (pdfium's
  text extraction of every page plus MiniLM on the stored chunk texts, as in
  ``ingest_profile.py``) and the ingestion/floor ratio;
* the machine, the command, the date, the load before and after, and the share of the machine's
  CPU that other processes took during the ingestion (the machine is shared).

``--pages-per-part`` sets ``ingest.pages_per_part`` (0: the file is one job, parsed by one
worker; the default spreads its pages over the workers).

A run with the defaults writes ``benchmarks/results/large_pdf.{md,json}``; other runs write only
where ``--json``/``--md`` say.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import resource
import shlex
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _machine import (  # benchmarks/
    load_average,
    machine,
    machine_busy_s,
    others_share,
    own_cpu_s,
    status_mib,
)

from docsight import DocSight, Settings
from docsight.ingest.report import IngestProgress

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
sys.path.insert(0, str(HERE.parent / "scripts"))
from make_large_pdf import make_large_pdf  # noqa: E402

#: Seconds between two memory samples.
SAMPLE_S = 0.25
MARKS = (0.25, 0.5, 0.75, 1.0)


# --- memory sampling ------------------------------------------------------------------------------


def rss_mb(pid: int) -> float | None:
    """Resident memory of ``pid`` in MiB (VmRSS), ``None`` once it is gone."""
    return status_mib("VmRSS", pid)


def children(pid: int) -> list[int]:
    """Direct children of ``pid``, whichever of its threads started them."""
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out.extend(int(p) for p in f.read().split())
        except (OSError, ValueError):
            continue
    return out


@dataclass
class Sample:
    t: float
    parent_mb: float
    #: RSS of each live worker, by pid.
    workers_mb: dict[int, float]
    #: Pages of the file parsed by then, and the stage the latest progress event named.
    pages_parsed: int
    stage: str


@dataclass
class Sampler:
    """Samples this process's and its children's RSS in a thread; progress events say how far
    the file has come (they arrive in the ingesting thread, the sampler reads the last one)."""

    every_s: float = SAMPLE_S
    samples: list[Sample] = field(default_factory=list)
    pages_parsed: int = 0
    stage: str = "start"
    started: float = field(default_factory=time.perf_counter)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def progress(self, event: IngestProgress) -> None:
        self.pages_parsed = max(self.pages_parsed, event.batch_pages_done)
        self.stage = event.stage

    def _run(self) -> None:
        me = os.getpid()
        while not self._stop.is_set():
            workers = {pid: mb for pid in children(me) if (mb := rss_mb(pid)) is not None}
            self.samples.append(
                Sample(
                    time.perf_counter() - self.started,
                    rss_mb(me) or 0.0,
                    workers,
                    self.pages_parsed,
                    self.stage,
                )
            )
            self._stop.wait(self.every_s)

    def __enter__(self) -> Sampler:
        self.started = time.perf_counter()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def at_time(samples: list[Sample], share: float) -> Sample:
    """The last sample taken by ``share`` of the run's wall time."""
    end = samples[-1].t
    eligible = [s for s in samples if s.t <= share * end + 1e-9]
    return eligible[-1] if eligible else samples[0]


def at_pages(samples: list[Sample], pages: int, share: float) -> Sample | None:
    """The first sample taken once ``share`` of the pages were parsed."""
    want = share * pages
    return next((s for s in samples if s.pages_parsed >= want), None)


def peak_by_stage(samples: list[Sample]) -> list[dict[str, Any]]:
    """The highest parent and worker RSS seen while each stage was the latest one reported, in
    the order the stages came (the parent's memory is its own: embedding, graph, store)."""
    peaks: dict[str, dict[str, Any]] = {}
    for s in samples:
        row = peaks.setdefault(
            s.stage, {"stage": s.stage, "from_s": round(s.t, 1), "parent_mb": 0.0, "worker_mb": 0.0}
        )
        row["parent_mb"] = round(max(row["parent_mb"], s.parent_mb), 1)
        row["worker_mb"] = round(max(row["worker_mb"], workers_max(s)), 1)
    return list(peaks.values())


def workers_total(sample: Sample) -> float:
    return sum(sample.workers_mb.values())


def workers_max(sample: Sample) -> float:
    return max(sample.workers_mb.values(), default=0.0)


# --- the run ------------------------------------------------------------------------------------


def run(
    pdf: Path, workers: int, pages_per_part: int | None, collection: Path, floor: bool
) -> dict[str, Any]:
    settings = Settings()
    if workers:
        settings.ingest.workers = workers
    if pages_per_part is not None:
        settings.ingest.pages_per_part = pages_per_part
    ds = DocSight(collection, settings=settings)
    kids0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu0 = time.process_time()
    busy0, own0 = machine_busy_s(), own_cpu_s()
    with Sampler() as sampler:
        started = time.perf_counter()
        report = ds.ingest([pdf], progress=sampler.progress)
        wall = time.perf_counter() - started
    busy1, own1 = machine_busy_s(), own_cpu_s()
    kids1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    outcome = report.files[0]
    if outcome.status != "added":
        raise SystemExit(f"ingestion did not add the file: {outcome.status} {outcome.reason}")
    samples = sampler.samples
    pages = outcome.pages
    by_time = [
        {
            "share": share,
            "t_s": round(s.t, 1),
            "stage": s.stage,
            "parent_mb": round(s.parent_mb, 1),
            "workers_mb": round(workers_total(s), 1),
        }
        for share in MARKS
        for s in [at_time(samples, share)]
    ]
    by_pages = []
    for share in MARKS:
        s = at_pages(samples, pages, share)
        if s is not None:
            by_pages.append(
                {
                    "share": share,
                    "pages": s.pages_parsed,
                    "t_s": round(s.t, 1),
                    "parent_mb": round(s.parent_mb, 1),
                    "worker_max_mb": round(workers_max(s), 1),
                }
            )
    timings = outcome.timings
    stages = {
        key: {"wall_s": timings[key], "cpu_s": timings.get(f"{key}.cpu")}
        for key in (
            "read",
            "verify",
            "parse",
            "describe",
            "chunk",
            "graph_build",
            "embed",
            "graph",
            "store",
        )
        if key in timings
    }
    floor_result = None
    if floor:
        from ingest_profile import embed_floor, pdfium_floor  # benchmarks/

        texts = [c.text for c in ds.store.document_chunks(outcome.doc_id or "")]
        floor_pdf, floor_embed = pdfium_floor([pdf]), embed_floor(texts)
        floor_wall = floor_pdf["wall"] + floor_embed["wall"]
        floor_result = {
            "pdfium_wall_s": round(floor_pdf["wall"], 2),
            "embed_wall_s": round(floor_embed["wall"], 1),
            "embed_cpu_s": round(floor_embed["cpu"], 1),
            "embed_chunks": floor_embed["chunks"],
            "wall_s": round(floor_wall, 1),
            "ratio_wall": round(wall / floor_wall, 2) if floor_wall else None,
        }
    return {
        "workers": settings.ingest.worker_count(),
        "pages_per_part": settings.ingest.pages_per_part,
        "parts": timings.get("parse.parts", 1),
        "others_cpu_share": round(others_share(busy1 - busy0, own1 - own0, wall) or 0.0, 3),
        "floor": floor_result,
        "pages": pages,
        "chunks": outcome.chunks,
        "wall_s": round(wall, 1),
        "pages_per_s": round(pages / wall, 2) if wall else 0.0,
        "parent_cpu_s": round(time.process_time() - cpu0, 1),
        "worker_cpu_s": round(
            (kids1.ru_utime + kids1.ru_stime) - (kids0.ru_utime + kids0.ru_stime), 1
        ),
        "peak_parent_mb": round(max(s.parent_mb for s in samples), 1),
        "peak_worker_mb": round(max(workers_max(s) for s in samples), 1),
        "peak_workers_total_mb": round(max(workers_total(s) for s in samples), 1),
        "worker_peak_reported_mb": outcome.peak_memory_mb,
        "parent_peak_reported_mb": outcome.process_peak_memory_mb,
        "rss_by_time": by_time,
        "rss_by_pages": by_pages,
        "stages": stages,
        "peak_by_stage": peak_by_stage(samples),
        "samples": [
            [
                round(s.t, 2),
                round(s.parent_mb, 1),
                round(workers_total(s), 1),
                s.pages_parsed,
                s.stage,
            ]
            for s in samples
        ],
    }


# --- output -------------------------------------------------------------------------------------


def markdown(result: dict[str, Any]) -> str:
    env, r = result["environment"], result["run"]
    out = [
        "# One large PDF: pages/s and resident memory (issue 17)",
        "",
        f"`{result['command']}`, {result['date']}. Machine: {env['cores']} cores ({env['cpu']}), "
        f"{env['memory_gb']} GB, Python {env['python']}, commit {env['commit']}"
        f"{' (with uncommitted changes)' if env.get('dirty') else ''}; load before "
        f"{env['load_before']}, after {env.get('load_after', '?')}; other processes took "
        f"{100 * r.get('others_cpu_share', 0.0):.0f} % of the machine's CPU during the ingestion.",
        "",
        f"File: {result['pdf']['pages']} pages generated by `scripts/make_large_pdf.py` "
        f"({result['pdf']['mib']:.1f} MiB, born-digital: no page needs OCR). "
        f"Workers: {r['workers']}; pages per part: {r.get('pages_per_part', 0)} "
        f"({r.get('parts', 1)} part(s): "
        + ("the pages spread over the workers)." if r.get("parts", 1) > 1 else "one worker).")
        + "",
        "",
        "| pages | chunks | wall s | pages/s | parent CPU s | worker CPU s |",
        "|---:|---:|---:|---:|---:|---:|",
        f"| {r['pages']} | {r['chunks']} | {r['wall_s']} | {r['pages_per_s']} | "
        f"{r['parent_cpu_s']} | {r['worker_cpu_s']} |",
        "",
    ]
    floor = r.get("floor")
    if floor:
        out += [
            "Floor (same run, after the ingestion): pdfium text extraction "
            f"{floor['pdfium_wall_s']} s "
            f"+ MiniLM on the {floor['embed_chunks']} stored chunk texts {floor['embed_wall_s']} s "
            f"= {floor['wall_s']} s. **Ingestion/floor: {floor['ratio_wall']}× in wall time** "
            "(target ≤ 1.5×).",
            "",
        ]
    out += [
        "Peak resident memory (MiB): parent "
        f"{r['peak_parent_mb']}, busiest worker {r['peak_worker_mb']} (all workers together "
        f"{r['peak_workers_total_mb']}); in the ingest report, the worker's own peak "
        f"{r['worker_peak_reported_mb']} and the parent's while it handled the file "
        f"{r['parent_peak_reported_mb']} (the final optimize not included).",
        "",
        "RSS over the run's wall time (the worker parses first, then the parent embeds and "
        "stores):",
        "",
        "| share of run | at s | stage | parent MiB | workers MiB |",
        "|---:|---:|---|---:|---:|",
    ]
    for row in r["rss_by_time"]:
        out.append(
            f"| {row['share']:.0%} | {row['t_s']} | {row['stage']} | {row['parent_mb']} | "
            f"{row['workers_mb']} |"
        )
    out += [
        "",
        "RSS as pages are parsed (flat memory: the worker column stays level):",
        "",
        "| pages parsed | at s | parent MiB | busiest worker MiB |",
        "|---:|---:|---:|---:|",
    ]
    for row in r["rss_by_pages"]:
        out.append(
            f"| {row['pages']} ({row['share']:.0%}) | {row['t_s']} | {row['parent_mb']} | "
            f"{row['worker_max_mb']} |"
        )
    out += [
        "",
        "Peak RSS while each stage was under way (by the latest progress event; `optimize` is "
        "the collection's final indexing step):",
        "",
        "| stage | from s | parent MiB | busiest worker MiB |",
        "|---|---:|---:|---:|",
    ]
    for row in r.get("peak_by_stage", []):
        out.append(
            f"| {row['stage']} | {row['from_s']} | {row['parent_mb']} | {row['worker_mb']} |"
        )
    out += ["", "Stages of the file (wall and CPU seconds):", ""]
    out += ["| stage | wall s | CPU s |", "|---|---:|---:|"]
    for name, st in r["stages"].items():
        out.append(f"| {name} | {st['wall_s']:.1f} | {(st['cpu_s'] or 0.0):.1f} |")
    if result.get("notes"):
        out += ["", *result["notes"]]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=0, help="ingest.workers (0: default)")
    parser.add_argument(
        "--pages-per-part", type=int, default=None, help="ingest.pages_per_part (default: settings)"
    )
    parser.add_argument("--floor", action="store_true", help="time the floor after the ingestion")
    parser.add_argument("--pdf", type=Path, default=None, help="ingest this PDF instead")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--md", type=Path, default=None)
    parser.add_argument("--note", action="append", default=[], help="a line for the results")
    args = parser.parse_args(argv)
    default_run = (
        args.pdf is None and args.pages == 1000 and not args.workers and args.pages_per_part is None
    )
    json_path = args.json or (RESULTS / "large_pdf.json" if default_run else None)
    md_path = args.md or (json_path.with_suffix(".md") if json_path else None)
    with tempfile.TemporaryDirectory(prefix="large-pdf-") as tmp:
        pdf = args.pdf or make_large_pdf(Path(tmp) / "large.pdf", args.pages)
        environment = {**machine(), "load_before": load_average()}
        sys.stdout.write(f"{pdf}: ingesting; load before {environment['load_before']}\n")
        result_run = run(
            pdf, args.workers, args.pages_per_part, Path(tmp) / "collection", args.floor
        )
        environment["load_after"] = load_average()
        mib = pdf.stat().st_size / 2**20
    result = {
        "command": shlex.join(["python", *sys.argv]),
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "environment": environment,
        "pdf": {"pages": result_run["pages"], "mib": mib},
        "run": result_run,
        "notes": args.note,
    }
    text = markdown(result)
    sys.stdout.write(text)
    if json_path is not None:
        json_path.write_text(json.dumps(result, indent=1) + "\n")
    if md_path is not None:
        md_path.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
