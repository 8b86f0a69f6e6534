#!/usr/bin/env python3
"""A bounded load test of ``docsight serve`` on loopback: concurrent askers and one uploader.

    python benchmarks/server_load.py [--askers 4] [--duration 30] [--baseline 10]
                                     [--out benchmarks/results/server_load.md]

Builds the demo collection (``scripts/make_sample_corpus.py``) in a temporary directory, starts
``docsight serve --port 0`` on it in a subprocess (a separate process, as users run it). First
one asker alone for ``--baseline`` seconds (the latency without contention), then for
``--duration`` seconds:

* ``--askers`` threads ask the demo questions in turn (``POST /api/v1/ask``) and open the first
  cited page with its box highlighted (``GET .../pages/{page}.png?highlight=...``), as the web
  page does when a citation is clicked;
* one uploader sends two new documents at a time (``POST /api/v1/documents``) and follows the
  job to its end (``GET /api/v1/jobs/{id}``), so the collection is written while it is read.

It reports p50/p95 latency per kind of request, the errors (any status but 2xx, any transport
failure, any upload file that failed: 0 expected), and whether the collection passes
``docsight check`` (:meth:`DocSight.check`) once the server has stopped.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import queue
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
API = "/api/v1"
QUESTIONS = [
    "What was Northwind's revenue in 2024?",
    "What does error E47 mean on the T-200?",
    "How much did batch C drift after eighteen months?",
    "How long is the warranty?",
    "What is the order number of the desiccant pack?",
    "How much does the T-300 data plan cost?",
    "Who is the chief executive of Contoso?",
]
NOTE = """# Field note {n}

## Site visit

Technician {n} calibrated sensor array {n} at station {station} on day {day}. The drift measured
before calibration was {drift} percent, within the tolerance of the T-200 manual.

## Follow-up

