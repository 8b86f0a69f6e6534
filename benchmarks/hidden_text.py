#!/usr/bin/env python3
"""How much text the PDF parser flags as hidden on real documents, and what it costs.

    python benchmarks/hidden_text.py [FOLDER ...] [--out benchmarks/results/hidden_text.md]

Parses every PDF under the folders (default: the MMLongBench-Doc dev documents and the smoke
documents in ../shared/data) twice, with hidden-text flagging on and off, without OCR (a scan's
text comes from OCR of the render, which is visible by construction). Reports per document the
characters flagged by reason, the share of all characters, examples of flagged text to inspect by
eye, and the parse time with and without the check. Real reports contain little truly hidden
text, so what is flagged here is mostly false positives, which is the point of measuring.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = ROOT.parent / "shared" / "data"
DEFAULT_FOLDERS = [DATA / "mmlongbench-dev" / "documents", DATA / "smoke"]


def _parse(path: Path, flag: bool) -> tuple[object, float]:
    from docsight.parsers.base import SourceFile
    from docsight.parsers.pdf import PdfParser
    from docsight.settings import ParseSettings

    data = path.read_bytes()
    source = SourceFile(
        path=path,
        data=data,
        sha256=hashlib.sha256(data).hexdigest(),
        media_type="application/pdf",
    )
    settings = ParseSettings(flag_hidden_text=flag, ocr="never", layout_model=False)
    started = time.perf_counter()
    parsed = PdfParser().parse(source, settings)
    return parsed, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="*", type=Path, default=DEFAULT_FOLDERS)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "hidden_text.md")
    parser.add_argument("--examples", type=int, default=3)
    args = parser.parse_args()
    files = sorted(p for folder in args.folders if folder.exists() for p in folder.rglob("*.pdf"))
    if not files:
        print("no PDFs found (is ../shared/data present?)", file=sys.stderr)
        return 1
    rows = []
    totals: Counter[str] = Counter()
    examples: list[str] = []
    time_on = time_off = 0.0
    for path in files:
        parsed, seconds_on = _parse(path, True)
        _, seconds_off = _parse(path, False)
        time_on += seconds_on
        time_off += seconds_off
        doc = parsed.document  # type: ignore[attr-defined]
        chars = sum(len(e.text) for e in doc.elements)
        by_reason: Counter[str] = Counter()
        for e in doc.elements:
            for reason in e.hidden:
                by_reason[str(reason)] += len(e.text)
            if e.hidden and len(examples) < 200:
                text = " ".join(e.text.split())[:160]
                reasons = ", ".join(str(r) for r in e.hidden)
                examples.append(f"{path.name} p.{e.page + 1} ({reasons}): {text}")
        hidden_chars = sum(len(e.text) for e in doc.elements if e.hidden)
        totals.update(by_reason)
        totals["chars"] += chars
        totals["hidden"] += hidden_chars
        rows.append(
            f"| {path.name[:48]} | {doc.page_count} | {chars} | "
            + " | ".join(str(by_reason[r]) for r in ("off_page", "tiny", "no_contrast"))
            + f" | {hidden_chars / max(chars, 1):.2%} | {seconds_off:.1f} | {seconds_on:.1f} |"
        )
        print(rows[-1], flush=True)
    share = totals["hidden"] / max(totals["chars"], 1)
    lines = [
        "# Hidden text flagged on real PDFs",
        "",
        f"`python benchmarks/hidden_text.py` over {len(files)} PDFs "
        "(characters of flagged elements by reason; an element can have several reasons).",
        "",
        "| document | pages | chars | off_page | tiny | no_contrast | flagged | s off | s on |",
        "|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        f"Flagged: {totals['hidden']} of {totals['chars']} characters ({share:.2%}); "
        f"off_page {totals['off_page']}, tiny {totals['tiny']}, "
        f"no_contrast {totals['no_contrast']}.",
        f"Parse time without the check {time_off:.1f} s, with it {time_on:.1f} s "
        f"({(time_on - time_off) / max(time_off, 1e-9):+.1%}).",
        "",
        "## Flagged text, first examples",
        "",
        *(f"- {e}" for e in examples),
        "",
    ]
    args.out.write_text("\n".join(lines))
    print(lines[-len(examples) - 6 : -len(examples) - 3] if examples else lines[-4:-1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
