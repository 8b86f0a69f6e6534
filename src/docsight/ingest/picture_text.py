"""Text inside pictures: OCR for images that carry words the text layer does not have.

A raster chart pasted into a report, a screenshot in a manual, a picture of a slide in a Word file:
their words are not in any text layer. Pictures large enough to matter and without text of their
own are read by the same (cached) OCR engine as scanned pages, in any format, before descriptions
are built, so the words become searchable and feed the picture's description.
"""

from __future__ import annotations

import io

from docsight.document.model import ElementKind, ParsedDocument
from docsight.parsers.base import ParseContext
from docsight.settings import ParseSettings

#: Pictures smaller than this (pixels per side) hold no readable text at rendering resolution.
_MIN_SIDE = 64
#: At most this many pictures are read per document, so a picture-heavy file stays affordable.
_MAX_PICTURES = 100


def read_picture_text(
    parsed: ParsedDocument, context: ParseContext, settings: ParseSettings
) -> int:
    """OCR pictures without text; returns how many were read. Needs the ``ocr`` extra."""
    if settings.ocr == "never":
        return 0
    from docsight.vision.common import ocr_available

    if not ocr_available():
        return 0
    from PIL import Image

    from docsight.vision.ocr import OcrEngine

    assets = {a.id: a for a in parsed.assets}
    engine = OcrEngine.shared()
    read = 0
    for element in parsed.document.indexable_elements():
        if read >= _MAX_PICTURES:
            parsed.warnings.append(f"text was read from the first {_MAX_PICTURES} pictures only")
            break
        if element.kind != ElementKind.FIGURE or element.text.strip() or element.attrs.get("ocr"):
            continue
        asset = assets.get(element.image_id or "")
        share = element.bbox.area if element.bbox is not None else 1.0
        if asset is None or share < settings.ocr_picture_min_area:
            continue
        try:
            with Image.open(io.BytesIO(asset.data)) as image:
                if min(image.size) < _MIN_SIDE:
                    continue
                lines = engine.recognize(image.convert("RGB"), context.cache)
        except Exception as exc:  # an unreadable crop must not fail the document
            parsed.warnings.append(
                f"could not read text in a picture on page {element.page + 1}: {exc}"
            )
            continue
        read += 1
        confident = [ln for ln in lines if ln.score >= 0.6 and ln.text.strip()]
        if not confident:
            continue
        # Lines top to bottom, then left to right: good enough for labels and short captions.
        confident.sort(key=lambda ln: (round(ln.box[1] / 12), ln.box[0]))
        element.text = "\n".join(ln.text.strip() for ln in confident)
        element.attrs["ocr"] = True
        element.attrs["labels"] = element.text
        element.attrs["confidence"] = round(sum(ln.score for ln in confident) / len(confident), 3)
    return read
