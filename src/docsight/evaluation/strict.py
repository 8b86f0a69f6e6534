"""MMLongBench-Doc accuracy with the benchmark's answer extraction, offline.

MMLongBench first has a model extract the short answer from a response, then compares it to
the gold by answer format. Without a model, extraction follows rules: the short answer is the
response's first line (docsight puts the answer first and its quote after), without citation
markers and emphasis; a response that declines is "Not answerable". Then, as in the benchmark:

* **Int**: the short answer's first number (a number word counts) equals the gold;
* **Float**: its first number is within 1 % of the gold, a hundredfold off either way allowed
  (percent written as a fraction or not);
* **Str**: cleaned strings (lower case, quotes, punctuation and units dropped) must be equal
  when the gold needs an exact match (it holds digits, an e-mail address, a URL or a file
  name); otherwise the score is their normalised Levenshtein similarity (ANLS) when that is at
  least 0.5, else 0;
* **List**: the short answer's items (a bracketed list, or the line split at commas,
  semicolons and "and") must be as many as the gold's, and each gold item is paired with a
  predicted one; the score is the lowest pair score;
* **None** (unanswerable): 1 iff the response declines.

This is stricter than :func:`~docsight.evaluation.answers.mmlongbench_score`, which credits any
number or substring anywhere in the response (the "lenient" figure).
"""

from __future__ import annotations

import ast
import re

from docsight.evaluation.answers import (
    _float_close,
    extract_numbers,
    gold_unanswerable,
    infer_answer_format,
    is_abstention,
    strip_citations,
)
from docsight.evaluation.metrics import answer_items

ANLS_THRESHOLD = 0.5
_EMPHASIS = re.compile(r"[*_`]+")
_QUOTE_START = re.compile(r"^\s*(?:>|quote:)", re.I)
_ITEM_SPLIT = re.compile(r"\s*(?:[;\n]|,(?!\d{3}\b)|\band\b|&)\s*", re.I)
_EXACT = re.compile(r"\d|@|https?://|www\.|\.\w{2,4}$")
_CLEAN = re.compile(r"[\"'“”‘’()\[\]{}]|\$|€|£|%|\b(?:percent|per cent|million|billion|usd)\b")


def short_answer(response: str) -> str:
    """The answer a reader takes from ``response``: its first line of substance."""
    if is_abstention(response):
        return "Not answerable"
    for line in response.strip().splitlines():
        if not line.strip() or _QUOTE_START.match(line):
            continue
        text = _EMPHASIS.sub("", strip_citations(line)).strip()
        return text.rstrip(" .;:")
    return ""


def clean(text: str) -> str:
    text = _CLEAN.sub(" ", text.lower())
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)
    text = re.sub(r"[^\w\s.@/-]", " ", text)
    return " ".join(text.split()).strip(" .")


def anls(gold: str, pred: str) -> float:
    """Normalised Levenshtein similarity, cut to 0 below the threshold."""
    if not gold and not pred:
        return 1.0
    previous = list(range(len(pred) + 1))
    for i, a in enumerate(gold, 1):
        current = [i] + [0] * len(pred)
        for j, b in enumerate(pred, 1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a != b))
        previous = current
    similarity = 1.0 - previous[-1] / max(len(gold), len(pred))
    return similarity if similarity >= ANLS_THRESHOLD else 0.0


def _number(pred: str) -> float | None:
    numbers = extract_numbers(pred)
    return numbers[0] if numbers else None


def _score_value(pred: str, gold: str, fmt: str) -> float:
    if fmt == "Int":
        value, want = _number(pred), _number(gold)
        return float(value is not None and want is not None and value == want)
    if fmt == "Float":
        value, want = _number(pred), _number(gold)
        return float(value is not None and want is not None and _float_close(value, want))
    gold_clean, pred_clean = clean(gold), clean(pred)
    if _EXACT.search(gold_clean):
        return float(gold_clean == pred_clean)
    return anls(gold_clean, pred_clean)


def _item_format(item: str) -> str:
    fmt = infer_answer_format(item)
    return fmt if fmt in ("Int", "Float") else "Str"


def _predicted_items(answer: str) -> list[str]:
    stripped = answer.strip()
    if stripped.startswith("[") and stripped.endswith("]"):
        try:
            value = ast.literal_eval(stripped)
        except (ValueError, SyntaxError):
            value = None
        if isinstance(value, list):
            return [str(v) for v in value]
    return [p for p in _ITEM_SPLIT.split(stripped) if p.strip()]


def strict_score(response: str, gold: object, answer_format: str | None = None) -> float:
    """Accuracy of one response in [0, 1] under the rules above."""
    fmt = (answer_format or "").strip().capitalize() or infer_answer_format(gold)
    if fmt not in {"Int", "Float", "Str", "List", "None"}:
        fmt = infer_answer_format(gold)
    if fmt == "None" or gold_unanswerable(gold):
        return float(is_abstention(response))
    answer = short_answer(response)
    if answer == "Not answerable" or not answer:
        return 0.0
    golds = answer_items(gold)
    if fmt != "List" and len(golds) == 1:
        return _score_value(answer, golds[0], fmt)
    predicted = _predicted_items(answer)
    if len(predicted) != len(golds):
        return 0.0
    remaining = list(predicted)
    worst = 1.0
    for item in golds:
        fmt_item = _item_format(item)
        scores = [_score_value(p, item, fmt_item) for p in remaining]
        if not scores or max(scores) == 0.0:
            return 0.0
        best = max(range(len(scores)), key=lambda i: scores[i])
        worst = min(worst, scores[best])
        remaining.pop(best)
    return worst
