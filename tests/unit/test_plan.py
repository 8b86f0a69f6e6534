"""Plans of sub-questions: Kahn order, rejected plans, the offline decomposition (issue 15)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from docsight.agents.answer import Source
from docsight.agents.modes import merge, missing_terms
from docsight.agents.plan import Plan, PlanError, PlanStep, choose_mode, decompose, kahn_order


def step(i: int, *deps: int) -> PlanStep:
    return PlanStep(id=i, question=f"sub-question {i}?", depends_on=list(deps))


def test_kahn_order_puts_each_step_after_what_it_needs() -> None:
    order = kahn_order([step(1, 3), step(2), step(3, 2), step(4)])
    assert [s.id for s in order] == [2, 4, 3, 1]


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        ([step(1, 2), step(2, 1)], "cycle through steps [1, 2]"),
        ([step(1, 1)], "depends on [1]"),
        ([step(1, 7)], "depends on [7]"),
    ],
)
def test_plans_that_cannot_run_are_rejected(steps: list[PlanStep], message: str) -> None:
    with pytest.raises(PlanError, match=message.replace("[", r"\[").replace("]", r"\]")):
        kahn_order(steps)


def test_a_plan_needs_unique_ids_and_at_most_six_steps() -> None:
    with pytest.raises(ValidationError):
        Plan(steps=[step(1), step(1)])
    with pytest.raises(ValidationError):
        Plan(steps=[step(i) for i in range(1, 8)])


def test_a_choice_becomes_one_sub_question_per_option_then_the_comparison() -> None:
    plan = decompose("Which model has the higher rated pressure, the K-40 or the K-60?")
    assert plan is not None and plan.combine == "compare"
    assert [s.question for s in plan.steps[:2]] == [
        "What is the rated pressure of K-40?",
        "What is the rated pressure of K-60?",
    ]
    assert plan.steps[2].depends_on == [1, 2]


def test_a_conjunction_of_questions_is_split_by_clause() -> None:
    plan = decompose("What was revenue in 2024 and how many employees were there?")
    assert plan is not None and plan.combine == "join"
    assert [s.question for s in plan.steps] == [
        "What was revenue in 2024?",
        "How many employees were there?",
    ]


def test_one_question_is_not_split() -> None:
    assert decompose("What was Northwind's revenue in 2024?") is None
    assert decompose("Which costs and revenues are reported?") is None


@pytest.mark.parametrize(
    ("question", "mode"),
    [
        ("What was revenue in 2024 and how many employees were there?", "plan"),
        ("How many error codes does the guide list?", "agent"),
        ("What does error E47 mean?", "fast"),
    ],
)
def test_auto_chooses_by_the_question(question: str, mode: str) -> None:
    assert choose_mode(question) == mode


def source(n: int, text: str, page: int = 0) -> Source:
    return Source(n=n, doc_id="d", doc_name="a.pdf", page=page, text=text, chunk_id=f"c{text}")


def test_merged_sources_are_unique_and_renumbered_in_page_order() -> None:
    first = [source(1, "alpha", 2), source(2, "beta", 0)]
    second = [source(1, "beta", 0), source(2, "gamma", 1)]
    merged, maps = merge(first, second)
    assert [(s.n, s.text) for s in merged] == [(1, "beta"), (2, "gamma"), (3, "alpha")]
    assert maps == [{1: 3, 2: 1}, {1: 1, 2: 2}]
    # Words of the question no source holds (as index terms: stemmed, lower case).
    assert missing_terms("warranty for beta", merged) == ["warranti"]
