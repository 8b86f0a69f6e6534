"""Answers with numbered citations."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from docsight.document.model import BBox
from docsight.retrieval.hit import Hit

NOT_ANSWERABLE = "Not answerable"


class Source(BaseModel):
    """A numbered piece of evidence shown to the answerer."""

    n: int = Field(ge=1)
    doc_id: str
    doc_name: str
    page: int
    bbox: BBox | None = None
    section_path: list[str] = Field(default_factory=list)
    #: Empty for a page without text (cited as a whole page).
    chunk_id: str | None = None
    element_ids: list[str] = Field(default_factory=list)
    kind: str = "text"
    text: str

    @classmethod
    def from_hit(cls, n: int, hit: Hit) -> Source:
        return cls(
            n=n,
            doc_id=hit.doc_id,
            doc_name=hit.doc_name,
            page=hit.page,
            bbox=hit.bbox,
            section_path=hit.section_path,
            chunk_id=hit.chunk_id,
            element_ids=hit.element_ids,
            kind=hit.kind,
            text=hit.text,
        )

    def label(self) -> str:
        where = f"{self.doc_name}, page {self.page + 1}"
        if self.section_path:
            where += f", {' > '.join(self.section_path)}"
        return where


class Citation(BaseModel):
    """A source the answer relies on; ``n`` matches the ``[n]`` marker in the answer text."""

    n: int = Field(ge=1)
    doc_id: str
    doc_name: str
    #: 0-based page, and the region on it (normalised, top-left origin).
    page: int
    bbox: BBox | None = None
    section_path: list[str] = Field(default_factory=list)
    #: Empty for a page without text (cited as a whole page).
    chunk_id: str | None = None
    element_ids: list[str] = Field(default_factory=list)
    #: The sentence or row quoted, for extractive answers.
    quote: str | None = None

    @classmethod
    def from_source(cls, source: Source, quote: str | None = None) -> Citation:
        return cls(
            n=source.n,
            doc_id=source.doc_id,
            doc_name=source.doc_name,
            page=source.page,
            bbox=source.bbox,
            section_path=source.section_path,
            chunk_id=source.chunk_id,
            element_ids=source.element_ids,
            quote=quote,
        )


class Answer(BaseModel):
    question: str
    #: The answer with ``[n]`` citation markers, or "Not answerable".
    answer: str
    answerable: bool
    #: ``llm``: written by a model from the sources; ``extractive``: sentences and table rows
    #: quoted from the sources, offline.
    mode: Literal["llm", "extractive"]
    citations: list[Citation] = Field(default_factory=list)
    sources: list[Source] = Field(default_factory=list)
    #: Citation numbers the model produced that point at no source it was shown (removed).
    removed_citations: list[int] = Field(default_factory=list)
    #: Strength of the retrieved evidence in [0, 1] (see ``agents.evidence``).
    evidence: float = 0.0
    model: str | None = None
    warnings: list[str] = Field(default_factory=list)
