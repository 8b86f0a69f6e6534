"""The agent loop's stopping rules and its reflective read, over scripted tools (issue 15)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from docsight.agents.answer import Answer, Citation, Source
from docsight.agents.evidence import Evidence
from docsight.agents.modes import Tools, run_agent
from docsight.agents.trace import Trace
from docsight.llm.scripted import ScriptedChat
from docsight.settings import AnswerSettings


def source(n: int, text: str, page: int = 0) -> Source:
    return Source(n=n, doc_id="d", doc_name="a.pdf", page=page, text=text, chunk_id=f"c-{text}")


class Recorder:
    def __init__(self, found: dict[str, list[Source]], around: list[Source]) -> None:
        self.found = found
        self.around = around
        self.searched: list[str] = []
        self.walked = 0

    def retrieve(self, query: str) -> list[Source]:
        self.searched.append(query)
        return self.found.get(query, [])

    def walk(self, sources: Sequence[Source]) -> list[Source]:
        self.walked += 1
        return self.around

    @staticmethod
    def answer(question: str, sources: Sequence[Source], evidence: Evidence) -> Answer:
        holder = next((s for s in sources if "31 percent" in s.text), None)
        if holder is None:
            return Answer.not_answerable(question, "extractive", sources, evidence.score)
        return Answer(
            question=question,
            answer=f"Services [{holder.n}]",
            answerable=True,
            mode="extractive",
            citations=[Citation.from_source(holder)],
            sources=list(sources),
        )

    def tools(self, **settings: object) -> Tools:
        return Tools(
            retrieve=self.retrieve,
            evidence=lambda q, s: Evidence(0.5, 0.5),
            answer=self.answer,
            chat=None,
            settings=AnswerSettings(**settings),
            walk=self.walk,
        )


class Endless(Recorder):
    """Every search finds one new passage; none holds the answer."""

    def retrieve(self, query: str) -> list[Source]:
        self.searched.append(query)
        return [source(1, f"Passage {len(self.searched)} about segments.", page=len(self.searched))]


def verdicts(*replies: dict[str, object]) -> ScriptedChat:
    return ScriptedChat([json.dumps(r) for r in replies])


def test_missing_pieces_are_searched_for_and_the_loop_stops_when_the_inspector_is_satisfied() -> (
    None
):
    tools = Recorder(
        {
            "Which segment grew fastest?": [source(1, "Sensors is our largest segment.")],
            "grew fastest": [source(1, "Services grew fastest: 31 percent.", page=1)],
        },
        around=[],
    )
    scripted = tools.tools()
    scripted.chat = verdicts(
        {"sufficient": False, "missing": ["grew fastest"]}, {"sufficient": True, "missing": []}
    )
    answer = run_agent("Which segment grew fastest?", scripted, trace := Trace())
    assert tools.searched == ["Which segment grew fastest?", "grew fastest"]
    assert [s.kind for s in trace.steps] == ["seek", "inspect", "seek", "inspect", "answer"]
    assert answer.answerable and answer.answer == "Services [2]"
    assert tools.walked == 0


def test_without_anything_new_the_rounds_end_and_the_map_is_read() -> None:
    tools = Recorder(
        {"Which segment grew fastest?": [source(1, "Segment revenue grew.")]},
        around=[source(1, "Services: growth of 31 percent, fastest of all.", page=1)],
    )
    scripted = tools.tools(max_rounds=3)
    scripted.chat = ScriptedChat(default=json.dumps({"sufficient": False, "missing": ["more"]}))
    answer = run_agent("Which segment grew fastest?", scripted, trace := Trace())
    kinds = [s.kind for s in trace.steps]
    assert kinds == ["seek", "inspect", "seek", "answer", "read", "answer"]
    assert any("found nothing new" in w for w in answer.warnings)
    assert tools.walked == 1 and answer.answerable and answer.answer == "Services [2]"


def test_the_rounds_end_at_max_rounds() -> None:
    tools = Endless({}, around=[])
    scripted = tools.tools(max_rounds=2)
    scripted.chat = ScriptedChat(default=json.dumps({"sufficient": False, "missing": ["more"]}))
    answer = run_agent("Which segment grew fastest?", scripted, trace := Trace())
    assert [s.kind for s in trace.steps].count("inspect") == 2
    assert any("still short after 2 rounds" in w for w in answer.warnings)


def test_offline_a_refused_first_reading_stays_refused() -> None:
    # The search for the missing words would find the answer, but offline the calibrated
    # refusal of the first reading decides whether to answer; nothing is searched or walked.
    tools = Recorder(
        {
            "Which segment grew fastest?": [source(1, "Segment revenue grew.")],
            "fastest": [source(1, "Services grew fastest: 31 percent.", page=1)],
        },
        around=[source(1, "Services: growth of 31 percent, fastest of all.", page=1)],
    )
    answer = run_agent("Which segment grew fastest?", tools.tools(), trace := Trace())
    assert not answer.answerable
    assert tools.searched == ["Which segment grew fastest?"] and tools.walked == 0
    assert [s.kind for s in trace.steps] == ["seek", "inspect"]
    assert "calibrated refusal" in trace.steps[1].output


def test_offline_an_answered_draft_missing_words_reads_more_and_keeps_an_answer() -> None:
    tools = Recorder(
        {
            "Which segment grew fastest in Asia?": [
                source(1, "Services was the segment that grew fastest: 31 percent.")
            ],
            "asia": [source(1, "Asia: Services grew fastest, 31 percent.", page=2)],
        },
        around=[],
    )
    answer = run_agent("Which segment grew fastest in Asia?", tools.tools(), trace := Trace())
    assert tools.searched[1:] == ["asia"]
    assert [s.kind for s in trace.steps][:3] == ["seek", "inspect", "seek"]
    assert answer.answerable


def test_offline_a_wider_reading_that_loses_the_answer_keeps_the_first() -> None:
    class Fussy(Recorder):
        @staticmethod
        def answer(question: str, sources: Sequence[Source], evidence: Evidence) -> Answer:
            if len(sources) > 1:  # more text made the answerer refuse
                return Answer.not_answerable(question, "extractive", sources, 0.1)
            return Recorder.answer(question, sources, evidence)

    tools = Fussy(
        {
            "Which segment grew fastest in Asia?": [
                source(1, "Services was the segment that grew fastest: 31 percent.")
            ],
            "asia": [source(1, "Asia is a region.", page=2)],
        },
        around=[],
    )
    answer = run_agent("Which segment grew fastest in Asia?", tools.tools(), trace := Trace())
    assert answer.answerable and answer.answer == "Services [1]"
    assert trace.steps[-1].output.startswith("the first reading's answer")


def test_a_plan_whose_budget_is_spent_before_its_first_step_refuses() -> None:
    from docsight.agents.modes import run_plan

    plan = {"steps": [{"id": 1, "question": "Which segment grew fastest?", "depends_on": []}]}
    tools = Recorder({}, around=[]).tools(mode_tokens=100)
    tools.chat = ScriptedChat([json.dumps(plan)])
    answer = run_plan("Which segment grew fastest?", tools, trace := Trace())
    assert not answer.answerable and [s.kind for s in trace.steps] == ["plan", "answer"]
    assert any("token budget" in w for w in answer.warnings)


def test_a_refused_step_is_refined_three_times_and_stops() -> None:
    from docsight.agents.modes import _answer_step

    tools = Endless({}, around=[])
    scripted = tools.tools(max_rounds=3)
    scripted.chat = ScriptedChat()  # present, so the step's own refusal drives refining
    answer = _answer_step("Which segment grew fastest?", scripted, trace := Trace())
    assert not answer.answerable
    assert [s.kind for s in trace.steps].count("refine") == 3
    assert len(tools.searched) == 4  # the step's search and three refinements


def test_offline_a_refused_step_is_not_refined() -> None:
    from docsight.agents.modes import _answer_step

    tools = Endless({}, around=[])
    answer = _answer_step("Which segment grew fastest?", tools.tools(), trace := Trace())
    assert not answer.answerable
    assert [s.kind for s in trace.steps] == ["retrieve", "read"]


def test_refining_stops_when_a_search_brings_nothing_new() -> None:
    from docsight.agents.modes import _answer_step

    tools = Recorder({"Which segment grew fastest?": [source(1, "Segment revenue grew.")]}, [])
    scripted = tools.tools(max_rounds=3)
    scripted.chat = ScriptedChat()
    _answer_step("Which segment grew fastest?", scripted, trace := Trace())
    assert [s.kind for s in trace.steps].count("refine") == 1
