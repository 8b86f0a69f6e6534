"""The document model shared by every parser, the store, retrieval and answering."""

from docsight.document.ids import content_id
from docsight.document.model import (
    FURNITURE_KINDS,
    HEADING_KINDS,
    SCHEMA_VERSION,
    Asset,
    BBox,
    Document,
    Element,
    ElementKind,
    Font,
    Hidden,
    Page,
    ParsedDocument,
    Section,
)

__all__ = [
    "FURNITURE_KINDS",
    "HEADING_KINDS",
    "SCHEMA_VERSION",
    "Asset",
    "BBox",
    "Document",
    "Element",
    "ElementKind",
    "Font",
    "Hidden",
    "Page",
    "ParsedDocument",
    "Section",
    "content_id",
]
