"""OCR, layout regions and table structure for page images (the ``ocr`` extra).

Reusable by every parser that meets a raster page: scanned or image-only PDF pages, PNG/JPEG/TIFF
files, and later slides or office documents that embed pictures of text.

* :mod:`.ocr` — :class:`~.ocr.OcrEngine`: text lines with boxes and confidences (RapidOCR);
* :mod:`.layout` — :class:`~.layout.LayoutEngine`: labelled regions (rapid-layout, CDLA classes);
* :mod:`.tables` — :class:`~.tables.TableEngine`: rows of a table crop (rapid-table) and
  :func:`~.tables.html_to_rows`;
* :mod:`.page` — :func:`~.page.read_page_image`: all three combined into blocks in reading order,
  with the PDF parser's geometry (lines, XY-cut reading order, paragraph grouping).

Importing this package (or any module in it) loads no model and no optional dependency; the
engines import rapidocr, rapid-layout, rapid-table, OpenCV and onnxruntime on first use and raise
:class:`~docsight.errors.MissingDependencyError` naming the ``ocr`` extra when they are missing.
Every model output is cached through :class:`~docsight.cache.JsonCache` when one is given.
"""

from __future__ import annotations

from docsight.parsers.vision.common import OcrLine, Region, ocr_available

__all__ = ["OcrLine", "Region", "ocr_available"]
