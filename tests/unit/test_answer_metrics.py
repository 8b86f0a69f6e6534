"""Answer metrics without a model: every value below can be checked by hand."""

from __future__ import annotations

import pytest

from docsight.agents.answer import NOT_ANSWERABLE
from docsight.evaluation.answers import (
    abstention_metrics,
    answer_tokens,
    exact_match,
    extract_numbers,
    infer_answer_format,
    is_abstention,
    mmlongbench_score,
    strip_citations,
    token_f1,
    token_recall,
)

# --- normalisation ------------------------------------------------------------------------------


def test_tokens_drop_case_punctuation_articles_and_citations() -> None:
    assert answer_tokens("The  Quick, brown fox! [2]") == ["quick", "brown", "fox"]
    assert answer_tokens("It costs $1,200 (about 12%) [1, 3].") == [
        "it",
        "costs",
        "$",
        "1200",
        "about",
        "12",
        "%",
    ]
    # A text made only of articles keeps them: a multiple-choice "A" is an answer.
    assert answer_tokens("A.") == ["a"]
    assert answer_tokens("") == []


def test_strip_citations_keeps_list_answers() -> None:
    assert strip_citations("Yes [1][2]. Also [3, 4].").split() == ["Yes", ".", "Also", "."]
    assert strip_citations("[3, 5]") == "[3, 5]"
    assert strip_citations("['a', 'b']") == "['a', 'b']"


def test_extract_numbers() -> None:
    assert extract_numbers("The answer is 3.46 [2].") == [3.46]
    assert extract_numbers("1,234,567 units, -5 degrees and .5 of it") == [1234567, -5, 0.5]
    # Glued to a word: "Q3" holds no number; a hyphen between digits is no minus sign.
    assert extract_numbers("Q3 of 2019-2020 (COVID-19)") == [2019, 2020, 19]
    assert extract_numbers("There are three figures.") == [3]
    # Number words count only when no digits are present.
    assert extract_numbers("One of the 5 tables") == [5]
    assert extract_numbers("no numbers here") == []


# --- exact match, token F1, token recall --------------------------------------------------------


def test_exact_match_single() -> None:
    assert exact_match("The Eiffel Tower.", "eiffel tower") == 1.0
    assert exact_match("Eiffel Tower [1]", "The Eiffel Tower") == 1.0
    assert exact_match("Eiffel Tower in Paris", "Eiffel Tower") == 0.0
    assert exact_match("A", "a") == 1.0
    assert exact_match("1,200", 1200) == 1.0


def test_exact_match_list_is_an_unordered_multiset() -> None:
    gold = ["Alice", "Bob"]
    assert exact_match("Bob, Alice", gold) == 1.0
    assert exact_match("Alice and Bob [1].", gold) == 1.0
    assert exact_match("['Bob', 'Alice']", "['Alice', 'Bob']") == 1.0
    assert exact_match("Alice", gold) == 0.0
    assert exact_match("Alice, Bob and Carol", gold) == 0.0
    # Alternatives: any one item is enough.
    assert exact_match("Bob", gold, alternatives=True) == 1.0


def test_token_f1_hand_computed() -> None:
    # pred {cat, sat}, gold {cat}: P = 1/2, R = 1, F1 = 2/3
    assert token_f1("The cat sat", "a cat") == pytest.approx(2 / 3)
    # pred {red, car, is, fast} (4), gold {red, fast, car} (3), overlap 3: P 3/4, R 1 -> 6/7
    assert token_f1("The red car is fast [2]", "fast red car") == pytest.approx(6 / 7)
    assert token_f1("blue", "red") == 0.0
    assert token_f1("same words", "Same words.") == 1.0
    # Counts matter: pred {go, go} vs gold {go}: overlap 1, P 1/2, R 1
    assert token_f1("go go", "go") == pytest.approx(2 / 3)
    assert token_f1("", "") == 1.0 and token_f1("", "x") == 0.0 and token_f1("x", "") == 0.0


def test_token_recall_hand_computed() -> None:
    # gold {net, revenue, grew} -> 2 of 3 found
    assert token_recall("Revenue grew strongly [1].", "Net revenue grew") == pytest.approx(2 / 3)
    assert token_recall("Net revenue grew a lot", "net revenue grew") == 1.0
    assert token_recall("nothing", "net revenue") == 0.0


