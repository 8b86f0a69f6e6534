"""Where an item stands in a list: "the 2nd objective", and "how many steps" a numbered list has."""

from __future__ import annotations

import pytest

from docsight.agents.answer import Source
from docsight.agents.enumeration import enumerated
from docsight.agents.evidence import Evidence
from docsight.agents.extractive import ExtractiveAnswerer
from docsight.agents.refusal import RefusalModel, Signals
from docsight.agents.tables import parse_tables
from docsight.settings import AnswerSettings


def _table(*rows: list[str]) -> str:
    head, *body = rows
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in body])


# A plan's objectives, lettered within each strategy; the header row leaves cells blank.
OBJECTIVES = _table(
    ["Strategy", "Objective", "", ""],
    [
        "5.1.2 Increase licensed professionals",
        "A",
        "",
        "By December 31, 2018, reduce the average time to issue a license from 65 to 49 days.",
    ],
    [
        "",
        "B",
        "",
        "By December 31, 2018, reduce the average time to issue a facility license from 60 days "
        "to 45 days.",
    ],
    ["", "C", "", "By December 31, 2018, increase the number of applications from 137 to 206."],
    [
        "5.1.3 Standardize regulatory systems.",
        "A",
        "By December 31, 2017, establish enterprise solutions for all regulatory functions.",
        "",
    ],
)
OTHER_PRIORITY = _table(
    ["Strategy", "Objective", ""],
    [
        "2.1.1 Increase the healthy weight of children.",
        "A",
        "By December 31, 2018, increase the number of activities from 34 to 37.",
    ],
    ["", "B", "By December 31, 2018, hold two workshops a year for board members."],
)

STEPS = (
    "Chart on page 2. Text in it: Ground-Truth Answer: No. Correct steps to lead to the answer: "
    "1) Parse the causal graph 5) Derive the estimand 2) Classify the query type "
    "3) Formulate the query 6) Solve for the estimand 4) Collect the available data."
)


def _source(n: int, text: str, path: list[str], kind: str = "text") -> Source:
    return Source(
        n=n,
        doc_id="d",
        doc_name="plan.pdf",
        page=4,
        chunk_id=f"c{n}",
        kind=kind,
        text=text,
        section_path=path,
    )


SOURCES = [
    _source(1, OTHER_PRIORITY, ["Strategic Priorities", "Priority 2: Long, Healthy Life"], "table"),
    _source(2, OBJECTIVES, ["Strategic Priorities", "Priority 5: Regulatory Efficiency"], "table"),
]


def test_a_table_row_of_sentences_is_not_folded_into_the_header() -> None:
    (table,) = parse_tables(OBJECTIVES)
    assert table.columns[:2] == ["Strategy", "Objective"]
    assert [row[1] for row in table.rows] == ["A", "B", "C", "A"]


@pytest.mark.parametrize(
    ("question", "starts"),
    [
        (
            "WHAT IS THE 2nd OBJECTIVE OF REGULATORY EFFICIENCY?",
            "By December 31, 2018, reduce the average time to issue a facility",
        ),
        (
            "What is the first objective of Regulatory Efficiency?",
            "By December 31, 2018, reduce the average time to issue a license",
        ),
        # The group named picks the table: the second objective of the other priority.
        (
            "What is the second objective of the Long, Healthy Life priority?",
            "By December 31, 2018, hold two workshops",
        ),
        ("What is the last objective in Regulatory Efficiency?", "By December 31, 2017, establish"),
    ],
)
def test_the_ordinal_picks_the_row_its_label_marks(question: str, starts: str) -> None:
    found = enumerated(question, SOURCES)
    assert found is not None and found.answer.startswith(starts)


def test_an_ordinal_past_the_labels_or_of_a_period_answers_nothing() -> None:
    assert enumerated("What is the fourth objective of Regulatory Efficiency?", SOURCES) is None
    assert enumerated("What is the second quarter of Regulatory Efficiency?", SOURCES) is None
    # A group no source names: nothing is read from another group's list.
    assert enumerated("What is the second objective of Workforce Development?", SOURCES) is None


def test_the_nth_entry_of_a_list_under_a_heading_that_names_it() -> None:
    listed = [
        _source(1, "1. Unpack the printer.\n2. Remove the tape.\n3. Load paper.", ["Setup steps"])
    ]
    found = enumerated("What is the second step?", listed)
    assert found is not None and found.answer == "Remove the tape."
    assert found.quote == "Setup steps: 2. Remove the tape."


