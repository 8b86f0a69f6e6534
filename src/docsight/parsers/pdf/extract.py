"""Reading one page with pdfminer (``parse.pdf_objects = "pdfminer"``), and renders and crops.

:class:`Objects` is what the table and figure passes read of a page. Here pdfplumber (pdfminer)
supplies it: glyphs with font names and sizes, vector objects and embedded images. Pages whose
vector content would make pdfminer crawl (maps, dense charts) take their glyphs from pdfium's
text layer instead; :func:`vector_objects` counts what a page draws so the caller can choose.
By default pdfium supplies all of it (:mod:`.pdfium_objects`). pypdfium2 renders pages and crops.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass, field
from typing import Any

from docsight.document.builder import DocumentBuilder
from docsight.parsers.pdf.layout import Glyph, base_font_name
from docsight.parsers.pdf.page import Page, Rect
from docsight.settings import ParseSettings

#: Pages with more vector objects than this take their glyphs from pdfium (pdfminer would spend
#: seconds interpreting paths we only need for tables and charts).
MAX_VECTOR_OBJECTS = 4000
_FPDF_PAGEOBJ_PATH = 2
_FPDF_PAGEOBJ_FORM = 5


@dataclass
class Objects:
    """What one page holds, read straight from pdfminer's layout tree.

    pdfplumber turns every object into a dict of a dozen resolved attributes, which costs more
    than interpreting the page; walking the layout objects ourselves halves extraction time.
    Coordinates are converted exactly as pdfplumber does (top-left origin, media-box offsets).
    """

    glyphs: list[Glyph]
    images: list[Rect]
    paths: list[Rect]
    rules: list[tuple[float, float, float]]
    #: Vertical strokes and filled boxes: without them pdfplumber's ruled-table finder is moot.
    vertical_edges: int
    #: pdfminer's line, rectangle and curve objects, all of them (white ones too) in layout
    #: order: what pdfplumber's table finder reads (see :func:`~.tables.ruled_grids`).
    curves: list[Any] = field(default_factory=list)
    #: The same shapes as pdfplumber-style dicts, when pdfium read the page
    #: (:mod:`.pdfium_objects`): ``curves`` is then empty.
    shapes: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def read(cls, plumber_page: Any) -> Objects:
        from pdfminer.layout import LTChar, LTContainer, LTCurve, LTImage, LTLine, LTRect

        height = plumber_page.height
        mb_x0, mb_top = plumber_page.mediabox[0], plumber_page.mediabox[1]
        out = cls([], [], [], [], 0)
        stack = [iter(plumber_page.layout)]
        while stack:
            obj = next(stack[-1], None)
            if obj is None:
                stack.pop()
                continue
            if isinstance(obj, LTChar):
                if obj.get_text().startswith("(cid:"):
                    continue  # a glyph without a Unicode mapping; its code means nothing
                top, bottom = height - obj.y1 + mb_top, height - obj.y0 + mb_top
                a, b, c, d, _, f = obj.matrix
                if a > 0 and d > 0 and abs(b) < 1e-3 and abs(c) < 1e-3:
                    # Boxes hang from each font's descent, which math fonts (CMSY, CMEX) set
                    # absurdly deep; anchoring every glyph to its baseline keeps a line together.
                    bottom = height - f + mb_top + 0.2 * (bottom - top)
                    top = bottom - (obj.y1 - obj.y0)
                out.glyphs.append(
                    Glyph(
                        obj.get_text(),
                        obj.x0 + mb_x0,
                        top,
                        obj.x1 + mb_x0,
                        bottom,
                        obj.size,
                        base_font_name(str(obj.fontname)),
                        bool(obj.upright),
                    )
                )
                continue
            box = (
                obj.x0 + mb_x0,
                height - obj.y1 + mb_top,
                obj.x1 + mb_x0,
                height - obj.y0 + mb_top,
            )
            if isinstance(obj, LTImage):
                out.images.append(box)
            elif isinstance(obj, LTCurve):
                out.curves.append(obj)
                if not obj.stroke and (not obj.fill or _is_white(obj.non_stroking_color)):
                    continue  # white backgrounds and knock-outs draw nothing visible
                w, h = box[2] - box[0], box[3] - box[1]
                if h <= 2.5 and w >= 40 and isinstance(obj, (LTLine, LTRect)):
                    out.rules.append((box[1], box[0], box[2]))
                elif isinstance(obj, LTRect) or (isinstance(obj, LTLine) and w <= 2.5):
                    out.vertical_edges += 1
                out.paths.append(box)
            elif isinstance(obj, LTContainer):
                stack.append(iter(obj))
        return out


def vector_objects(pdfium_page: Any) -> int:
    """Path objects on the page, counting inside form XObjects one level deep."""
    import pypdfium2.raw as raw

    n = raw.FPDFPage_CountObjects(pdfium_page.raw)
    if n > MAX_VECTOR_OBJECTS:
        return n
    total = 0
    for k in range(n):
        obj = raw.FPDFPage_GetObject(pdfium_page.raw, k)
        kind = raw.FPDFPageObj_GetType(obj)
        if kind == _FPDF_PAGEOBJ_PATH:
            total += 1
        elif kind == _FPDF_PAGEOBJ_FORM:
            total += raw.FPDFFormObj_CountObjects(obj)
    return total


def _is_white(color: Any) -> bool:
    if isinstance(color, (int, float)):
        return color >= 0.99
    if isinstance(color, (tuple, list)) and all(isinstance(c, (int, float)) for c in color):
        if len(color) in (1, 3):
            return all(c >= 0.99 for c in color)
        if len(color) == 4:  # CMYK
            return all(c <= 0.01 for c in color)
    return False


def render_page(
    pdfium_page: Any, page: Page, settings: ParseSettings, builder: DocumentBuilder
) -> tuple[Any, float]:
    scale = _scale(page, settings)
    try:
        image = pdfium_page.render(scale=scale).to_pil().convert("RGB")
    except Exception as exc:
        builder.warn(f"page {page.index + 1}: render failed ({exc})")
        return None, scale
    asset = builder.add_asset(
        "page",
        "image/png",
        lambda: _png(image),
        image.width,
        image.height,
        render={"page": page.index, "scale": scale},
    )
    builder.set_page_image(page.index, asset)
    return image, scale


def _scale(page: Page, settings: ParseSettings) -> float:
    scale = settings.render_dpi / 72.0
    pixels = page.width * page.height * scale * scale
    if pixels > settings.max_render_pixels:
        scale *= (settings.max_render_pixels / pixels) ** 0.5
        # pdfium rounds the bitmap size up; keep the rounded size within the limit too.
        while math.ceil(page.width * scale) * math.ceil(page.height * scale) > (
            settings.max_render_pixels
        ):
            scale *= 0.995
    return scale


def _png(image: Any) -> bytes:
    out = io.BytesIO()
    image.save(out, format="PNG", compress_level=1)
    return out.getvalue()


def crop_asset(
    pdfium_page: Any,
    page: Page,
    box: tuple[float, float, float, float],
    render: Any,
    scale: float,
    settings: ParseSettings,
    builder: DocumentBuilder,
    render_scale: float | None = None,
) -> str | None:
    """PNG crop of ``box`` (frame coordinates) from the page render, or a render of just it.

    ``scale`` maps points to the render's pixels; ``render_scale`` is the scale the render was
    made at, when it differs (pdfium rounds bitmap sizes up), so the crop's recipe makes the
    same pixels again.
    """
    x0, top, x1, bottom = (
        max(0.0, box[0]),
        max(0.0, box[1]),
        min(page.width, box[2]),
        min(page.height, box[3]),
    )
    if x1 - x0 < 1 or bottom - top < 1:
        return None
    recipe: dict[str, Any]
    try:
        if render is not None:
            pixels = (
                int(x0 * scale),
                int(top * scale),
                int(x1 * scale + 0.999),
                int(bottom * scale + 0.999),
            )
            image = render.crop(pixels)
            recipe = {"page": page.index, "scale": render_scale or scale, "crop": list(pixels)}
        else:
            # pypdfium2 applies the crop margins after rotation, i.e. in our frame.
            margins = (x0, page.height - bottom, page.width - x1, top)
            alone = _scale(page, settings)
            image = pdfium_page.render(scale=alone, crop=margins).to_pil()
            image = image.convert("RGB")
            recipe = {"page": page.index, "scale": alone, "margins": list(margins)}
    except Exception as exc:
        builder.warn(f"page {page.index + 1}: crop failed ({exc})")
        return None
    return builder.add_asset(
        "crop", "image/png", _png(image), image.width, image.height, render=recipe
    )
