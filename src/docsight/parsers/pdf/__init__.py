"""Born-digital PDF: pdfplumber for glyphs, rules and tables; pypdfium2 for the rest.

Modules, in the order the parse uses them:

* :mod:`.parser` — :class:`PdfParser`: opening and validation, metadata and outline, the passes;
* :mod:`.extract` — glyphs and vector objects of a page (pdfminer, or pdfium's text layer on pages
  too heavy for pdfminer), renders and crops;
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
