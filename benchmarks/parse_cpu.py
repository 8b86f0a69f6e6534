#!/usr/bin/env python3
"""CPU seconds per page of the PDF parser without models, and a check that its output is unchanged
(issue 17).

    python benchmarks/parse_cpu.py [FILE ...] [--rounds R] [--save DIR | --compare DIR]
                                   [--profile PATH] [--json PATH]

Parses dev PDFs (default: the text-layer ones named in ``DEFAULT_FILES``, read from the shared
data folder, never copied) in this one process with the default parse settings except
``ocr = "never"`` (no model runs: the part ingest_profile calls "PDF parsing without models"),
and without keeping page pixels, as an ingestion does. For each file it prints the process CPU
seconds per page (``time.process_time``), the best of ``--rounds``, and the load.

``--save DIR`` writes a fingerprint of each parsed document (the document model as JSON, every
asset's id, kind, size, recipe and a hash of its bytes, the warnings) to ``DIR``; ``--compare
DIR`` parses again and reports every file whose fingerprint differs. Save before a change,
compare after: an optimisation of the parser must leave every fingerprint as it was.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from _machine import load_average, machine

from docsight.document.ids import bytes_sha256
from docsight.document.model import ParsedDocument
from docsight.parsers.base import SourceFile
from docsight.parsers.pdf.parser import PdfParser
from docsight.parsers.sniff import PDF
from docsight.settings import ParseSettings

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("DOCSIGHT_SHARED_DATA", ROOT.parent / "shared" / "data"))
DOCUMENTS = SHARED / "mmlongbench-dev" / "documents"
#: Dev PDFs with a text layer: annual reports (tables), papers, brochures, a manual.
DEFAULT_FILES = [
    "ACTIVISIONBLIZZARD_2019_10K.pdf",
    "ADOBE_2015_10K.pdf",
    "NIKE_2021_10K.pdf",
    "2312.09390v1.pdf",
    "2023.acl-long.386.pdf",
    "GPL-Graduate-Studies-Professional-Learning-Brochure-Jul-2021.pdf",
    "ISEP_student_handbook_2020.pdf",
    "Macbook_air.pdf",
    "PIP_Seniors-and-Tech-Use_040314.pdf",
    "8e7c4cb542ad160f80fb3d795ada35d8.pdf",
]


def fingerprint(parsed: ParsedDocument) -> dict[str, Any]:
    """Everything a parse gives, with asset bytes reduced to their hash."""
    return {
        "document": parsed.document.model_dump(mode="json"),
        "assets": [
            {
                "id": a.id,
                "kind": a.kind,
                "media_type": a.media_type,
                "width": a.width,
                "height": a.height,
                "render": a.render,
                "sha256": hashlib.sha256(a.data).hexdigest(),
            }
            for a in parsed.assets
        ],
        "warnings": parsed.warnings,
    }


def source(path: Path) -> SourceFile:
    data = path.read_bytes()
    return SourceFile(
        path=path, data=data, sha256=bytes_sha256(data), media_type=PDF, page_pixels=False
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("files", nargs="*", default=DEFAULT_FILES)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--save", type=Path)
    ap.add_argument("--compare", type=Path)
    ap.add_argument("--profile", type=Path, help="write cProfile stats of all parses here")
    ap.add_argument("--json", type=Path)
    ap.add_argument(
        "--objects",
        choices=["pdfium", "pdfminer"],
        default=None,
        help="parse.pdf_objects: what reads the pages' glyphs and shapes (default: the setting's)",
    )
    args = ap.parse_args()
    if not DOCUMENTS.is_dir():
        print(f"no dev documents at {DOCUMENTS}", file=sys.stderr)
        return 2
    settings = ParseSettings(ocr="never")
    if args.objects:
        settings = settings.model_copy(update={"pdf_objects": args.objects})
    parser = PdfParser()
    profile = cProfile.Profile() if args.profile else None
    rows: list[dict[str, Any]] = []
    differ: list[str] = []
    load_before = load_average()
    for name in args.files:
        src = source(DOCUMENTS / name)
        best = float("inf")
        parsed = None
        for _ in range(args.rounds):
            start = time.process_time()
            if profile is not None:
                profile.enable()
            parsed = parser.parse(src, settings)
            if profile is not None:
                profile.disable()
            best = min(best, time.process_time() - start)
        assert parsed is not None
        pages = len(parsed.document.pages)
        row = {"file": name, "pages": pages, "cpu_s": round(best, 2)}
        row["cpu_s_per_page"] = round(best / pages, 4)
        rows.append(row)
        print(f"{name[:40]:40} {pages:4} pages {best:7.2f} CPU s {best / pages:.3f} s/page")
        stem = Path(name).stem
        if args.save:
            args.save.mkdir(parents=True, exist_ok=True)
            (args.save / f"{stem}.json").write_text(json.dumps(fingerprint(parsed), indent=1))
        if args.compare:
            old = json.loads((args.compare / f"{stem}.json").read_text())
            same = old == json.loads(json.dumps(fingerprint(parsed)))
            row["unchanged"] = same
            if not same:
                differ.append(name)
                print(f"  CHANGED: {name}")
    pages = sum(r["pages"] for r in rows)
    cpu = sum(r["cpu_s"] for r in rows)
    print(f"total: {pages} pages, {cpu:.1f} CPU s, {cpu / pages:.3f} CPU s/page")
    print(f"load before: {load_before}; after: {load_average()}")
    if args.compare:
        print("fingerprints: " + (f"{len(differ)} changed" if differ else "all unchanged"))
    if profile is not None:
        profile.dump_stats(str(args.profile))
    if args.json:
        out = {
            "machine": machine(onnxruntime=False),
            "load_before": load_before,
            "load_after": load_average(),
            "pdf_objects": settings.pdf_objects,
            "files": rows,
            "pages": pages,
            "cpu_s": round(cpu, 2),
        }
        args.json.write_text(json.dumps(out, indent=1))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
