#!/usr/bin/env python3
"""End-to-end ingestion speed per format and per stage, on generated documents of every format.

    python benchmarks/ingest_formats.py [--scale 1]

Builds a mixed corpus with the committed generators (the demo corpus script and the test fixture
generators: PDF, scanned PDF, PNG, DOCX, PPTX, XLSX, HTML, Markdown, text), ingests it into a fresh
collection with the default settings and prints, per format, pages, chunks and seconds per stage
(parse includes OCR, layout and table models; describe, chunk, embed, store) and pages/s. Stage
times of the OCR models themselves are in benchmarks/ocr_speed.py; parser-only office speed in
benchmarks/office_speed.py.
"""

from __future__ import annotations

import argparse
import logging
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from docsight import DocSight  # noqa: E402
from fixtures import htmlgen, officegen, pdfgen, scangen  # noqa: E402

STAGES = ("parse", "describe", "chunk", "embed", "store")


def build_corpus(out: Path, scale: int) -> None:
    subprocess.run(
        [sys.executable, str(HERE.parent / "scripts" / "make_sample_corpus.py"), str(out)],
        check=True,
        capture_output=True,
    )
    pdfgen.make_report(out / "report.pdf")
    pdfgen.make_many_pages(out / "long.pdf", 40 * scale)
    scans = scangen.make_scans(Path(str(out) + "-scans"))
    for path in (scans.image_pdf, scans.png):
        (out / f"scan-{path.name}").write_bytes(path.read_bytes())
    officegen.make_docx(out / "handbook.docx", extra_pages=20 * scale)
    officegen.make_pptx(out / "deck.pptx", extra_slides=20 * scale)
    officegen.make_xlsx(out / "sheet.xlsx", extra_rows=2000 * scale)
    (out / "docs-page.html").write_text(htmlgen.DOCS_PAGE, encoding="utf-8")
    (out / "saved-report.html").write_text(htmlgen.SAVED_REPORT, encoding="utf-8")


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--scale", type=int, default=1, help="multiply the size of generated files")
    args = ap.parse_args()
    logging.getLogger("pdfminer").setLevel(logging.ERROR)
    logging.disable(logging.INFO)  # model packages that force their own INFO logging
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus"
        corpus.mkdir()
        build_corpus(corpus, args.scale)
        report = DocSight(Path(tmp) / "collection").ingest([corpus])
        by_type: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        # Label rows by the parser that read the file ("pdf/4+ocr" -> "pdf").
        parsers = {
            d.name: d.parser.split("/")[0] for d in DocSight(Path(tmp) / "collection").documents()
        }
        for f in report.files:
            kind = parsers.get(f.name, Path(f.name).suffix.lstrip("."))
            row = by_type[kind]
            row["files"] += 1
            row["pages"] += f.pages
            row["chunks"] += f.chunks
            row["seconds"] += f.seconds
            for stage in STAGES:
                row[stage] += f.timings.get(stage, 0.0)
        lines = [f"{len(report.files)} files, {report.counts()}, {report.seconds:.1f} s in all", ""]
        header = ["format", "files", "pages", "chunks", *STAGES, "pages/s"]
        lines += [" | ".join(header), " | ".join("---" for _ in header)]
        for kind, row in sorted(by_type.items()):
            rate = row["pages"] / row["seconds"] if row["seconds"] else 0.0
            cells = [kind, f"{row['files']:.0f}", f"{row['pages']:.0f}", f"{row['chunks']:.0f}"]
            cells += [f"{row[s]:.2f}" for s in STAGES] + [f"{rate:.1f}"]
            lines.append(" | ".join(cells))
        lines += [f"failed: {f.name}: {f.reason}" for f in report.failed]
        lines += [f"no text: {f.name}" for f in report.no_text]
    text = "\n".join(lines) + "\n"
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "ingest_formats.md").write_text(
        "# Ingestion per format and stage (generated documents, default settings)\n\n" + text
    )
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
