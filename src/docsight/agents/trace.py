"""What answering did, step by step: the trace an answer carries.

Every mode records its steps in the order they ran, so a user (``docsight ask --trace``) or a
test can see which question was searched, which pages were read and what each step decided.
A step is data, not a log line: it crosses the API and is stored with a conversation.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Literal

from pydantic import BaseModel, Field

StepKind = Literal[
    "rewrite", "plan", "retrieve", "seek", "inspect", "read", "refine", "answer", "verify"
]


class TraceStep(BaseModel):
    kind: StepKind
    #: What the step was given (a question, a sub-question, a query).
    input: str = ""
    #: What it produced or decided, in a line.
    output: str = ""
    #: Pages it saw, as ``(document name, 0-based page)``.
    pages: list[tuple[str, int]] = Field(default_factory=list)
    #: Model tokens it spent (0 offline).
    tokens: int = 0
    seconds: float = 0.0
    #: ``model`` when a language model did the step, else ``offline``.
    by: Literal["model", "offline"] = "offline"


class Trace:
    """Collects steps; ``step`` times one. ``listener`` hears each step as it finishes (a
    server streaming progress); what it raises is not answering's problem and is ignored."""

    def __init__(self, listener: Callable[[TraceStep], None] | None = None) -> None:
        self.steps: list[TraceStep] = []
        self.listener = listener
        # Steps still running, innermost last: a model call made deep inside a step (the
        # answerer's, within ``inspect`` or ``read``) is charged to the step that made it.
        self._open: list[TraceStep] = []

    def charge(self, tokens: int) -> None:
        """Add a model call's tokens to the innermost running step (none running: dropped)."""
        if self._open and tokens > 0:
            self._open[-1].tokens += tokens

    @contextmanager
    def step(self, kind: StepKind, input: str = "") -> Iterator[TraceStep]:
        record = TraceStep(kind=kind, input=input)
        started = time.perf_counter()
        self._open.append(record)
        try:
            yield record
        finally:
            self._open.remove(record)
            record.seconds = round(time.perf_counter() - started, 4)
            self.steps.append(record)
            if self.listener is not None:
                try:
                    self.listener(record)
                except Exception:  # a listener that failed (a closed stream) stops listening
                    self.listener = None
