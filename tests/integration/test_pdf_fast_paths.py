"""The PDF parser's cheaper paths give exactly what the paths they replace gave (issue 17).

Each optimisation of pass 1 keeps the reference it replaced, or its library's own call, and is
compared with it here on generated pages and, when the shared data is present, on real dev PDFs:
ruled-table finding from the vector objects alone (against ``pdfplumber``'s ``find_tables``),
the contrast check of all of a page's words at once (against the check of one word), and box
clustering by pairs (against stamping every box on the grid). ``benchmarks/parse_cpu.py
--save/--compare`` compares whole parsed documents before and after a change.
"""

from __future__ import annotations

import random
import sys
from collections import defaultdict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from docsight.parsers.pdf.extract import Objects
from docsight.parsers.pdf.figures import cluster_boxes
from docsight.parsers.pdf.layout import Word, words_from_glyphs
from docsight.parsers.pdf.tables import ruled_grids
from docsight.parsers.pdf.visibility import VisibilityCheck

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from make_large_pdf import make_large_pdf

#: Dev PDFs with many ruled tables, charts and pictures; the first pages of each are read.
DEV_FILES = ["NIKE_2021_10K.pdf", "2312.09390v1.pdf", "2024.ug.eprospectus.pdf"]
DEV_PAGES = 8


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_large_pdf(tmp_path_factory.mktemp("fast") / "report.pdf", pages=6)


def _pages(path: Path, limit: int) -> Iterator[tuple[Any, Any]]:
    """``(pdfplumber page, pdfium page)`` of the first ``limit`` pages."""
    import pdfplumber
    import pypdfium2 as pdfium

    doc = pdfium.PdfDocument(path)
    try:
        with pdfplumber.open(path) as pdf:
            for plumber_page, i in zip(pdf.pages, range(limit), strict=False):
                pdfium_page = doc[i]
                try:
                    yield plumber_page, pdfium_page
                finally:
                    pdfium_page.close()
                    plumber_page.close()
    finally:
        doc.close()


def _grids(tables: Sequence[Any]) -> list[tuple[Any, list[Any]]]:
    return [(tuple(t.bbox), [list(row.cells) for row in t.rows]) for t in tables]


def _assert_same_grids(path: Path, limit: int) -> int:
    found = 0
    for plumber_page, _ in _pages(path, limit):
        objects = Objects.read(plumber_page)
        ours = _grids(ruled_grids(plumber_page, objects))
        assert ours == _grids(plumber_page.find_tables()), (
            f"{path.name} p{plumber_page.page_number}"
        )
        found += len(ours)
    return found


def test_ruled_grids_are_pdfplumbers_tables_on_generated_pages(generated: Path) -> None:
    assert _assert_same_grids(generated, 6) > 0


def test_ruled_grids_are_pdfplumbers_tables_on_dev_pdfs(shared_data: Path) -> None:
    folder = shared_data / "mmlongbench-dev" / "documents"
    assert sum(_assert_same_grids(folder / name, DEV_PAGES) for name in DEV_FILES) > 0


def _assert_same_ink(path: Path, limit: int) -> int:
    checked = 0
    for plumber_page, pdfium_page in _pages(path, limit):
        words = words_from_glyphs(Objects.read(plumber_page).glyphs)
        scale = 96 / 72
        render = pdfium_page.render(scale=scale).to_pil().convert("RGB")
        check = VisibilityCheck(tuple(plumber_page.cropbox), render, scale, 2.0)
        assert check._inked_all(words) == [check._inked(w) for w in words]
        checked += len(words)
    return checked


def test_contrast_of_all_words_at_once_is_the_contrast_of_each(generated: Path) -> None:
    assert _assert_same_ink(generated, 6) > 0


def test_contrast_of_all_words_at_once_on_dev_pdfs(shared_data: Path) -> None:
    folder = shared_data / "mmlongbench-dev" / "documents"
    assert sum(_assert_same_ink(folder / name, DEV_PAGES) for name in DEV_FILES) > 0


