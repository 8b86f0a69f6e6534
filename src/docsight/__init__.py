"""docsight: question answering and evidence retrieval over visually rich documents.

Importing the package is cheap: the public names below load their modules on first use, and no
model, PDF library or database is touched until a method needs it.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_LAZY = {
    "DocSight": "docsight.api",
    "Settings": "docsight.settings",
    "Answer": "docsight.agents.answer",
    "Citation": "docsight.agents.answer",
    "Hit": "docsight.retrieval.hit",
    "IngestReport": "docsight.ingest.report",
    "Document": "docsight.document.model",
    "DocsightError": "docsight.errors",
}

if TYPE_CHECKING:
    from docsight.agents.answer import Answer, Citation
    from docsight.api import DocSight
    from docsight.document.model import Document
    from docsight.errors import DocsightError
    from docsight.ingest.report import IngestReport
    from docsight.retrieval.hit import Hit
    from docsight.settings import Settings


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'docsight' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "Answer",
    "Citation",
    "DocSight",
    "DocsightError",
    "Document",
    "Hit",
    "IngestReport",
    "Settings",
    "__version__",
]