# A short section merged into the chunk before it: its heading is printed in the text.
GUIDE = (
    "The T-200 records temperatures from -40 to 125 °C.\n## Setup\n"
    "1. Charge the logger for two hours.\n2. Install the app and pair the logger.\n"
    "3. Choose a logging interval."
)


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("What is the second setup step for the T-200?", "Install the app and pair the logger."),
        ("What is the third step of the setup?", "Choose a logging interval."),
        ("What is the last step of the T-200 setup?", "Choose a logging interval."),
        ("How many setup steps does the T-200 have?", "3"),
    ],
)
def test_a_list_under_a_heading_printed_inside_the_text(question: str, answer: str) -> None:
    found = enumerated(question, [_source(1, GUIDE, ["T-200 Field Guide"])])
    assert found is not None and found.answer == answer


def test_no_heading_naming_the_noun_or_group_reads_no_list() -> None:
    assert enumerated("What is the second risk?", [_source(1, GUIDE, ["Guide"])]) is None
    assert enumerated("How many risks are there?", [_source(1, GUIDE, ["Guide"])]) is None


def test_a_column_of_the_items_themselves_gives_the_nth_item() -> None:
    codes = _table(
        ["Code", "Meaning"],
        ["E12", "Sensor disconnected"],
        ["E31", "Battery low"],
        ["E47", "Memory full"],
    )
    found = enumerated("What is the first error code?", [_source(1, codes, ["Errors"], "table")])
    assert found is not None and found.answer == "E12"
    assert found.quote == "Code: E12; Meaning: Sensor disconnected"
    last = enumerated("What is the last code?", [_source(1, codes, ["Errors"], "table")])
    assert last is not None and last.answer == "E47"


def test_a_numbered_list_after_its_noun_is_counted_in_any_reading_order() -> None:
    found = enumerated(
        "How many key steps did the author divide causal inference into?",
        [_source(1, STEPS, ["Introduction"], "figure")],
    )
    assert found is not None and found.answer == "6"


@pytest.mark.parametrize(
    "text",
    [
        # A gap in the numbering: not one list.
        "The steps: 1) Parse the graph 2) Classify the query 4) Collect the data.",
        # The numbering starts again: two lists of two.
        "The steps: 1) Parse the graph 2) Classify. Later: 1) Solve 2) Check.",
        # Numbered items far from any mention of steps.
        "The steps are described in the appendix of the report, which we summarise in a long "
        "paragraph that goes on and on before anything is numbered: 1) Parse 2) Classify 3) Solve",
    ],
)
def test_a_numbering_that_is_not_one_list_of_the_noun_counts_nothing(text: str) -> None:
    assert enumerated("How many steps are there?", [_source(1, text, ["Method"])]) is None


def test_the_answerer_leads_with_the_item_and_cites_its_table() -> None:
    keep = RefusalModel(weights=(0.0,) * len(Signals.names()), bias=10.0, threshold=0.5)
    answerer = ExtractiveAnswerer(lambda: None, AnswerSettings(), refusal=keep)  # type: ignore[arg-type,return-value]
    answer = answerer.answer(
        "What is the 2nd objective of Regulatory Efficiency?", SOURCES, Evidence(0.5, 0.5)
    )
    assert answer.answerable
    assert answer.answer.startswith(
        "By December 31, 2018, reduce the average time to issue a facility"
    )
    assert "Objective B:" in answer.answer
    assert [c.n for c in answer.citations] == [2]


def test_the_nth_item_of_a_list_numbered_after_its_noun() -> None:
    text = (
        "You will not go far wrong if you remember two simple guidelines at all times:\n"
        "1. Never, ever use vertical rules.\n2. Never use double rules.\n"
        "These guidelines may seem extreme."
    )
    manual = [
        Source(
            n=1,
            doc_id="d",
            doc_name="booktabs.pdf",
            page=2,
            chunk_id="c1",
            text=text,
            section_path=["2 The layout of formal tables"],
        )
    ]
    first = enumerated("What is the first guideline of booktabs?", manual)
    assert first is not None and first.answer == "Never, ever use vertical rules."
    assert first.quote == "guidelines: 1. Never, ever use vertical rules."
    last = enumerated("What is the last guideline for formal tables?", manual)
    assert last is not None and last.answer == "Never use double rules."
    # A group neither the source, its headings nor its document name: nothing.
    assert enumerated("What is the first guideline of the style guide?", manual) is None
