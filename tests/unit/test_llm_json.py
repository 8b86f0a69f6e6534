"""JSON reply handling, backoff arithmetic and import hygiene of ``docsight.llm``."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable

import pytest
from pydantic import BaseModel, ValidationError

from docsight.errors import LLMResponseError
from docsight.llm.base import (
    ChatResult,
    Message,
    complete_json,
    extract_json,
    parse_json_reply,
    with_json_instruction,
)
from docsight.llm.client import backoff_delay, parse_retry_after


class Answer(BaseModel):
    answer: str
    pages: list[int]


@pytest.mark.parametrize(
    "reply",
    [
        '{"answer": "yes", "pages": [1, 2]}',
        '```json\n{"answer": "yes", "pages": [1, 2]}\n```',
        '```\n{"answer": "yes", "pages": [1, 2]}\n```',
        'Sure! Here is the JSON:\n{"answer": "yes", "pages": [1, 2]}\nHope this helps {:}',
        'Notes [see p. 1]: ```json {"answer": "yes", "pages": [1, 2]} ``` done',
        '  {"answer": "yes", "pages": [1, 2]}  ',
    ],
)
def test_extract_json_variants(reply: str) -> None:
    assert parse_json_reply(reply, Answer) == Answer(answer="yes", pages=[1, 2])


def test_extract_json_keeps_unparsable_text() -> None:
    assert extract_json("  no json here  ") == "no json here"
    with pytest.raises(ValidationError):
        parse_json_reply('{"answer": "yes", "pages": [1, ', Answer)


def test_json_instruction_extends_existing_system_message() -> None:
    msgs: list[Message] = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "q"},
    ]
    out = with_json_instruction(msgs, Answer)
    assert len(out) == 2 and out[0]["content"].startswith("Be brief.")
    assert "JSON" in out[0]["content"] and '"pages"' in out[0]["content"]
    assert msgs[0]["content"] == "Be brief."  # the caller's list is not modified
    out = with_json_instruction([{"role": "user", "content": "q"}], Answer)
    assert [m["role"] for m in out] == ["system", "user"]


def _scripted(*replies: str) -> tuple[list[list[Message]], Callable[[list[Message]], ChatResult]]:
    seen: list[list[Message]] = []
    queue = list(replies)

    def call(messages: list[Message]) -> ChatResult:
        seen.append(messages)
        return ChatResult(queue.pop(0), "m", False, "stop", {})

    return seen, call


def test_complete_json_repairs_once() -> None:
    seen, call = _scripted('{"answer": "yes"}', '{"answer": "yes", "pages": [3]}')
    msgs: list[Message] = [{"role": "user", "content": "q"}]
    assert complete_json(call, msgs, Answer, model="m") == Answer(answer="yes", pages=[3])
    repair = seen[1]
    assert repair[-2] == {"role": "assistant", "content": '{"answer": "yes"}'}
    assert "pages" in repair[-1]["content"] and "JSON only" in repair[-1]["content"]


def test_complete_json_gives_up_after_one_repair() -> None:
    seen, call = _scripted("nope", "still nope", "never asked")
    with pytest.raises(LLMResponseError) as info:
        complete_json(call, [{"role": "user", "content": "q"}], Answer, model="tiny")
    assert len(seen) == 2
    message = str(info.value)
    assert "tiny" in message and "Answer" in message and "still nope" in message


def test_backoff_grows_and_is_capped() -> None:
    low = [backoff_delay(a, 4.0, rand=lambda: 0.0) for a in range(6)]
    high = [backoff_delay(a, 4.0, rand=lambda: 1.0) for a in range(6)]
    assert low == [0.25, 0.5, 1.0, 2.0, 2.0, 2.0]
    assert high == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    assert backoff_delay(0, 4.0, retry_after=3.0) == 3.0
    assert backoff_delay(0, 4.0, retry_after=30.0) == 4.0


def test_parse_retry_after() -> None:
    assert parse_retry_after({"retry-after": "2"}) == 2.0
    assert parse_retry_after({"retry-after-ms": "1500"}) == 1.5
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None
    future = parse_retry_after({"retry-after": "Wed, 21 Oct 2099 07:28:00 GMT"})
    assert future is not None and future > 1e6
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0


def test_import_is_light() -> None:
    code = (
        "import sys, json, docsight, docsight.llm\n"
        "from docsight.settings import LLMSettings\n"
        "model = docsight.llm.create_chat_model(LLMSettings(model='m'))\n"
        "assert model is not None\n"
        "heavy = ('openai', 'httpx', 'httpx2', 'xllamacpp')\n"
        "print(json.dumps([m for m in heavy if m in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []
