"""Every chat model keeps the ``ChatModel`` contract: the HTTP client and the scripted one."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from pydantic import BaseModel

from docsight.errors import LLMConnectionError, LLMError, LLMResponseError
from docsight.llm import ChatModel, create_chat_model
from docsight.llm.scripted import ScriptedChat
from fixtures.fake_llm import FakeLLM, error, ok
from fixtures.llm_fixtures import llm_settings

FAULT = "<fault>"
Script = Callable[..., None]


class Verdict(BaseModel):
    sufficient: bool


@pytest.fixture(params=["openai", "scripted"])
def chat(request: pytest.FixtureRequest) -> tuple[ChatModel, Script]:
    if request.param == "scripted":
        scripted = ScriptedChat()

        def script_scripted(*replies: str) -> None:
            scripted.script(
                *(LLMConnectionError("scripted fault") if r == FAULT else r for r in replies)
            )

        return scripted, script_scripted
    fake: FakeLLM = request.getfixturevalue("fake_llm")
    client = create_chat_model(llm_settings(fake.base_url, cache=False, max_retries=0))

    def script_server(*replies: str) -> None:
        fake.script(*(error(500) if r == FAULT else ok(r) for r in replies))

    return client, script_server


def test_chat_returns_the_reply_and_the_model(chat: tuple[ChatModel, Script]) -> None:
    model, script = chat
    assert isinstance(model, ChatModel)
    script("Revenue was 468.5 [1].")
    result = model.chat([{"role": "user", "content": "What was revenue?"}])
    assert result.text == "Revenue was 468.5 [1]." and result.model


def test_chat_json_validates_and_repairs_once(chat: tuple[ChatModel, Script]) -> None:
    model, script = chat
    script("not JSON at all", '{"sufficient": true}')
    verdict = model.chat_json([{"role": "user", "content": "Enough?"}], Verdict)
    assert verdict == Verdict(sufficient=True)


def test_chat_json_fails_after_a_second_invalid_reply(chat: tuple[ChatModel, Script]) -> None:
    model, script = chat
    script('{"sufficient": "perhaps"}', "still not JSON")
    with pytest.raises(LLMResponseError):
        model.chat_json([{"role": "user", "content": "Enough?"}], Verdict)


def test_faults_are_llm_errors(chat: tuple[ChatModel, Script]) -> None:
    model, script = chat
    script(FAULT)
    with pytest.raises(LLMError):
        model.chat([{"role": "user", "content": "hello"}])


def test_chat_streams_pieces_that_add_up_to_the_reply(chat: tuple[ChatModel, Script]) -> None:
    model, script = chat
    script("Revenue was 468.5 million in 2024 [1].")
    pieces: list[str] = []
    result = model.chat([{"role": "user", "content": "What was revenue?"}], on_token=pieces.append)
    assert len(pieces) > 1  # streamed, not delivered whole
    assert "".join(pieces).strip() == result.text == "Revenue was 468.5 million in 2024 [1]."


def test_a_fault_before_streaming_is_an_llm_error(chat: tuple[ChatModel, Script]) -> None:
    model, script = chat
    script(FAULT)
    pieces: list[str] = []
    with pytest.raises(LLMError):
        model.chat([{"role": "user", "content": "hello"}], on_token=pieces.append)
    assert pieces == []
