"""The OCR, layout and table-structure model layer (the ``ocr`` extra), shared by everyone who
meets pixels: parsers reading scanned pages and image files, ingestion reading text in pictures,
and questions asked with an image.

* :mod:`.ocr` — :class:`~.ocr.OcrEngine`: text lines with boxes and confidences (RapidOCR);
* :mod:`.layout` — :class:`~.layout.LayoutEngine`: labelled regions (rapid-layout, CDLA classes);
* :mod:`.tables` — :class:`~.tables.TableEngine`: rows of a table crop (rapid-table) and
  :func:`~.tables.html_to_rows`;
* :mod:`.common` — the shapes they return (:class:`~.common.OcrLine`, :class:`~.common.Region`,
  boxes and blocks) and the lazy loading of the model packages.

Importing this package (or any module in it) loads no model and no optional dependency; the
engines import rapidocr, rapid-layout, rapid-table, OpenCV and onnxruntime on first use and raise
:class:`~docsight.errors.MissingDependencyError` naming the ``ocr`` extra when they are missing.
Every model output is cached through :class:`~docsight.cache.JsonCache` when one is given.
"""

from __future__ import annotations

from docsight.vision.common import OcrLine, Region, ocr_available

__all__ = ["OcrLine", "Region", "ocr_available"]
