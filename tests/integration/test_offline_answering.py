"""Offline answers end to end: the cell of a table, the winner of a comparison, a refusal that
says why, on generated documents."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from docsight import DocSight
from docsight.agents.refusal import load_model
from fixtures.pdfgen import make_referenced_table

SPECS = """# Pump specifications

## Operating data

The K series pumps are built for clean water.

| Model | Rated pressure (kPa) | Flow rate 2021 (l/min) | Flow rate 2020 (l/min) |
| --- | --- | --- | --- |
| K-20 | 250 | 12 | 11 |
| K-40 | 380 | 18 | 16 |
| K-60 | 510 | 25 | 24 |

## Service

Call the service desk at +41 44 555 12 34 or write to service@kpumps.example for repairs.
The warranty lasts three years from the date of delivery.
"""


REGIONS = """# Service regions

## Northern Region

1. Lakeside NR01
2. Hill Valley NR02
3. Old Harbour NR03

## Southern Region

1. Sandford SR01
2. Bay Point SR02
3. Dunmore SR03
4. Westgate SR04
"""


@pytest.fixture(scope="module")
def collection(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DocSight]:
    folder = tmp_path_factory.mktemp("answers")
    make_referenced_table(folder / "pump-manual.pdf")
    (folder / "specs.md").write_text(SPECS)
    (folder / "regions.md").write_text(REGIONS)
    ds = DocSight(folder / "collection")
    assert ds.ingest([folder]).counts()["added"] == 3
    yield ds


def test_a_cell_answers_with_its_headers_and_the_table_box(collection: DocSight) -> None:
    answer = collection.ask("What is the rated pressure of the K-60 pump?", doc_names=["specs"])
    assert answer.answerable and answer.answer.startswith("510")
    assert "K-60 — Rated pressure (kPa): 510" in answer.answer
    (citation,) = answer.citations
    assert citation.quote == "K-60 — Rated pressure (kPa): 510"
    assert citation.chunk_id and citation.doc_name == "specs.md"


def test_the_period_picks_the_column(collection: DocSight) -> None:
    answer = collection.ask("What was the flow rate of the K-20 in 2020?", doc_names=["specs.md"])
    assert answer.answer.startswith("11 [")


def test_a_comparison_ranks_the_column(collection: DocSight) -> None:
    answer = collection.ask("Which model has the highest rated pressure?", doc_names=["specs.md"])
    assert answer.answer.startswith("K-60 [")
    low = collection.ask("Which model has the lowest flow rate in 2021?", doc_names=["specs.md"])
    assert low.answer.startswith("K-20 [")


def test_contacts_and_durations_come_first(collection: DocSight) -> None:
    mail = collection.ask("What is the email address of the service desk?")
    assert mail.answer.startswith("service@kpumps.example [")
    phone = collection.ask("What is the phone number of the service desk?")
    assert phone.answer.startswith("+41 44 555 12 34 [")


def test_the_table_on_another_page_answers_the_pdf(collection: DocSight) -> None:
    answer = collection.ask("What is the rated pressure of the K-40?", doc_names=["pump-manual"])
    assert answer.answerable and answer.answer.startswith("380")
    assert answer.citations[0].page == 2


def test_membership_and_counts_of_a_listed_group(collection: DocSight) -> None:
    no = collection.ask("Is market SR03 part of the Northern Region?", doc_names=["regions.md"])
    assert no.answer.startswith("No [") and "NR01, NR02, NR03 (3 listed), not SR03" in no.answer
    yes = collection.ask(
        "In the service plan, is SR03 considered part of the Southern Region? Answer yes or no.",
        doc_names=["regions.md"],
    )
    assert yes.answer.startswith("Yes [") and yes.citations[0].doc_name == "regions.md"
    count = collection.ask("How many markets are listed under the Southern Region?")
    assert count.answer.startswith("4 [")
    named = collection.ask("What is the market name for code NR02?", doc_names=["regions.md"])
    assert named.answer.startswith("Hill Valley [")


def test_pages_the_document_lacks_are_refused_with_a_reason(collection: DocSight) -> None:
    answer = collection.ask("How many pumps are shown on page 40?", doc_names=["pump-manual"])
    assert not answer.answerable and answer.answer == "Not answerable"
    assert answer.explanation is not None
    assert "the pages it names are not in the document" in answer.explanation
    assert "Closest evidence: pump-manual.pdf, page" in answer.explanation


def test_the_page_a_question_names_is_where_the_answer_is_read(collection: DocSight) -> None:
    # Page 3 prints the K-40's rated pressure; page 1 only says Table 2 lists it.
    on_3 = collection.ask(
        "What is the rated pressure of the K-40 on page 3?", doc_names=["pump-manual"]
    )
    assert on_3.answer.startswith("380") and on_3.citations[0].page == 2
    on_1 = collection.ask(
        "What is the rated pressure of the K-40 on page 1?", doc_names=["pump-manual"]
    )
    assert not on_1.answerable and on_1.explanation is not None
    assert "the pages it names print no number" in on_1.explanation
    assert "the closest number is on page 3" in on_1.explanation


def test_an_unrelated_question_is_refused(collection: DocSight) -> None:
    answer = collection.ask("Who is the chief executive of Contoso?")
    assert not answer.answerable and answer.explanation
    assert answer.confidence is not None and answer.confidence < load_model().threshold


def test_a_name_or_year_the_document_never_mentions_is_refused(collection: DocSight) -> None:
    # The same question about the document's own model is answered; about a model or a year
    # it never mentions, refused with the reason.
    asked = "What is the rated pressure of the K-40 pump?"
    assert collection.ask(asked, doc_names=["specs.md"]).answerable
    for question, word in (
        ("What is the rated pressure of the Grundfos K-40 pump?", "grundfos"),
        ("What was the flow rate of the K-20 in 2024?", "2024"),
    ):
        answer = collection.ask(question, doc_names=["specs.md"])
        assert not answer.answerable and answer.explanation is not None
        assert f"the documents never mention “{word}”" in answer.explanation


@pytest.fixture(scope="module")
def filing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DocSight]:
    from fixtures.pdfgen import make_filing

    folder = tmp_path_factory.mktemp("filing")
    make_filing(folder / "harbor-tools-2024.pdf")
    ds = DocSight(folder / "collection")
    assert ds.ingest([folder]).counts()["added"] == 1
    yield ds


@pytest.mark.parametrize(
    ("question", "value", "pages"),
    [
        ("What is Harbor Tools' current ratio in fiscal 2024?", "2.50", {1}),
        ("What was the inventory turnover of Harbor Tools in FY2024?", "5.00", {1, 2}),
        ("What is the return on assets (ROA) for fiscal 2024?", "0.10", {1, 2}),
    ],
)
def test_a_ratio_is_computed_from_the_statement_lines(
    filing: DocSight, question: str, value: str, pages: set[int]
) -> None:
    """No sentence states the ratio: the answer divides the lines that do, shows the working
    and cites the statements' pages (the letter's "decrease in inventories" is not a line)."""
    answer = filing.ask(question)
    assert answer.answerable
    assert answer.answer.split(" [", 1)[0] == value
    assert "as Investopedia defines the ratio" in answer.answer
    assert {c.page for c in answer.citations} == pages
    assert all(c.quote for c in answer.citations)


def test_a_model_is_shown_the_computed_ratio_after_the_sources(filing: DocSight) -> None:
    from docsight.llm.scripted import ScriptedChat

    chat = ScriptedChat(default="The current ratio was 2.50 [1].")
    answer = DocSight(filing.path, chat=chat).ask(
        "What is Harbor Tools' current ratio in fiscal 2024?"
    )
    assert answer.mode == "llm" and answer.answer.startswith("The current ratio was 2.50")
    prompts = [str(m["content"]) for call in chat.calls for m in call if m["role"] == "user"]
    shown = next(p for p in prompts if "<computed>" in p)
    # After the sources, before the question: the value, its citations and its working.
    assert shown.index("</sources>") < shown.index("<computed>") < shown.index("Question:")
    assert "2.50 [" in shown and "as Investopedia defines the ratio" in shown
    # A question that asks no ratio shows the model no note.
    DocSight(filing.path, chat=chat).ask("What does Harbor Tools make?")
    assert "<computed>" not in str(chat.calls[-1])


def test_a_ratio_with_a_missing_line_is_not_made_up(filing: DocSight) -> None:
    # The filing has no interest expense line: nothing is computed, nothing invented.
    answer = filing.ask("What is the interest coverage ratio in fiscal 2024?")
    assert "Investopedia" not in answer.answer


def test_a_question_about_what_a_picture_shows_says_it_was_read_from_text(
    collection: DocSight,
) -> None:
    from docsight.agents.question import asks_appearance
    from docsight.llm.scripted import ScriptedChat

    assert asks_appearance("What is the colour of the bike in the picture on page 2?")
    assert asks_appearance("How many people with glasses are there on page 5?")
    assert not asks_appearance("How many pumps does the K series have?")
    assert not asks_appearance("What is the rated pressure of the K-40?")
    # A language model that reads no images answers from text: the answer says so.
    chat = ScriptedChat(default="The K-40 housing is blue [1].")
    seen = DocSight(collection.path, chat=chat).ask(
        "What colour is the K-40 pump's housing?", doc_names=["specs.md"]
    )
    assert seen.answerable and any("vision model" in w for w in seen.warnings)
    plain = DocSight(collection.path, chat=chat).ask(
        "What is the rated pressure of the K-40?", doc_names=["specs.md"]
    )
    assert not any("vision model" in w for w in plain.warnings)