The next visit to station {station} is planned after {weeks} weeks; spare desiccant packs were
left on site.
"""


class Recorder:
    """Latencies and errors per kind of request, from several threads."""

    def __init__(self) -> None:
        self.latencies: dict[str, list[float]] = defaultdict(list)
        self.errors: dict[str, list[str]] = defaultdict(list)
        self._lock = threading.Lock()

    def ok(self, kind: str, seconds: float) -> None:
        with self._lock:
            self.latencies[kind].append(seconds)

    def error(self, kind: str, what: str) -> None:
        with self._lock:
            self.errors[kind].append(what)


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def build_collection(base: Path) -> Path:
    corpus = base / "corpus"
    subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "make_sample_corpus.py"), str(corpus)],
        check=True,
        capture_output=True,
    )
    from docsight import DocSight

    report = DocSight(base / "collection").ingest([corpus])
    assert report.counts()["failed"] == 0, report
    return base / "collection"


def start_server(collection: Path) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "docsight.cli.main", "serve", "--port", "0", "-c", str(collection)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert proc.stdout is not None
        for line in iter(proc.stdout.readline, ""):
            lines.put(line)
            sys.stderr.write(f"[server] {line}")

    threading.Thread(target=read, daemon=True).start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=1)
        except queue.Empty:
            continue
        found = re.search(r"web page\s+(http://127\.0\.0\.1:\d+)/", line)
        if found:
            return proc, found.group(1)
    proc.kill()
    raise SystemExit("the server did not start")


def asker(url: str, stop: threading.Event, rec: Recorder, offset: int) -> None:
    with httpx.Client(base_url=url, timeout=120) as client:
        i = offset
        while not stop.is_set():
            question = QUESTIONS[i % len(QUESTIONS)]
            i += 1
            started = time.perf_counter()
            try:
                response = client.post(f"{API}/ask", json={"question": question})
            except httpx.HTTPError as exc:
                rec.error("ask", f"{type(exc).__name__}: {exc}")
                continue
            if response.status_code != 200:
                rec.error("ask", f"{response.status_code}: {response.text[:200]}")
                continue
            rec.ok("ask", time.perf_counter() - started)
            cited = [c for c in response.json()["citations"] if c.get("bbox")]
            if not cited:
                continue
            c = cited[0]
            box = ",".join(str(c["bbox"][k]) for k in ("x0", "y0", "x1", "y1"))
            started = time.perf_counter()
            try:
                page = client.get(
                    f"{API}/documents/{c['doc_id']}/pages/{c['page']}.png",
                    params={"highlight": box},
                )
            except httpx.HTTPError as exc:
                rec.error("page", f"{type(exc).__name__}: {exc}")
                continue
            # Documents stored without page images (Markdown, text) answer 404 by design.
            if page.status_code == 200:
                rec.ok("page", time.perf_counter() - started)
            elif page.status_code != 404:
                rec.error("page", f"{page.status_code}: {page.text[:200]}")


def uploader(url: str, stop: threading.Event, rec: Recorder, counts: dict[str, int]) -> None:
    with httpx.Client(base_url=url, timeout=300) as client:
        n = 0
        while not stop.is_set():
            files = []
            for _ in range(2):
                n += 1
                text = NOTE.format(
                    n=n, station=100 + n, day=n % 28 + 1, drift=round(0.1 * n, 1), weeks=n % 9 + 2
                )
                files.append(("files", (f"field-note-{n}.md", text.encode(), "text/markdown")))
            started = time.perf_counter()
            try:
                created = client.post(f"{API}/documents", files=files)
                if created.status_code != 202:
                    rec.error("upload", f"{created.status_code}: {created.text[:200]}")
                    continue
                job = created.json()["job"]
                while True:
                    status = client.get(f"{API}/jobs/{job}").json()
                    if status["status"] in ("done", "failed"):
                        break
                    time.sleep(0.05)
            except httpx.HTTPError as exc:
                rec.error("upload", f"{type(exc).__name__}: {exc}")
                continue
            if status["status"] != "done":
                rec.error("upload", f"job failed: {status['error']}")
                continue
            failed = [f for f in status["report"]["files"] if f["status"] == "failed"]
            for f in failed:
                rec.error("upload", f"{f['name']}: {f['error_code']} {f['reason']}")
            counts["added"] += status["report"]["counts"]["added"]
            counts["jobs"] += 1
            rec.ok("upload", time.perf_counter() - started)


def phase(url: str, askers: int, upload: bool, duration: float) -> dict[str, Any]:
    """``askers`` askers (and the uploader if ``upload``) for ``duration`` seconds."""
    rec = Recorder()
    counts = {"added": 0, "jobs": 0}
    stop = threading.Event()
    threads = [threading.Thread(target=asker, args=(url, stop, rec, i)) for i in range(askers)]
    if upload:
        threads.append(threading.Thread(target=uploader, args=(url, stop, rec, counts)))
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    time.sleep(duration)
    stop.set()
    for thread in threads:
        thread.join(300)
    return {
        "askers": askers,
        "duration": duration,
        "elapsed": time.perf_counter() - began,
        "latencies": dict(rec.latencies),
        "errors": dict(rec.errors),
        "uploaded": counts,
    }


def run(askers: int, duration: float, baseline: float, keep: Path | None) -> dict[str, Any]:
    base = Path(tempfile.mkdtemp(prefix="docsight-load-"))
    try:
        started = time.perf_counter()
        collection = build_collection(base)
        build_s = time.perf_counter() - started
        proc, url = start_server(collection)
        try:
            with httpx.Client(base_url=url, timeout=120) as client:  # models load once
                client.post(f"{API}/ask", json={"question": QUESTIONS[0]}).raise_for_status()
            alone = phase(url, 1, False, baseline) if baseline > 0 else None
            load = phase(url, askers, True, duration)
        finally:
            proc.send_signal(2)  # Ctrl-C: uvicorn finishes what runs, then exits
            try:
                exit_status = proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                exit_status = proc.wait(10)
        from docsight import DocSight

        ds = DocSight(collection)
        check = ds.check()
        documents = len(ds.documents())
        if keep is not None:
            shutil.copytree(collection, keep, dirs_exist_ok=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return {
        "alone": alone,
        "load": load,
        "build_s": build_s,
        "documents": documents,
        "check_ok": check.ok,
        "check_problems": [f"{p.severity} {p.code}: {p.message}" for p in check.problems],
        "server_exit": exit_status,
    }


def _rows(result: dict[str, Any], label: str) -> list[str]:
    rows = []
    for kind in ("ask", "page", "upload"):
        values = result["latencies"].get(kind, [])
        errors = len(result["errors"].get(kind, []))
        if not values and not errors:
            continue
        rate = len(values) / result["elapsed"] if result["elapsed"] else 0.0
        top = max(values) if values else float("nan")
        rows.append(
            f"| {label} | {kind} | {len(values)} | {errors} | {percentile(values, 50) * 1000:.0f} "
            f"| {percentile(values, 95) * 1000:.0f} | {top * 1000:.0f} | {rate:.2f} |"
        )
    return rows


def _reading(alone: dict[str, Any] | None, load: dict[str, Any]) -> str | None:
    """What the figures say about where the time goes, when they say it clearly."""
    if alone is None:
        return None
    solo = len(alone["latencies"].get("ask", [])) / alone["elapsed"]
    loaded = len(load["latencies"].get("ask", [])) / load["elapsed"]
    if not solo or loaded > 1.5 * solo:
        return None
    return (
        f"Answers per second stay where one asker alone puts them ({solo:.2f} alone, "
        f"{loaded:.2f} under load): answering is CPU-bound, and the server, its ingestion "
        f"workers and the clients share {os.cpu_count()} cores, so more askers wait longer "
        "each instead of failing; the latency grows with the queue, about as the number of "
        "askers."
    )


def total_errors(result: dict[str, Any]) -> int:
    phases = [result["load"]] + ([result["alone"]] if result["alone"] else [])
    return sum(len(v) for p in phases for v in p["errors"].values())


def report(result: dict[str, Any]) -> str:
    load, alone = result["load"], result["alone"]
    rows = (_rows(alone, "1 asker alone") if alone else []) + _rows(
        load, f"{load['askers']} askers + uploader"
    )
    errors = total_errors(result)
    lines = [
        "# Load test of `docsight serve` (`benchmarks/server_load.py`)",
        "",
        f"Run {dt.date.today().isoformat()} on {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}: the demo collection (6 documents, built in "
        f"{result['build_s']:.0f} s), served by `docsight serve` in its own process on "
        "127.0.0.1 with the default settings (offline answers, ingestion in isolated worker "
        "processes). The clients run in a second process on the same two cores.",
        "",
        (f"First one asker alone for {alone['duration']:.0f} s; then " if alone else "")
        + f"for {load['duration']:.0f} s ({load['elapsed']:.1f} s measured) "
        f"**{load['askers']} askers** asked the seven demo questions in turn, each opening the "
        "first cited page with its box highlighted, while **one uploader** sent two new "
        "Markdown documents per request and followed each job to its end.",
        "",
        "| phase | request | count | errors | p50 ms | p95 ms | max ms | per s |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
        *rows,
        "",
        "`ask` is `POST /api/v1/ask` (retrieval and an extractive answer); `page` is "
        "`GET /documents/{doc}/pages/{page}.png?highlight=...` for cited pages that have an "
        "image (PDF and Office renders; text documents have none); `upload` is the time from "
        "`POST /api/v1/documents` to the job's `done`, polled every 50 ms.",
        "",
        f"- **Errors: {errors}** (any status but 2xx, transport failures, failed upload files).",
        f"- Uploads: {load['uploaded']['jobs']} jobs, {load['uploaded']['added']} documents "
        f"added while the askers ran; the collection ended with {result['documents']} "
        "documents.",
        f"- The server stopped on Ctrl-C with exit status {result['server_exit']}.",
        f"- **`docsight check` afterwards: {'passed' if result['check_ok'] else 'FAILED'}**"
        + (
            " (" + "; ".join(result["check_problems"]) + ")"
            if result["check_problems"]
            else ", with no problems."
        ),
    ]
    note = _reading(alone, load)
    if note:
        lines += ["", note]
    if errors:
        lines += ["", "## Errors", ""]
        for part in (alone, load):
            for kind, messages in (part or {}).get("errors", {}).items():
                lines += [f"- {kind}: {m}" for m in messages[:10]]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--askers", type=int, default=4)
    parser.add_argument("--duration", type=float, default=30.0)
    parser.add_argument("--baseline", type=float, default=10.0, help="Seconds of one asker.")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "server_load.md")
    parser.add_argument("--keep", type=Path, default=None, help="Copy the collection here.")
    args = parser.parse_args()
    result = run(args.askers, args.duration, args.baseline, args.keep)
    text = report(result)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    sys.exit(0 if total_errors(result) == 0 and result["check_ok"] else 1)


if __name__ == "__main__":
    main()
