"""Answer metrics that need no model: exact match, token F1/recall, MMLongBench-style accuracy
and abstention.

Predictions are free text with ``[n]`` citation markers; golds are strings, numbers or lists as
the dataset gives them. Citation markers are removed before scoring, because ``[2]`` would
otherwise count as the token (or the number) 2.

Text is normalised SQuAD-style on top of :func:`~docsight.evaluation.metrics.normalize_answer_text`
(lower case, punctuation dropped, thousands separators removed) by also dropping the articles
"a", "an" and "the" -- unless a text consists of nothing else, so that a multiple-choice gold "A"
still has a token.

List golds. In the datasets docsight reads (MMLongBench-Doc above all) a list gold is
*conjunctive*: every item is part of the answer. So, by default:

* :func:`exact_match` is 1 iff the prediction's items equal the gold items as a multiset (order
  ignored); prose predictions are split at commas, semicolons, new lines and "and".
* :func:`token_f1` and :func:`token_recall` pool the items' tokens into one gold answer. Scoring
  each item separately against the whole prediction would punish a perfect "Alice and Bob" for
  containing the other item (F1 0.5 per item), and the best item alone would give full credit for
  one item of three.

Pass ``alternatives=True`` when a list holds alternative references instead (DocVQA-style): the
best item then wins.
"""

from __future__ import annotations

import ast
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence

from docsight.agents.llm_answerer import is_refusal
from docsight.document.text import NUMBER_WORDS
from docsight.evaluation.metrics import answer_items, normalize_answer_text

_ARTICLES = frozenset({"a", "an", "the"})
_CITATION_MARK = re.compile(r"\[\s*\d+(?:\s*[,;\-–]\s*\d+)*\s*\]")
_TYPOGRAPHY = str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"', "−": "-", "–": "-"})
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
# A number not glued to a preceding word or decimal point: "Q3" holds no number and the 19 of
# "COVID-19" is not negative.
_NUMBER = re.compile(r"(?<![\w.])(-?)(\d+(?:\.\d+)?|\.\d+)")
_NUMBER_WORD = re.compile(r"\b(" + "|".join(NUMBER_WORDS) + r")\b", re.IGNORECASE)
_LONE_NUMBER = re.compile(r"[$€£¥]?\s*-?(?:\d+(?:\.\d+)?|\.\d+)\s*(?:%|percent|per cent)?")
_PROSE_SEPARATORS = re.compile(r"\s*(?:[,;\n]|\band\b|&)\s*", re.IGNORECASE)

#: Phrasings of "I cannot answer" that docsight's own answerer does not produce but other
#: systems and hedging models do. docsight's list (``is_refusal``) is used as well, so what the
#: answerer turns into "Not answerable" is always recognised here.
_EXTRA_ABSTENTIONS = (
    "cannot be determined",
    "can't be determined",
    "cannot answer",
    "can't answer",
    "unable to answer",
    "unable to determine",
    "i don't know",
    "i do not know",
    "not enough information",
    "insufficient information",
    "not mentioned in the",
    "not provided in the",
    "not stated in the",
    "not specified in the",
)

#: Gold strings of at least this many tokens are "long": a prediction that paraphrases them
#: rather than quoting them earns its token F1 instead of nothing.
LONG_ANSWER_TOKENS = 4
#: Token F1 below this earns nothing on a long string (as MMLongBench's ANLS cut-off at 0.5).
LONG_ANSWER_MIN_F1 = 0.5
#: Relative tolerance of Float answers.
FLOAT_REL_TOL = 0.01


# --- normalisation -------------------------------------------------------------------------------


_Scorer = Callable[[list[str], list[str]], float]


def _is_list_literal(text: str) -> bool:
    stripped = text.strip()
    if not (stripped.startswith("[") and stripped.endswith("]")):
        return False
    try:
        return isinstance(ast.literal_eval(stripped), list)
    except (ValueError, SyntaxError):
        return False


def strip_citations(text: str) -> str:
    """Remove ``[n]``/``[1, 2]`` markers. A prediction that *is* a bracketed list ("[3, 5]") is
    an answer in list form, not a citation, and is kept."""
    if _is_list_literal(text):
        return text
    return _CITATION_MARK.sub(" ", text)


def answer_tokens(text: str) -> list[str]:
    """SQuAD-style tokens: citations, case, punctuation and articles dropped."""
    tokens = normalize_answer_text(strip_citations(text)).split()
    kept = [t for t in tokens if t not in _ARTICLES]
    return kept or tokens


def _gold_items(gold: object) -> list[str]:
    return [item for item in answer_items(gold) if answer_tokens(item)]


def _prediction_items(pred: str) -> list[str]:
    if _is_list_literal(pred):
        return answer_items(pred.strip())
    return [p for p in _PROSE_SEPARATORS.split(strip_citations(pred)) if answer_tokens(p)]


# --- exact match, token F1 and recall -------------------------------------------------------------


def _overlap(pred: list[str], gold: list[str]) -> int:
    return sum((Counter(pred) & Counter(gold)).values())


