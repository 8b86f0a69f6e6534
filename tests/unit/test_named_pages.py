"""Questions that name a page ("the date on page 14", "the court on the cover"): the answer is
what that page prints, a refusal when it prints nothing of the wanted kind; and the form a date
is asked in."""

from __future__ import annotations

import pytest

from docsight.agents.answer import Source
from docsight.agents.evidence import Evidence
from docsight.agents.extractive import ExtractiveAnswerer
from docsight.agents.question import read_intent
from docsight.agents.refusal import RefusalModel, Signals
from docsight.agents.values import extract_value, written_as
from docsight.settings import AnswerSettings

DOC = "d" * 32


class _Encoder:
    """Every text the same vector: the ranking is left to words, types and pages."""

    dim = 4
    fingerprint = "test"

    def encode_documents(self, texts: list[str]):  # type: ignore[no-untyped-def]
        import numpy as np

        return np.ones((len(texts), self.dim), dtype=np.float32) / 2.0

    encode_queries = encode_documents


def _source(n: int, page: int, text: str) -> Source:
    return Source(
        n=n, rank=n, doc_id=DOC, doc_name="filing.pdf", page=page, chunk_id=f"c{n}", text=text
    )


def _answerer() -> ExtractiveAnswerer:
    always = RefusalModel(weights=(0.0,) * len(Signals.names()), bias=10.0, threshold=0.5)
    return ExtractiveAnswerer(lambda: _Encoder(), AnswerSettings(), refusal=always)  # type: ignore[arg-type,return-value]


SOURCES = [
    # The best match by words is on page 2; page 14 is where the user looks.
    _source(1, 1, "The filing date of the application was March 3, 2020, as the docket shows."),
    _source(2, 13, "Montréal, February 8, 2021. Counsel for the defendant."),
]


def test_the_named_page_answers_before_a_better_match_elsewhere() -> None:
    question = "When was the filing dated, on page 14?"
    plain = _answerer().answer(question, SOURCES, Evidence(0.8, 0.8))
    assert plain.answer.startswith("March 3, 2020 [1]")
    named = _answerer().answer(question, SOURCES, Evidence(0.8, 0.8, pages=((DOC, 13),)))
    assert named.answer.startswith("February 8, 2021 [2]")
    assert named.citations[0].page == 13


def test_a_named_page_without_the_wanted_kind_of_value_is_refused() -> None:
    sources = [
        _source(1, 12, "Even so, no evidence of any reliance has been adduced."),
        _source(2, 13, "INF LLP, Telephone 514-312-0290, Fax 514-312-0292."),
    ]
    question = "What is the fax number of INF LLP on page thirteen?"
    on_13 = _answerer().answer(question, sources, Evidence(0.8, 0.8, pages=((DOC, 12),)))
    assert not on_13.answerable and on_13.explanation is not None
    assert on_13.explanation.startswith("Looked for a phone number; the pages it names print no")
    # The closest such value elsewhere, and what the named page holds closest to the question.
    assert "the closest phone number is on page 14 [2]: 514-312-0292" in on_13.explanation
    assert "Closest evidence: filing.pdf, page 13 [1]" in on_13.explanation
    on_14 = _answerer().answer(question, sources, Evidence(0.8, 0.8, pages=((DOC, 13),)))
    assert on_14.answerable and on_14.answer.startswith("514-312-0292 [2]")
    # A statement is not a typed value: its page is preferred, never refused for lack of one.
    said = _answerer().answer(
        "What does page 13 say about reliance?", sources, Evidence(0.8, 0.8, pages=((DOC, 12),))
    )
    assert said.answerable and said.citations[0].page == 12


@pytest.mark.parametrize(
    ("printed", "form", "written"),
    [
        ("February 8, 2021", "YYYY-MM-DD", "2021-02-08"),
        ("8 Feb. 2021", "YYYY-MM-DD", "2021-02-08"),
        ("2/8/2021", "DD/MM/YYYY", "08/02/2021"),
        ("2021-02-08", "MM/DD/YYYY", "02/08/2021"),
        ("March 2010", "YYYY-MM", "2010-03"),
        ("March 2010", "YYYY-MM-DD", "March 2010"),  # no day printed: left as printed
        ("2019", "YYYY-MM-DD", "2019"),
    ],
)
def test_a_date_is_written_in_the_form_asked(printed: str, form: str, written: str) -> None:
    assert written_as(printed, form) == written


