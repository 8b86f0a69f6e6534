"""OpenAIChatClient against the scripted fake endpoint: retries, errors, JSON mode, cache."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from docsight.errors import (
    LLMConnectionError,
    LLMNotConfiguredError,
    LLMRateLimitError,
    LLMResponseError,
    LLMStatusError,
    LLMTimeoutError,
)
from docsight.llm import ChatModel, OpenAIChatClient, create_chat_model
from docsight.settings import LLMSettings
from fixtures.fake_llm import (
    FakeLLM,
    Reply,
    empty,
    error,
    hang,
    malformed_body,
    ok,
    rate_limited,
)
from fixtures.llm_fixtures import llm_settings

QUESTION = [{"role": "user", "content": "What is on page 3?"}]


class Verdict(BaseModel):
    answerable: bool
    pages: list[int]


class Client:
    """An OpenAIChatClient on the fake endpoint that records sleeps instead of sleeping."""

    def __init__(self, fake: FakeLLM, cache_path: Path | None = None, **fields: Any) -> None:
        self.sleeps: list[float] = []
        fields.setdefault("max_retries", 3)
        fields.setdefault("timeout", 5.0)
        # Sleeps are recorded, not slept, so a budget would never run out here (see below).
        fields.setdefault("budget", 300.0)
        self.llm = OpenAIChatClient(
            llm_settings(fake.base_url, **fields),
            cache_path,
            sleep=self.sleeps.append,
            rand=lambda: 0.5,
        )


# --- plain chat ----------------------------------------------------------------------------------


def test_chat_success_and_request_shape(fake_llm: FakeLLM) -> None:
    fake_llm.script(ok("  Page 3 shows a table.\n"))
    c = Client(fake_llm, max_tokens=64)
    assert isinstance(c.llm, ChatModel)
    result = c.llm.chat(QUESTION, stop=["\n\n"])
    assert result.text == "Page 3 shows a table."
    assert not result.cached and result.finish_reason == "stop" and result.model == "fake-model"
    assert result.usage == {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}
    (request,) = fake_llm.chat_requests
    assert request.body["messages"] == QUESTION
    assert request.body["temperature"] == 0.0 and request.body["max_tokens"] == 64
    assert request.body["stop"] == ["\n\n"] and "response_format" not in request.body
    assert request.headers["authorization"] == "Bearer not-needed"


def test_api_key_is_sent(fake_llm: FakeLLM) -> None:
    fake_llm.script(ok())
    Client(fake_llm, api_key="sk-test").llm.chat(QUESTION)
    assert fake_llm.chat_requests[0].headers["authorization"] == "Bearer sk-test"


@pytest.mark.parametrize("failure", [rate_limited(), error(500), error(503)])
def test_retries_then_succeeds(fake_llm: FakeLLM, failure: Reply) -> None:
    fake_llm.script(failure, failure, ok("fine"))
    c = Client(fake_llm, max_backoff=20.0)
    assert c.llm.chat(QUESTION).text == "fine"
    assert len(fake_llm.chat_requests) == 3
    assert c.sleeps == [0.375, 0.75]  # 0.5 * 2**attempt with the jitter fixed at its middle


def test_retry_after_is_honoured_and_capped(fake_llm: FakeLLM) -> None:
    fake_llm.script(rate_limited(retry_after=7), rate_limited(retry_after=120), ok("fine"))
    c = Client(fake_llm, max_backoff=30.0)
    assert c.llm.chat(QUESTION).text == "fine"
    assert c.sleeps == [7.0, 30.0]


def test_no_retry_that_would_outlast_the_budget(fake_llm: FakeLLM) -> None:
    """Waiting 30 s for a retry inside a 10 s budget only ends in a timeout: the endpoint's own
    error is reported at once instead."""
    fake_llm.script(rate_limited(retry_after=30), ok("too late"))
    c = Client(fake_llm, max_backoff=60.0, budget=10.0)
    with pytest.raises(LLMRateLimitError):
        c.llm.chat(QUESTION)
    assert c.sleeps == [] and len(fake_llm.chat_requests) == 1


@pytest.mark.parametrize(
    ("failure", "expected"),
    [(rate_limited(), LLMRateLimitError), (error(502), LLMStatusError)],
)
def test_gives_up_after_max_retries(
    fake_llm: FakeLLM, failure: Reply, expected: type[Exception]
) -> None:
    fake_llm.script(*[failure] * 3, ok("too late"))
    c = Client(fake_llm, max_retries=2, max_backoff=1.0)
    with pytest.raises(expected) as info:
        c.llm.chat(QUESTION)
    assert len(fake_llm.chat_requests) == 3 and len(c.sleeps) == 2
    assert all(s <= 1.0 for s in c.sleeps)
    if isinstance(info.value, LLMStatusError):
        assert info.value.status_code == 502
    assert "fake-model" in str(info.value)


@pytest.mark.parametrize("status", [400, 401, 404, 422])
def test_no_retry_on_client_errors(fake_llm: FakeLLM, status: int) -> None:
    fake_llm.script(error(status, "bad things"), ok())
    c = Client(fake_llm)
    with pytest.raises(LLMStatusError) as info:
        c.llm.chat(QUESTION)
    assert info.value.status_code == status and "bad things" in str(info.value)
    assert len(fake_llm.chat_requests) == 1 and c.sleeps == []


def test_timeout(fake_llm: FakeLLM) -> None:
    fake_llm.script(hang(3.0), hang(3.0))
    c = Client(fake_llm, timeout=0.2, max_retries=1)
    with pytest.raises(LLMTimeoutError):
        c.llm.chat(QUESTION)
    assert len(fake_llm.chat_requests) == 2 and len(c.sleeps) == 1


def test_connection_refused() -> None:
    with FakeLLM() as fake:
        url_of_closed_port = fake.base_url
    settings = llm_settings(url_of_closed_port, max_retries=1)
    sleeps: list[float] = []
    client = OpenAIChatClient(settings, sleep=sleeps.append)
    with pytest.raises(LLMConnectionError):
        client.chat(QUESTION)
    assert len(sleeps) == 1


@pytest.mark.parametrize(
    "reply", [empty(), ok(None), malformed_body(), malformed_body(b"<html>oops</html>")]
)
def test_unusable_responses(fake_llm: FakeLLM, reply: Reply) -> None:
    fake_llm.script(reply, ok())
    with pytest.raises(LLMResponseError):
        Client(fake_llm).llm.chat(QUESTION)
    assert len(fake_llm.chat_requests) == 1


def test_concurrency_limit(fake_llm: FakeLLM) -> None:
    fake_llm.default = ok("done", delay=0.15)
    c = Client(fake_llm, max_concurrency=2)
    results: list[str] = []
    threads = [
        threading.Thread(
            target=lambda i=i: results.append(
                c.llm.chat([{"role": "user", "content": str(i)}]).text
            )
        )
        for i in range(6)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == ["done"] * 6
    assert fake_llm.max_in_flight == 2


# --- JSON mode -----------------------------------------------------------------------------------


def test_chat_json_uses_json_mode(fake_llm: FakeLLM) -> None:
    fake_llm.script(ok('```json\n{"answerable": true, "pages": [3]}\n```'))
    assert Client(fake_llm).llm.chat_json(QUESTION, Verdict) == Verdict(answerable=True, pages=[3])
    body = fake_llm.chat_requests[0].body
    assert body["response_format"] == {"type": "json_object"}
    assert body["messages"][0]["role"] == "system" and "JSON" in body["messages"][0]["content"]


def test_malformed_json_is_repaired(fake_llm: FakeLLM) -> None:
    fake_llm.script(
        ok('{"answerable": true, "pages": [3'), ok('{"answerable": true, "pages": [3]}')
    )
    assert Client(fake_llm).llm.chat_json(QUESTION, Verdict).pages == [3]
    first, second = (r.body["messages"] for r in fake_llm.chat_requests)
    assert second[: len(first)] == first
    assert second[-2] == {"role": "assistant", "content": '{"answerable": true, "pages": [3'}
    assert second[-1]["role"] == "user" and "JSON" in second[-1]["content"]


def test_failed_repair_raises(fake_llm: FakeLLM) -> None:
    fake_llm.script(ok('{"answerable": "maybe"}'), ok("I cannot answer that."), ok("{}"))
    with pytest.raises(LLMResponseError, match="after one repair attempt"):
        Client(fake_llm).llm.chat_json(QUESTION, Verdict)
    assert len(fake_llm.chat_requests) == 2


def test_json_mode_fallback_is_remembered(fake_llm: FakeLLM) -> None:
    fake_llm.reject_response_format = True
    fake_llm.script(
        ok('{"answerable": false, "pages": []}'), ok('{"answerable": true, "pages": [1]}')
    )
    c = Client(fake_llm)
    assert c.llm.chat_json(QUESTION, Verdict).answerable is False
    assert not c.llm.json_mode_supported
    assert c.llm.chat_json([{"role": "user", "content": "again"}], Verdict).pages == [1]
    sent = [("response_format" in r.body) for r in fake_llm.chat_requests]
    assert sent == [True, False, False]  # rejected once, then never sent again
    assert c.sleeps == []


def test_unrelated_400_does_not_disable_json_mode(fake_llm: FakeLLM) -> None:
    fake_llm.script(error(400, "context too long"), error(400, "context too long"))
    c = Client(fake_llm)
    with pytest.raises(LLMStatusError):
        c.llm.chat_json(QUESTION, Verdict)
    assert c.llm.json_mode_supported


# --- cache ---------------------------------------------------------------------------------------


def test_cache_hit_and_miss(fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.script(ok("first"), ok("second"), ok("third"))
    cache = tmp_path / "cache" / "llm.sqlite"
    c = Client(fake_llm, cache)
    a = c.llm.chat(QUESTION)
    b = c.llm.chat(QUESTION)
    assert (a.text, a.cached) == ("first", False) and (b.text, b.cached) == ("first", True)
    assert b.usage == a.usage and b.finish_reason == a.finish_reason
    assert len(fake_llm.chat_requests) == 1
    assert c.llm.chat(QUESTION, temperature=0.7).text == "second"
    assert c.llm.chat(QUESTION, max_tokens=5).text == "third"
    assert len(fake_llm.chat_requests) == 3
    # A new client (think: another process) shares the file.
    assert Client(fake_llm, cache).llm.chat(QUESTION).cached


def test_cache_disabled_and_errors_not_cached(fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.script(ok("a"), ok("b"))
    c = Client(fake_llm, tmp_path / "llm.sqlite", cache=False)
    assert [c.llm.chat(QUESTION).text for _ in range(2)] == ["a", "b"]
    assert not (tmp_path / "llm.sqlite").exists()

    fake_llm.script(empty(), ok("c"))
    c = Client(fake_llm, tmp_path / "llm2.sqlite")
    with pytest.raises(LLMResponseError):
        c.llm.chat(QUESTION)
    assert c.llm.chat(QUESTION).text == "c"


def test_chat_json_cache_only_after_validation(fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.script(ok("bad"), ok("still bad"), ok('{"answerable": true, "pages": [2]}'))
    c = Client(fake_llm, tmp_path / "llm.sqlite")
    with pytest.raises(LLMResponseError):
        c.llm.chat_json(QUESTION, Verdict)
    assert c.llm.chat_json(QUESTION, Verdict).pages == [2]  # the failures were not replayed
    assert c.llm.chat_json(QUESTION, Verdict).pages == [2]
    assert len(fake_llm.chat_requests) == 3


# --- construction ------------------------------------------------------------------------------


def test_create_chat_model(tmp_path: Path) -> None:
    assert create_chat_model(LLMSettings()) is None
    model = create_chat_model(llm_settings("http://127.0.0.1:9/v1"), tmp_path / "c.sqlite")
    assert isinstance(model, OpenAIChatClient) and model.model == "fake-model"
    assert not (tmp_path / "c.sqlite").exists()
    with pytest.raises(LLMNotConfiguredError):
        OpenAIChatClient(LLMSettings())


def test_openai_without_key_is_not_configured() -> None:
    client = OpenAIChatClient(LLMSettings(model="gpt-4o-mini"))
    with pytest.raises(LLMNotConfiguredError, match="API key"):
        client.chat(QUESTION)


# --- streaming -----------------------------------------------------------------------------------


def test_a_stream_is_sent_as_a_streaming_request_and_cached_whole(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    fake_llm.script(ok("Revenue was 468.5 million [1]."))
    c = Client(fake_llm, tmp_path / "llm.sqlite")
    pieces: list[str] = []
    first = c.llm.chat(QUESTION, on_token=pieces.append)
    assert fake_llm.chat_requests[0].body["stream"] is True
    assert first.text == "Revenue was 468.5 million [1]." and len(pieces) == 5
    again: list[str] = []
    second = c.llm.chat(QUESTION, on_token=again.append)  # from the cache: one piece
    assert second.cached and again == [first.text]
    assert len(fake_llm.chat_requests) == 1


def test_a_slowly_streaming_model_is_cut_off_at_the_deadline(fake_llm: FakeLLM) -> None:
    # About a millisecond a byte: the first words arrive at once, the whole would take 50 s.
    fake_llm.script(Reply(content="words " * 200, trickle=0.001))
    c = Client(fake_llm, timeout=1.0, max_retries=2)
    pieces: list[str] = []
    with pytest.raises(LLMTimeoutError):
        c.llm.chat(QUESTION, on_token=pieces.append)
    # Cut off at the deadline, and not retried once words had gone out.
    assert pieces and len(fake_llm.chat_requests) == 1
