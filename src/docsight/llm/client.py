"""A :class:`~docsight.llm.base.ChatModel` backed by any OpenAI-compatible endpoint.

Retries are ours, not the SDK's (it is created with ``max_retries=0``): the retry policy, backoff
cap and error mapping must be the same whatever the SDK version, and tests must be able to replace
the sleep. The SDK is imported before the first request is sent, not when a client is made, so
that ``import docsight`` and a client that is never used stay light.

Time is bounded twice (:mod:`docsight.llm.deadline`): each request, from connecting to the last
byte of the body, by ``settings.timeout``; each call (``chat``, ``chat_json``), across its retries,
backoff and JSON repair, by ``settings.budget``, or less when the caller set a tighter budget (an
``ask`` spends one budget on all its model calls).
"""

from __future__ import annotations

import email.utils
import logging
import random
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from docsight.errors import (
    LLMConnectionError,
    LLMError,
    LLMNotConfiguredError,
    LLMRateLimitError,
    LLMResponseError,
    LLMStatusError,
    LLMTimeoutError,
)
from docsight.llm.base import ChatResult, M, Message, complete_json, with_json_instruction
from docsight.llm.cache import ResponseCache, cache_key
from docsight.llm.deadline import (
    call_deadline,
    deadline_transport,
    http_module,
    request_deadline,
    time_budget,
)

if TYPE_CHECKING:
    from openai import OpenAI

    from docsight.settings import LLMSettings

logger = logging.getLogger(__name__)

#: First backoff step in seconds; doubles per retry up to ``settings.max_backoff``.
BASE_BACKOFF = 0.5
#: Sent when a local endpoint needs no key: the SDK refuses to build a client without one.
PLACEHOLDER_API_KEY = "not-needed"
_JSON_OBJECT = {"type": "json_object"}
_MAX_DETAIL = 300


def backoff_delay(
    attempt: int,
    max_backoff: float,
    retry_after: float | None = None,
    rand: Callable[[], float] = random.random,
) -> float:
    """Seconds to wait before retry number ``attempt + 1`` (``attempt`` counts from 0).

    A server-supplied ``Retry-After`` wins over the exponential schedule, but both are capped so a
    misbehaving server cannot stall a caller for minutes. The jitter keeps half the step fixed and
    randomises the other half, which spreads out threads that failed together without ever
    retrying immediately.
    """
    if retry_after is not None and retry_after >= 0:
        return min(retry_after, max_backoff)
    step = min(max_backoff, BASE_BACKOFF * (2**attempt))
    return step / 2 + step / 2 * rand()


