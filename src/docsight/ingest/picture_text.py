"""Text inside pictures: OCR for images that carry words the text layer does not have.

A raster chart pasted into a report, a screenshot in a manual, a picture of a slide in a Word file:
their words are not in any text layer. Pictures large enough to matter and without text of their
own are read by the same (cached) OCR engine as scanned pages, in any format, before descriptions
are built, so the words become searchable and feed the picture's description.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Mapping
from typing import Any

from docsight.document.model import Asset, Element, ElementKind, ParsedDocument
from docsight.parsers.base import ParseContext
from docsight.settings import ParseSettings

#: Pictures smaller than this (pixels per side) hold no readable text at rendering resolution.
_MIN_SIDE = 64
#: At most this many pictures are read per document, so a picture-heavy file stays affordable.
MAX_PICTURES = 100


def unread_pictures(elements: Iterable[Element]) -> int:
    """The pictures among ``elements`` that picture OCR may read (an upper bound: the size
    and the crop are looked at when they are read), for a job's time budget."""
    return sum(
        1 for e in elements if e.kind == ElementKind.FIGURE and e.image_id and not e.text.strip()
    )


def read_picture_text(
    parsed: ParsedDocument, context: ParseContext, settings: ParseSettings
) -> int:
    """OCR pictures without text; returns how many were read. Needs the ``ocr`` extra."""
    reader = PictureReader(context, settings)
    assets = {a.id: a for a in parsed.assets}
    reader.read(parsed.document.indexable_elements(), assets, parsed.warnings)
    return reader.count


class PictureReader:
    """:func:`read_picture_text` over a document's elements a batch at a time, in order (the
    batches of a streamed parse, :mod:`docsight.document.stream`): the limit of pictures per
    document holds over all the batches."""

    def __init__(self, context: ParseContext, settings: ParseSettings) -> None:
        self.context = context
        self.settings = settings
        self.count = 0
        self._done = False
        self._engine: Any = None
        self._usable = settings.ocr != "never"

    def read(
        self, elements: Iterable[Element], assets: Mapping[str, Asset], warnings: list[str]
    ) -> None:
        """OCR the pictures without text among the indexable ``elements`` (in reading order);
        their crops are in ``assets`` (by id); what went wrong is added to ``warnings``."""
        if self._done or not self._usable:
            return
        if self._engine is None:
            from docsight.vision.common import ocr_available

            if not ocr_available():
                self._usable = False
                return
            from docsight.vision.ocr import OcrEngine

            self._engine = OcrEngine.shared()
        for element in elements:
            if not element.is_indexable:
                continue
            if self.count >= MAX_PICTURES:
                warnings.append(f"text was read from the first {MAX_PICTURES} pictures only")
                self._done = True
                return
            if (
                element.kind != ElementKind.FIGURE
                or element.text.strip()
                or element.attrs.get("ocr")
            ):
                continue
            asset = assets.get(element.image_id or "")
            share = element.bbox.area if element.bbox is not None else 1.0
            if asset is None or share < self.settings.ocr_picture_min_area:
                continue
            self._read_one(element, asset, warnings)

    def _read_one(self, element: Element, asset: Asset, warnings: list[str]) -> None:
        from PIL import Image

        try:
            with Image.open(io.BytesIO(asset.data)) as image:
                if min(image.size) < _MIN_SIDE:
                    return
                lines = self._engine.recognize(image.convert("RGB"), self.context.cache)
        except Exception as exc:  # an unreadable crop must not fail the document
            warnings.append(f"could not read text in a picture on page {element.page + 1}: {exc}")
            return
        self.count += 1
        confident = [ln for ln in lines if ln.score >= 0.6 and ln.text.strip()]
        if not confident:
            return
        # Lines top to bottom, then left to right: good enough for labels and short captions.
        confident.sort(key=lambda ln: (round(ln.box[1] / 12), ln.box[0]))
        element.text = "\n".join(ln.text.strip() for ln in confident)
        element.attrs["ocr"] = True
        element.attrs["labels"] = element.text
        element.attrs["confidence"] = round(sum(ln.score for ln in confident) / len(confident), 3)