def test_contrast_at_once_on_edges_tiny_boxes_and_small_batches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Words off the render, cut by its edges, rounding to no pixel, on flat and inked ground,
    checked in batches of a few pixel rows (so every word is a batch of its own at times)."""
    rng = np.random.default_rng(3)
    pixels = np.full((120, 200, 3), 255, dtype=np.uint8)
    pixels[10:40, 20:90] = rng.integers(0, 256, (30, 70, 3), dtype=np.uint8)
    pixels[60:90, 100:180] = (200, 30, 30)
    pixels[100:120, 150:200, 1] = 250  # inked in one channel only, at the render's corner
    from PIL import Image

    render = Image.fromarray(pixels)
    words: list[Word] = []
    for _ in range(400):
        x0 = float(rng.uniform(-30, 160))
        top = float(rng.uniform(-30, 95))
        words.append(
            Word("w", x0, top, x0 + float(rng.uniform(0, 60)), top + float(rng.uniform(0, 25)))
        )
    words.append(Word("edge", 149.9, 99.9, 200.0, 120.0))
    words.append(Word("dot", 50.2, 50.2, 50.4, 50.4))
    for batch in (200_000, 30, 1):
        monkeypatch.setattr("docsight.parsers.pdf.visibility._BATCH_ROWS", batch)
        for scale in (1.0, 0.37, 2.5):
            check = VisibilityCheck((0.0, 0.0, 200.0 / scale, 120.0 / scale), render, scale, 2.0)
            expected = [check._inked(w) for w in words]
            assert check._inked_all(words) == expected
            assert True in expected and False in expected
    assert VisibilityCheck((0, 0, 1, 1), render, 1.0, 2.0)._inked_all([]) == []


def _stamped(boxes: Sequence[tuple[float, float, float, float]], gap: float) -> list[Any]:
    """``cluster_boxes`` as it was: every box stamped on the grid cell by cell."""
    parent = list(range(len(boxes)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[tuple[int, int], int] = {}
    step = max(gap, 8.0)
    for i, (x0, top, x1, bottom) in enumerate(boxes):
        for cx in range(int((x0 - gap / 2) // step), int((x1 + gap / 2) // step) + 1):
            for cy in range(int((top - gap / 2) // step), int((bottom + gap / 2) // step) + 1):
                j = owner.setdefault((cx, cy), i)
                if j != i:
                    ri, rj = find(i), find(j)
                    if ri != rj:
                        parent[ri] = rj
    groups: dict[int, list[int]] = defaultdict(list)
    for i in range(len(boxes)):
        groups[find(i)].append(i)
    out = [
        (
            (
                min(boxes[i][0] for i in m),
                min(boxes[i][1] for i in m),
                max(boxes[i][2] for i in m),
                max(boxes[i][3] for i in m),
            ),
            len(m),
        )
        for m in groups.values()
    ]
    return sorted(out, key=lambda c: (c[0][1], c[0][0]))


@pytest.mark.parametrize("seed", range(12))
def test_clustering_by_pairs_joins_what_stamping_joined(seed: int) -> None:
    """Few big boxes take the pairwise path, many small ones the grid; inverted boxes (clipped
    off the page) cover no cell either way."""
    rng = random.Random(seed)
    boxes: list[tuple[float, float, float, float]] = []
    for _ in range(rng.choice([1, 3, 8, 40, 300])):
        x0, top = rng.uniform(-20, 600), rng.uniform(-20, 800)
        w, h = rng.choice(
            [(rng.uniform(0, 12), rng.uniform(0, 12)), (rng.uniform(50, 500), rng.uniform(50, 700))]
        )
        if rng.random() < 0.05:
            w, h = -w, -h
        boxes.append((x0, top, x0 + w, top + h))
    for gap in (0.0, 10.0):
        assert cluster_boxes(boxes, gap) == _stamped(boxes, gap)
