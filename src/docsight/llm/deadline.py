"""Wall-clock deadlines for model calls.

An HTTP client's timeout bounds each wait for bytes, not the request: an endpoint that sends one
byte a second (a trickling proxy, a model streaming slowly, headers dribbled out) never trips it.
Two deadlines fix that:

- :func:`time_budget` narrows the deadline of every model call made inside it (the budget of a
  call across its retries, or of a whole ``ask``). It is a context variable, so nested budgets
  only ever shorten it and threads started elsewhere are unaffected.
- :class:`DeadlineTransport` ends one HTTP request at its deadline, however the bytes arrive:
  every socket wait is clamped to the time left, each body chunk checks the clock, and a watchdog
  shuts the connection's socket down at the deadline, which wakes a read blocked mid-trickle.
  What the caller sees is the HTTP library's ``ReadTimeout`` (or ``ConnectTimeout``), which the
  SDK reports as a timeout.
"""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from types import ModuleType
from typing import Any

#: The monotonic time by which the model calls in progress must be done (``None``: no limit).
_CALL_DEADLINE: ContextVar[float | None] = ContextVar("docsight_llm_call_deadline", default=None)
#: The monotonic time by which the HTTP request being sent must be done.
_REQUEST_DEADLINE: ContextVar[float | None] = ContextVar(
    "docsight_llm_request_deadline", default=None
)
_TIMEOUT_KEYS = ("connect", "read", "write", "pool")


def call_deadline() -> float | None:
    """The monotonic deadline of the model calls made now, if any budget is in force."""
    return _CALL_DEADLINE.get()


@contextmanager
def time_budget(seconds: float | None) -> Iterator[float | None]:
    """Model calls inside must finish within ``seconds`` from now (or an earlier deadline already
    in force: a budget never extends an outer one). Yields the deadline in force."""
    outer = _CALL_DEADLINE.get()
    deadline = outer
    if seconds is not None:
        mine = time.monotonic() + seconds
        deadline = mine if outer is None else min(outer, mine)
    token = _CALL_DEADLINE.set(deadline)
    try:
        yield deadline
    finally:
        _CALL_DEADLINE.reset(token)


@contextmanager
def request_deadline(deadline: float) -> Iterator[None]:
    """The HTTP request sent inside (by this thread) must be done by ``deadline``."""
    token = _REQUEST_DEADLINE.set(deadline)
    try:
        yield
    finally:
        _REQUEST_DEADLINE.reset(token)


def http_module(client_class: type) -> ModuleType:
    """The httpx module (``httpx`` or ``httpx2``) that ``client_class`` (the SDK's default HTTP
    client) is built on, so the transport matches whichever the installed SDK uses."""
    for base in client_class.__mro__:
        if base.__name__ == "Client" and base.__module__.startswith("httpx"):
            return sys.modules[base.__module__.split(".")[0]]
    raise ImportError(f"{client_class!r} is not an httpx client")  # pragma: no cover


class _Watchdog:
    """Shuts a request's socket down at its deadline (a blocked ``recv`` then returns at once)."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.fired = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(max(0.0, deadline - time.monotonic()), self._fire)
        self._timer.daemon = True  # a pending watchdog must never keep the process alive

    def start(self) -> None:
        self._timer.start()

    def cancel(self) -> None:
        self._timer.cancel()

    def expired(self) -> bool:
        return self.fired or time.monotonic() >= self.deadline

    def watch(self, stream: Any) -> None:
        """Called with each network stream the request opens (from the ``trace`` extension)."""
        sock = stream.get_extra_info("socket") if hasattr(stream, "get_extra_info") else None
        if not isinstance(sock, socket.socket):
            return
        with self._lock:
            self._sockets.append(sock)
            late = self.fired
        if late:
            _shutdown(sock)

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            sockets = list(self._sockets)
        for sock in sockets:
            _shutdown(sock)


def _shutdown(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def deadline_transport(httpx: ModuleType, **transport_options: Any) -> Any:
    """An ``httpx.BaseTransport`` that ends each request at the deadline of
    :func:`request_deadline` (requests sent outside one are not limited)."""

    class DeadlineStream(httpx.SyncByteStream):  # type: ignore[misc, name-defined]
        def __init__(self, inner: Any, watchdog: _Watchdog, request: Any) -> None:
            self._inner = inner
            self._watchdog = watchdog
            self._request = request

        def __iter__(self) -> Iterator[bytes]:
            try:
                for chunk in self._inner:
                    if self._watchdog.expired():
                        raise _timeout(httpx, self._request)
                    yield chunk
            except httpx.TimeoutException:
                raise
            except httpx.HTTPError as exc:
                if self._watchdog.expired():
                    raise _timeout(httpx, self._request) from exc
                raise

        def close(self) -> None:
            self._watchdog.cancel()
            self._inner.close()

    class DeadlineTransport(httpx.BaseTransport):  # type: ignore[misc, name-defined]
        def __init__(self) -> None:
            self._inner = httpx.HTTPTransport(**transport_options)

        def handle_request(self, request: Any) -> Any:
            deadline = _REQUEST_DEADLINE.get()
            if deadline is None:
                return self._inner.handle_request(request)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise httpx.ConnectTimeout("no time left to send the request", request=request)
            timeouts = dict(request.extensions.get("timeout") or {})
            request.extensions["timeout"] = {
                key: remaining if timeouts.get(key) is None else min(timeouts[key], remaining)
                for key in _TIMEOUT_KEYS
            }
            watchdog = _Watchdog(deadline)
            request.extensions["trace"] = _tracer(request.extensions.get("trace"), watchdog)
            watchdog.start()
            try:
                response = self._inner.handle_request(request)
            except httpx.TimeoutException:
                watchdog.cancel()
                raise
            except httpx.HTTPError as exc:
                watchdog.cancel()
                if watchdog.expired():
                    raise _timeout(httpx, request) from exc
                raise
            return httpx.Response(
                status_code=response.status_code,
                headers=response.headers,
                stream=DeadlineStream(response.stream, watchdog, request),
                extensions=response.extensions,
            )

        def close(self) -> None:
            self._inner.close()

    return DeadlineTransport()


def _tracer(
    previous: Callable[[str, dict[str, Any]], Any] | None, watchdog: _Watchdog
) -> Callable[[str, dict[str, Any]], None]:
    def trace(event: str, info: dict[str, Any]) -> None:
        if event.endswith(("connect_tcp.complete", "connect_unix_socket.complete")):
            watchdog.watch(info.get("return_value"))
        if previous is not None:
            previous(event, info)

    return trace


def _timeout(httpx: ModuleType, request: Any) -> Exception:
    return httpx.ReadTimeout("the request ran past its deadline", request=request)  # type: ignore[no-any-return]
