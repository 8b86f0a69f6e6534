"""A conversation over the demo corpus: rewrites, pages per turn, resuming, the CLI (issue 15)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from docsight import DocSight, Settings
from docsight.cli.main import app
from docsight.errors import SessionNotFoundError, StoreError
from fixtures.fake_llm import FakeLLM, error, ok
from fixtures.llm_fixtures import llm_settings

ROOT = Path(__file__).resolve().parents[2]
REPORT = "northwind-annual-report-2024.pdf"
runner = CliRunner()


def retrieved(answer: object) -> set[tuple[str, int]]:
    step = next(s for s in answer.trace if s.kind == "retrieve")  # type: ignore[attr-defined]
    return set(step.pages)


def test_three_turns_find_the_right_pages_offline(demo_collection: Path) -> None:
    ds = DocSight(demo_collection)
    first = ds.chat("What was Northwind's revenue in 2024?")
    assert first.session and first.standalone is None
    assert first.answer.startswith("468.5 [1]")
    assert (REPORT, 0) in retrieved(first)

    second = ds.chat("And in 2023?", session=first.session)
    assert second.standalone == "What was Northwind's revenue in 2023?"
    assert second.answer.startswith("412.0 [1]")
    assert (REPORT, 0) in retrieved(second)

    third = ds.chat("Which segment grew fastest?", session=first.session)
    # The segments paragraph (Services growing 31 percent) is on the report's first page; the
    # question names nothing, so it is searched in the previous answer's report first.
    assert (REPORT, 0) in retrieved(third)
    assert {doc for doc, _ in retrieved(third)} == {REPORT}
    assert [s.kind for s in third.trace] == ["rewrite", "retrieve", "answer"]

    stored = DocSight(demo_collection).conversation(first.session)
    assert [t.question for t in stored.turns] == [
        "What was Northwind's revenue in 2024?",
        "And in 2023?",
        "Which segment grew fastest?",
    ]
    assert stored.turns[1].standalone == "What was Northwind's revenue in 2023?"
    assert stored.turns[0].documents == [REPORT] and stored.turns[1].trace


def test_a_scope_that_cannot_answer_widens_to_the_collection(demo_collection: Path) -> None:
    ds = DocSight(demo_collection)
    first = ds.chat("What was Northwind's revenue in 2024?")
    # Names nothing, so the report is tried first; the warranty is in the FAQ.
    follow = ds.chat("How long is the warranty?", session=first.session)
    assert follow.answerable and "three-year" in follow.answer
    assert follow.citations[0].doc_name == "support-faq.txt"


def test_unknown_or_damaged_sessions_are_clear_errors(demo_collection: Path) -> None:
    ds = DocSight(demo_collection)
    with pytest.raises(SessionNotFoundError):
        ds.chat("And in 2023?", session="0123456789ab")
    session = ds.chat("What was Northwind's revenue in 2024?").session
    assert session is not None
    path = demo_collection / "sessions" / f"{session}.json"
    path.write_text('{"id": "x", "turns": "not a list"}')
    with pytest.raises(StoreError, match=f"conversation {session} is damaged"):
        ds.chat("And in 2023?", session=session)


def test_a_model_rewrites_the_follow_up_and_rules_take_over_when_it_fails(
    demo_collection: Path, fake_llm: FakeLLM
) -> None:
    settings = Settings(llm=llm_settings(fake_llm.base_url, cache=False, max_retries=0))
    offline = DocSight(demo_collection)
    session = offline.chat("What was Northwind's revenue in 2024?").session
    ds = DocSight(demo_collection, settings=settings)
    fake_llm.script(
        ok(json.dumps({"standalone": "What was Northwind's revenue in fiscal 2023?"})),
        ok("Revenue was 412.0 million dollars in 2023 [1]."),
    )
    answer = ds.chat("And the year before?", session=session)
    assert answer.standalone == "What was Northwind's revenue in fiscal 2023?"
    assert answer.trace[0].kind == "rewrite" and answer.trace[0].by == "model"
    assert "And the year before?" in json.dumps(fake_llm.requests[0].body)

    fake_llm.script(error(500), ok("Revenue was 412.0 million dollars [1]."))
    fallback = ds.chat("And in 2022?", session=session)
    # The rules work from the model's rewrite of the turn before.
    assert fallback.standalone == "What was Northwind's revenue in fiscal 2022?"
    assert fallback.trace[0].by == "offline"
    assert any("rewritten by rules" in w for w in fallback.warnings)


def test_docsight_chat_reads_questions_and_resumes(demo_collection: Path) -> None:
    result = runner.invoke(
        app,
        ["-c", str(demo_collection), "chat", "--trace"],
        input="What was Northwind's revenue in 2024?\nAnd in 2023?\n",
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    assert "searching for: What was Northwind's revenue in 2023?" in result.stdout
    assert "412.0 [1]" in result.stdout and "1. rewrite (offline" in result.stdout
    session = result.stdout.split("conversation ", 1)[1].split()[0]

    resumed = runner.invoke(
        app,
        ["-c", str(demo_collection), "chat", "--session", session, "--json"],
        input="How many employees does it have?\n",
    )
    assert resumed.exit_code == 0, resumed.output
    payload = json.loads(resumed.stdout)
    assert payload["standalone"] == "How many employees does Northwind have?"
    assert payload["session"] == session

    missing = runner.invoke(
        app, ["-c", str(demo_collection), "chat", "--session", "0123456789ab"], input=""
    )
    assert missing.exit_code == 2 and "session_not_found" in missing.output


def test_ask_trace_prints_each_step(demo_collection: Path) -> None:
    result = runner.invoke(
        app,
        ["-c", str(demo_collection), "ask", "What was Northwind's revenue in 2024?", "--trace"],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    assert "Trace" in result.stdout
    assert "1. retrieve (offline" in result.stdout and "2. answer (offline" in result.stdout
    assert f"{REPORT} p1" in result.stdout