def test_a_question_asking_a_dates_form_wants_a_date() -> None:
    intent = read_intent("Format the date mentioned on page 14 as YYYY-MM-DD.")
    assert intent.type == "date" and intent.date_format == "YYYY-MM-DD"
    assert extract_value(intent, "Montréal, February 8, 2021 INF LLP") == "2021-02-08"
    assert read_intent("When was the policy revised?").date_format is None


def test_a_reference_label_is_not_a_quantity() -> None:
    intent = read_intent("What is the rated pressure of the K-40?")
    text = "The rated pressure of every model is listed in Table 2 and on page 3."
    assert extract_value(intent, text) is None
    assert extract_value(intent, "Its rated pressure is 380 kPa, see Table 2.") == "380 kPa"
    count = read_intent("How many prompts are shown?")
    assert extract_value(count, "The prompts are given in Listings 1 and 2.") is None
    assert extract_value(count, "Pages 3, 4 and 5 show 12 prompts.") == "12 prompts"


def test_a_named_page_is_read_in_the_document_the_question_is_about() -> None:
    # Over a whole collection "page 3" exists in a slide deck too; the operating income is in
    # the report (which has no page 3), so the deck's page 3 is not where to look.
    deck = "e" * 32
    sources = [
        Source(n=1, rank=1, doc_id=deck, doc_name="launch.pptx", page=2, chunk_id="c1",
               text="Data plan: 9 dollars per month."),
        Source(n=2, rank=2, doc_id=DOC, doc_name="report.pdf", page=0, chunk_id="c2",
               text="Operating income rose to 71.4 million dollars in 2024."),
    ]  # fmt: skip
    question = "What was the operating income on page 3?"
    answer = _answerer().answer(question, sources, Evidence(0.8, 0.8, pages=((deck, 2),)))
    assert answer.answer.startswith("71.4 million dollars [2]")


def test_a_run_of_figures_is_no_phone_number() -> None:
    phone = read_intent("What is the phone number of the service desk?")
    assert phone.contact == "phone"
    assert extract_value(phone, "Revenue by segment 2024 212.4 Sensors") is None
    assert extract_value(phone, "Years 2023 2024 2025 compared") is None
    assert extract_value(phone, "Scores 12.5 17.3 19.4 by round") is None
    assert extract_value(phone, "Appelez le 01.23.45.67.89 en France.") == "01.23.45.67.89"
    assert extract_value(phone, "Call 1-800-275-2273 from Mexico.") == "1-800-275-2273"
    assert extract_value(phone, "Tel. (514) 312-0292 or +41 44 555 12 34") == "(514) 312-0292"


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("What revenue did Northwind report?", "number"),
        ("What price does the T-300 data plan have?", "number"),
        ("What area does the service team cover?", "text"),
    ],
)
def test_an_amount_asked_before_its_verb_is_a_number(question: str, kind: str) -> None:
    assert read_intent(question).type == kind


def test_a_rows_latest_year_answers_when_no_year_is_asked() -> None:
    row = "Metric: Revenue ($ million); 2023: 412.0; 2024: 468.5"
    assert extract_value(read_intent("What revenue did Northwind report?"), row) == "468.5"
    assert extract_value(read_intent("What was the revenue in 2023?"), row) == "412.0"


def test_what_type_of_thing_is_answered_by_the_kind_printed() -> None:
    court = read_intent("What type of court is noted on the cover page?")
    assert court.kind_of == "court"
    assert extract_value(court, "C A N A D A SUPERIOR COURT") == "SUPERIOR COURT"
    assert extract_value(court, "it refers this Honourable Court to") == "Honourable Court"
    assert extract_value(court, "as the court said") is None
    battery = read_intent("What kind of battery does the MacBook Air use?")
    assert extract_value(battery, "A built-in Lithium-Polymer battery lasts.") == (
        "Lithium-Polymer battery"
    )
    # The question's own words name no kind: "the MacBook Air battery" is the one asked about.
    assert extract_value(battery, "Recharge the MacBook Air battery overnight.") is None
    # On the cover page, its title; elsewhere the filing's sentences name another court.
    sources = [
        _source(1, 0, "C A N A D A SUPERIOR COURT\n(Class Action)"),
        _source(2, 11, "WHEREFORE, PLEASE THIS HONOURABLE COURT: DISMISS the Application."),
    ]
    answer = _answerer().answer(
        "What type of court is noted on the cover page?",
        sources,
        Evidence(0.8, 0.8, pages=((DOC, 0),)),
    )
    assert answer.answer.startswith("SUPERIOR COURT [1]")
