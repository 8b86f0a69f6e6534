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

    def render(self, asset: Asset, source: Path, media_type: str) -> Asset:
        """``asset`` with its image made from ``source``; raises :class:`StoreError` naming
        the asset when the file cannot be read or rendered."""
        data = self._get(asset.id)
        if data is None:
            try:
                data = make_image(source, media_type, asset.render or {})
            except StoreError:
                raise
            except Exception as exc:
                raise StoreError(
                    f"the {asset.kind} image {asset.id[:12]} could not be made again from "
                    f"{source.name} ({type(exc).__name__}: {exc})"
                ) from exc
            self._put(asset.id, data)
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
            margins = recipe.get("margins")
            if margins:
                bitmap = page.render(scale=recipe["scale"], crop=tuple(margins))
            else:
                bitmap = page.render(scale=recipe["scale"])
            image = bitmap.to_pil().convert("RGB")
        finally:
            document.close()
    crop = recipe.get("crop")
    return image.crop(tuple(crop)) if crop else image
