"""Claim-level citation check: every sentence of a model's answer against the sources it cites.

A model can cite [2] for a sentence that [2] does not hold, or write a number no source has.
Each sentence (a claim) is checked against the sources it cites (the answer's cited sources
when it cites none):

* **offline**: most of its words of substance are in those sources, and every number in it is
  either there or follows from two numbers there (their sum, difference, ratio or percentage
  change, within 1 %);
* **with a model**: an entailment prompt judges the claims in one call (validated JSON); the
  numeric rule still applies, since models misread numbers most.

An unsupported claim is marked (``verify="mark"``: "(unsupported)" after it) or removed
(``"remove"``), and reported in the answer's warnings either way.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, Field

from docsight.agents.answer import CITATION_MARKER as _MARKER
from docsight.agents.answer import Answer, Source
from docsight.document.text import content_terms, split_sentences
from docsight.errors import LLMError

#: Share of a claim's words of substance that its sources must hold.
MIN_WORD_SUPPORT = 0.5
_NUMBER = re.compile(r"(?<![\w.])-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\w.])-?\d+(?:\.\d+)?")
MARK = " (unsupported)"


@dataclass
class Claim:
    text: str
    cited: list[int]
    supported: bool = True
    why: str = ""


def numbers(text: str) -> list[float]:
    out = []
    for match in _NUMBER.finditer(_MARKER.sub(" ", text)):
        try:
            out.append(float(match.group(0).replace(",", "")))
        except ValueError:
            continue
    return out


def _close(a: float, b: float) -> bool:
    """Whole numbers (counts, years) must be equal; others within 1 % (rounding)."""
    if a == int(a) and b == int(b):
        return a == b
    return abs(a - b) <= 0.01 * max(abs(a), abs(b), 1e-9)


def derivable(value: float, found: Sequence[float]) -> bool:
    """``value`` is one of ``found`` or their sum, difference, ratio or percentage change."""
    if any(_close(value, f) for f in found):
        return True
    distinct = list(dict.fromkeys(found))[:60]  # pairs grow fast; the first numbers suffice
    for a, b in itertools.permutations(distinct, 2):
        candidates = [a + b, a - b, a * b]
        if b:
            candidates += [a / b, 100 * a / b, 100 * (a - b) / b]
        if any(_close(value, c) for c in candidates):
            return True
    return False


def claims(answer: Answer) -> list[Claim]:
    """The answer's sentences with the sources each cites."""
    all_cited = sorted({c.n for c in answer.citations})
    out = []
    for sentence in split_sentences(answer.answer):
        cited = [int(n) for n in _MARKER.findall(sentence)]
        out.append(Claim(sentence, cited or all_cited))
    return out


def check_offline(claim: Claim, sources: dict[int, Source]) -> None:
    text = "\n".join(sources[n].text for n in claim.cited if n in sources)
    if not text:
        claim.supported, claim.why = False, "cites no source it was shown"
        return
    held = set(content_terms(text))
    words = [t for t in content_terms(_MARKER.sub(" ", claim.text)) if not t.isdigit()]
    if words and sum(t in held for t in words) / len(words) < MIN_WORD_SUPPORT:
        claim.supported, claim.why = False, "its words are not in the sources it cites"
        return
    _check_numbers(claim, text)


def _check_numbers(claim: Claim, text: str) -> None:
    found = numbers(text)
    for value in numbers(claim.text):
        if not derivable(value, found):
            claim.supported, claim.why = False, f"{value:g} is in none of the sources it cites"
            return


class _Judgement(BaseModel):
    supported: list[bool] = Field(min_length=1)


_ENTAIL = (
    "For each numbered claim, say whether the passages it cites state it or it follows from "
    'them. Reply with JSON: {"supported": [true or false for each claim, in order]}.'
)


def check_with_model(chat: object, items: list[Claim], sources: dict[int, Source]) -> None:
    lines = []
    for i, claim in enumerate(items, 1):
        passages = " | ".join(f"[{n}] {sources[n].text[:600]}" for n in claim.cited if n in sources)
        lines.append(f"Claim {i}: {claim.text}\nPassages: {passages}")
    reply = chat.chat_json(  # type: ignore[attr-defined]
        [{"role": "system", "content": _ENTAIL}, {"role": "user", "content": "\n\n".join(lines)}],
        _Judgement,
        max_tokens=100 + 8 * len(items),
    )
    if len(reply.supported) != len(items):
        raise LLMError(f"the model judged {len(reply.supported)} of {len(items)} claims")
    for claim, ok in zip(items, reply.supported, strict=True):
        if not ok:
            claim.supported, claim.why = False, "the model found no passage that states it"
        else:
            _check_numbers(claim, "\n".join(sources[n].text for n in claim.cited if n in sources))


def verify(answer: Answer, chat: object | None, policy: str) -> tuple[Answer, str]:
    """The answer with its unsupported claims marked or removed, and who judged them."""
    if policy == "off" or not answer.answerable or answer.mode != "llm":
        return answer, "offline"
    sources = {s.n: s for s in answer.sources}
    items = claims(answer)
    if not items:
        return answer, "offline"
    by = "offline"
    if chat is not None:
        try:
            check_with_model(chat, items, sources)
            by = "model"
        except LLMError:
            for claim in items:
                claim.supported, claim.why = True, ""
    if by == "offline":
        for claim in items:
            check_offline(claim, sources)
    bad = [c for c in items if not c.supported]
    if not bad:
        return answer, by
    text = answer.answer
    for claim in bad:
        replacement = "" if policy == "remove" else _marked(claim.text)
        text = text.replace(claim.text, replacement, 1)
    text = re.sub(r"[ \t]{2,}", " ", text).strip()
    warnings = [
        f"{'removed' if policy == 'remove' else 'marked'} an unsupported claim "
        f"({c.why}): {c.text[:160]}"
        for c in bad
    ]
    update: dict[str, object] = {"answer": text, "warnings": [*answer.warnings, *warnings]}
    if not text:
        base = Answer.not_answerable(answer.question, "llm", answer.sources, answer.evidence)
        return base.model_copy(update={"warnings": update["warnings"], "model": answer.model}), by
    cited_now = {int(n) for n in _MARKER.findall(text)}
    update["citations"] = [c for c in answer.citations if c.n in cited_now] or answer.citations
    return answer.model_copy(update=update), by


def _marked(sentence: str) -> str:
    """The sentence with the mark before its closing punctuation and citations."""
    match = re.search(r"((?:\s*\[\d+\])*[.!?]?\s*)$", sentence)
    tail = match.group(1) if match else ""
    return sentence[: len(sentence) - len(tail)] + MARK + tail