def _f1(pred: list[str], gold: list[str]) -> float:
    if not pred or not gold:
        return float(pred == gold)
    common = _overlap(pred, gold)
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(gold)
    return 2 * precision * recall / (precision + recall)


def _recall(pred: list[str], gold: list[str]) -> float:
    if not gold:
        return float(not pred)
    return _overlap(pred, gold) / len(gold)


def exact_match(pred: str, gold: object, *, alternatives: bool = False) -> float:
    """1.0 when the normalised texts are equal; a list gold needs its items, in any order."""
    items = _gold_items(gold) or [str(gold)]
    if len(items) == 1 or alternatives:
        tokens = answer_tokens(pred)
        return max(float(tokens == answer_tokens(item)) for item in items)
    predicted = sorted(tuple(answer_tokens(p)) for p in _prediction_items(pred))
    return float(predicted == sorted(tuple(answer_tokens(i)) for i in items))


def _token_score(pred: str, gold: object, alternatives: bool, score: _Scorer) -> float:
    items = _gold_items(gold) or [str(gold)]
    tokens = answer_tokens(pred)
    if alternatives:
        return max(score(tokens, answer_tokens(item)) for item in items)
    return score(tokens, [t for item in items for t in answer_tokens(item)])


def token_f1(pred: str, gold: object, *, alternatives: bool = False) -> float:
    """SQuAD token F1 (bag of tokens); both sides empty is 1, one side empty is 0."""
    return _token_score(pred, gold, alternatives, _f1)


def token_recall(pred: str, gold: object, *, alternatives: bool = False) -> float:
    """Share of the gold tokens found in the prediction (counts respected)."""
    return _token_score(pred, gold, alternatives, _recall)


# --- numbers -------------------------------------------------------------------------------------


def extract_numbers(text: str) -> list[float]:
    """The numbers a text states, in order: "1,234" is 1234, "12%" is 12 (the percent sign is
    handled by the comparison). Number words (zero to twenty) count only in a text without
    digits, where they are the answer ("three figures") rather than filler ("one of the 5")."""
    text = _THOUSANDS.sub("", strip_citations(text).translate(_TYPOGRAPHY))
    numbers = [float(sign + digits) for sign, digits in _NUMBER.findall(text)]
    if not numbers:
        numbers = [float(NUMBER_WORDS[w.lower()]) for w in _NUMBER_WORD.findall(text)]
    return numbers


def _as_number(text: str) -> float | None:
    """The value of a text that is a single number ("12%", "$1,200", "3.5"), else None."""
    cleaned = _THOUSANDS.sub("", text.translate(_TYPOGRAPHY)).strip().rstrip(".")
    if not _LONE_NUMBER.fullmatch(cleaned):
        return None
    numbers = extract_numbers(cleaned)
    return numbers[0] if len(numbers) == 1 else None


def _float_close(pred: float, gold: float) -> bool:
    # The gold and the prediction disagree about percent signs as often as not ("12%" vs 0.12),
    # so, as in MMLongBench, a prediction a hundred times off either way also counts.
    return any(
        math.isclose(candidate, gold, rel_tol=FLOAT_REL_TOL, abs_tol=1e-9)
        for candidate in (pred, pred / 100, pred * 100)
    )


def _candidates(pred: str, question: str | None) -> list[float]:
    numbers = extract_numbers(pred)
    if question:
        # A number repeated from the question ("how many tables on page 5?") is rarely the
        # answer; dropping it keeps "Page 5 has 2 tables" from matching a gold 5.
        asked = set(extract_numbers(question))
        fresh = [n for n in numbers if n not in asked]
        numbers = fresh or numbers
    return numbers


# --- MMLongBench-style accuracy ------------------------------------------------------------------


def is_abstention(text: str) -> bool:
    """Whether a prediction declines to answer (empty text counts)."""
    normalized = text.translate(_TYPOGRAPHY)
    lowered = normalized.strip().lower()[:200]
    return is_refusal(normalized) or any(marker in lowered for marker in _EXTRA_ABSTENTIONS)


def gold_unanswerable(gold: object) -> bool:
    """Whether a gold answer says the question cannot be answered (None counts)."""
    return gold is None or str(gold).strip().lower() == "not answerable"


def infer_answer_format(gold: object) -> str:
    """Int, Float, Str, List or None for a gold answer whose format the dataset does not say."""
    if gold_unanswerable(gold):
        return "None"
    if isinstance(gold, bool):
        return "Str"
    if isinstance(gold, int):
        return "Int"
    if isinstance(gold, float):
        return "Float"
    if len(answer_items(gold)) > 1:
        return "List"
    value = _as_number(str(gold))
    if value is None:
        return "Str"
    text = str(gold)
    return "Int" if value.is_integer() and not {".", "%"} & set(text) else "Float"


def _contains(tokens: Sequence[str], part: Sequence[str]) -> bool:
    return bool(part) and f" {' '.join(part)} " in f" {' '.join(tokens)} "


