"""Answering: from retrieved sources to an answer with citations."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from docsight.agents.answer import NOT_ANSWERABLE, Answer, Citation, Source
from docsight.agents.evidence import Evidence


class Answerer(Protocol):
    """Answers a question from numbered sources.

    Contract: cites only the sources it was given (by their numbers); when the evidence is below
    the configured threshold or the sources do not hold the answer it returns
    ``answerable=False`` with the answer "Not answerable" instead of guessing.
    """

    mode: str

    def answer(self, question: str, sources: Sequence[Source], evidence: Evidence) -> Answer: ...


__all__ = ["NOT_ANSWERABLE", "Answer", "Answerer", "Citation", "Evidence", "Source"]
