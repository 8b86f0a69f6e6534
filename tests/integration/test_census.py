"""Counting a document's parts from its map: "How many tables are in the handbook?" is answered
from the captions and appendices the content graph indexed, not from a sentence."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from docsight import DocSight
from docsight.retrieval.census import read_census

HANDBOOK = """# Pump handbook

## Operating data

The K series pumps are built for clean water (sizing rules in Appendix C).

Table 1: Rated pressure by model

| Model | Rated pressure (kPa) |
| --- | --- |
| K-20 | 250 |
| K-40 | 380 |

Table 2: Flow rate by model

| Model | Flow rate (l/min) |
| --- | --- |
| K-20 | 12 |
| K-40 | 18 |

The flow rate of the K-40 pump is 18 litres a minute, and 12 tables of spare parts ship
with every pump.

## Claims

A claim for a failed seal refers to Exhibits P-1 and P-2, and to the invoice filed as
Exhibit P-4. The supplier relies on Exhibit D-1; the exhibit 9 photograph was never filed.

## Appendix A: Spare parts

Gaskets, seals and impellers are kept in stock.

## Appendix B: Warranty

The warranty lasts three years from the date of delivery.
"""


@pytest.fixture(scope="module")
def collection(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DocSight]:
    folder = tmp_path_factory.mktemp("census")
    (folder / "handbook.md").write_text(HANDBOOK)
    ds = DocSight(folder / "collection")
    assert ds.ingest([folder]).counts()["added"] == 1
    yield ds


@pytest.mark.parametrize(
    ("question", "part"),
    [
        ("How many tables are there in the whole slides?", "table"),
        ("How many figures are in this paper from Page 3 to Page 10?", "figure"),
        ("How many appendices appear in the document?", "appendix"),
        ("How many pages does the report have? Please answer in integer format.", "page"),
        ("How many tables are in the annual report?", "table"),
        ("How many figures are in Nike's 10-K?", None),  # a name: the answerer decides
        # Past the parts counted, anything but where to count makes it another question.
        ("How many figures are shown to teach two-finger scrolling?", None),
        ("How many tables list the flow rate?", None),
        ("How many people are in the figure on page 3?", None),
        # Other parts are counted by their labels when the question asks how many are named.
        ("How many Exhibits are mentioned in the document?", "labelled"),
        ("How many schedules are referenced in this contract?", "labelled"),
        ("How many exhibits are there?", None),
        ("How many employees does the company have?", None),
    ],
)
def test_a_census_is_a_question_only_about_where_to_count(question: str, part: str | None) -> None:
    asked = read_census(question)
    assert (asked.part if asked else None) == part


def test_the_tables_are_counted_by_their_numbered_captions(collection: DocSight) -> None:
    answer = collection.ask("How many tables are in the handbook?")
    # Not the "12 tables of spare parts" of a sentence: the document's own tables.
    assert answer.answerable and answer.answer.startswith("2 [")
    (citation,) = answer.citations
    assert "Table 1" in (citation.quote or "") and "Table 2" in (citation.quote or "")
    assert citation.doc_name == "handbook.md"


def test_a_census_of_named_pages_says_which(collection: DocSight) -> None:
    answer = collection.ask("How many tables are there on page 1?")
    assert answer.answer.startswith("2 [") and "2 tables in page 1 of handbook.md" in answer.answer
    whole = collection.ask("How many tables are in the handbook?")
    assert "2 tables in handbook.md" in whole.answer


def test_appendices_are_counted_by_their_titles_and_the_ones_the_text_names(
    collection: DocSight,
) -> None:
    answer = collection.ask("How many appendices does the document have?")
    assert answer.answer.startswith("3 [")
    for name in ("Appendix A", "Appendix B", "Appendix C"):
        assert name in answer.answer


def test_a_question_about_what_parts_show_is_answered_from_the_text(collection: DocSight) -> None:
    answer = collection.ask("What is the flow rate of the K-40 pump?")
    assert answer.answer.startswith("18")
    sources = collection.context("How many tables are in the handbook?")
    assert all(s.via != "census" for s in sources)  # the census is part of answering only


def test_parts_named_by_label_are_counted_from_the_text(collection: DocSight) -> None:
    answer = collection.ask("How many exhibits are mentioned in the handbook?")
    # "Exhibits P-1 and P-2" names two; "the exhibit 9 photograph" is no label.
    assert answer.answer.startswith("4 [")
    for name in ("Exhibit P-1", "Exhibit P-2", "Exhibit P-4", "Exhibit D-1"):
        assert name in answer.answer
    assert "Exhibit 9" not in answer.answer
    # A part the text never names by label is no census: the answerer decides.
    none = collection.ask("How many schedules are mentioned in the handbook?")
    assert all(s.via != "census" for s in none.sources)


def test_a_names_mentions_are_counted_and_placed_on_their_pages(collection: DocSight) -> None:
    times = collection.ask("How many times is the K-40 mentioned in the handbook?")
    # Two rows of the tables and the sentence about its flow rate; "K-400" would not count.
    assert times.answer.startswith("3 [")
    assert "3 mentions of “K-40” in handbook.md, on page 1." in times.answer
    pages = collection.ask("On which pages is Exhibit P-4 mentioned? List all pages.")
    assert pages.answer.startswith("1 [") and pages.citations[0].page == 0
    # A name the document never prints is no census: the answerer (and its refusal) decides.
    never = collection.ask("How many times is the Z-99 mentioned?")
    assert all(s.via != "census" for s in never.sources)
