"""What evaluation reads and writes: questions with labels, and per-question results.

Every dataset reader converts its source's conventions (1-indexed pages, point-space boxes,
"<doc>#p<page>" ids) into these shapes, so the runner and the metrics see one format: pages are
0-based, boxes are normalised to [0, 1] with a top-left origin, documents are file names.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from docsight.document.model import BBox

NOT_ANSWERABLE = "not answerable"


class Region(BaseModel):
    """An evidence region: a box on a page of the question's document."""

    page: int = Field(ge=0)
    bbox: BBox


class EvalQuestion(BaseModel):
    id: str
    question: str
    #: The gold answer as the source gives it: a string, a number or a list.
    answer: Any = None
    #: The document the question is about (a file name), or None for corpus-wide questions.
    doc: str | None = None
    #: 0-based pages holding the evidence.
    evidence_pages: list[int] = Field(default_factory=list)
    #: Evidence regions, where the source labels them (MMDocIR).
    regions: list[Region] = Field(default_factory=list)
    #: A query image (absolute path), for image + text questions.
    image: str | None = None
    #: Int, Float, Str, List or None (MMLongBench's answer formats), when known.
    answer_format: str | None = None
    #: Document type or domain, for per-domain metrics.
    domain: str | None = None
    #: What kind of evidence it is: "Table", "Chart", "Pure-text (Plain-text)", ...
    evidence_sources: list[str] = Field(default_factory=list)

    @property
    def answerable(self) -> bool:
        return str(self.answer).strip().lower() != NOT_ANSWERABLE


class EvalSet(BaseModel):
    """A dataset read from disk, in docsight's conventions."""

    name: str
    #: The reader that produced it: mmlongbench, mmdocir, vidoseek, mmquery or jsonl.
    format: str
    source: str
    questions: list[EvalQuestion] = Field(default_factory=list)
    #: What the reader converted or left out, in words ("labels were 1-indexed", ...).
    notes: list[str] = Field(default_factory=list)

    def restrict_pages(self, page_counts: dict[str, int]) -> tuple[EvalSet, int]:
        """Drop page labels (and regions) past the end of their document; return the number of
        labels dropped. Questions about documents not in ``page_counts`` keep their labels."""
        dropped = 0
        questions = []
        for q in self.questions:
            count = page_counts.get(q.doc or "")
            if count is None:
                questions.append(q)
                continue
            pages = [p for p in q.evidence_pages if p < count]
            regions = [r for r in q.regions if r.page < count]
            dropped += len(q.evidence_pages) - len(pages)
            questions.append(q.model_copy(update={"evidence_pages": pages, "regions": regions}))
        return self.model_copy(update={"questions": questions}), dropped


class QuestionResult(BaseModel):
    """One question's outcome in a run: what was retrieved, answered and scored."""

    id: str
    question: str
    doc: str | None = None
    domain: str | None = None
    evidence_sources: list[str] = Field(default_factory=list)
    gold_pages: list[int] = Field(default_factory=list)
    #: Retrieved pages as "doc#page" (0-based), best first.
    retrieved: list[str] = Field(default_factory=list)
    scores: list[float] = Field(default_factory=list)
    answer: str | None = None
    gold_answer: Any = None
    answerable: bool | None = None
    citations: list[str] = Field(default_factory=list)
    #: Metric name → value for this question.
    metrics: dict[str, float] = Field(default_factory=dict)
    #: The query image's routed types, and whether its analysis came from the cache.
    image_types: list[str] = Field(default_factory=list)
    image_warm: bool | None = None
    #: Seconds per step: "image", "search", "answer", "judge".
    timings: dict[str, float] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)
