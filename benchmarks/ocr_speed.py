#!/usr/bin/env python3
"""Speed of OCR, layout and table structure per page, and a look at the quality.

    python benchmarks/ocr_speed.py [--data ../shared/data/mmlongbench-dev] [--pages 8] [--dpi 200]

Documents: the generated scans of ``tests/fixtures/scangen.py`` (an image-only PDF whose text is
known, so the character error rate is printed) and the three slide decks of MMLongBench-Doc that
have no text layer at all. Each page is rendered as the PDF parser renders it for OCR, then the
stages run one by one without a cache: OCR, layout, table structure on table regions, assembly.
Prints seconds per page for each stage (wall and CPU), pages/s, the mean OCR confidence and a
few OCR lines of every deck for a human to judge. ``--pages 0`` reads every page.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

import numpy as np  # noqa: E402

from docsight.evaluation.metrics import character_error_rate  # noqa: E402
from docsight.parsers.pdf.page import Page  # noqa: E402
from docsight.parsers.pdf.scan import ocr_scale  # noqa: E402
from docsight.parsers.raster.assemble import assemble_blocks  # noqa: E402
from docsight.parsers.raster.page import is_blank, measure_ink, working_image  # noqa: E402
from docsight.settings import ParseSettings  # noqa: E402
from docsight.vision.common import Block, Box, OcrLine  # noqa: E402
from docsight.vision.layout import LayoutEngine  # noqa: E402
from docsight.vision.ocr import OcrEngine  # noqa: E402
from docsight.vision.tables import TableEngine  # noqa: E402

DECKS = (
    "amb-siteaudits-ds15-150204174043-conversion-gate01_95.pdf",
    "avalaunchpresentationsthatkickasteriskv3copy-150318114804-conversion-gate01_95.pdf",
    "bigdatatrends-120723191058-phpapp02_95.pdf",
)
STAGES = ("render", "ocr", "layout", "tables", "assemble")


class Clock:
    """Wall and CPU seconds per stage."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = defaultdict(float)
        self.cpu: dict[str, float] = defaultdict(float)

    def time(self, stage: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        w, c = time.perf_counter(), time.process_time()
        out = fn(*args, **kwargs)
        self.wall[stage] += time.perf_counter() - w
        self.cpu[stage] += time.process_time() - c
        return out


def read_page(work: np.ndarray, clock: Clock) -> tuple[list[OcrLine], list[Block]]:
    """The stages of :func:`~docsight.parsers.raster.page.read_page_image`, timed, uncached."""
    ocr, layout, tables = OcrEngine.shared(), LayoutEngine.shared(), TableEngine.shared()
    lines = clock.time("ocr", ocr.recognize, work)
    regions = clock.time("layout", layout.detect, work)

    def rows(box: Box, inner: list[OcrLine]) -> list[list[str]]:
        x0, y0, x1, y1 = (int(v) for v in box)
        shifted = [
            OcrLine(ln.text, (ln.x0 - x0, ln.top - y0, ln.x1 - x0, ln.bottom - y0), ln.score)
            for ln in inner
        ]
        return clock.time("tables", tables.rows, work[y0:y1, x0:x1], shifted)

    ink = clock.time("assemble", measure_ink, work, lines)
    size = (work.shape[1], work.shape[0])
    blocks = clock.time("assemble", assemble_blocks, lines, regions, size, ink=ink, table_rows=rows)
    return lines, blocks


def read_pdf(path: Path, pages: int, settings: ParseSettings) -> dict[str, Any]:
    import pypdfium2 as pdfium

    clock = Clock()
    doc = pdfium.PdfDocument(str(path))
    n = len(doc) if pages <= 0 else min(pages, len(doc))
    texts: list[str] = []
    scores: list[float] = []
    samples: list[tuple[int, list[str], list[tuple[str, str]]]] = []
    sizes: set[str] = set()
    for k in range(n):
        pdf_page = doc[k]
        w, h = pdf_page.get_size()
        scale = ocr_scale(pdf_page, Page(k, w, h), settings) or settings.ocr_dpi / 72
        image = clock.time("render", pdf_page.render, scale=scale).to_pil().convert("RGB")
        work, _ = clock.time("render", working_image, image)
        pdf_page.close()
        sizes.add(f"{work.shape[1]}×{work.shape[0]}")
        if is_blank(work):
            texts.append("")
            continue
        lines, blocks = read_page(work, clock)
        texts.append(" ".join(b.text.replace(" | ", " ") for b in blocks))
        scores.extend(ln.score for ln in lines)
        if k in (0, n // 2, n - 1):
            heads = [(b.kind.value, b.text[:60]) for b in blocks[:4]]
            samples.append((k, [ln.text for ln in lines[:6]], heads))
    doc.close()
    return {
        "name": path.name,
        "pages": n,
        "sizes": sorted(sizes),
        "clock": clock,
        "texts": texts,
        "confidence": statistics.fmean(scores) if scores else 0.0,
        "samples": samples,
    }


def report(result: dict[str, Any]) -> None:
    n, clock = result["pages"], result["clock"]
    total = sum(clock.wall.values())
    print(f"\n## {result['name']}  ({n} pages at {', '.join(result['sizes'])} px)")
    print("| stage | wall s/page | CPU s/page |")
    print("| --- | --- | --- |")
    for stage in STAGES:
        print(f"| {stage} | {clock.wall[stage] / n:.3f} | {clock.cpu[stage] / n:.3f} |")
    print(f"| **all** | {total / n:.3f} | {sum(clock.cpu.values()) / n:.3f} |")
    print(f"pages/s: {n / total:.2f}; mean OCR line confidence {result['confidence']:.3f}")
    for k, lines, blocks in result["samples"]:
        print(f"  page {k + 1} OCR lines: {lines}")
        print(f"  page {k + 1} blocks:    {blocks}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data", type=Path, default=HERE.parent.parent / "shared" / "data" / "mmlongbench-dev"
    )
    parser.add_argument("--pages", type=int, default=8, help="pages per deck (0: all)")
    parser.add_argument("--dpi", type=int, default=200)
    args = parser.parse_args()
    settings = ParseSettings(ocr_dpi=args.dpi)

    from fixtures import scangen

    # Model loading is not a per-page cost: load everything on a tiny page first.
    warm = np.full((64, 256, 3), 255, dtype=np.uint8)
    warm[20:40, 20:200] = 0
    t = time.perf_counter()
    OcrEngine.shared().recognize(warm)
    LayoutEngine.shared().detect(warm)
    TableEngine.shared().rows(
        warm, [OcrLine("x", (20, 20, 200, 40), 1.0), OcrLine("y", (0, 0, 9, 9), 1.0)]
    )
    print(f"model load + warm-up: {time.perf_counter() - t:.2f} s")

    with tempfile.TemporaryDirectory() as tmp:
        scans = scangen.make_scans(Path(tmp))
        result = read_pdf(scans.image_pdf, 0, settings)
        report(result)
        for k, (truth, got) in enumerate(zip(scangen.page_texts(), result["texts"], strict=True)):
            print(f"  page {k + 1} CER vs source text: {character_error_rate(truth, got):.4f}")

    for name in DECKS:
        path = args.data / "documents" / name
        if not path.is_file():
            print(f"\n## {name}: missing, skipped")
            continue
        report(read_pdf(path, args.pages, settings))


if __name__ == "__main__":
    main()
