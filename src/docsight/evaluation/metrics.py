"""Ranking metrics with binary relevance.

``ranked`` is a list of item ids best first (duplicates are ignored after their first position);
``relevant`` is the set of ids judged relevant. Questions without relevant items are excluded by
callers, not scored as zero.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Hashable, Sequence, Set


def _dedup(ranked: Sequence[Hashable]) -> list[Hashable]:
    return list(dict.fromkeys(ranked))


def recall_at_k(ranked: Sequence[Hashable], relevant: Set[Hashable], k: int) -> float:
    if not relevant:
        raise ValueError("recall is undefined without relevant items")
    return len(set(_dedup(ranked)[:k]) & relevant) / len(relevant)


def precision_at_k(ranked: Sequence[Hashable], relevant: Set[Hashable], k: int) -> float:
    return len(set(_dedup(ranked)[:k]) & relevant) / k


def hit_at_k(ranked: Sequence[Hashable], relevant: Set[Hashable], k: int) -> float:
    return 1.0 if set(_dedup(ranked)[:k]) & relevant else 0.0


def mrr(ranked: Sequence[Hashable], relevant: Set[Hashable]) -> float:
    for position, item in enumerate(_dedup(ranked), start=1):
        if item in relevant:
            return 1.0 / position
    return 0.0


def ndcg_at_k(ranked: Sequence[Hashable], relevant: Set[Hashable], k: int) -> float:
    """nDCG with gain 1 for relevant items and the log2(rank + 1) discount."""
    if not relevant:
        raise ValueError("nDCG is undefined without relevant items")
    dcg = sum(
        1.0 / math.log2(position + 1)
        for position, item in enumerate(_dedup(ranked)[:k], start=1)
        if item in relevant
    )
    ideal = sum(1.0 / math.log2(position + 1) for position in range(1, min(k, len(relevant)) + 1))
    return dcg / ideal


# --- answers in retrieved context --------------------------------------------------------------

_QUOTES = str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"', "–": "-", "—": "-"})
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_SYMBOLS = re.compile(r"([%$€£¥])")
_NON_WORD = re.compile(r"[^\w.%$€£¥-]+")


def normalize_answer_text(text: str) -> str:
    """Lower-case, unify quotes and dashes, drop thousands separators and punctuation, and
    surround the result with spaces so whole-token containment is a substring test."""
    text = _THOUSANDS.sub("", text.translate(_QUOTES).lower())
    # Currency and percent signs are tokens of their own: "12%" holds the number 12.
    text = _NON_WORD.sub(" ", _SYMBOLS.sub(r" \1 ", text))
    tokens = [_number_form(t.strip(".-")) for t in text.split()]
    return " " + " ".join(t for t in tokens if t) + " "


_DECIMAL = re.compile(r"^(\d+)\.(\d*?)0+$")


def _number_form(token: str) -> str:
    """A decimal by its value: "18.40" and "18.4" are one number, "6063.00" is "6063"."""
    match = _DECIMAL.match(token)
    if match is None:
        return token
    whole, fraction = match.groups()
    return f"{whole}.{fraction}" if fraction else whole


def answer_items(answer: object) -> list[str]:
    """The strings an answer consists of: a list answer (also written as "['a', 'b']") gives
    each item, anything else one string."""
    if isinstance(answer, list | tuple):
        return [str(a) for a in answer]
    text = str(answer).strip()
    if text.startswith("[") and text.endswith("]"):
        try:
            parsed = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            parsed = None
        if isinstance(parsed, list | tuple):
            return [str(a) for a in parsed]
    return [text]


def answer_in_context(answer: object, context: str) -> bool:
    """Whether every part of the gold answer appears, as whole tokens, in the context."""
    haystack = normalize_answer_text(context)
    items = [normalize_answer_text(item) for item in answer_items(answer)]
    items = [i for i in items if i.strip()]
    return bool(items) and all(item in haystack for item in items)


def character_error_rate(reference: str, hypothesis: str) -> float:
    """Levenshtein distance between the texts over the reference length, whitespace runs folded
    (the usual OCR quality measure)."""
    ref, hyp = " ".join(reference.split()), " ".join(hypothesis.split())
    previous = list(range(len(hyp) + 1))
    for i, a in enumerate(ref, 1):
        current = [i] + [0] * len(hyp)
        for j, b in enumerate(hyp, 1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a != b))
        previous = current
    return previous[-1] / max(1, len(ref))
