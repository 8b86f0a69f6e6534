"""Chunks: the retrievable units, each pointing back to its elements and pages."""

from __future__ import annotations

from pydantic import BaseModel, Field

from docsight.document.ids import content_id
from docsight.document.model import BBox


class Chunk(BaseModel):
    id: str
    doc_id: str
    doc_name: str
    #: What is indexed and embedded: the section path prefix followed by ``body``.
    text: str
    #: The content itself, as shown to readers and models (Markdown for tables).
    body: str
    #: ``text``, ``table``, ``figure``, ... : the kind of content the chunk holds.
    kind: str = "text"
    strategy: str = "element"
    section_path: list[str] = Field(default_factory=list)
    element_ids: list[str] = Field(default_factory=list)
    pages: list[int] = Field(default_factory=list)
    #: The first page, where a citation points.
    page: int = Field(ge=0)
    #: Union of the chunk's element boxes on ``page``.
    bbox: BBox | None = None
    #: Position in the document's chunk sequence (reading order).
    order: int = Field(ge=0)
    n_words: int = 0
    #: Assets the chunk shows: figure crops, or the page render of a page chunk.
    image_ids: list[str] = Field(default_factory=list)

    @staticmethod
    def make_id(doc_id: str, strategy: str, order: int, text: str) -> str:
        return content_id("chunk", doc_id, strategy, order, text)