def parse_retry_after(headers: Any) -> float | None:
    """``Retry-After`` as seconds (delta-seconds or HTTP date), or ``retry-after-ms``."""
    if headers is None:
        return None
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            return max(0.0, float(value) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class _Retryable(Exception):
    """Internal: a failure worth another attempt, carrying the error to raise if none is left."""

    def __init__(self, error: LLMError, retry_after: float | None = None) -> None:
        super().__init__(error.message)
        self.error = error
        self.retry_after = retry_after


class OpenAIChatClient:
    """Chat completions through the official ``openai`` SDK, with retries, a concurrency limit,
    JSON mode with fallback, and an optional on-disk cache.

    ``sleep`` and ``rand`` exist for tests (no real waiting, deterministic jitter).
    """

    def __init__(
        self,
        settings: LLMSettings,
        cache_path: Path | None = None,
        *,
        sleep: Callable[[float], None] | None = None,
        rand: Callable[[], float] | None = None,
    ) -> None:
        if not settings.model:
            raise LLMNotConfiguredError(
                "no LLM model configured (set DOCSIGHT_LLM_MODEL, and DOCSIGHT_LLM_BASE_URL for a "
                "local endpoint)"
            )
        # A private copy: settings objects are mutable and a client must not change mid-flight.
        self.settings = settings.model_copy()
        self.model: str = settings.model
        self._sleep = sleep or time.sleep
        self._rand = rand or random.random
        self._slots = threading.BoundedSemaphore(settings.max_concurrency)
        self._cache = (
            ResponseCache(cache_path) if cache_path is not None and settings.cache else None
        )
        self._sdk: OpenAI | None = None
        self._sdk_lock = threading.Lock()
        self._json_mode = True
        self._where = f"LLM endpoint {settings.base_url or 'api.openai.com'} (model {self.model!r})"

    def __repr__(self) -> str:
        return f"OpenAIChatClient(model={self.model!r}, base_url={self.settings.base_url!r})"

    @property
    def json_mode_supported(self) -> bool:
        """False once the endpoint rejected ``response_format`` (remembered for our lifetime)."""
        return self._json_mode

    # --- public API ------------------------------------------------------------------------------

    def chat(
        self,
        messages: list[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: list[str] | None = None,
        on_token: Callable[[str], None] | None = None,
    ) -> ChatResult:
        with time_budget(self.settings.budget):
            key, result = self._complete(
                messages, max_tokens, temperature, stop, json_mode=False, on_token=on_token
            )
        if not result.cached:
            self._store(key, result)
        elif on_token is not None:
            on_token(result.text)
        return result

    def chat_json(
        self, messages: list[Message], schema: type[M], *, max_tokens: int | None = None
    ) -> M:
        done: list[tuple[str, ChatResult]] = []

        def call(msgs: list[Message]) -> ChatResult:
            key, result = self._complete(msgs, max_tokens, None, None, json_mode=True)
            done.append((key, result))
            return result

        with time_budget(self.settings.budget):
            value = complete_json(
                call, with_json_instruction(messages, schema), schema, model=self.model
            )
        # Cached only after validation succeeded: a reply that fails the repair would otherwise
        # be replayed from the cache forever.
        for key, result in done:
            if not result.cached:
                self._store(key, result)
        return value

    def close(self) -> None:
        with self._sdk_lock:
            if self._sdk is not None:
                self._sdk.close()
                self._sdk = None

    def __enter__(self) -> OpenAIChatClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- one completion, cached ------------------------------------------------------------------

    def _complete(
        self,
        messages: list[Message],
        max_tokens: int | None,
        temperature: float | None,
        stop: list[str] | None,
        *,
        json_mode: bool,
        on_token: Callable[[str], None] | None = None,
    ) -> tuple[str, ChatResult]:
        if not messages:
            raise ValueError("messages must not be empty")
        request: dict[str, Any] = {
            "messages": [dict(m) for m in messages],
            "temperature": self.settings.temperature if temperature is None else temperature,
            "max_tokens": self.settings.max_tokens if max_tokens is None else max_tokens,
            "stop": list(stop) if stop else None,
            "response_format": "json_object" if json_mode else None,
        }
        key = cache_key(self.model, request)
        if self._cache is not None:
            hit = self._cache.get(key)
            if hit is not None:
                try:
                    result = ChatResult(
                        text=str(hit["text"]),
                        model=str(hit.get("model") or self.model),
                        cached=True,
                        finish_reason=hit.get("finish_reason"),
                        usage={k: int(v) for k, v in (hit.get("usage") or {}).items()},
                    )
                except (KeyError, TypeError, ValueError):
                    logger.debug("ignoring malformed cache entry %s", key[:12])
                else:
                    logger.debug("LLM cache hit %s", key[:12])
                    return key, result
        if on_token is not None:
            return key, self._stream(request, on_token)
        completion = self._create(request)
        return key, self._to_result(completion)

    def _store(self, key: str, result: ChatResult) -> None:
        if self._cache is None:
            return
        self._cache.put(
            key,
            self.model,
            {
                "text": result.text,
                "model": result.model,
                "finish_reason": result.finish_reason,
                "usage": result.usage,
            },
        )

    def _to_result(self, completion: Any) -> ChatResult:
        choices = getattr(completion, "choices", None)
        if not choices:
            raise LLMResponseError(f"{self._where} returned a response without choices")
        choice = choices[0]
        finish_reason = getattr(choice, "finish_reason", None)
        text = getattr(getattr(choice, "message", None), "content", None)
        if not isinstance(text, str) or not text.strip():
            raise LLMResponseError(
                f"{self._where} returned an empty completion (finish_reason={finish_reason!r})"
            )
        usage: dict[str, int] = {}
        raw_usage = getattr(completion, "usage", None)
        if raw_usage is not None:
            for name in ("prompt_tokens", "completion_tokens", "total_tokens"):
                value = getattr(raw_usage, name, None)
                if isinstance(value, int):
                    usage[name] = value
        return ChatResult(
            text=text.strip(),
            model=str(getattr(completion, "model", None) or self.model),
            cached=False,
            finish_reason=str(finish_reason) if finish_reason is not None else None,
            usage=usage,
        )

    def _stream(self, request: dict[str, Any], on_token: Callable[[str], None]) -> ChatResult:
        """One streamed completion: pieces go to ``on_token`` as they arrive. Failures before
        the first piece are retried like any request; once text has been shown, a failure ends
        the call (retrying would repeat what the reader already saw)."""
        kwargs = self._kwargs(request) | {"stream": True}
        pieces: list[str] = []
        state: dict[str, Any] = {"finish": None, "model": None}

        def read(stream: Any) -> None:
            for chunk in stream:
                state["model"] = getattr(chunk, "model", None) or state["model"]
                choices = getattr(chunk, "choices", None) or []
                if not choices:
                    continue
                delta = getattr(choices[0], "delta", None)
                text = getattr(delta, "content", None)
                if isinstance(text, str) and text:
                    pieces.append(text)
                    on_token(text)
                state["finish"] = getattr(choices[0], "finish_reason", None) or state["finish"]

        try:
            self._with_retries(kwargs, consume=read, started=lambda: bool(pieces))
        except _Retryable as failure:  # raised mid-stream: not retried, reported as it is
            raise failure.error from failure.__cause__
        text = "".join(pieces).strip()
        if not text:
            raise LLMResponseError(
                f"{self._where} streamed an empty completion (finish_reason={state['finish']!r})"
            )
        return ChatResult(
            text=text,
            model=str(state["model"] or self.model),
            cached=False,
            finish_reason=str(state["finish"]) if state["finish"] is not None else None,
            usage={},
        )

    # --- transport -----------------------------------------------------------------------------

    def _kwargs(self, request: dict[str, Any]) -> dict[str, Any]:
        """The SDK's arguments for a cached request's fields (JSON mode is added by the caller)."""
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": request["messages"],
            "temperature": request["temperature"],
            "max_tokens": request["max_tokens"],
        }
        if request["stop"]:
            kwargs["stop"] = request["stop"]
        return kwargs

    def _create(self, request: dict[str, Any]) -> Any:
        kwargs = self._kwargs(request)
        with_format = request["response_format"] is not None and self._json_mode
        if with_format:
            kwargs["response_format"] = _JSON_OBJECT
        try:
            return self._with_retries(kwargs)
        except LLMStatusError as exc:
            if not (with_format and exc.status_code == 400):
                raise
            logger.debug("%s rejected response_format (%s); retrying without it", self._where, exc)
            del kwargs["response_format"]
            completion = self._with_retries(kwargs)
            # Remembered only now: if the plain request had failed too, the 400 was about
            # something else and JSON mode may well be supported.
            self._json_mode = False
            return completion

    def _with_retries(
        self,
        kwargs: dict[str, Any],
        *,
        consume: Callable[[Any], None] | None = None,
        started: Callable[[], bool] = lambda: False,
    ) -> Any:
        """Send with retries. ``consume`` reads a streamed response inside the same deadline
        and error mapping; once ``started()`` says text went out, failures are not retried."""
        attempt = 0
        # The SDK's import and client take about a second the first time: made before the
        # request's deadline is set, so that they are never reported as the endpoint's slowness.
        self._client()
        while True:
            deadline = self._request_deadline()
            try:
                with request_deadline(deadline):
                    return self._send(kwargs, deadline, consume)
            except _Retryable as failure:
                if started() or attempt >= self.settings.max_retries:
                    raise failure.error from failure.__cause__
                delay = backoff_delay(
                    attempt, self.settings.max_backoff, failure.retry_after, self._rand
                )
                budget_end = call_deadline()
                if budget_end is not None and time.monotonic() + delay >= budget_end:
                    # Waiting would only end in the budget's timeout: report the real failure.
                    raise failure.error from failure.__cause__
                logger.debug(
                    "%s; retry %d/%d in %.2fs",
                    failure.error.message,
                    attempt + 1,
                    self.settings.max_retries,
                    delay,
                )
                # Outside the semaphore on purpose: a thread that waits must not hold a slot.
                self._sleep(delay)
                attempt += 1

    def _request_deadline(self) -> float:
        """When the next request must be done: ``timeout`` from now, or the end of the budget."""
        now = time.monotonic()
        deadline = now + self.settings.timeout
        budget_end = call_deadline()
        if budget_end is not None and budget_end < deadline:
            if budget_end - now <= 0:
                raise LLMTimeoutError(
                    f"{self._where}: the time budget for model calls "
                    f"({self.settings.budget:g}s, DOCSIGHT_LLM_BUDGET) ran out"
                )
            deadline = budget_end
        return deadline

    def _send(
        self, kwargs: dict[str, Any], deadline: float, consume: Callable[[Any], None] | None = None
    ) -> Any:
        import openai

        sdk = self._client()
        started = time.monotonic()
        try:
            with self._slots:
                # The SDK's own timeout is per read; the transport enforces the deadline.
                timeout = max(0.001, deadline - time.monotonic())
                response = sdk.chat.completions.create(**kwargs, timeout=timeout)
                if consume is None:
                    return response
                # A stream is read inside the slot and the deadline: a model that streams
                # slowly is cut off like one that answers slowly.
                try:
                    consume(response)
                finally:
                    response.close()
                return None
        except openai.APITimeoutError as exc:
            waited = time.monotonic() - started
            raise _Retryable(
                LLMTimeoutError(
                    f"{self._where} did not finish answering within {waited:.1f}s "
                    f"(DOCSIGHT_LLM_TIMEOUT {self.settings.timeout:g}s a request, "
                    f"DOCSIGHT_LLM_BUDGET {self.settings.budget:g}s a call)"
                )
            ) from exc
        except openai.APIConnectionError as exc:
            raise _Retryable(
                LLMConnectionError(f"cannot reach {self._where}: {_cause(exc)}")
            ) from exc
        except openai.APIStatusError as exc:
            status = exc.status_code
            detail = _detail(exc)
            if status == 429:
                raise _Retryable(
                    LLMRateLimitError(f"{self._where} is rate limiting requests: {detail}"),
                    parse_retry_after(exc.response.headers),
                ) from exc
            error = LLMStatusError(f"{self._where} answered HTTP {status}: {detail}", status)
            if status >= 500:
                raise _Retryable(error, parse_retry_after(exc.response.headers)) from exc
            raise error from exc
        except ValueError as exc:
            # The SDK decodes the body with json; a truncated or non-JSON body lands here.
            raise LLMResponseError(f"{self._where} sent a malformed response: {exc}") from exc
        except openai.OpenAIError as exc:
            raise LLMError(f"{self._where} failed: {exc}") from exc

    def _client(self) -> OpenAI:
        if self._sdk is not None:
            return self._sdk
        with self._sdk_lock:
            if self._sdk is None:
                self._sdk = self._build_client()
            return self._sdk

    def _build_client(self) -> OpenAI:
        openai = _import_sdk()
        settings = self.settings
        api_key = settings.api_key.get_secret_value() if settings.api_key is not None else ""
        if not api_key:
            if not settings.base_url:
                raise LLMNotConfiguredError(
                    "no API key for the OpenAI API: set DOCSIGHT_LLM_API_KEY (or OPENAI_API_KEY), "
                    "or set DOCSIGHT_LLM_BASE_URL to a local endpoint"
                )
            api_key = PLACEHOLDER_API_KEY
        httpx = http_module(openai.DefaultHttpxClient)
        # No keep-alive: every request opens its own connection, which the deadline's watchdog
        # can then shut down. A model call takes seconds; a TCP handshake does not matter. The
        # environment's proxy is applied here because a client-level proxy would bypass the
        # deadline transport.
        transport = deadline_transport(
            httpx,
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=0),
            proxy=_environment_proxy(settings.base_url or "https://api.openai.com/v1"),
        )
        try:
            return openai.OpenAI(
                api_key=api_key,
                base_url=settings.base_url,
                timeout=settings.timeout,
                max_retries=0,
                http_client=openai.DefaultHttpxClient(transport=transport, trust_env=False),
            )
        except openai.OpenAIError as exc:
            raise LLMNotConfiguredError(f"cannot create the OpenAI client: {exc}") from exc


def _import_sdk() -> ModuleType:
    try:
        import openai
    except ImportError as exc:  # pragma: no cover - openai is a core dependency
        raise LLMNotConfiguredError(f"the openai package is not importable: {exc}") from exc
    return openai


def _environment_proxy(url: str) -> str | None:
    """The proxy the environment (``HTTPS_PROXY``, ``NO_PROXY``, ...) names for ``url``."""
    import urllib.request
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.hostname and urllib.request.proxy_bypass(parts.hostname):
        return None
    return urllib.request.getproxies().get(parts.scheme)


def _detail(exc: Any) -> str:
    body = getattr(exc, "body", None)
    message: Any = None
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else inner
    text = str(message or getattr(exc, "message", "") or exc)
    return text if len(text) <= _MAX_DETAIL else text[:_MAX_DETAIL] + "..."


def _cause(exc: BaseException) -> str:
    cause = exc.__cause__ or exc.__context__
    return f"{type(cause).__name__}: {cause}" if cause is not None else str(exc)