def _str_score(pred: str, gold: str) -> float:
    pred_tokens, gold_tokens = answer_tokens(pred), answer_tokens(gold)
    if pred_tokens == gold_tokens or _contains(pred_tokens, gold_tokens):
        return 1.0
    if len(gold_tokens) < LONG_ANSWER_TOKENS:
        return 0.0
    f1 = _f1(pred_tokens, gold_tokens)
    return f1 if f1 >= LONG_ANSWER_MIN_F1 else 0.0


def _number_score(pred: str, gold: object, integer: bool, question: str | None) -> float | None:
    """1/0 for a numeric gold, or None when the gold holds no single number."""
    value = gold if isinstance(gold, int | float) and not isinstance(gold, bool) else None
    if value is None:
        value = _as_number(str(gold))
    if value is None:
        return None
    candidates = _candidates(pred, question)
    if integer and float(value).is_integer():
        return float(any(c == value for c in candidates))
    return float(any(_float_close(c, float(value)) for c in candidates))


def _item_matches(pred: str, item: str, pool: list[float]) -> bool:
    """Whether a list item is in ``pred``; numeric items consume their match from ``pool``."""
    value = _as_number(item)
    if value is None:
        return _str_score(pred, item) == 1.0
    exact = value.is_integer() and "." not in item
    for i, candidate in enumerate(pool):
        if candidate == value if exact else _float_close(candidate, value):
            del pool[i]
            return True
    return False


def _list_score(pred: str, gold: object) -> float:
    items = _gold_items(gold)
    if not items:
        return 0.0
    if _is_list_literal(pred):
        # An explicit list must be the gold list: same length, each item matched once.
        predicted = answer_items(pred.strip())
        if len(predicted) != len(items):
            return 0.0
        unused = list(predicted)
        for item in items:
            hit = next((p for p in unused if _item_matches(p, item, extract_numbers(p))), None)
            if hit is None:
                return 0.0
            unused.remove(hit)
        return 1.0
    # In prose, extra items cannot be told from commentary, so only the gold items are checked.
    pool = extract_numbers(pred)
    return float(all(_item_matches(pred, item, pool) for item in items))


def mmlongbench_score(
    pred: str, gold: object, answer_format: str | None = None, *, question: str | None = None
) -> float:
    """MMLongBench-Doc-style accuracy of one prediction, in [0, 1].

    * Unanswerable gold ("Not answerable", format None): 1 iff the prediction abstains. An
      abstention on an answerable question scores 0 whatever the format.
    * Int: some number in the prediction equals the gold ("There are three figures [2]." is 3).
    * Float: some number is within 1 % of the gold, also after scaling by 100 either way.
    * Str: 1 when the normalised prediction equals or contains the gold; a long gold
      (``LONG_ANSWER_TOKENS``+ tokens) that is paraphrased earns its token F1 if that is at least
      0.5, like MMLongBench's thresholded ANLS.
    * List: all or nothing, as in MMLongBench. A bracketed list must have exactly the gold
      items in any order; in prose every gold item must appear.

    Numbers are matched against *any* number in the prediction (MMLongBench first has a model
    extract the short answer; without one, a stricter position rule would fail correct verbose
    answers). With ``question``, numbers repeated from the question are ignored unless they are
    the only ones. Without ``answer_format`` it is inferred from the gold.
    """
    fmt = (answer_format or "").strip().capitalize() or infer_answer_format(gold)
    if fmt not in {"Int", "Float", "Str", "List", "None"}:
        fmt = infer_answer_format(gold)
    if fmt == "None" or gold_unanswerable(gold):
        return float(is_abstention(pred))
    if is_abstention(pred):
        return 0.0
    if fmt == "List":
        return _list_score(pred, gold)
    if fmt in {"Int", "Float"}:
        score = _number_score(pred, gold, fmt == "Int", question)
        if score is not None:
            return score
    items = answer_items(gold)
    if len(items) > 1:
        return _list_score(pred, gold)
    return _str_score(pred, items[0])


# --- abstention ----------------------------------------------------------------------------------


def abstention_metrics(results: Iterable[tuple[bool, bool]]) -> dict[str, float]:
    """Precision, recall and F1 of abstaining as a detector of unanswerable questions.

    ``results`` holds (predicted_abstain, gold_unanswerable) pairs. Undefined ratios (no
    abstentions for precision, no unanswerable questions for recall, neither for F1) are 0.0 so
    the values stay plain numbers; the counts tell them apart from real zeros.
    """
    pairs = [(bool(a), bool(u)) for a, u in results]
    tp = sum(1 for a, u in pairs if a and u)
    fp = sum(1 for a, u in pairs if a and not u)
    fn = sum(1 for a, u in pairs if not a and u)
    return {
        "precision": tp / (tp + fp) if tp + fp else 0.0,
        "recall": tp / (tp + fn) if tp + fn else 0.0,
        "f1": 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0,
        "abstained": float(tp + fp),
        "unanswerable": float(tp + fn),
        "n": float(len(pairs)),
    }
