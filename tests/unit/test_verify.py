"""Claim-level citation check (issue 15): words and numbers against the cited sources."""

from __future__ import annotations

import pytest

from docsight.agents.answer import Answer, Citation, Source
from docsight.agents.verify import derivable, numbers, verify

TABLE = Source(
    n=1,
    doc_id="d",
    doc_name="report.pdf",
    page=0,
    text="Revenue ($ million): 2023 412.0; 2024 468.5. Employees at year end: 1,840 and 2,015.",
)
OTHER = Source(n=2, doc_id="d", doc_name="report.pdf", page=1, text="The T-300 ships in 2025.")


def answer(text: str) -> Answer:
    return Answer(
        question="q",
        answer=text,
        answerable=True,
        mode="llm",
        citations=[Citation.from_source(TABLE), Citation.from_source(OTHER)],
        sources=[TABLE, OTHER],
    )


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        (468.5, True),  # stated
        (880.5, True),  # a sum
        (56.5, True),  # a difference
        (13.7, True),  # percentage change, (468.5 - 412.0) / 412.0
        (2015, True),  # "2,015"
        (512.0, False),
    ],
)
def test_a_number_must_be_stated_or_follow_from_two_stated(value: float, ok: bool) -> None:
    assert derivable(value, numbers(TABLE.text)) is ok


def test_supported_claims_stay_and_unsupported_ones_are_marked() -> None:
    checked, by = verify(
        answer("Revenue rose to 468.5 million [1]. The T-300 ships in 2026 [2]."), None, "mark"
    )
    assert by == "offline"
    assert checked.answer == (
        "Revenue rose to 468.5 million [1]. The T-300 ships in 2026 (unsupported) [2]."
    )
    assert checked.warnings == [
        "marked an unsupported claim (2026 is in none of the sources it cites): "
        "The T-300 ships in 2026 [2]."
    ]


def test_a_claim_citing_the_wrong_source_is_unsupported() -> None:
    checked, _ = verify(answer("Revenue was 468.5 million dollars [2]."), None, "remove")
    assert not checked.answerable and checked.answer == "Not answerable"
    assert "its words are not in the sources it cites" in checked.warnings[0]


def test_removing_keeps_the_citations_still_used() -> None:
    checked, _ = verify(
        answer("Revenue was 468.5 million [1]. The T-300 ships next year in 2031 [2]."),
        None,
        "remove",
    )
    assert checked.answer == "Revenue was 468.5 million [1]."
    assert [c.n for c in checked.citations] == [1]


def test_extractive_answers_and_off_are_left_alone() -> None:
    text = "The T-300 ships in 2026 [2]."
    assert verify(answer(text), None, "off")[0].answer == text
    quoted = answer(text).model_copy(update={"mode": "extractive"})
    assert verify(quoted, None, "mark")[0].answer == text
