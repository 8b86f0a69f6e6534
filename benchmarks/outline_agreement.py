#!/usr/bin/env python3
"""The PDF parser's headings against the documents' own outlines.

    python benchmarks/outline_agreement.py [--data ../shared/data] [--json P] [--md P]

A PDF's outline (its bookmarks) is its author's table of contents, so it is a truth that nobody
on this team wrote for the headings a parse should find. For every MMLongBench-Doc dev PDF with
an outline this parses the file as ingestion does (text layer only: OCR does not change which
lines are headings in these born-digital files) and reports:

* **outline recall**: the share of outline entries found as a heading (or the title) on the
  entry's page or a neighbour, their texts equal or nearly so after folding case, punctuation
  and a leading section number (``difflib`` ratio 0.9). Headings are what a user sees in
  ``docsight map`` and in the section paths of answers;
* **headings in the outline**: the share of the parse's headings that match an entry. Outlines
  often leave out the lower levels, so this is a floor on precision, for comparing parses only.

Each figure is given twice: as ingestion parses (the parser reads the outline and matches headings
to it) and **blind**, with the outline withheld, which measures what the parser infers from the
page alone, as it must for the many files that have no outline.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

import pypdfium2 as pdfium  # noqa: E402
from parse_cpu import source  # noqa: E402 - a PDF as ingestion reads it, without page pixels

from docsight.document.model import ElementKind  # noqa: E402
from docsight.parsers.pdf import PdfParser  # noqa: E402
from docsight.parsers.pdf import parser as pdf_parser  # noqa: E402
from docsight.settings import ParseSettings  # noqa: E402

SIMILAR = 0.9
HEADINGS = (ElementKind.HEADING, ElementKind.TITLE)


def _fold(text: str) -> str:
    """Lower case, words only, without a leading section number ("4.1 TASKS" is "tasks"):
    outlines print the numbers or leave them out as they please."""
    words = re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()
    return re.sub(r"^\d+(?: \d+)* (?=\D)", "", words)


def _same(a: str, b: str) -> bool:
    return a == b or difflib.SequenceMatcher(None, a, b, autojunk=False).ratio() >= SIMILAR


def outline(path: Path) -> list[tuple[str, int | None]]:
    """The outline's entries as (folded title, 0-based page or None)."""
    doc = pdfium.PdfDocument(str(path))
    try:
        entries = []
        for item in doc.get_toc(max_depth=16):
            dest = item.get_dest()
            title = _fold(item.get_title() or "")
            if title:
                entries.append((title, dest.get_index() if dest is not None else None))
        return entries
    finally:
        doc.close()


@contextmanager
def _blind() -> Iterator[None]:
    """Withhold the outline from the parser (its only reader is ``parser._outline``)."""
    real = pdf_parser._outline
    pdf_parser._outline = lambda doc, builder: []  # type: ignore[assignment]
    try:
        yield
    finally:
        pdf_parser._outline = real  # type: ignore[assignment]


def headings(path: Path, *, blind: bool) -> list[tuple[str, int]]:
    settings = ParseSettings(ocr="never")
    if blind:
        with _blind():
            parsed = PdfParser().parse(source(path), settings)
    else:
        parsed = PdfParser().parse(source(path), settings)
    return [(_fold(e.text), e.page) for e in parsed.document.elements if e.kind in HEADINGS]


def agreement(
    entries: list[tuple[str, int | None]], found: list[tuple[str, int]]
) -> dict[str, Any]:
    def near(a: int | None, b: int | None) -> bool:
        return a is None or b is None or abs(a - b) <= 1

    recalled = [t for t, p in entries if any(near(hp, p) and _same(h, t) for h, hp in found)]
    matched = sum(any(near(hp, p) and _same(h, t) for t, p in entries) for h, hp in found)
    missed = [t for t, p in entries if t not in set(recalled)]
    return {
        "entries": len(entries),
        "recalled": len(recalled),
        "headings": len(found),
        "in_outline": matched,
        "missed": missed,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=HERE.parent.parent / "shared" / "data")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--md", type=Path)
    args = ap.parse_args()
    folder = args.data / "mmlongbench-dev" / "documents"
    if not folder.is_dir():
        sys.exit(f"{folder} is missing: the MMLongBench-Doc dev documents are needed")
    started = time.perf_counter()
    rows = []
    for path in sorted(folder.glob("*.pdf")):
        entries = outline(path)
        if not entries:
            continue
        row: dict[str, Any] = {"document": path.name}
        for mode in ("ingest", "blind"):
            row[mode] = agreement(entries, headings(path, blind=mode == "blind"))
        rows.append(row)
        print(
            f"{path.name[:40]:40} entries {row['ingest']['entries']:4}"
            f"  recall {row['ingest']['recalled']:4} (blind {row['blind']['recalled']:4})"
            f"  headings in outline {row['ingest']['in_outline']}/{row['ingest']['headings']}"
            f" (blind {row['blind']['in_outline']}/{row['blind']['headings']})",
            flush=True,
        )
    totals: dict[str, Any] = {}
    for mode in ("ingest", "blind"):
        entries = sum(r[mode]["entries"] for r in rows)
        found = sum(r[mode]["headings"] for r in rows)
        totals[mode] = {
            "outline_recall": round(sum(r[mode]["recalled"] for r in rows) / max(entries, 1), 4),
            "headings_in_outline": round(
                sum(r[mode]["in_outline"] for r in rows) / max(found, 1), 4
            ),
            "entries": entries,
            "headings": found,
        }
    report = {
        "documents": len(rows),
        "totals": totals,
        "rows": rows,
        "seconds": round(time.perf_counter() - started, 1),
    }
    for mode, t in totals.items():
        print(
            f"{mode:6}: outline recall {t['outline_recall']:.3f} of {t['entries']} entries,"
            f" headings in the outline {t['headings_in_outline']:.3f} of {t['headings']}"
        )
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    if args.md:
        args.md.write_text(markdown(report))


def markdown(report: dict[str, Any]) -> str:
    lines = [
        "| document | outline entries | recall | recall, blind | headings in outline | "
        "the same, blind |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in report["rows"]:
        i, b = r["ingest"], r["blind"]
        lines.append(
            f"| {r['document']} | {i['entries']} | {i['recalled']} | {b['recalled']} | "
            f"{i['in_outline']}/{i['headings']} | {b['in_outline']}/{b['headings']} |"
        )
    t = report["totals"]
    lines.append(
        f"| **all {report['documents']}** | {t['ingest']['entries']} | "
        f"**{t['ingest']['outline_recall']:.3f}** | **{t['blind']['outline_recall']:.3f}** | "
        f"{t['ingest']['headings_in_outline']:.3f} | {t['blind']['headings_in_outline']:.3f} |"
    )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
