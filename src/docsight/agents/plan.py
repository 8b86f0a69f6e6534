"""Plans of sub-questions in a dependency DAG (G-Reader), and which mode suits a question.

A plan is a short list of sub-questions, each naming the earlier ones it needs. It runs in
Kahn order (a step after everything it depends on); a step that depends on others sees their
answers. With a language model the model writes the plan as JSON, validated here: unknown
dependencies and cycles are rejected (and the question is then answered as one step). Without
a model, rules split the two kinds of question that decompose without understanding them:

* a **comparison** of named things ("Which is higher, the 2023 or the 2024 revenue?",
  "Compare the T-200 and the T-300 warranty"): one sub-question per thing, then the comparison;
* a **conjunction** of questions ("What was revenue in 2024 and how many employees were
  there?"): one sub-question per clause.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic import BaseModel, Field, field_validator

from docsight.agents.question import read_intent
from docsight.errors import LLMResponseError

MAX_PLAN_STEPS = 6


class PlanStep(BaseModel):
    id: int = Field(ge=1)
    question: str = Field(min_length=3, max_length=500)
    depends_on: list[int] = Field(default_factory=list)


class Plan(BaseModel):
    steps: list[PlanStep] = Field(min_length=1, max_length=MAX_PLAN_STEPS)
    #: How the final answer combines the steps' answers: ``compare`` (max/min of their values),
    #: ``join`` (all of them), or ``last`` (the last step answers the question).
    combine: str = "join"

    @field_validator("steps")
    @classmethod
    def _unique_ids(cls, steps: list[PlanStep]) -> list[PlanStep]:
        ids = [s.id for s in steps]
        if len(set(ids)) != len(ids):
            raise ValueError("step ids must be unique")
        return steps


class PlanError(ValueError):
    """A plan that cannot run: a dependency on a missing step, or a cycle."""


def kahn_order(steps: Sequence[PlanStep]) -> list[PlanStep]:
    """The steps with every step after those it depends on (ties in the plan's order)."""
    by_id = {s.id: s for s in steps}
    for step in steps:
        unknown = [d for d in step.depends_on if d not in by_id or d == step.id]
        if unknown:
            raise PlanError(f"step {step.id} depends on {unknown}, which is not another step")
    waiting = {s.id: set(s.depends_on) for s in steps}
    order: list[PlanStep] = []
    ready = [s.id for s in steps if not waiting[s.id]]
    while ready:
        current = ready.pop(0)
        order.append(by_id[current])
        for step in steps:
            if current in waiting[step.id]:
                waiting[step.id].discard(current)
                if not waiting[step.id] and step.id not in [o.id for o in order]:
                    ready.append(step.id)
    if len(order) != len(steps):
        stuck = sorted(i for i, deps in waiting.items() if deps)
        raise PlanError(f"the plan has a cycle through steps {stuck}")
    return order


# --- offline decomposition ----------------------------------------------------------------------

_CHOICE = re.compile(
    r"^(?P<head>.*?)(?:,|:)\s*(?:the\s+)?(?P<a>[^,?]+?)\s+or\s+(?:the\s+)?(?P<b>[^,?]+?)\s*\?*$",
    re.I,
)
_COMPARE = re.compile(
    r"^\s*compare\s+(?:the\s+)?(?P<a>.+?)\s+(?:and|with|to)\s+(?:the\s+)?(?P<b>.+?)"
    r"(?:\s+(?:on|by|in terms of|for)\s+(?P<what>.+?))?\s*\?*$",
    re.I,
)
_COMPARATIVE = re.compile(
    r"^\s*(?:which|what|who)\s+(?:\w+\s+)?(?:is|was|are|were|has|had|did|does)\s+(?:the\s+)?"
    r"(?:higher|larger|lower|smaller|more|less|bigger|greater|better|worse|faster|slower|"
    r"longer|shorter|cheaper|older|newer|highest|largest|lowest|smallest|most|least)\b",
    re.I,
)
_PREPOSITIONS = {"in", "on", "at", "for", "during", "by", "after", "before", "of"}
_CLAUSE_SPLIT = re.compile(
    r"\s*(?:,\s*)?\band\s+(?=(?:who|what|which|when|where|why|how|is|are|was|were|does|do|"
    r"did)\b)",
    re.I,
)


def decompose(question: str) -> Plan | None:
    """A plan for ``question`` by rules, or ``None`` when it is one question."""
    text = " ".join(question.split()).strip()
    clauses = [c.strip(" ,") for c in _CLAUSE_SPLIT.split(text) if c.strip(" ,")]
    if len(clauses) >= 2:
        steps = [
            PlanStep(id=i, question=_as_question(c))
            for i, c in enumerate(clauses[:MAX_PLAN_STEPS], 1)
        ]
        return Plan(steps=steps, combine="join")
    compare = _COMPARE.match(text)
    if compare:
        what = compare.group("what") or ""
        things = [compare.group("a"), compare.group("b")]
        steps = [
            PlanStep(id=i, question=f"What is the {what} of {t}?" if what else f"What about {t}?")
            for i, t in enumerate(things, 1)
        ]
        return Plan(steps=steps, combine="join")
    choice = _CHOICE.match(text)
    comparative = _COMPARATIVE.match(choice.group("head")) if choice else None
    if choice and comparative:
        subject = choice.group("head")[comparative.end() :].strip(" ,")
        steps = []
        for i, thing in enumerate((choice.group("a"), choice.group("b")), 1):
            if not subject:
                sub = f"What is the {thing}?"
            elif subject.split()[0].lower() in _PREPOSITIONS:
                sub = f"What is {thing} {subject}?"  # "larger in 2024, Sensors or ..."
            else:
                sub = f"What is the {subject} of {thing}?"
            steps.append(PlanStep(id=i, question=sub))
        steps.append(PlanStep(id=3, question=text, depends_on=[1, 2]))
        return Plan(steps=steps, combine="compare")
    return None


def _as_question(clause: str) -> str:
    clause = clause.rstrip(" ?.") + "?"
    return clause[0].upper() + clause[1:]


# --- the model's plan ---------------------------------------------------------------------------

_SYSTEM = (
    "Break the user's question about their documents into at most "
    f"{MAX_PLAN_STEPS} short sub-questions that can each be answered from a passage. Give each "
    "an integer id from 1 and the ids of earlier sub-questions whose answers it needs. If the "
    "question needs no breaking up, return it as the only step. Reply with JSON: "
    '{"steps": [{"id": 1, "question": "...", "depends_on": []}], "combine": "join"} where '
    'combine is "compare" (the answer picks among the steps\' values), "join" (the answer '
    'gathers them) or "last" (the last step answers the question).'
)


def plan_with_model(chat: object, question: str) -> Plan:
    """The model's plan, validated and checked for cycles; raises ``LLMError`` (the model
    failed or wrote an invalid plan twice) or ``PlanError`` (a plan that cannot run)."""
    messages = [
        {"role": "system", "content": _SYSTEM},
        {"role": "user", "content": question},
    ]
    plan = chat.chat_json(messages, Plan, max_tokens=400)  # type: ignore[attr-defined]
    if not isinstance(plan, Plan):  # a ChatModel returns the schema it was given
        raise LLMResponseError("the planner returned no plan")
    kahn_order(plan.steps)
    return plan


def choose_mode(question: str) -> str:
    """``auto``'s choice: questions that decompose go to ``plan``, counting and list questions
    (which gather evidence from several places) to ``agent``, the rest stay ``fast``."""
    if decompose(question) is not None:
        return "plan"
    intent = read_intent(question)
    if intent.type in ("count", "list", "comparison"):
        return "agent"
    return "fast"
