"""Follow-ups made to stand alone, conversations kept on disk, and traces (issue 15)."""

from __future__ import annotations

from pathlib import Path

import pytest

from docsight.agents.conversation import (
    Conversation,
    Turn,
    names,
    rewrite_offline,
    rewrite_with_model,
)
from docsight.agents.trace import Trace
from docsight.errors import SessionNotFoundError, StoreError, UsageError
from docsight.index.sessions import SessionStore, new_session_id


def turn(question: str, documents: tuple[str, ...] = ("report.pdf",)) -> Turn:
    return Turn(
        question=question,
        standalone=question,
        answer="412.0 [1]",
        answerable=True,
        documents=list(documents),
    )


REVENUE = turn("What was Northwind's revenue in 2024?")
ERROR_CODE = turn("What does error E47 mean on the T-200?", ("guide.md",))


@pytest.mark.parametrize(
    ("history", "follow_up", "standalone"),
    [
        ([REVENUE], "And in 2023?", "What was Northwind's revenue in 2023?"),
        ([REVENUE], "What about Contoso?", "What was Contoso's revenue in 2024?"),
        ([REVENUE], "And for Acme Corp?", "What was Acme Corp's revenue in 2024?"),
        ([REVENUE], "How many employees does it have?", "How many employees does Northwind have?"),
        ([ERROR_CODE], "And on the T-300?", "What does error E47 mean on the T-300?"),
        ([ERROR_CODE], "What about E12?", "What does error E12 mean on the T-200?"),
        # The subject is found past a turn that named nothing.
        (
            [REVENUE, turn("Which segment grew fastest?")],
            "What is its gross margin?",
            "What is Northwind's gross margin?",
        ),
        # Nothing to replace: the fragment is added.
        ([REVENUE], "In Q3?", "What was Northwind's revenue in 2024, in Q3?"),
    ],
)
def test_follow_ups_are_rewritten_from_the_previous_turn(
    history: list[Turn], follow_up: str, standalone: str
) -> None:
    rewrite = rewrite_offline(follow_up, history)
    assert rewrite.question == standalone
    assert rewrite.changed and rewrite.scope == history[-1].documents


@pytest.mark.parametrize(
    "question",
    [
        "How long is the warranty?",
        "Revenue by segment in 2024 and 2023 for every region",  # a query of its own
        "What was Contoso's revenue in 2021?",
    ],
)
def test_questions_that_stand_alone_are_kept(question: str) -> None:
    rewrite = rewrite_offline(question, [REVENUE])
    assert rewrite.question == question and not rewrite.changed


def test_a_question_naming_nothing_looks_first_in_the_previous_documents() -> None:
    rewrite = rewrite_offline("Which segment grew fastest?", [REVENUE])
    assert rewrite.question == "Which segment grew fastest?"
    assert rewrite.scope == ["report.pdf"]
    # One that names something of its own is searched everywhere.
    assert rewrite_offline("What does the T-300 cost?", [REVENUE]).scope is None


def test_the_first_question_is_never_rewritten() -> None:
    rewrite = rewrite_offline("And in 2023?", [])
    assert rewrite.question == "And in 2023?" and rewrite.scope is None


def test_names_skip_sentence_starts_and_function_words() -> None:
    assert names("What was Northwind's revenue in 2024?") == ["Northwind"]
    assert names("Contoso", sentence=False) == ["Contoso"]
    assert names("In Q3 at Acme Corp", sentence=False) == ["Q3", "Acme Corp"]
    assert names("Error E47 on the T-200") == ["E47", "T-200"]


class ScriptedChat:
    """A chat model that answers ``chat_json`` with a fixed object, or raises."""

    model = "scripted"

    def __init__(self, reply: object) -> None:
        self.reply = reply
        self.messages: list[list[dict[str, str]]] = []

    def chat_json(self, messages: list[dict[str, str]], schema: type, **_: object) -> object:
        self.messages.append(messages)
        if isinstance(self.reply, Exception):
            raise self.reply
        return schema.model_validate(self.reply)


def test_a_model_rewrite_sees_the_history_and_keeps_the_offline_scope() -> None:
    chat = ScriptedChat({"standalone": "What was Northwind's revenue in fiscal 2023?"})
    rewrite = rewrite_with_model(chat, "And the year before?", [REVENUE])
    assert rewrite.question == "What was Northwind's revenue in fiscal 2023?"
    assert rewrite.by == "model" and rewrite.scope == ["report.pdf"]
    shown = chat.messages[0][-1]["content"]
    assert "What was Northwind's revenue in 2024?" in shown and "And the year before?" in shown


def test_sessions_round_trip_and_refuse_bad_ids(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    conversation = Conversation(id=new_session_id(), turns=[REVENUE])
    store.save(conversation.id, conversation.model_dump_json())
    loaded = Conversation.model_validate_json(store.load(conversation.id))
    assert loaded.turns[0].standalone == REVENUE.standalone
    assert store.ids() == [conversation.id]
    assert not list((tmp_path / "sessions").glob(".tmp-*"))
    with pytest.raises(SessionNotFoundError, match="no conversation 0123456789ab"):
        store.load("0123456789ab")
    with pytest.raises(UsageError, match="not one docsight gave out"):
        store.load("../../etc/passwd")


def test_an_unreadable_session_is_a_store_error(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    (tmp_path / "sessions").mkdir()
    (tmp_path / "sessions" / "0123456789ab.json").write_bytes(b"\xff\xfe not text")
    with pytest.raises(StoreError, match="cannot read conversation 0123456789ab"):
        store.load("0123456789ab")


def test_trace_steps_are_timed_in_order() -> None:
    trace = Trace()
    with trace.step("rewrite", "And in 2023?") as step:
        step.output = "What was revenue in 2023?"
    with pytest.raises(RuntimeError), trace.step("retrieve", "q"):
        raise RuntimeError("a failed step is still recorded")
    assert [s.kind for s in trace.steps] == ["rewrite", "retrieve"]
    assert trace.steps[0].output == "What was revenue in 2023?"
    assert all(s.seconds >= 0 for s in trace.steps)


def test_streamed_drafts_are_numbered_across_the_widened_second_ask() -> None:
    from docsight.agents.answer import Answer
    from docsight.agents.conversation import Conversation, Turn, take_turn

    conversation = Conversation(
        id="c1",
        turns=[
            Turn(
                question="What was Northwind's revenue in 2024?",
                standalone="What was Northwind's revenue in 2024?",
                answer="468.5 [1]",
                answerable=True,
                documents=["northwind.pdf"],
            )
        ],
    )
    scopes: list[object] = []

    def ask(question: str, doc_names: object, on_token: object) -> Answer:
        scopes.append(doc_names)
        on_token("words", 1)  # type: ignore[operator]  # each ask numbers its drafts from 1
        answerable = doc_names is None
        return Answer(
            question=question,
            answer="412.0" if answerable else "Not answerable",
            answerable=answerable,
            mode="llm",
        )

    heard: list[tuple[str, int]] = []
    answer = take_turn(
        conversation,
        "And in 2023?",
        ask,
        chat=None,
        budget=None,
        on_token=lambda piece, draft: heard.append((piece, draft)),
    )
    assert scopes == [["northwind.pdf"], None] and answer.answerable
    assert [d for _, d in heard] == [1, 2]  # the widened ask's words replace the first's
