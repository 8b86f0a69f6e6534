"""Search results and where evidence sits."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from docsight.document.model import BBox


class Location(BaseModel):
    """Where a piece of evidence is: document, 0-based page, region, section, chunk, elements."""

    doc_id: str
    doc_name: str
    page: int
    bbox: BBox | None = None
    section_path: list[str] = Field(default_factory=list)
    #: Empty for a page without text (cited as a whole page).
    chunk_id: str | None = None
    element_ids: list[str] = Field(default_factory=list)

    def location(self) -> dict[str, Any]:
        """The location fields only, to build another kind of record at the same place."""
        return {name: getattr(self, name) for name in Location.model_fields}


class Hit(Location):
    """One search result: a chunk, or a page represented by its best chunk."""

    unit: Literal["chunk", "page"] = "chunk"
    rank: int = Field(ge=1)
    #: Fused score (reciprocal rank fusion); higher is better, comparable within one result list.
    score: float
    pages: list[int] = Field(default_factory=list)
    kind: str = "text"
    text: str
    #: Raw score per channel (BM25 score, cosine similarity, ...).
    scores: dict[str, float] = Field(default_factory=dict)
    #: 1-based rank per channel.
    ranks: dict[str, int] = Field(default_factory=dict)
