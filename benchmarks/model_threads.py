"""onnxruntime threads per OCR/layout session in the parse workers: each worker on every core
(onnxruntime's default) against the cores shared among the workers.

The first 14 pages of MMLongBench-Doc's three image-only slide decks (every page goes through
OCR and layout) are ingested into a fresh collection once per setting, with the default two
workers; wall and CPU seconds (the command and its worker processes) are printed and written to
``benchmarks/results/model_threads.md``.

    python benchmarks/model_threads.py [--data ../shared/data/mmlongbench-dev] [--pages 14]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DECKS = ("amb-siteaudits", "avalaunchpresentations", "bigdatatrends")
SETTINGS = {"onnxruntime default (0)": "0", "shared among workers (-1)": "-1"}


def subsets(data: Path, pages: int, out: Path) -> list[Path]:
    import pypdfium2 as pdfium

    made = []
    for prefix in DECKS:
        source = next((data / "documents").glob(prefix + "*.pdf"))
        pdf, part = pdfium.PdfDocument(str(source)), pdfium.PdfDocument.new()
        part.import_pages(pdf, list(range(min(pages, len(pdf)))))
        made.append(out / f"{prefix}.pdf")
        part.save(str(made[-1]))
    return made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared/data/mmlongbench-dev")
    parser.add_argument("--pages", type=int, default=14)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="docsight-threads-"))
    files = subsets(args.data, args.pages, base)
    rows = []
    for label, value in SETTINGS.items():
        env = {**os.environ, "DOCSIGHT_INGEST_MODEL_THREADS": value}
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        command = [sys.executable, "-m", "docsight.cli.main", "-c", str(base / value), "ingest"]
        subprocess.run([*command, *map(str, files)], env=env, check=True, capture_output=True)
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        pages = args.pages * len(files)
        rows.append((label, wall, cpu, pages / wall))
        print(f"{label}: {wall:.1f} s wall, {cpu:.1f} s CPU, {pages / wall:.2f} pages/s")
    lines = [
        "# Model threads in the parse workers (`benchmarks/model_threads.py`)",
        "",
        f"{os.cpu_count()} cores; {len(files)} image-only decks, {args.pages} pages each, "
        "every page read by OCR and layout; two workers; a fresh collection per row.",
        "",
        "| threads per model session | wall s | CPU s | pages/s |",
        "| --- | ---: | ---: | ---: |",
        *(f"| {label} | {wall:.1f} | {cpu:.1f} | {rate:.2f} |" for label, wall, cpu, rate in rows),
    ]
    out = ROOT / "benchmarks" / "results" / "model_threads.md"
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
