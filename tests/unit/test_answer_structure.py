"""The offline answerer reads what a question asks apart from how it wants the answer written,
counts runs of numbered labels, and reads tables whose rows come in groups."""

from __future__ import annotations

import pytest

from docsight.agents.question import answer_instructions, read_intent
from docsight.agents.tables import lookup, parse_tables
from docsight.agents.values import extract_value
from docsight.document.text import content_terms


def test_instructions_on_the_answers_form_are_not_what_the_question_asks() -> None:
    asked, told = answer_instructions(
        "What is the residential capacity of Staten Island? Give me an integer."
    )
    assert asked == "What is the residential capacity of Staten Island?"
    assert told == "Give me an integer."
    asked, told = answer_instructions(
        'Which shares do seniors hold? Please write the answer in list format, e.g., ["9%","8%"]'
    )
    assert asked == "Which shares do seniors hold?" and "9%" in told
    # Quoted words that are not an example of the form stay in the question.
    assert answer_instructions("Which fonts like 'Arial' are bad?")[1] == ""
    # The first sentence is always the question, whatever verb opens it.
    assert answer_instructions("Give me the revenue of 2021 in millions.")[1] == ""
    # A sentence that asks something stays, even after the first.
    text = "Look at the report. Format the date mentioned on page 14 as YYYY-MM-DD."
    assert answer_instructions(text) == (text, "")

    intent = read_intent(
        'How many sites does the audit list? Write the answer in the list format, e.g., ["1","2"]'
    )
    # "integer", "format" are in no document; the example's numbers are not the question's.
    assert "format" not in intent.terms and intent.numbers == ()
    assert extract_value(intent, "The audit lists 2 sites and 1 gap") == "2 sites"
    rounded = read_intent("What is the current ratio in 2021? Round your answer to two decimals.")
    assert "round" not in rounded.terms and rounded.periods == ("2021",)


def test_a_run_of_numbered_labels_counts_its_labels() -> None:
    houston = read_intent("How many geographic markets are in Greater Houston?")
    text = (
        "Greater San Antonio: 13 and 14 Greater Houston: 15 through 18 "
        "Greater Dallas: 19 through 24"
    )
    assert extract_value(houston, text) == "4"
    # Only a run named by the question's words right before it is a list of labels.
    dallas = read_intent("How many geographic markets are in Greater Dallas?")
    assert extract_value(dallas, text) == "6"
    people = read_intent("How many people attended the workshop?")
    assert extract_value(people, "Between 15 to 20 people attended the workshop.") == "20 people"
    years = read_intent("How many years did the Houston study run?")
    assert extract_value(years, "Houston study: 2003 to 2007") != "5"
    shares = read_intent("How many markets in Houston?")
    assert extract_value(shares, "Houston: 15 through 18%") != "4"


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        # A figure asked of the winner of a superlative is a number, not the winner's name.
        ("What percentage of Germans view China as the top economic power?", "number"),
        ("What is the accuracy of the model with the highest recall?", "number"),
        # "top 10" is a set and "the top of the page" a place, not a superlative.
        ("Among the top 10 reasons, which one shows no person?", "text"),
        ("What are the words in the rectangle on the top of page two?", "list"),
        ("Which company is the top seller?", "comparison"),
        ("Which region had the highest Q2 sales?", "comparison"),
    ],
)
def test_superlatives_decide_a_comparison_only_when_its_winner_is_asked(
    question: str, kind: str
) -> None:
    assert read_intent(question).type == kind


def test_the_number_to_call_is_a_phone_number() -> None:
    intent = read_intent("Which number shall I call for AppleCare support?")
    assert intent.contact == "phone"
    row = "United States 1-800-275-2273 www.apple.com/support"
    assert extract_value(intent, row) == "1-800-275-2273"


def _corpus(*texts: str) -> list[set[str]]:
    return [set(content_terms(t)) for t in texts]


