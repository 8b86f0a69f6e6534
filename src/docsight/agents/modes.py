"""Answering modes beyond one retrieval and one answer: ``agent`` and ``plan``.

* ``agent`` (ViDoRAG's seeker and inspector): read the candidates, judge whether they hold
  everything the question asks, and if not, search for what is missing and read again, until
  the evidence suffices or the rounds, tokens or seconds run out; then answer.
* ``plan`` (G-Reader's DAG): split the question into sub-questions with dependencies
  (``agents.plan``), answer them in Kahn order (a dependent step's search carries the answers
  it depends on), refine each step's retrieval up to ``max_rounds`` times while its evidence
  falls short, then write the final answer from the sub-answers and their citations.

With a language model the inspector, planner and final reasoner are model calls (validated
JSON); without one, or when a call fails, their model-free parts run: the sources suffice when
the extractive answerer's calibrated refusal would answer from them, the question's words that
no source holds are the next search, plans come from rules, and the final answer lists (or, for
a comparison, picks among) the sub-answers. Every step lands in the trace. The facade supplies
retrieval and the one-shot answerer as :class:`Tools`, so this module never touches the store.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from docsight.agents.answer import CITATION_MARKER as _MARKER
from docsight.agents.answer import Answer, Citation, Source
from docsight.agents.evidence import Evidence
from docsight.agents.llm_answerer import IMAGE_TOKENS
from docsight.agents.plan import Plan, PlanError, decompose, kahn_order, plan_with_model
from docsight.agents.question import read_intent
from docsight.agents.trace import Trace
from docsight.agents.verify import numbers
from docsight.document.text import content_terms
from docsight.errors import LLMError
from docsight.llm.base import image_part
from docsight.settings import AnswerSettings

Mode = Literal["fast", "agent", "plan", "auto"]


@dataclass
class Tools:
    """What a mode may do: search (the numbered sources ``ask`` would read), weigh evidence and
    answer once (by the model or extractively, with its fallback)."""

    retrieve: Callable[[str], list[Source]]
    evidence: Callable[[str, Sequence[Source]], Evidence]
    answer: Callable[[str, Sequence[Source], Evidence], Answer]
    chat: Any | None
    settings: AnswerSettings
    #: Reads around sources along the document map and content graph (reading-order
    #: neighbours, the rest of their pages and sections, what they refer to); ``None`` when
    #: the documents have no graph to walk.
    walk: Callable[[Sequence[Source]], list[Source]] | None = None
    #: Page renders and figure crops of sources as ``(source number, PNG)``, when ``chat`` is
    #: a vision model that should see them; ``None`` otherwise.
    images: Callable[[Sequence[Source]], list[tuple[int, bytes]]] | None = None


class Budget:
    """Rounds are counted by the loops; tokens and seconds here. Exhausted means: stop and
    answer with what was found."""

    def __init__(self, settings: AnswerSettings) -> None:
        self.tokens_left = settings.mode_tokens
        self.deadline = time.monotonic() + settings.mode_seconds
        self.spent = 0
        self.reason: str | None = None

    def spend(self, text: str = "", tokens: int = 0) -> None:
        """Count a model call's text (about four characters a token) plus its known tokens."""
        cost = tokens + (len(text) // 4 + 1 if text else 0)
        self.spent += cost
        self.tokens_left -= cost

    def exhausted(self) -> bool:
        if self.tokens_left <= 0:
            self.reason = "its token budget (DOCSIGHT_ANSWER_MODE_TOKENS)"
        elif time.monotonic() > self.deadline:
            self.reason = "its time budget (DOCSIGHT_ANSWER_MODE_SECONDS)"
        return self.reason is not None


# --- sources ------------------------------------------------------------------------------------


def _key(source: Source) -> tuple[str, int, str | None, str]:
    return (source.doc_id, source.page, source.chunk_id, source.text[:80])


def merge(*groups: Sequence[Source]) -> tuple[list[Source], list[dict[int, int]]]:
    """One list of sources, each once, numbered 1..n in document order; and for each group the
    map from its numbers to the new ones."""
    unique: dict[tuple[str, int, str | None, str], Source] = {}
    for group in groups:
        for source in group:
            unique.setdefault(_key(source), source)
    ordered = sorted(unique.values(), key=lambda s: (s.doc_name, s.page, s.n))
    renumbered = [s.model_copy(update={"n": i}) for i, s in enumerate(ordered, 1)]
    new_n = {_key(s): i for i, s in enumerate(ordered, 1)}
    maps = [{s.n: new_n[_key(s)] for s in group} for group in groups]
    return renumbered, maps


def missing_terms(question: str, sources: Sequence[Source]) -> list[str]:
    """The question's content words that no source holds."""
    held: set[str] = set()
    for source in sources:
        held.update(content_terms(source.text))
    return [t for t in dict.fromkeys(content_terms(question)) if t not in held]


# --- the inspector ------------------------------------------------------------------------------


class Verdict(BaseModel):
    """The inspector's judgement of the sources read so far."""

    sufficient: bool
    #: Searches for what is missing (empty when sufficient).
    missing: list[str] = Field(default_factory=list, max_length=3)


_INSPECT = (
    "You check whether numbered passages from the user's documents hold everything needed to "
    "answer the question. Reply with JSON: "
    '{"sufficient": true or false, "missing": ["a short search for each missing piece"]}.'
)


def inspect(
    question: str, sources: Sequence[Source], tools: Tools, budget: Budget
) -> tuple[Verdict, str]:
    """The verdict, and who gave it (``model`` or ``offline``)."""
    if tools.chat is not None:
        shown = "\n\n".join(f"[{s.n}] {s.text[:800]}" for s in sources[:12])
        prompt = f"Question: {question}\n\nPassages:\n{shown}"
        content: Any = prompt
        pictures = tools.images(sources[:12]) if tools.images is not None else []
        if pictures:  # a vision model judges the charts and tables it can see, too
            content = [{"type": "text", "text": prompt}]
            for n, png in pictures:
                content += [{"type": "text", "text": f"Image of passage [{n}]:"}, image_part(png)]
        # An image costs about as much as a page of text (a rough, endpoint-independent figure).
        budget.spend(_INSPECT + prompt, tokens=len(pictures) * IMAGE_TOKENS)
        try:
            verdict = tools.chat.chat_json(
                [{"role": "system", "content": _INSPECT}, {"role": "user", "content": content}],
                Verdict,
                max_tokens=200,
            )
            budget.spend(verdict.model_dump_json())
            return verdict, "model"
        except LLMError:
            pass  # judged by coverage instead
    return judge_offline(question, sources, tools), "offline"


def judge_offline(question: str, sources: Sequence[Source], tools: Tools) -> Verdict:
    """Sufficiency by coverage: enough when every content word of the question is held by some
    source. Whether the question is answerable at all is the calibrated refusal's decision
    (``agents.refusal``), made on the first reading, the input it was fitted on; so a draft
    it refuses ends the search (see :func:`run_agent`) and this is asked only of drafts it
    answers."""
    missing = missing_terms(question, sources)
    if not missing:
        return Verdict(sufficient=True)
    return Verdict(sufficient=False, missing=[" ".join(missing)])


# --- agent --------------------------------------------------------------------------------------


def run_agent(question: str, tools: Tools, trace: Trace) -> Answer:
    """Seek, inspect, seek what is missing, answer; read around the sources before refusing.

    Offline, the answer-or-refuse decision is the calibrated refusal's on the first reading:
    on dev (``benchmarks/results/eval_runs.md``) letting a search for a refused question's
    missing words overturn it answered more unanswerable questions without answering more
    answerable ones right. Further reading then serves what is quoted, not whether."""
    budget = Budget(tools.settings)
    offline = tools.chat is None
    with trace.step("seek", question) as step:
        sources = tools.retrieve(question)
        step.pages = _pages(sources)
        step.output = f"{len(sources)} candidates"
    warnings: list[str] = []
    first: Answer | None = None
    for round_ in range(1, tools.settings.max_rounds + 1):
        with trace.step("inspect", question) as step:
            if offline and first is None:
                first = tools.answer(question, sources, tools.evidence(question, sources))
            if first is not None and not first.answerable:
                verdict, by = Verdict(sufficient=False), "offline"
                step.output = "not answerable: the calibrated refusal declines"
            else:
                verdict, by = inspect(question, sources, tools, budget)
                step.output = (
                    "enough" if verdict.sufficient else "missing: " + "; ".join(verdict.missing)
                )
            step.by = "model" if by == "model" else "offline"
            step.pages = _pages(sources)
        if verdict.sufficient or not verdict.missing:
            break
        if round_ == tools.settings.max_rounds or budget.exhausted():
            warnings.append(
                f"the agent stopped at {budget.reason}; answered with what it read"
                if budget.reason
                else f"the evidence was still short after {round_} rounds "
                "(DOCSIGHT_ANSWER_MAX_ROUNDS); answered with what was read"
            )
            break
        before = len(sources)
        for query in verdict.missing:
            with trace.step("seek", query) as step:
                more = tools.retrieve(query)
                sources, _ = merge(sources, more)
                step.pages = _pages(more)
                step.output = f"{len(more)} more, {len(sources)} in all"
        if len(sources) == before:  # inspecting again would ask for the same searches
            warnings.append(
                "the search for what was missing found nothing new; answered with what was read"
            )
            break
    if first is not None and not first.answerable:
        first.warnings.extend(warnings)
        return first  # the refusal stands: nothing below may overturn it offline
    sources = _within(sources, tools.settings.context_tokens * 2)
    with trace.step("answer", question) as step:
        answer = tools.answer(question, sources, tools.evidence(question, sources))
        step.by = "model" if answer.mode == "llm" else "offline"
        step.tokens += budget.spent
    if not answer.answerable and first is not None:
        # The wider reading lost the answer the first reading found: keep the first.
        answer = first
        with trace.step("answer", question) as step:
            step.output = "the first reading's answer: the wider reading found none"
    elif not answer.answerable and tools.walk is not None and not budget.exhausted():
        # Reflective reading (DMAP): the draft found no answer in what was read, so read what
        # surrounds it in the document before giving up.
        with trace.step("read", "neighbours, sections and references of the sources") as step:
            around = tools.walk(sources)
            walked, _ = merge(sources, around)
            step.pages = _pages(around)
            step.output = f"{len(walked) - len(sources)} passages around the sources"
        if len(walked) > len(sources):
            walked = _within(walked, tools.settings.context_tokens * 3)
            with trace.step("answer", question) as step:
                answer = tools.answer(question, walked, tools.evidence(question, walked))
                step.by = "model" if answer.mode == "llm" else "offline"
    answer.warnings.extend(warnings)
    return answer


def _within(sources: list[Source], tokens: int) -> list[Source]:
    """Sources up to a budget of about ``tokens``, best-ranked first, renumbered in order."""
    kept: list[Source] = []
    used = 0
    for source in sorted(sources, key=lambda s: (s.rank, s.n)):
        if kept and used + len(source.text) // 4 > tokens:
            continue
        kept.append(source)
        used += len(source.text) // 4
    merged, _ = merge(kept)
    return merged


def _pages(sources: Sequence[Source]) -> list[tuple[str, int]]:
    return list(dict.fromkeys((s.doc_name, s.page) for s in sources))


# --- plan ---------------------------------------------------------------------------------------


def run_plan(question: str, tools: Tools, trace: Trace) -> Answer:
    budget = Budget(tools.settings)
    warnings: list[str] = []
    with trace.step("plan", question) as step:
        plan, by = _plan(question, tools, budget, warnings)
        step.by = "model" if by == "model" else "offline"
        step.output = " | ".join(f"{s.id}. {s.question}" for s in plan.steps)
    order = kahn_order(plan.steps)
    answers: dict[int, Answer] = {}
    for plan_step in order:
        last = plan_step is order[-1]
        if plan.combine == "compare" and last and plan_step.depends_on:
            break  # the comparison itself is made from the values below
        if budget.exhausted():
            warnings.append(f"the plan stopped at {budget.reason}; answered with what it found")
            break
        query = plan_step.question
        known = [_first_line(answers[d]) for d in plan_step.depends_on if d in answers]
        if known:
            query = f"{query} ({'; '.join(known)})"
        answers[plan_step.id] = _answer_step(query, tools, trace)
    with trace.step("answer", question) as step:
        final = _combine(question, plan, answers, tools, budget)
        step.by = "model" if final.mode == "llm" else "offline"
        step.tokens += budget.spent
    final.warnings = warnings + final.warnings
    return final


def _plan(question: str, tools: Tools, budget: Budget, warnings: list[str]) -> tuple[Plan, str]:
    if tools.chat is not None:
        try:
            plan = plan_with_model(tools.chat, question)
            budget.spend(tokens=_PLAN_TOKENS + len(question) // 4)
            return plan, "model"
        except (LLMError, PlanError) as exc:
            warnings.append(f"the model's plan could not be used ({exc}); planned by rules")
    plan = decompose(question)
    if plan is None:
        from docsight.agents.plan import PlanStep

        plan = Plan(steps=[PlanStep(id=1, question=question)], combine="last")
    return plan, "offline"


#: Tokens a planning call costs beyond the question: its instructions and a plan's JSON.
_PLAN_TOKENS = 350


def _answer_step(query: str, tools: Tools, trace: Trace) -> Answer:
    """One sub-question: retrieve and answer, then refine up to ``max_rounds`` times by
    searching for the sub-question's words that no source holds. With a model, refining goes
    on while the answer is "Not answerable" (the evidence checker: the model's own refusal).
    Offline the calibrated refusal of the first reading stands (see :func:`run_agent`), so
    refining serves an answered step whose words were not all found."""
    with trace.step("retrieve", query) as step:
        sources = tools.retrieve(query)
        step.pages = _pages(sources)
        step.output = f"{len(sources)} sources"
    answer = _read(query, sources, tools, trace)
    offline = tools.chat is None
    first = answer
    for _ in range(tools.settings.max_rounds):
        missing = missing_terms(query, sources)
        if not missing or answer.answerable != offline:
            break
        with trace.step("refine", " ".join(missing)) as step:
            more = tools.retrieve(" ".join(missing))
            before = len(sources)
            sources, _ = merge(sources, more)
            step.pages = _pages(more)
            step.output = f"{len(sources) - before} new sources"
        if len(sources) == before:
            break  # nothing new to read: refining again would search the same words
        # Read at twice the budget, as the agent does: what the first reading held stays in.
        answer = _read(query, sources, tools, trace, tools.settings.context_tokens * 2)
    if offline and not answer.answerable:
        return first  # the wider reading lost the first reading's answer
    return answer


def _read(
    query: str, sources: list[Source], tools: Tools, trace: Trace, tokens: int | None = None
) -> Answer:
    sources = _within(sources, tokens or tools.settings.context_tokens)
    with trace.step("read", query) as step:
        answer = tools.answer(query, sources, tools.evidence(query, sources))
        step.output = _first_line(answer)
        step.by = "model" if answer.mode == "llm" else "offline"
    return answer


def _first_line(answer: Answer) -> str:
    return _MARKER.sub("", answer.answer.split("\n", 1)[0]).strip()


_REASON = (
    "Answer the user's question from the answers to its sub-questions below, citing their "
    "numbered sources as [n]. If they do not answer it, reply exactly: Not answerable."
)


def _combine(
    question: str, plan: Plan, answers: dict[int, Answer], tools: Tools, budget: Budget
) -> Answer:
    """The final answer from the sub-answers, their sources merged and renumbered."""
    parts = [answers[s.id] for s in plan.steps if s.id in answers]
    if not parts:  # the budget ran out before the first step
        return Answer.not_answerable(question, "extractive", [], 0.0)
    if len(parts) == 1 and plan.combine == "last":
        return parts[0]
    sources, maps = merge(*[a.sources for a in parts])
    cited: dict[int, Citation] = {}
    lines: list[tuple[str, str, list[int]]] = []
    for step, answer, mapping in zip(
        [s for s in plan.steps if s.id in answers], parts, maps, strict=True
    ):
        numbers = [mapping[c.n] for c in answer.citations if c.n in mapping]
        for citation, n in zip(answer.citations, numbers, strict=False):
            cited.setdefault(n, citation.model_copy(update={"n": n}))
        lines.append((step.question, _first_line(answer) if answer.answerable else "", numbers))
    evidence = tools.evidence(question, sources)
    base = Answer.not_answerable(question, "extractive", sources, evidence.score)
    if tools.chat is not None:
        from docsight.agents.llm_answerer import check_citations

        shown = "\n".join(
            f"- {q} {a or 'not answerable'} {''.join(f'[{n}]' for n in ns)}" for q, a, ns in lines
        )
        prompt = f"Question: {question}\n\nSub-answers:\n{shown}"
        budget.spend(_REASON + prompt)
        try:
            result = tools.chat.chat(
                [{"role": "system", "content": _REASON}, {"role": "user", "content": prompt}]
            )
            text, numbers, _ = check_citations(result.text, set(cited))
            if text and "not answerable" not in text.lower()[:40]:
                return base.model_copy(
                    update={
                        "answer": text,
                        "answerable": True,
                        "mode": "llm",
                        "model": result.model,
                        "citations": [cited[n] for n in numbers if n in cited],
                    }
                )
        except LLMError:
            pass  # the sub-answers are listed instead
    answered = [(q, a, ns) for q, a, ns in lines if a]
    if not answered:
        return base
    marks = {q: "".join(f"[{n}]" for n in ns) for q, _, ns in answered}
    listing = "\n".join(f"- {q} {a} {marks[q]}".rstrip() for q, a, _ in answered)
    text = listing
    if plan.combine == "compare" and len(answered) >= 2:
        pick = _pick(question, answered)
        if pick is not None:
            q, a, _ = pick
            text = f"{_subject(q)}: {a} {marks[q]}\n\n{listing}"
    used = {n for _, _, ns in answered for n in ns}
    return base.model_copy(
        update={
            "answer": text,
            "answerable": True,
            "citations": [cited[n] for n in sorted(used) if n in cited],
        }
    )


_LOWER = re.compile(r"\b(?:lower|lowest|smaller|smallest|less|least|fewer|cheaper|shorter)\b", re.I)


def _pick(question: str, answered: list[tuple[str, str, list[int]]]) -> Any:
    """The sub-answer with the largest value (or the smallest, when the question asks for it)."""
    valued = [(numbers(item[1]), item) for item in answered]
    valued = [(found[0], item) for found, item in valued if found]
    if len(valued) < 2:
        return None
    direction = read_intent(question).direction
    smallest = direction == "min" or (direction is None and _LOWER.search(question))
    chosen = min(valued, key=lambda v: v[0]) if smallest else max(valued, key=lambda v: v[0])
    return chosen[1]


def _subject(sub_question: str) -> str:
    """ "What is the rated pressure of K-60?" -> "K-60"; else the sub-question."""
    match = re.search(r"\bof\s+(.+?)\??$", sub_question) or re.search(
        r"^What is (?:the )?(.+?)\??$", sub_question
    )
    return match.group(1) if match else sub_question


def run(mode: Mode, question: str, tools: Tools, trace: Trace) -> tuple[Answer, str]:
    """Answer in ``mode`` (``auto`` chooses); returns the answer and the mode that ran."""
    if mode == "auto":
        from docsight.agents.plan import choose_mode

        mode = choose_mode(question)  # type: ignore[assignment]
    if mode == "agent":
        return run_agent(question, tools, trace), "agent"
    if mode == "plan":
        return run_plan(question, tools, trace), "plan"
    raise ValueError(f"run() handles agent and plan, not {mode!r}")


__all__ = ["Budget", "Mode", "Tools", "Verdict", "merge", "missing_terms", "run"]
