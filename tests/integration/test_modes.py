"""agent and plan modes over the demo corpus, offline and with a scripted model (issue 15)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from docsight import DocSight, Settings
from docsight.cli.main import app
from docsight.errors import LLMConnectionError
from docsight.llm.base import Message
from docsight.llm.scripted import ScriptedChat

runner = CliRunner()
CONJUNCTION = "What does error E47 mean and how long is the warranty?"
COMPARISON = "Which is higher, the 2023 revenue or the 2024 revenue?"


def kinds(answer: object) -> list[str]:
    return [s.kind for s in answer.trace]  # type: ignore[attr-defined]


def cite_passage_with(words: str) -> object:
    """A scripted answer that cites the numbered passage holding ``words``."""

    def reply(messages: list[Message]) -> str:
        text = "\n".join(str(m["content"]) for m in messages)
        for match in re.finditer(r"\[(\d+)\]([^\[]*)", text):
            if words in match.group(2):
                return f"{words} [{match.group(1)}]."
        return "Not answerable."

    return reply


def test_offline_agent_searches_again_for_what_is_missing(demo_collection: Path) -> None:
    answer = DocSight(demo_collection).ask(CONJUNCTION, mode="agent")
    assert answer.strategy == "agent" and answer.mode == "extractive"
    assert kinds(answer)[:2] == ["seek", "inspect"] and kinds(answer)[-1] == "answer"
    inspections = [s for s in answer.trace if s.kind == "inspect"]
    assert all(s.by == "offline" for s in inspections)
    # Whatever the first search missed was searched for by its own words.
    if inspections[0].output.startswith("missing"):
        assert kinds(answer)[2] == "seek"
    read = {doc for s in answer.trace if s.kind == "seek" for doc, _ in s.pages}
    assert {"t200-field-guide.md", "support-faq.txt"} <= read


def test_agent_with_a_model_reads_until_the_inspector_is_satisfied(demo_collection: Path) -> None:
    chat = ScriptedChat(
        [
            json.dumps({"sufficient": False, "missing": ["warranty length"]}),
            json.dumps({"sufficient": True, "missing": []}),
            cite_passage_with("three-year warranty"),
        ]
    )
    answer = DocSight(demo_collection, chat=chat).ask("How long is the warranty?", mode="agent")
    assert [s.kind for s in answer.trace] == [
        "seek",
        "inspect",
        "seek",
        "inspect",
        "answer",
        "verify",
    ]
    assert [s.by for s in answer.trace if s.kind == "inspect"] == ["model", "model"]
    assert answer.trace[2].input == "warranty length"
    assert answer.mode == "llm" and answer.answer.startswith("three-year warranty [1]")
    assert answer.citations[0].doc_name == "support-faq.txt" and chat.pending == 0


def test_agent_stops_after_its_rounds(demo_collection: Path) -> None:
    # An inspector never satisfied, asking each round for something the corpus holds and the
    # agent has not read yet, so each round brings new sources.
    asks = iter(["calibration laboratory", "error E47", "T-300 logger", "warranty claims"])

    def never(messages: list[Message]) -> str:
        if "sufficient" not in str(messages[0]["content"]):
            return "Not answerable"  # the answer itself, once the rounds are over
        return json.dumps({"sufficient": False, "missing": [next(asks)]})

    chat = ScriptedChat(default=never)  # type: ignore[arg-type]
    settings = Settings()
    settings.answer.max_rounds = 2
    answer = DocSight(demo_collection, settings=settings, chat=chat).ask(
        "How long is the warranty?", mode="agent"
    )
    assert kinds(answer).count("inspect") == 2 and kinds(answer).count("seek") == 2
    assert any("still short after 2 rounds" in w for w in answer.warnings)


def test_agent_stops_when_its_token_budget_runs_out(demo_collection: Path) -> None:
    chat = ScriptedChat(default=json.dumps({"sufficient": False, "missing": ["more"]}))
    settings = Settings()
    settings.answer.mode_tokens = 100
    answer = DocSight(demo_collection, settings=settings, chat=chat).ask(
        "How long is the warranty?", mode="agent"
    )
    assert kinds(answer).count("inspect") == 1
    assert any("token budget" in w for w in answer.warnings)


def test_offline_plan_compares_sub_answers(demo_collection: Path) -> None:
    answer = DocSight(demo_collection).ask(COMPARISON, mode="plan")
    assert answer.strategy == "plan" and answer.answerable
    assert answer.answer.startswith("2024 revenue: 468.5 [1]")
    assert "- What is the 2023 revenue? 412.0 [1]" in answer.answer
    plan = answer.trace[0]
    assert (
        plan.kind == "plan"
        and plan.by == "offline"
        and "2. What is the 2024 revenue?" in (plan.output)
    )
    assert kinds(answer).count("read") == 2 and kinds(answer)[-1] == "answer"


def test_offline_plan_splits_a_conjunction_and_cites_each_part(demo_collection: Path) -> None:
    answer = DocSight(demo_collection).ask(CONJUNCTION, mode="auto")
    assert answer.strategy == "plan"
    lines = answer.answer.splitlines()
    assert lines[0].startswith("- What does error E47 mean? Memory full [1]")
    assert "three-year" in lines[1] and lines[1].endswith("[2]")
    assert [c.doc_name for c in answer.citations] == ["t200-field-guide.md", "support-faq.txt"]


def scripted_planner(plan: object, *, bad_first: bool = False) -> ScriptedChat:
    """A model that plans (``plan``), answers sub-questions from their passages and reasons."""

    replies: list[object] = ["this is not JSON"] if bad_first else []

    def reply(messages: list[Message]) -> str:
        system = str(messages[0]["content"])
        if "sub-questions" in system and "depends_on" in system:
            return json.dumps(plan)
        if "answers to its sub-questions" in system:
            numbers = re.findall(r"\[(\d+)\]", str(messages[-1]["content"]))
            return f"The 2024 revenue, 468.5, is higher [{numbers[-1]}]."
        user = str(messages[-1]["content"])
        for match in re.finditer(r"\[(\d+)\][^\n]*\n?([^\[]*)", user):
            if "468.5" in match.group(0) or "412.0" in match.group(0):
                return f"See [{match.group(1)}]."
        return "Not answerable."

    chat = ScriptedChat(replies, default=reply)  # type: ignore[arg-type]
    return chat


PLAN = {
    "steps": [
        {"id": 1, "question": "What was the 2023 revenue?", "depends_on": []},
        {"id": 2, "question": "What was the 2024 revenue?", "depends_on": []},
        {"id": 3, "question": COMPARISON, "depends_on": [1, 2]},
    ],
    "combine": "compare",
}


def test_plan_with_a_model_runs_its_dag_and_reasons(demo_collection: Path) -> None:
    chat = scripted_planner(PLAN, bad_first=True)  # the malformed first plan is repaired
    answer = DocSight(demo_collection, chat=chat).ask(COMPARISON, mode="plan")
    assert answer.trace[0].kind == "plan" and answer.trace[0].by == "model"
    assert "1. What was the 2023 revenue?" in answer.trace[0].output
    assert answer.mode == "llm" and "468.5, is higher [" in answer.answer
    assert answer.citations and not answer.warnings


def test_a_cyclic_plan_is_rejected_for_the_rules(demo_collection: Path) -> None:
    cyclic = {
        "steps": [
            {"id": 1, "question": "What was the 2023 revenue?", "depends_on": [2]},
            {"id": 2, "question": "What was the 2024 revenue?", "depends_on": [1]},
        ]
    }
    answer = DocSight(demo_collection, chat=scripted_planner(cyclic)).ask(COMPARISON, mode="plan")
    assert answer.trace[0].by == "offline"
    assert any("cycle" in w and "planned by rules" in w for w in answer.warnings)


@pytest.mark.parametrize("mode", ["agent", "plan"])
def test_a_failing_model_degrades_to_the_offline_parts(demo_collection: Path, mode: str) -> None:
    chat = ScriptedChat(default=LLMConnectionError("scripted: the endpoint is down"))
    answer = DocSight(demo_collection, chat=chat).ask(COMPARISON, mode=mode)
    assert answer.answerable and answer.mode == "extractive"
    # plan compares offline; agent's one answer quotes the revenue row (an extractive answer
    # does not compare), each after the model's failure was reported.
    assert "468.5" in answer.answer if mode == "plan" else "Revenue" in answer.answer
    assert all(s.by == "offline" for s in answer.trace if s.kind in ("inspect", "plan"))
    assert any("language model failed" in w or "planned by rules" in w for w in answer.warnings)


def test_ask_mode_on_the_command_line(demo_collection: Path) -> None:
    result = runner.invoke(
        app,
        ["-c", str(demo_collection), "ask", COMPARISON, "--mode", "plan", "--trace"],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    assert "plan mode" in result.stdout and "1. plan (offline" in result.stdout
    bad = runner.invoke(app, ["-c", str(demo_collection), "ask", COMPARISON, "--mode", "deep"])
    assert bad.exit_code == 2 and "mode must be fast, agent, plan or auto" in bad.output


@pytest.mark.llm
@pytest.mark.slow
@pytest.mark.parametrize("mode", ["agent", "plan"])
def test_each_mode_runs_end_to_end_with_the_local_model(
    demo_collection: Path,
    local_llm,  # type: ignore[no-untyped-def]
    mode: str,
) -> None:
    # Mechanics, not quality: SmolLM2-135M writes poor plans and verdicts, and every step must
    # still end in an answer (the model's, or the offline parts' after its faults).
    llm = local_llm.llm_settings(max_tokens=96, cache=False, timeout=120, budget=600)
    settings = Settings(llm=llm)
    settings.answer.mode_seconds = 600
    # A short readout and one round: every step still runs, on a quarter of the prompt.
    settings.answer.context_tokens = 800
    settings.answer.max_rounds = 1
    answer = DocSight(demo_collection, settings=settings).ask(COMPARISON, mode=mode)
    assert answer.strategy == mode and answer.answer.strip()
    steps = kinds(answer)
    assert steps[0] == ("seek" if mode == "agent" else "plan") and "answer" in steps
    called = [s for s in answer.trace if s.by == "model"]
    assert called or answer.warnings  # the model did a step, or its faults were reported
    assert {c.n for c in answer.citations} <= {s.n for s in answer.sources}


def test_the_answer_step_carries_the_tokens_its_model_call_spent(demo_collection: Path) -> None:
    chat = ScriptedChat([cite_passage_with("three-year warranty")])
    answer = DocSight(demo_collection, chat=chat).ask("How long is the warranty?", mode="fast")
    (step,) = [s for s in answer.trace if s.kind == "answer"]
    prompt = sum(len(str(m.get("content", ""))) for m in chat.calls[0])
    # The scripted model reports usage as an endpoint would; the step carries exactly that.
    reply = len("three-year warranty [1].")
    assert step.by == "model" and step.tokens == prompt // 4 + 1 + reply // 4 + 1
    # Offline, no model was asked and nothing is counted.
    offline = DocSight(demo_collection).ask("How long is the warranty?", mode="fast")
    assert sum(s.tokens for s in offline.trace) == 0


def test_tokens_are_estimated_when_the_endpoint_reports_none() -> None:
    from docsight.agents.llm_answerer import IMAGE_TOKENS, tokens_spent
    from docsight.llm.base import ChatResult

    reply = ChatResult(text="x" * 40, model="m", cached=False, finish_reason="stop")
    messages: list[Message] = [
        {"role": "system", "content": "y" * 400},
        {"role": "user", "content": [{"type": "text", "text": "z" * 160}, {"type": "image_url"}]},
    ]
    assert tokens_spent(messages, reply) == (40 + 400 + 160) // 4 + 1 + IMAGE_TOKENS
    reported = ChatResult("x", "m", False, "stop", usage={"total_tokens": 7})
    assert tokens_spent(messages, reported) == 7