def test_a_level_is_asked_unless_a_change_is() -> None:
    text = (
        "Table A: residential capacity by borough\n"
        "| | Residential Capacity (2003) | Change in Residential Capacity (2007) |\n"
        "| --- | --- | --- |\n"
        "| Bronx | 980,000,000 | 290,000 |\n"
        "| Staten Island | 435,000,000 | 5,980,000 |"
    )
    (table,) = parse_tables(text)
    corpus = _corpus(text, "rezonings and lots", "zoning resolution")
    level = lookup(
        read_intent("What is the residential capacity of Staten Island from 2003 to 2007?"),
        table,
        corpus,
    )
    assert level is not None and level.value == "435,000,000"
    change = lookup(
        read_intent("What was the change in residential capacity of Staten Island by 2007?"),
        table,
        corpus,
    )
    assert change is not None and change.value == "5,980,000"


GROUPED = """Table 3: Vicuna-13B and Llama2-13B after pre-training
| Model | | MAVEN-ERE | | Causal-TimeBank | |
| --- | --- | --- | --- | --- | --- |
| | | Micro-F1 (%) | LI (%) | Micro-F1 (%) | LI (%) |
| | vanilla ICL | 15.3 (+1.5%) | 21.2 (-4.2%) | 8.0 (+3.5%) | 35.5 (-48.6%) |
| Vicuna-13B-PT | CoT w. logical constraints | 18.0 (+3.1%) | 6.0 (-15.7%) | 8.5 (+0.5%) | 2.0 |
| | w. post-processing | 11.0 (+1.2%) | 0 (-) | 8.0 (-1.0%) | 0 (-) |
| | vanilla ICL | 19.0 (+2.0%) | 45.8 (-8.8%) | 12.0 (+0.5%) | 22.7 (-4.0%) |
| Llama2-13B-PT | CoT w. logical constraints | 26.4 (+4.9%) | 15.7 (-3.2%) | 13.3 | 13.0 |
| | w. post-processing | 11.0 (-1.0%) | 0 (-) | 11.0 (+1.5%) | 0 (-) |"""


def test_rows_grouped_under_a_name_in_the_first_column() -> None:
    (table,) = parse_tables(GROUPED)
    # The group names above the value columns spread over their blank neighbours, and a row of
    # figures with their changes in brackets is data, not a second header row.
    assert table.columns[2:4] == ["MAVEN-ERE Micro-F1 (%)", "MAVEN-ERE LI (%)"]
    assert len(table.rows) == 6
    # The name sits on its group's middle row; the group runs from the row above it.
    assert table.groups == ["Vicuna-13B-PT"] * 3 + ["Llama2-13B-PT"] * 3
    assert table.label(1) == "CoT w. logical constraints"
    corpus = _corpus(GROUPED, "pre-training on logic data", "events and relations")
    vicuna = lookup(
        read_intent("Which setting did the pre-trained Vicuna-13B do best in on MAVEN-ERE?"),
        table,
        corpus,
    )
    assert vicuna is not None and vicuna.value == "CoT w. logical constraints"
    assert "18.0" in vicuna.column and vicuna.row.startswith("Vicuna-13B-PT")
    # Asked of both models, the comparison runs over every row: Llama's 26.4 is the best.
    both = lookup(read_intent("Which setting scores best on MAVEN-ERE?"), table, corpus)
    assert both is not None and "26.4" in both.column
    cell = lookup(
        read_intent("What is the MAVEN-ERE micro-F1 of Llama2-13B-PT with post-processing?"),
        table,
        corpus,
    )
    assert cell is not None and cell.value == "11.0 (-1.0%)"


@pytest.mark.parametrize(
    ("question", "contact"),
    [
        ("What is the phone number of the service desk?", "phone"),
        ("What is the FAX No of INF LLP?", "phone"),
        ("Which number shall I call for AppleCare support?", "phone"),
        # A phone owned is not a phone number asked for.
        ("What share of seniors own a cell phone and a tablet computer?", None),
        ("Which percentage of them has a smartphone?", None),
    ],
)
def test_a_phone_number_is_asked_only_when_its_number_is(
    question: str, contact: str | None
) -> None:
    assert read_intent(question).contact == contact


