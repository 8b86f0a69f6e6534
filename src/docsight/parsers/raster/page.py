"""A page image → blocks in reading order: OCR, layout regions and table structure combined.

:func:`read_page_image` runs the engines (each cached) and hands their outputs to
:func:`assemble_blocks`, which is pure and testable on synthetic input:

1. table and figure regions of the layout model become atoms; the OCR lines inside a table feed
   its structure (rapid-table, or the PDF parser's whitespace grid when that fails), those inside
   a figure become its text (labels). Figures covering nearly the whole page are ignored: then
   the page is the picture, and its text is the content;
2. the other lines go through the PDF parser's geometry (:mod:`docsight.parsers.pdf.layout`,
   :mod:`docsight.parsers.pdf.reading`): row grouping, XY-cut reading order with the atoms,
   paragraph blocks; a block is split where its lines fall into different layout text regions;
3. each block gets a kind from its shape, estimated font size and stroke weight (OCR has no
   fonts, so boldness is measured on the pixels), the layout label as a hint, and the shared
   caption rule. Without the layout model (``settings.layout_model = False``) steps 2–3 run
   on the OCR lines alone.

Boxes are in pixels of the image given; OCR runs on a copy scaled down to at most
:data:`~.ocr.MAX_SIDE` pixels, and the boxes are scaled back.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from PIL import Image

from docsight.parsers.base import ParseContext
from docsight.parsers.raster.assemble import assemble_blocks
from docsight.settings import ParseSettings
from docsight.vision.common import (
    Block,
    Box,
    Ink,
    OcrLine,
    PageLine,
    flatten_image,
    pixel_digest,
)
from docsight.vision.ocr import MAX_SIDE

__all__ = ["Block", "PageLine", "is_blank", "measure_ink", "read_page_image", "working_image"]


# --- running the engines -------------------------------------------------------------------------


def read_page_image(
    image: Image.Image | np.ndarray,
    ctx: ParseContext | None = None,
    settings: ParseSettings | None = None,
) -> list[Block]:
    """Blocks of a page image in reading order (boxes in pixels of ``image``).

    Raises :class:`~docsight.errors.MissingDependencyError` without the ``ocr`` extra.
    """
    from docsight.vision.layout import LayoutEngine
    from docsight.vision.ocr import OcrEngine
    from docsight.vision.tables import TableEngine

    settings = settings or ParseSettings()
    cache = ctx.cache if ctx is not None else None
    work, factor = working_image(image)
    if is_blank(work):
        return []
    digest = pixel_digest(work)
    lines = OcrEngine.shared().recognize(work, cache, digest=digest)
    if not lines:
        return []
    regions = (
        LayoutEngine.shared().detect(work, cache, digest=digest) if settings.layout_model else []
    )
    engine = TableEngine.shared()

    def table_rows(box: Box, inner: list[OcrLine]) -> list[list[str]]:
        x0, y0 = max(0, int(box[0])), max(0, int(box[1]))
        x1, y1 = min(work.shape[1], int(box[2] + 0.999)), min(work.shape[0], int(box[3] + 0.999))
        shifted = [
            OcrLine(ln.text, (ln.x0 - x0, ln.top - y0, ln.x1 - x0, ln.bottom - y0), ln.score)
            for ln in inner
        ]
        return engine.rows(work[y0:y1, x0:x1], shifted, cache)

    ink = measure_ink(work, lines)
    blocks = assemble_blocks(
        lines, regions, (work.shape[1], work.shape[0]), ink=ink, table_rows=table_rows
    )
    return blocks if factor == 1.0 else [b.scaled(factor) for b in blocks]


def working_image(
    image: Image.Image | np.ndarray, max_side: int = MAX_SIDE
) -> tuple[np.ndarray, float]:
    """The RGB array OCR runs on (at most ``max_side`` pixels long) and the factor from its
    pixels back to the image's."""
    pil = image if isinstance(image, Image.Image) else Image.fromarray(np.asarray(image))
    pil = flatten_image(pil)
    longest = max(pil.size)
    if longest <= max_side:
        return np.asarray(pil), 1.0
    factor = longest / max_side
    size = (max(1, round(pil.width / factor)), max(1, round(pil.height / factor)))
    return np.asarray(pil.resize(size, Image.Resampling.LANCZOS, reducing_gap=3.0)), factor


def is_blank(rgb: np.ndarray) -> bool:
    """Whether the image shows nothing (a blank or uniformly tinted page): a few thousand
    pixels decide, where text detection would spend seconds finding nothing."""
    sample = rgb[::4, ::4].mean(axis=2) if rgb.ndim == 3 else rgb[::4, ::4]
    if sample.size == 0:
        return True
    background = float(np.median(sample))
    return float(np.mean(np.abs(sample - background) > 48)) < 0.0002


def measure_ink(rgb: np.ndarray, lines: Sequence[OcrLine]) -> list[Ink]:
    """Stroke width and core height of each line (see :class:`~.common.Ink`). Ink is whatever
    contrasts with the box's background, so light text on dark slides counts too."""
    gray = rgb.mean(axis=2) if rgb.ndim == 3 else rgb.astype(np.float64)
    out: list[Ink] = []
    for ln in lines:
        x0, y0 = max(0, int(ln.x0)), max(0, int(ln.top))
        x1, y1 = int(ln.x1), int(ln.bottom)
        sub = gray[y0:y1, x0:x1]
        if ln.vertical or sub.size < 16:
            out.append(Ink())
            continue
        lo, hi = np.percentile(sub, (5, 95))
        if hi - lo < 40:  # no contrast: nothing to measure
            out.append(Ink())
            continue
        ink = sub < (lo + hi) / 2
        if ink.mean() > 0.5:
            ink = ~ink
        starts = np.count_nonzero(np.diff(ink.astype(np.int8), axis=1, prepend=0) == 1)
        rows = ink.mean(axis=1)
        # Ascenders and descenders are sparse rows; the body of the letters is dense.
        core = float(np.count_nonzero(rows >= 0.35 * rows.max())) if rows.max() > 0 else 0.0
        out.append(Ink(float(ink.sum()) / starts if starts else 0.0, core))
    return out
