"""Page images and crops made again from a document's source file, when they are asked for.

The recipe an asset keeps is what parsing did: render page ``page`` of the PDF at ``scale``
(whole, or with ``margins`` cut off in points), then cut the pixel box ``crop``; or decode
``frame`` of an image file as the image parser does. The same recipe on the same bytes gives the
same pixels, so a cited page looks exactly as it did at ingestion, with nothing stored but the
file. Results go into a small in-memory cache (``render_cache_mb``), so the pages an answer
cites are rendered once per process.

Renders run in the calling process, but only on files that ingestion already rendered inside a
worker under its time and memory limits: a page whose render failed there has no recipe.
"""

from __future__ import annotations

import dataclasses
import io
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

from docsight.document.model import Asset
from docsight.errors import StoreError

#: pypdfium2 must not render from two threads at once.
_PDFIUM = threading.Lock()


class Renderer:
    """Makes assets from recipes, with an LRU cache of the encoded images."""

    def __init__(self, cache_mb: float = 64.0) -> None:
        self.cache_bytes = int(cache_mb * 2**20)
        self._cache: OrderedDict[str, bytes] = OrderedDict()
        self._cached = 0
        self._lock = threading.Lock()

    def render(
        self, asset: Asset, source: Path, media_type: str, *, dpi: float | None = None
    ) -> Asset:
        """``asset`` with its image made from ``source`` (at ``dpi`` rather than as ingestion
        rendered it, for a PDF page or crop, when given); raises :class:`StoreError` naming the
        asset when the file cannot be read or rendered."""
        recipe = asset.render or {}
        if dpi and media_type == "application/pdf" and recipe.get("scale"):
            recipe = at_dpi(recipe, dpi)
        key = asset.id if recipe is asset.render or not recipe else f"{asset.id}@{dpi:g}"
        data = self._get(key)
        if data is None:
            try:
                data = make_image(source, media_type, recipe)
            except StoreError:
                raise
            except Exception as exc:
                raise StoreError(
                    f"the {asset.kind} image {asset.id[:12]} could not be made again from "
                    f"{source.name} ({type(exc).__name__}: {exc})"
                ) from exc
            self._put(key, data)
        return dataclasses.replace(asset, data=data)

    def _get(self, key: str) -> bytes | None:
        with self._lock:
            data = self._cache.get(key)
            if data is not None:
                self._cache.move_to_end(key)
            return data

    def _put(self, key: str, data: bytes) -> None:
        if len(data) > self.cache_bytes:
            return
        with self._lock:
            if key in self._cache:
                return
            self._cache[key] = data
            self._cached += len(data)
            while self._cached > self.cache_bytes:
                _, old = self._cache.popitem(last=False)
                self._cached -= len(old)


#: The most pixels a render at another resolution may have (a poster-sized page at 300 dpi
#: would otherwise decode into gigabytes).
MAX_RENDER_PIXELS = 40_000_000


def at_dpi(recipe: dict[str, Any], dpi: float) -> dict[str, Any]:
    """A PDF recipe rendering the same region at ``dpi``: the scale changes and the pixel crop
    box scales with it, so a figure crop stays the same figure."""
    factor = (dpi / 72.0) / float(recipe["scale"])
    crop = recipe.get("crop")
    if crop:
        x0, y0, x1, y1 = (float(v) for v in crop)
        area = (x1 - x0) * (y1 - y0) * factor * factor
        if area > MAX_RENDER_PIXELS:
            factor *= (MAX_RENDER_PIXELS / area) ** 0.5
        crop = [round(x0 * factor), round(y0 * factor), round(x1 * factor), round(y1 * factor)]
    scaled = dict(recipe, scale=float(recipe["scale"]) * factor)
    if crop:
        scaled["crop"] = crop
    return scaled


def make_image(source: Path, media_type: str, recipe: dict[str, Any]) -> bytes:
    """The PNG a recipe describes, from the source file."""
    if media_type == "application/pdf":
        image = _pdf_image(source, recipe)
    else:
        from docsight.parsers.image import render_frame

        image = render_frame(source.read_bytes(), media_type, recipe)
    out = io.BytesIO()
    image.save(out, format="PNG", compress_level=1)  # as parsing wrote it: the same bytes
    return out.getvalue()


def _pdf_image(source: Path, recipe: dict[str, Any]) -> Any:
    import pypdfium2 as pdfium

    with _PDFIUM:
        document = pdfium.PdfDocument(str(source))
        try:
            page = document[int(recipe["page"])]
            scale = float(recipe["scale"])
            width, height = page.get_size()
            if not recipe.get("crop") and width * height * scale * scale > MAX_RENDER_PIXELS:
                scale = (MAX_RENDER_PIXELS / (width * height)) ** 0.5  # a poster-sized page
            margins = recipe.get("margins")
            if margins:
                bitmap = page.render(scale=scale, crop=tuple(margins))
            else:
                bitmap = page.render(scale=scale)
            image = bitmap.to_pil().convert("RGB")
        finally:
            document.close()
    crop = recipe.get("crop")
    return image.crop(tuple(crop)) if crop else image