def test_an_instruction_to_round_asks_for_a_figure() -> None:
    assert read_intent("What is accrued liabilities in FY2021? Answer in millions.").type == (
        "number"
    )
    assert read_intent("What is the quick ratio? Round your answer to two decimals.").type == (
        "number"
    )
    assert read_intent("What is the mission of the agency?").type == "text"


def test_rows_that_tie_for_the_top_all_answer_a_comparison() -> None:
    (table,) = parse_tables(
        "| Programme | Full-time duration |\n| --- | --- |\n"
        "| MA (Humanities Education) | 3 years |\n| MSc (Life Science) | 3 years |\n"
        "| MEd | 2 years |"
    )
    longest = lookup(read_intent("Which programmes have the longest duration?"), table, [])
    assert longest is not None
    assert longest.value == "MA (Humanities Education); MSc (Life Science)"
    shortest = lookup(read_intent("Which programme has the shortest duration?"), table, [])
    assert shortest is not None and shortest.value == "MEd"


def test_a_single_name_over_blank_header_cells_is_not_spread() -> None:
    # "HOVER" is centred over three hop columns: spreading it right would put FEVEROUS under it,
    # and a sub-header of names that start with digits ("2-hop") is still a header.
    (table,) = parse_tables(
        "| | | HOVER | | |\n| --- | --- | --- | --- | --- |\n"
        "| Model | | | | FEVEROUS |\n| | 2-hop | 3-hop | 4-hop | |\n"
        "| Codex | 55.57 | 53.42 | 45.59 | 57.85 |"
    )
    assert table.columns[-1] == "FEVEROUS" and table.columns[1] == "2-hop"
    assert table.rows == [["Codex", "55.57", "53.42", "45.59", "57.85"]]


def test_a_count_written_as_a_word_answers() -> None:
    steps = read_intent("How many subskills does the method divide causal inference into?")
    text = "We identify the following six subskills: causal graph extraction; formalization"
    assert extract_value(steps, text) == "six subskills"
    # "one" is as often a pronoun as a count, and a figure the question's words name wins.
    staff = read_intent("How many employees does the office have?")
    assert extract_value(staff, "One of the two sites has 1,914 employees") == "1,914 employees"
    assert extract_value(read_intent("How many tables are there?"), "one of them") is None


def test_reference_markers_and_the_questions_own_number_words_are_not_counts() -> None:
    steps = read_intent("How many key steps divide causal inference?")
    cited = "The Ladder of Causation, introduced by Pearl [66], is a taxonomy of tasks [3, 12]."
    assert extract_value(steps, cited) is None
    pairs = read_intent("How many combinations can there be between two events?")
    text = "So, there are 6 possible combinations between the relations for two events."
    assert extract_value(pairs, text) == "6 possible"


def test_a_column_named_by_a_word_matching_ignores_is_still_the_one_asked() -> None:
    # "pages" is scaffolding to term matching ("on page 5"), but here it names a column.
    (table,) = parse_tables(
        "| Data Type | Source | Items | Items with Errors | Pages |\n"
        "| --- | --- | --- | --- | --- |\n"
        "| Blog Article | schema.org | 135,747 | 72,441 | 133,213 |\n"
        "| hatom | microformats.org | 140 | 138 | 137 |"
    )
    corpus = [set(content_terms(t)) for t in ("hatom microformats", "blog article schema")]
    cell = lookup(read_intent("How many pages for the hatom data type?"), table, corpus)
    assert cell is not None and (cell.row, cell.column, cell.value) == ("hatom", "Pages", "137")
    # Without the word, no column is named and no single cell answers.
    assert lookup(read_intent("How many for the hatom data type?"), table, corpus) is None