def test_list_golds_pool_tokens_unless_alternatives() -> None:
    gold = ["Alice", "Bob"]
    # Pooled gold {alice, bob}; pred {alice, and, bob}: P 2/3, R 1 -> F1 0.8
    assert token_f1("Alice and Bob", gold) == pytest.approx(0.8)
    assert token_recall("Alice and Bob", gold) == 1.0
    assert token_recall("Alice", gold) == pytest.approx(0.5)
    # Alternatives: the best item. pred {alice, and, bob} vs {bob}: P 1/3, R 1 -> 0.5
    assert token_f1("Alice and Bob", gold, alternatives=True) == pytest.approx(0.5)
    assert token_recall("Alice", gold, alternatives=True) == 1.0


# --- MMLongBench-style accuracy -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("pred", "gold", "expected"),
    [
        ("3", 3, 1.0),
        ("There are 3 figures [2].", "3", 1.0),
        ("There are three figures.", 3, 1.0),
        ("3.0", 3, 1.0),
        ("There are 4 figures.", 3, 0.0),
        ("About 3.4", 3, 0.0),  # no truncation: 3.4 is not 3
        ("1,200 employees", 1200, 1.0),
        ("No figure shows it.", 3, 0.0),
    ],
)
def test_int(pred: str, gold: object, expected: float) -> None:
    assert mmlongbench_score(pred, gold, "Int") == expected


def test_int_ignores_numbers_repeated_from_the_question() -> None:
    question = "How many tables are on page 5?"
    # Without the question any number may match: "5" is in the prediction.
    assert mmlongbench_score("Page 5 has 2 tables.", 5, "Int") == 1.0
    assert mmlongbench_score("Page 5 has 2 tables.", 5, "Int", question=question) == 0.0
    assert mmlongbench_score("Page 5 has 2 tables.", 2, "Int", question=question) == 1.0
    # When the question's number is the only one, it still counts.
    assert mmlongbench_score("It has 5.", 5, "Int", question=question) == 1.0


@pytest.mark.parametrize(
    ("pred", "gold", "expected"),
    [
        ("The answer is 3.46 [2].", 3.46, 1.0),
        ("3.48", 3.46, 1.0),  # 0.02 / 3.48 = 0.57 % < 1 %
        ("3.5", 3.46, 0.0),  # 0.04 / 3.5 = 1.1 % > 1 %
        ("About 12% [1]", 0.12, 1.0),  # 12 / 100
        ("0.12", "12%", 1.0),  # 0.12 * 100
        ("12.0 percent", "12%", 1.0),
        ("13%", 0.12, 0.0),
        ("-0.5", -0.5, 1.0),
        ("0", 0.0, 1.0),
    ],
)
def test_float(pred: str, gold: object, expected: float) -> None:
    assert mmlongbench_score(pred, gold, "Float") == expected


@pytest.mark.parametrize(
    ("pred", "gold", "expected"),
    [
        ("Acme Corp", "Acme Corp.", 1.0),
        ("The company is Acme Corp [1].", "Acme Corp", 1.0),  # containment
        ("Acme Corporation", "Acme Corp", 0.0),
        ("Yes", "yes", 1.0),
        ("The eastern region", "Western region", 0.0),
        # Long gold {number, of, users, increased, over, time} (6) vs pred {users, increased,
        # steadily, over, time} (5), overlap 4: P 4/5, R 4/6 -> F1 8/11
        (
            "Users increased steadily over time [2].",
            "The number of users increased over time",
            8 / 11,
        ),
        # Long gold, overlap 2 of pred 2 / gold 6: P 1, R 1/3 -> F1 0.5 (kept)
        ("Users increased", "The number of users increased over time", 0.5),
        # Long gold, too little overlap: F1 2/7 < 0.5 -> 0
        ("Users fell", "The number of users increased over time", 0.0),
    ],
)
def test_str(pred: str, gold: object, expected: float) -> None:
    assert mmlongbench_score(pred, gold, "Str") == pytest.approx(expected)


@pytest.mark.parametrize(
    ("pred", "gold", "expected"),
    [
        ("Alice and Bob [1].", ["Bob", "Alice"], 1.0),
        ("The authors are Bob, Alice.", "['Alice', 'Bob']", 1.0),
        ("Only Alice.", ["Alice", "Bob"], 0.0),  # all or nothing
        ("['Bob', 'Alice']", ["Alice", "Bob"], 1.0),
        ("['Bob', 'Alice', 'Carol']", ["Alice", "Bob"], 0.0),  # an explicit list must match
        ("[5, 3]", "[3, 5]", 1.0),
        ("Pages 3, 5 and 7.", [3, 5], 1.0),  # prose: extras cannot be told from commentary
        ("Pages 3 and 4.", [3, 5], 0.0),
        ("3 and 3", ["3", "3"], 1.0),
        ("just 3", ["3", "3"], 0.0),  # each numeric item needs its own occurrence
        ("Shares of 12% and 30%", ["0.12", "0.3"], 1.0),
    ],
)
def test_list(pred: str, gold: object, expected: float) -> None:
    assert mmlongbench_score(pred, gold, "List") == expected


