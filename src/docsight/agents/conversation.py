"""Conversations: follow-up questions rewritten to stand alone before retrieval (MM-BizRAG).

"And in 2023?" cannot be searched; "What was Northwind's revenue in 2023?" can. A follow-up is
rewritten from the conversation so far, and the rewrite is what retrieval and the answerer
see. With a language model the model writes it (JSON, validated); without one, or when the
model fails, rules resolve the two common cases from the previous turn:

* **ellipsis** — "And in 2023?", "What about the T-300?": the previous question with the new
  year, period or name put in place of the old one (or the fragment added when nothing
  matches);
* **pronouns** — "How many employees does it have?": "it", "its", "they", "their" become the
  previous question's main name.

A follow-up also inherits the previous answer's documents as a first scope (the facade widens
to the whole collection when the scoped answer is "Not answerable"), which is how "Which
segment grew fastest?" after a question about one report stays in that report.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field

from docsight.agents.trace import TraceStep

#: Version of the stored conversation format.
CONVERSATION_SCHEMA_VERSION = 1
#: Turns of history shown to a model that rewrites a follow-up.
MODEL_HISTORY_TURNS = 3

_LEAD = re.compile(
    r"^\s*(?:and|but|also|then|so|ok(?:ay)?|and what about|what about|how about|what of|"
    r"and how about|same for|and for|and in)\b[\s,]*",
    re.I,
)
_WH = re.compile(
    r"^\s*(?:who|whom|whose|what|which|when|where|why|how|is|are|was|were|does|do|did|can|"
    r"could|has|have|had|will|would|should|list|name|give|show|tell)\b",
    re.I,
)
_PRONOUN = re.compile(r"\b(it|its|they|their|them|he|she|his|her)\b", re.I)
_YEAR = re.compile(r"\b(?:19|20)\d{2}\b")
_PERIOD = re.compile(r"\b(?:Q[1-4]|H[12]|FY ?\d{2,4})\b")
# A name: capitalised words in a row ("Northwind", "Acme Corp"), or a code with a digit
# ("T-200", "E47"); a possessive "'s" is not part of it.
_NAME = re.compile(
    r"\b(?:[A-Z][A-Za-z0-9&.-]*[A-Za-z0-9](?:\s+[A-Z][A-Za-z0-9&.-]*[A-Za-z0-9])*|"
    r"[A-Z]+-?\d[\w-]*)(?='s\b|\b)"
)
_NOT_NAMES = {
    "I",
    "What",
    "Which",
    "Who",
    "When",
    "Where",
    "Why",
    "How",
    "And",
    "The",
    "A",
    "An",
    "In",
    "On",
    "For",
    "At",
    "Of",
    "By",
    "To",
    "From",
    "With",
    "About",
    "Same",
    "Also",
    "But",
    "Then",
}


class Turn(BaseModel):
    """One question and answer of a conversation, as stored."""

    question: str
    #: What was searched: the question rewritten to stand alone (the same when it did).
    standalone: str
    answer: str
    answerable: bool
    #: Documents the answer cites, and its cited pages (0-based).
    documents: list[str] = Field(default_factory=list)
    pages: list[tuple[str, int]] = Field(default_factory=list)
    trace: list[TraceStep] = Field(default_factory=list)
    asked_at: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))


class Conversation(BaseModel):
    """A conversation kept in the collection (``sessions/<id>.json``)."""

    schema_version: int = CONVERSATION_SCHEMA_VERSION
    id: str
    created: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    turns: list[Turn] = Field(default_factory=list)


@dataclass
class Rewrite:
    """A follow-up made to stand alone."""

    question: str
    #: Documents to look in first (the previous answer's), or ``None`` for the collection.
    scope: list[str] | None = None
    #: Why it was rewritten, for the trace ("" when it was not).
    reason: str = ""
    by: str = "offline"
    tokens: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.reason)


def names(text: str, *, sentence: bool = True) -> list[str]:
    """Names and codes in ``text``, in order. In a ``sentence`` its first word counts only if
    it is a code (it is capitalised anyway); a fragment ("Contoso?") may start with a name."""
    out = []
    for match in _NAME.finditer(text):
        words = match.group(0).split()
        first = sentence and text[: match.start()].strip() == ""
        if first and not any(ch.isdigit() for ch in words[0]):
            words = words[1:]  # capitalised because it starts the sentence
        if words and words[0] in _NOT_NAMES:
            words = words[1:]
        name = " ".join(words)
        if name and name not in _NOT_NAMES and not _YEAR.fullmatch(name):
            out.append(name)
    return out


def rewrite_offline(question: str, history: Sequence[Turn]) -> Rewrite:
    """The follow-up ``question`` as a standalone one, by rules over the previous turn."""
    if not history:
        return Rewrite(question)
    previous = history[-1]
    base = previous.standalone.strip()
    scope = previous.documents or None
    lead = _LEAD.match(question)
    fragment = question[lead.end() :].strip() if lead else question.strip()
    # A short fragment without a question word ("In 2023?", "The T-300?") continues the last
    # question; a longer one is a query of its own.
    elliptic = bool(lead) or (not _WH.match(question) and len(question.split()) <= 4)
    if elliptic and fragment:
        text = _fill(base, fragment.rstrip(" ?.!"))
        if text != base or lead:
            return Rewrite(text, scope, "the follow-up completed from the previous question")
    if _PRONOUN.search(question):
        # The subject is the latest turn's first name ("Northwind" in "What was Northwind's
        # revenue?"), looking further back past turns that named nothing.
        subject = next((n for t in reversed(history) for n in names(t.standalone)[:1]), None)
        if subject:
            text = _PRONOUN.sub(lambda m: _replace_pronoun(m.group(1), subject), question)
            return Rewrite(text, scope, f"pronouns resolved to {subject!r}")
    if not names(question) and scope:
        # Nothing names what the question is about: the previous answer's documents first.
        return Rewrite(question, scope, "")
    return Rewrite(question)


def _replace_pronoun(pronoun: str, subject: str) -> str:
    return f"{subject}'s" if pronoun.lower() in ("its", "their", "his", "her") else subject


def _fill(base: str, fragment: str) -> str:
    """``base`` with the fragment's years, periods or names put in place of its own; the
    fragment added at the end when none of them match."""
    stem = base.rstrip(" ?.!")
    for pattern in (_YEAR, _PERIOD):
        new = pattern.findall(fragment)
        old = pattern.findall(stem)
        if new and old:
            replaced = stem
            for i, value in enumerate(old):
                replaced = replaced.replace(value, new[min(i, len(new) - 1)], 1)
            return replaced + "?"
    new_names = names(fragment, sentence=False)
    old_names = names(stem)
    if new_names and old_names:
        # The name the fragment brings takes the place of the previous question's name most
        # like it ("What does error E47 mean on the T-200?" + "And on the T-300?" or "What
        # about E12?"); the later one on a tie.
        new = new_names[0]
        target = max(reversed(old_names), key=lambda old: _likeness(old, new))
        if _likeness(target, new) > 0:
            return stem.replace(target, new, 1) + "?"
    if new_names and _PRONOUN.search(stem):
        # "How many employees does it have?" + "What about the T-300?"
        return _PRONOUN.sub(lambda m: _replace_pronoun(m.group(1), fragment), stem, 1) + "?"
    if fragment.lower() in stem.lower():
        return stem + "?"
    if fragment.split()[0] in _NOT_NAMES:
        fragment = fragment[:1].lower() + fragment[1:]  # "In Q3" continues a sentence
    return f"{stem}, {fragment}?"


def _likeness(a: str, b: str) -> int:
    """0 for names of different shapes (a code with digits and a word); else 1 plus the length
    of the letters they start with alike ("T-200" and "T-300": 2, "E47" and "T-300": 1)."""
    if any(ch.isdigit() for ch in a) != any(ch.isdigit() for ch in b):
        return 0
    shared = 0
    for x, y in zip(a, b, strict=False):
        if x != y or x.isdigit():
            break
        shared += 1
    return 1 + shared


class _Standalone(BaseModel):
    standalone: str = Field(min_length=1, max_length=1000)


_SYSTEM = (
    "You rewrite the user's last question so that it can be understood without the "
    "conversation: resolve pronouns and ellipsis from the earlier turns, keep every name, "
    "number and year, add nothing else. If it already stands alone, return it unchanged. "
    'Reply with JSON: {"standalone": "..."}'
)


def rewrite_with_model(chat: object, question: str, history: Sequence[Turn]) -> Rewrite:
    """The model's standalone question; raises ``LLMError`` when the model fails (the caller
    falls back to :func:`rewrite_offline`)."""
    offline = rewrite_offline(question, history)
    if not history:
        return offline
    lines = []
    for turn in history[-MODEL_HISTORY_TURNS:]:
        lines.append(f"User: {turn.standalone}")
        lines.append(f"Assistant: {turn.answer[:300]}")
    lines.append(f"User (last question): {question}")
    messages = [
        {"role": "system", "content": _SYSTEM},
        {"role": "user", "content": "\n".join(lines)},
    ]
    reply = chat.chat_json(messages, _Standalone, max_tokens=200)  # type: ignore[attr-defined]
    text = " ".join(reply.standalone.split())
    reason = "rewritten by the model" if text != question else ""
    return Rewrite(text, offline.scope, reason, by="model")


def rewrite(question: str, history: Sequence[Turn], chat: Any, budget: float | None) -> Rewrite:
    """The follow-up made to stand alone: by the model if there is one, else by rules (and by
    rules when the model fails, with a note saying so)."""
    from docsight.errors import LLMError
    from docsight.llm.deadline import time_budget

    if chat is None or not history:
        return rewrite_offline(question, history)
    try:
        with time_budget(budget):
            return rewrite_with_model(chat, question, history)
    except LLMError as exc:
        fallback = rewrite_offline(question, history)
        fallback.notes.append(
            f"the language model could not rewrite the follow-up ({exc.code}); "
            "it was rewritten by rules"
        )
        return fallback


def take_turn(
    conversation: Conversation,
    question: str,
    ask: Callable[..., Any],
    *,
    chat: Any,
    budget: float | None,
    doc_names: Sequence[str] | None = None,
    on_step: Callable[[Any], None] | None = None,
    on_token: Callable[[str, int], None] | None = None,
) -> Any:
    """One turn: rewrite the follow-up, ask it (first within the documents the previous answer
    cited, then, if that finds nothing, across the collection), and append the turn to
    ``conversation``. ``ask(question, doc_names=..., on_token=...)`` answers; returns its
    ``Answer``. Streamed drafts are numbered across both asks, so the second one's words
    replace the first's."""
    from docsight.agents.trace import Trace

    trace = Trace(on_step)
    drafts = {"before": 0, "last": 0}

    def numbered(piece: str, draft: int) -> None:
        drafts["last"] = drafts["before"] + draft
        if on_token is not None:
            on_token(piece, drafts["last"])

    stream = numbered if on_token is not None else None
    with trace.step("rewrite", question) as step:
        made = rewrite(question, conversation.turns, chat, budget)
        step.output = made.question
        step.by = "model" if made.by == "model" else "offline"
        step.tokens = made.tokens
    scope = list(doc_names) if doc_names else made.scope
    answer = ask(made.question, doc_names=scope, on_token=stream)
    if not answer.answerable and scope and not doc_names:
        # The previous answer's documents were only a first guess at the scope.
        drafts["before"] = drafts["last"]
        answer = ask(made.question, doc_names=None, on_token=stream)
    answer.warnings.extend(made.notes)
    answer.trace = trace.steps + answer.trace
    answer.question = question
    answer.standalone = made.question if made.question != question else None
    answer.session = conversation.id
    conversation.turns.append(
        Turn(
            question=question,
            standalone=made.question,
            answer=answer.answer,
            answerable=answer.answerable,
            documents=list(dict.fromkeys(c.doc_name for c in answer.citations)),
            pages=list(dict.fromkeys((c.doc_name, c.page) for c in answer.citations)),
            trace=answer.trace,
        )
    )
    return answer
