#!/usr/bin/env python3
"""Parsing speed of the Word, PowerPoint and Excel parsers on generated files.

    python benchmarks/office_speed.py [--pages 50] [--slides 40] [--rows 4000] [--repeat 3]

Generates a long DOCX, a PPTX deck and an XLSX sheet in a temporary directory with the test
fixture generators (``tests/fixtures/officegen.py``), parses each ``--repeat`` times and prints the
median time, pages (or cells) per second, and the share spent in the archive check.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from docsight.parsers.base import SourceFile  # noqa: E402
from docsight.parsers.docx import DocxParser  # noqa: E402
from docsight.parsers.ooxml import check_archive  # noqa: E402
from docsight.parsers.pptx import PptxParser  # noqa: E402
from docsight.parsers.sniff import detect_media_type  # noqa: E402
from docsight.parsers.xlsx import XlsxParser  # noqa: E402
from docsight.settings import ParseSettings  # noqa: E402
from fixtures import officegen  # noqa: E402


def median_seconds(action: Callable[..., object], repeat: int, *args: object) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action(*args)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def range_cells(ref: str) -> int:
    """Cells in an A1-style range such as ``A1:E2013``."""
    from openpyxl.utils.cell import range_boundaries

    min_col, min_row, max_col, max_row = range_boundaries(ref)
    return (max_col - min_col + 1) * (max_row - min_row + 1)


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    args.add_argument("--pages", type=int, default=50, help="extra DOCX pages of prose")
    args.add_argument("--slides", type=int, default=36, help="extra PPTX slides (4 built in)")
    args.add_argument("--rows", type=int, default=4000, help="extra XLSX rows of 5 cells")
    args.add_argument("--repeat", type=int, default=3)
    options = args.parse_args()
    settings = ParseSettings()

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        started = time.perf_counter()
        files = [
            (officegen.make_docx(folder / "long.docx", extra_pages=options.pages), DocxParser()),
            (officegen.make_pptx(folder / "deck.pptx", extra_slides=options.slides), PptxParser()),
            (officegen.make_xlsx(folder / "sheet.xlsx", extra_rows=options.rows), XlsxParser()),
        ]
        print(f"generated 3 files in {time.perf_counter() - started:.1f} s\n")
        header = f"{'file':<11} {'size':>8} {'parse':>9} {'check':>7} {'pages':>6} {'rate':>16}"
        print(header)
        print("-" * len(header))
        for path, parser in files:
            data = path.read_bytes()
            source = SourceFile(
                path=path,
                data=data,
                sha256=hashlib.sha256(data).hexdigest(),
                media_type=detect_media_type(data, path),
            )
            parsed = parser.parse(source, settings)
            seconds = median_seconds(parser.parse, options.repeat, source, settings)
            check = median_seconds(check_archive, options.repeat, path, data, settings)
            doc = parsed.document
            if path.suffix == ".xlsx":
                ranges = {e.attrs.get("region", e.attrs.get("range")) for e in doc.elements}
                cells = sum(range_cells(r) for r in ranges if r)
                rate = f"{cells / seconds:,.0f} cells/s"
            else:
                rate = f"{doc.page_count / seconds:,.0f} pages/s"
            print(
                f"{path.name:<11} {len(data) / 1024:>6.0f}KB {seconds * 1000:>7.1f}ms "
                f"{check * 1000:>5.1f}ms {doc.page_count:>6} {rate:>16}"
            )
            if parsed.warnings:
                print(f"  warnings: {parsed.warnings[:3]}")


if __name__ == "__main__":
    main()