@pytest.mark.parametrize(
    ("pred", "expected"),
    [
        (NOT_ANSWERABLE, 1.0),
        ("The question cannot be answered from the documents.", 1.0),
        ("There is no information about that.", 1.0),
        ("", 1.0),
        ("The revenue was $5M [1].", 0.0),
    ],
)
def test_unanswerable(pred: str, expected: float) -> None:
    assert mmlongbench_score(pred, "Not answerable", "None") == expected
    assert mmlongbench_score(pred, "Not answerable", None) == expected


def test_abstaining_on_an_answerable_question_scores_zero() -> None:
    for fmt, gold in [("Int", 3), ("Float", 0.5), ("Str", "Acme"), ("List", ["a", "b"])]:
        assert mmlongbench_score(NOT_ANSWERABLE, gold, fmt) == 0.0


def test_format_is_inferred_when_missing() -> None:
    assert infer_answer_format(3) == "Int"
    assert infer_answer_format("3") == "Int"
    assert infer_answer_format("3.5") == "Float"
    assert infer_answer_format("12%") == "Float"
    assert infer_answer_format(["a", "b"]) == "List"
    assert infer_answer_format("['a', 'b']") == "List"
    assert infer_answer_format("Acme") == "Str"
    assert infer_answer_format("Not answerable") == "None"
    assert mmlongbench_score("There are 3.", "3", None) == 1.0
    assert mmlongbench_score("About 12%", "0.12", "float") == 1.0  # case-insensitive format
    # A numeric format whose gold holds no number falls back to string scoring.
    assert mmlongbench_score("about three million", "three million", "Int") == 1.0


# --- abstention ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Not answerable",
        "not answerable.",
        "This cannot be answered from the sources.",
        "There is no information on this.",
        "I don’t know.",
        "The value cannot be determined from the report.",
        "   ",
    ],
)
def test_is_abstention(text: str) -> None:
    assert is_abstention(text)


@pytest.mark.parametrize("text", ["42", "The answer is yes [1].", "Answerable in principle: 3."])
def test_is_not_abstention(text: str) -> None:
    assert not is_abstention(text)


def test_abstention_metrics_hand_computed() -> None:
    # tp = 2, fp = 1, fn = 1, tn = 3: P 2/3, R 2/3, F1 2/3
    pairs = [(True, True)] * 2 + [(True, False)] + [(False, True)] + [(False, False)] * 3
    m = abstention_metrics(pairs)
    assert m["precision"] == pytest.approx(2 / 3)
    assert m["recall"] == pytest.approx(2 / 3)
    assert m["f1"] == pytest.approx(2 / 3)
    assert (m["abstained"], m["unanswerable"], m["n"]) == (3, 3, 7)
    # tp = 1, fp = 0, fn = 3: P 1, R 1/4, F1 2/5
    m = abstention_metrics([(True, True), (False, True), (False, True), (False, True)])
    assert (m["precision"], m["recall"], m["f1"]) == pytest.approx((1.0, 0.25, 0.4))


def test_abstention_metrics_undefined_ratios_are_zero() -> None:
    m = abstention_metrics([(False, False), (False, False)])
    assert (m["precision"], m["recall"], m["f1"]) == (0.0, 0.0, 0.0)
    assert m["abstained"] == 0 and m["unanswerable"] == 0
    # Never abstaining with unanswerable questions: recall 0, F1 0.
    m = abstention_metrics([(False, True)])
    assert (m["precision"], m["recall"], m["f1"]) == (0.0, 0.0, 0.0)
    assert abstention_metrics([])["n"] == 0


def test_scores_stay_in_unit_interval() -> None:
    preds = ["", "3", "Alice and Bob", NOT_ANSWERABLE, "['x']", "12% [1]", "a an the"]
    golds: list[object] = [3, 0.12, "Alice", ["Alice", "Bob"], "Not answerable", "x", "[1, 2]"]
    for pred in preds:
        for gold in golds:
            for fmt in (None, "Int", "Float", "Str", "List", "None"):
                assert 0.0 <= mmlongbench_score(pred, gold, fmt) <= 1.0
            for metric in (exact_match, token_f1, token_recall):
                assert 0.0 <= metric(pred, gold) <= 1.0
