"""Answers with numbered citations."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, Field

from docsight.agents.trace import TraceStep
from docsight.retrieval.hit import Hit, Location

NOT_ANSWERABLE = "Not answerable"


class Source(Location):
    """A numbered piece of evidence shown to the answerer."""

    n: int = Field(ge=1)
    #: Rank of the hit in retrieval (sources are numbered in document order instead).
    rank: int = Field(default=1, ge=1)
    kind: str = "text"
    text: str
    #: Assets a vision model could look at: figure crops, page renders.
    image_ids: list[str] = Field(default_factory=list)
    #: Why it was read: ``hit`` (retrieved), or an expansion of a hit along the content graph:
    #: ``artifact`` (the table or figure a caption names, the text introducing a table),
    #: ``reference`` (what the hit refers to), ``continuation`` (across a page break), ``page``
    #: (the rest of a page several hits fell on), ``neighbour`` (reading order).
    via: str = "hit"

    @classmethod
    def from_hit(cls, n: int, hit: Hit) -> Source:
        return cls(n=n, rank=hit.rank, kind=hit.kind, text=hit.text, **hit.location())

    def label(self) -> str:
        where = f"{self.doc_name}, page {self.page + 1}"
        if self.section_path:
            where += f", {' > '.join(self.section_path)}"
        return where


class Citation(Location):
    """A source the answer relies on; ``n`` matches the ``[n]`` marker in the answer text.

    ``page`` is 0-based and ``bbox`` is normalised with a top-left origin.
    """

    n: int = Field(ge=1)
    #: The sentence or row quoted, for extractive answers.
    quote: str | None = None

    @classmethod
    def from_source(cls, source: Source, quote: str | None = None) -> Citation:
        return cls(n=source.n, quote=quote, **source.location())


class Answer(BaseModel):
    question: str
    #: The answer with ``[n]`` citation markers, or "Not answerable". Markdown with no raw HTML,
    #: no images and links only to http(s), mailto or relative URLs, safe to render as it is:
    #: :meth:`DocSight.ask` passes it through ``document.sanitize.inert_markdown`` (so does each
    #: citation's ``quote``). ``sources`` hold the documents' text unchanged.
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
    #: The extractive answerer's calibrated probability that the sources answer the question
    #: (``agents.refusal``); ``None`` for model-written answers.
    confidence: float | None = None
    #: For a refusal: what was looked for, and where the closest evidence was.
    explanation: str | None = None
    model: str | None = None
    warnings: list[str] = Field(default_factory=list)
    #: How it was reached: ``fast`` (one retrieval), ``agent`` (seeker and inspector rounds) or
    #: ``plan`` (sub-questions); ``mode`` says who wrote the words.
    strategy: Literal["fast", "agent", "plan"] = "fast"
    #: The steps answering took, in order (``agents.trace``).
    trace: list[TraceStep] = Field(default_factory=list)
    #: In a conversation: its id, and the question as searched when the follow-up was
    #: rewritten to stand alone (``None`` when it was searched as asked).
    session: str | None = None
    standalone: str | None = None

    @classmethod
    def not_answerable(
        cls,
        question: str,
        mode: Literal["llm", "extractive"],
        sources: Sequence[Source],
        evidence: float,
        model: str | None = None,
    ) -> Answer:
        """The refusal every answerer starts from and returns when the evidence falls short."""
        return cls(
            question=question,
            answer=NOT_ANSWERABLE,
            answerable=False,
            mode=mode,
            sources=list(sources),
            evidence=round(evidence, 4),
            model=model,
        )


#: A citation marker, "[n]", in an answer's text.
CITATION_MARKER = re.compile(r"\[(\d+)\]")
_MARKER = CITATION_MARKER


def number_citations(answer: Answer) -> Answer:
    """The answer with its cited sources numbered 1, 2, ... in the order the text first cites
    them, the same numbers in ``citations`` and ``sources`` (sources the answer does not cite
    follow, in their order). Answerers number sources in reading order, so an answer citing
    the second and fourth read ``[2] ... [4]``; a reader expects ``[1] ... [2]``.

    Only ``[n]`` markers of cited sources change, and none inside a quoted passage (a paper's
    own "[4]" quoted by the extractive answerer stays as written). ``removed_citations`` keep
    the numbers the model wrote. Which sources are cited, and the words, do not change.
    """
    cited = {c.n for c in answer.citations}
    if not cited:
        return answer
    text = answer.answer
    quoted = _quoted_spans(text, [c.quote for c in answer.citations if c.quote])
    markers = [
        m
        for m in _MARKER.finditer(text)
        if int(m.group(1)) in cited and not any(a <= m.start() < b for a, b in quoted)
    ]
    order = list(dict.fromkeys(int(m.group(1)) for m in markers))
    order += sorted(cited - set(order))
    mapping = {old: new for new, old in enumerate(order, start=1)}
    for source in sorted(answer.sources, key=lambda s: s.n):
        mapping.setdefault(source.n, len(mapping) + 1)
    if all(old == new for old, new in mapping.items()):
        return answer
    pieces: list[str] = []
    last = 0
    for m in markers:
        pieces.append(text[last : m.start()])
        pieces.append(f"[{mapping[int(m.group(1))]}]")
        last = m.end()
    pieces.append(text[last:])
    citations = sorted(
        (c.model_copy(update={"n": mapping[c.n]}) for c in answer.citations), key=lambda c: c.n
    )
    sources = sorted(
        (s.model_copy(update={"n": mapping.get(s.n, s.n)}) for s in answer.sources),
        key=lambda s: s.n,
    )
    return answer.model_copy(
        update={"answer": "".join(pieces), "citations": citations, "sources": sources}
    )


def _quoted_spans(text: str, quotes: Sequence[str]) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    for quote in quotes:
        start = text.find(quote)
        while start != -1:
            spans.append((start, start + len(quote)))
            start = text.find(quote, start + 1)
    return spans
