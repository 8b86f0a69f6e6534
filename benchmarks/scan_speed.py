#!/usr/bin/env python3
"""Scans end to end: pages/s of ingesting image-only files with OCR (issue 17: "≥ 0.5 pages/s").

    python benchmarks/scan_speed.py [--data ../shared/data] [--deck-pages 8] [--md P] [--json P]

Files, all without a text layer, so every page is read by OCR:

* the generated scans of ``tests/fixtures/scangen.py``: an image-only PDF and a multi-page TIFF
  (known text, 200 dpi, degraded as a scanner would);
* ``badfiles/pdf/pdfjs/scan-bad.pdf``, the one scanned PDF of the hostile-files sample;
* the first ``--deck-pages`` pages of the three slide decks of the MMLongBench-Doc dev set that
  have no text layer (copied page by page into a temporary file, never into the repository).

They are ingested together into a fresh collection (so the OCR cache is cold) through the public
API with the default settings: the workers, the page OCR, layout and table models, picture
text, chunking, embedding and the store, as a user runs it. Prints and writes the pages/s of the
whole batch and of each file (by its parse stage), the load before and after, and the share of
the machine's CPU other processes took during the run (the machine is shared).
"""

from __future__ import annotations

import argparse
import datetime
import json
import shlex
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _machine import load_average, machine, machine_busy_s, others_share, own_cpu_s

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from ocr_speed import DECKS  # noqa: E402  (the dev decks without a text layer)

from docsight import DocSight  # noqa: E402
from fixtures import scangen  # noqa: E402


def first_pages(src: Path, out: Path, n: int) -> Path:
    """The first ``n`` pages of ``src`` as a PDF of their own (all of it with ``n`` 0)."""
    import pypdfium2 as pdfium

    doc = pdfium.PdfDocument(src)
    if n <= 0 or n >= len(doc):
        out.write_bytes(src.read_bytes())
        return out
    part = pdfium.PdfDocument.new()
    part.import_pages(doc, list(range(n)))
    part.save(out)
    return out


def files(data: Path, work: Path, deck_pages: int) -> list[Path]:
    scans = scangen.make_scans(work / "scangen")
    out = [scans.image_pdf, scans.tiff]
    bad = data / "badfiles" / "pdf" / "pdfjs" / "scan-bad.pdf"
    if bad.exists():
        out.append(bad)
    for name in DECKS:
        deck = data / "mmlongbench-dev" / "documents" / name
        if deck.exists():
            out.append(first_pages(deck, work / f"deck-{name}", deck_pages))
    return out


def run(paths: list[Path], collection: Path) -> dict[str, Any]:
    ds = DocSight(collection)
    busy0, own0 = machine_busy_s(), own_cpu_s()
    started = time.perf_counter()
    report = ds.ingest(paths)
    wall = time.perf_counter() - started
    busy1, own1 = machine_busy_s(), own_cpu_s()
    rows = []
    for f in report.files:
        t = f.timings
        rows.append(
            {
                "file": Path(f.path).name[:60],
                "status": f.status,
                "pages": f.pages,
                "seconds": round(f.seconds, 1),
                "parse_s": round(t.get("parse", 0.0), 1),
                "ocr_s": round(t.get("ocr", t.get("model.ocr", 0.0)), 1),
                "pages_per_s": round(f.pages / f.seconds, 2) if f.seconds else None,
            }
        )
    pages = sum(f.pages for f in report.files if f.status == "added")
    # What each model cost over the batch (inference and loading, CPU seconds), and the stages.
    models: dict[str, dict[str, float]] = {}
    stages: dict[str, float] = {}
    for f in report.files:
        for key, value in f.timings.items():
            if key.startswith("model."):
                kind, _, what = key[len("model.") :].partition(".")
                row = models.setdefault(kind, {})
                row[what] = round(row.get(what, 0.0) + value, 2)
            elif key.endswith(".cpu") and key.count(".") == 1:
                stages[key[:-4]] = round(stages.get(key[:-4], 0.0) + value, 2)
    return {
        "files": rows,
        "models": models,
        "stage_cpu_s": stages,
        "pages": pages,
        "wall_s": round(wall, 1),
        "pages_per_s": round(pages / wall, 2) if wall else 0.0,
        "own_cpu_s": round(own1 - own0, 1),
        "others_cpu_share": round(others_share(busy1 - busy0, own1 - own0, wall) or 0.0, 3),
        "workers": ds.settings.ingest.worker_count(),
    }


def markdown(result: dict[str, Any]) -> str:
    env, r = result["environment"], result["run"]
    out = [
        "# Scans end to end: pages/s with OCR (issue 17)",
        "",
        f"`{result['command']}`, {result['date']}. Machine: {env['cores']} cores ({env['cpu']}), "
        f"Python {env['python']}, commit {env['commit']}"
        f"{' (with uncommitted changes)' if env.get('dirty') else ''}; load before "
        f"{env['load_before']}, after {env['load_after']}; other processes took "
        f"{100 * r['others_cpu_share']:.0f} % of the machine's CPU during the run. "
        f"Workers: {r['workers']}.",
        "",
        f"**{r['pages']} pages in {r['wall_s']} s: {r['pages_per_s']} pages/s** "
        f"(target ≥ 0.5), {r['own_cpu_s']} CPU s.",
        "",
        "| file | status | pages | s | parse s (worker) | pages/s |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for row in r["files"]:
        out.append(
            f"| {row['file']} | {row['status']} | {row['pages']} | {row['seconds']} | "
            f"{row['parse_s']} | {row['pages_per_s']} |"
        )
    out += [
        "",
        "CPU seconds by stage, all files: "
        + ", ".join(f"{k} {v}" for k, v in r["stage_cpu_s"].items())
        + ".",
        "",
        "| model | calls | inference CPU s | inference wall s | loading CPU s |",
        "|---|---:|---:|---:|---:|",
    ]
    for kind, m in sorted(r["models"].items()):
        out.append(
            f"| {kind} | {m.get('calls', 0):g} | {m.get('cpu', 0.0)} | {m.get('wall', 0.0)} | "
            f"{m.get('load.cpu', 0.0)} |"
        )
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=HERE.parents[1] / "shared" / "data")
    parser.add_argument("--deck-pages", type=int, default=8, help="pages of each deck (0: all)")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--md", type=Path, default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="scan-speed-") as tmp:
        work = Path(tmp)
        paths = files(args.data, work, args.deck_pages)
        environment = {**machine(), "load_before": load_average()}
        result_run = run(paths, work / "collection")
        environment["load_after"] = load_average()
    result = {
        "command": shlex.join(["python", *sys.argv]),
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "environment": environment,
        "run": result_run,
    }
    text = markdown(result)
    sys.stdout.write(text)
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    if args.md is not None:
        args.md.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
