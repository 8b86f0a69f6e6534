"""The agent loop's stopping rules and its reflective read, over scripted tools (issue 15)."""

from __future__ import annotations

from collections.abc import Sequence

from docsight.agents.answer import Answer, Citation, Source
from docsight.agents.evidence import Evidence
from docsight.agents.modes import Tools, run_agent
from docsight.agents.trace import Trace
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


def test_missing_words_are_searched_for_and_the_loop_stops_when_all_are_found() -> None:
    tools = Recorder(
        {
            "Which segment grew fastest?": [source(1, "Sensors is our largest segment.")],
            "grew fastest": [source(1, "Services grew fastest: 31 percent.", page=1)],
        },
        around=[],
    )
    answer = run_agent("Which segment grew fastest?", tools.tools(), trace := Trace())
    assert tools.searched == ["Which segment grew fastest?", "grew fastest"]
    assert [s.kind for s in trace.steps] == ["seek", "inspect", "seek", "inspect", "answer"]
    assert answer.answerable and answer.answer == "Services [2]"
    assert tools.walked == 0


def test_without_anything_new_the_rounds_end_and_the_map_is_read() -> None:
    tools = Recorder(
        {"Which segment grew fastest?": [source(1, "Segment revenue grew.")]},
        around=[source(1, "Services: growth of 31 percent, fastest of all.", page=1)],
    )
    answer = run_agent("Which segment grew fastest?", tools.tools(max_rounds=2), trace := Trace())
    kinds = [s.kind for s in trace.steps]
    assert kinds.count("inspect") == 2 and kinds[-3:] == ["answer", "read", "answer"]
    assert any("still short after 2 rounds" in w for w in answer.warnings)
    assert tools.walked == 1 and answer.answerable and answer.answer == "Services [2]"


def test_a_plan_whose_budget_is_spent_before_its_first_step_refuses() -> None:
    import json

    from docsight.agents.modes import run_plan
    from docsight.llm.scripted import ScriptedChat

    plan = {"steps": [{"id": 1, "question": "Which segment grew fastest?", "depends_on": []}]}
    tools = Recorder({}, around=[]).tools(mode_tokens=100)
    tools.chat = ScriptedChat([json.dumps(plan)])
    answer = run_plan("Which segment grew fastest?", tools, trace := Trace())
    assert not answer.answerable and [s.kind for s in trace.steps] == ["plan", "answer"]
    assert any("token budget" in w for w in answer.warnings)
