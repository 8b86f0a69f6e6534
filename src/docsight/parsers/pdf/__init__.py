"""Born-digital PDF: pypdfium2 for glyphs, shapes, images and renders; pdfplumber's finder for
ruled tables.

Modules, in the order the parse uses them:

* :mod:`.parser` — :class:`PdfParser`: opening and validation, metadata and outline, the passes;
* :mod:`.pdfium_objects` — glyphs, images and drawn shapes of a page from pdfium's objects and
  text layer (the default, ``parse.pdf_objects = "pdfium"``);
* :mod:`.extract` — the same from pdfminer through pdfplumber (``parse.pdf_objects =
  "pdfminer"``), renders and crops;
* :mod:`.tables` and :mod:`.figures` — tables and figures found on a page (atoms);
* :mod:`.layout` and :mod:`.reading` — geometry: words, lines, reading order, blocks;
* :mod:`.furniture` — running headers and footers;
* :mod:`.roles` — title, headings and levels, captions and other block kinds;
* :mod:`.emit` — elements in reading order through the document builder;
* :mod:`.passes` — passes 2 and 3 page by page, the pages waiting packed between them;
* :mod:`.parts` — a long file's pass 1 over page ranges in several workers;
* :mod:`.page` — the per-page working state the passes share.
"""

from __future__ import annotations

from docsight.parsers.pdf.parser import PdfParser

__all__ = ["PdfParser"]
