"""Reading a raster page (a scanned PDF page, a PNG/JPEG/TIFF frame) into blocks.

:func:`.page.read_page_image` runs the model layer of :mod:`docsight.vision` (OCR, layout regions,
table structure) and :mod:`.assemble` turns its output into blocks in reading order with the PDF
parser's geometry (lines, XY-cut reading order, paragraph grouping). Importing this package loads
no model.
"""

from __future__ import annotations
