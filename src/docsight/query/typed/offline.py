"""The offline typed parsers: one per image type, from the image's OCR lines and pixels.

Each class has ``type``, ``version`` (``offline-<type>/1``, bumped whenever its output would
change) and ``parse(image) -> TypedText | None``. They need no model beyond the OCR that
already ran when the image was loaded (and the table structure engine, for tables, when the
``ocr`` extra is installed). The parsers live in modules by kind; this module names them.
"""

from __future__ import annotations

from docsight.query.image import ImageType, TypedParser
from docsight.query.typed.offline_charts import OfflineChartParser
from docsight.query.typed.offline_figures import OfflineFigureParser, OfflinePhotographParser
from docsight.query.typed.offline_graphs import (
    OfflineCircuitParser,
    OfflineDiagramParser,
    OfflineMapParser,
)
from docsight.query.typed.offline_tables import OfflineTableParser
from docsight.query.typed.offline_text import (
    OfflineCodeParser,
    OfflineEquationParser,
    OfflineScreenshotParser,
)

#: The offline parser class of every image type.
OFFLINE_PARSERS: dict[ImageType, type] = {
    "chart": OfflineChartParser,
    "table": OfflineTableParser,
    "circuit": OfflineCircuitParser,
    "equation": OfflineEquationParser,
    "screenshot": OfflineScreenshotParser,
    "code": OfflineCodeParser,
    "figure": OfflineFigureParser,
    "diagram": OfflineDiagramParser,
    "map": OfflineMapParser,
    "photograph": OfflinePhotographParser,
}


def offline_parser(kind: ImageType) -> TypedParser:
    """A new offline parser for ``kind``."""
    parser: TypedParser = OFFLINE_PARSERS[kind]()
    return parser


__all__ = [
    "OFFLINE_PARSERS",
    "OfflineChartParser",
    "OfflineCircuitParser",
    "OfflineCodeParser",
    "OfflineDiagramParser",
    "OfflineEquationParser",
    "OfflineFigureParser",
    "OfflineMapParser",
    "OfflinePhotographParser",
    "OfflineScreenshotParser",
    "OfflineTableParser",
    "offline_parser",
]
