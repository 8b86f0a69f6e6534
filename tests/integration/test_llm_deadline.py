"""Model calls end on time, however the endpoint misbehaves (issue 12, faults 1 and 9).

An HTTP read timeout only bounds each wait for bytes; these endpoints defeat it: one sends a byte
every 0.2 s (from the status line, or from the body), one stalls halfway through its body, one
never answers. Each reply would take a minute or more; the request must end at its deadline,
the call (with its retries) at its budget, and ``ask`` must fall back to a cited extractive answer
within its budget. The bounds asserted are generous multiples of the deadlines, far below what
the endpoints would take.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from docsight import DocSight
from docsight.errors import LLMTimeoutError
from docsight.llm import OpenAIChatClient
from docsight.llm.deadline import time_budget
from docsight.settings import LLMSettings, Settings
from fixtures.fake_llm import FakeLLM, Reply, hang, ok, stall, trickle
from fixtures.llm_fixtures import llm_settings

QUESTION = [{"role": "user", "content": "What is on page 3?"}]
#: A reply of ~300 bytes at 0.2 s a byte takes a minute; a stall or a hang lasts as long.
SLOW = 0.2
LONG = 60.0


def _client(fake: FakeLLM, **fields: float) -> OpenAIChatClient:
    settings = llm_settings(fake.base_url, cache=False, **{"max_retries": 0, **fields})
    return OpenAIChatClient(settings, sleep=lambda _s: None)


def _timed(call) -> tuple[float, BaseException | None]:  # type: ignore[no-untyped-def]
    started = time.monotonic()
    try:
        call()
    except LLMTimeoutError as exc:
        return time.monotonic() - started, exc
    return time.monotonic() - started, None


@pytest.mark.parametrize(
    "reply",
    [trickle(SLOW), trickle(SLOW, head=True), stall(LONG), hang(LONG)],
    ids=["trickled-body", "trickled-headers", "stalled-mid-body", "never-answers"],
)
def test_a_request_ends_at_its_deadline(fake_llm: FakeLLM, reply: Reply) -> None:
    fake_llm.script(reply)
    seconds, error = _timed(lambda: _client(fake_llm, timeout=1.0).chat(QUESTION))
    assert isinstance(error, LLMTimeoutError), "the slow reply was waited out"
    assert "DOCSIGHT_LLM_TIMEOUT" in error.message
    assert seconds < 5.0, f"took {seconds:.1f}s with a 1s deadline"
    assert len(fake_llm.chat_requests) == 1


def test_a_fast_enough_trickle_still_succeeds(fake_llm: FakeLLM) -> None:
    """The deadline is a total, not a stall detector: a slow but timely reply is kept."""
    fake_llm.script(trickle(0.002, head=True, content="fine"))
    assert _client(fake_llm, timeout=10.0).chat(QUESTION).text == "fine"


def test_retries_share_one_budget(fake_llm: FakeLLM) -> None:
    """Nine attempts of 1 s would take 9 s; the call's budget of 2.5 s ends the third."""
    fake_llm.default = trickle(SLOW)
    client = _client(fake_llm, timeout=1.0, max_retries=8, budget=2.5, max_backoff=0.2)
    seconds, error = _timed(lambda: client.chat(QUESTION))
    assert isinstance(error, LLMTimeoutError)
    assert seconds < 5.0
    assert 2 <= len(fake_llm.chat_requests) <= 3  # the last attempt got what was left


def test_an_outer_budget_narrows_the_call(fake_llm: FakeLLM) -> None:
    fake_llm.default = hang(LONG)
    client = _client(fake_llm, timeout=30.0, budget=30.0)
    with time_budget(1.0):
        seconds, error = _timed(lambda: client.chat(QUESTION))
    assert isinstance(error, LLMTimeoutError) and seconds < 5.0


def test_no_request_is_sent_once_the_budget_is_spent(fake_llm: FakeLLM) -> None:
    fake_llm.default = ok("never sent")
    with time_budget(0.0):
        _, error = _timed(lambda: _client(fake_llm).chat(QUESTION))
    assert isinstance(error, LLMTimeoutError) and "DOCSIGHT_LLM_BUDGET" in error.message
    assert fake_llm.chat_requests == []


def test_making_the_sdk_client_does_not_count_against_the_request(
    fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SDK is imported and its client made on the first request, which takes about a second
    in a fresh process on a slow machine: that is not the endpoint's time, and a prompt endpoint
    must not be reported as too slow for a 1 s deadline because of it."""
    build = OpenAIChatClient._build_client

    def slow_build(self: OpenAIChatClient) -> object:
        time.sleep(1.2)
        return build(self)

    monkeypatch.setattr(OpenAIChatClient, "_build_client", slow_build)
    fake_llm.script(ok("prompt"))
    assert _client(fake_llm, timeout=1.0).chat(QUESTION).text == "prompt"


def test_defaults_fit_an_interactive_user() -> None:
    """A never-answering endpoint costs one 20 s request plus what is left of a 30 s budget."""
    defaults = LLMSettings()
    assert (defaults.timeout, defaults.max_retries, defaults.budget) == (20.0, 2, 30.0)
    assert defaults.budget < defaults.timeout * (defaults.max_retries + 1)


def test_ask_falls_back_within_its_budget(text_collection: Path, fake_llm: FakeLLM) -> None:
    settings = Settings(
        llm=llm_settings(fake_llm.base_url, timeout=1.0, max_retries=5, budget=2.5, cache=False)
    )
    ds = DocSight(text_collection, settings=settings)
    # The budget covers retrieval too: load the encoder, the store and the model client first,
    # so that on a busy machine their start-up does not leave room for one attempt only.
    assert ds.search("error E42", k=1)
    fake_llm.script(ok("warm"))
    assert ds.chat_model().chat(QUESTION).text == "warm"
    fake_llm.requests.clear()
    fake_llm.default = trickle(SLOW)
    started = time.monotonic()
    answer = ds.ask("What does error E42 mean?")
    seconds = time.monotonic() - started
    assert answer.mode == "extractive" and answer.citations
    assert any("llm_timeout" in w for w in answer.warnings), answer.warnings
    assert seconds < 8.0, f"ask took {seconds:.1f}s with a 2.5s budget"
    assert 2 <= len(fake_llm.chat_requests) <= 3
