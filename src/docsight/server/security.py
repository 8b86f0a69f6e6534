"""Who may call the server, from where, and how much they may send.

* **API key.** When ``server.api_key`` is set (``--api-key`` or ``DOCSIGHT_SERVER_API_KEY``),
  every request under ``/api/`` and ``/mcp`` must carry ``Authorization: Bearer KEY``; only
  ``/api/v1/health`` and the OpenAPI schema and docs are open. The check is a middleware, not a
  route dependency, so nothing mounted later (MCP over HTTP) can slip past it. The web page at
  ``/`` and its static files are public and hold no data: the page asks the user for the key
  when the API answers 401 and its script sends it as a bearer token (kept in the tab's
  ``sessionStorage``). No cookie is set, so no other site can make the browser send the key
  (no CSRF), and the key never appears in a URL or a log line.
* **Loopback.** ``docsight serve`` binds to 127.0.0.1 by default and refuses any other address
  without a key (:func:`require_key_beyond_loopback`). A loopback server without a key also
  checks the ``Host`` header (:class:`HostGuard`): a web page elsewhere that rebinds its own DNS
  name to 127.0.0.1 would otherwise reach the API from the user's browser.
* **Sizes.** :class:`BodyLimit` refuses a request body over ``server.max_body_kb`` with 413, from
  its ``Content-Length`` before reading anything, or while it streams (chunked bodies). Uploads
  have their own bound (``max_files`` × ``max_upload_mb``); each file's cap is enforced while
  it streams to disk (:mod:`docsight.server.uploads`).
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Iterable
from typing import Any

from pydantic import SecretStr
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from docsight.errors import LimitExceededError, UsageError
from docsight.server.errors import error_response
from docsight.settings import ServerSettings

#: Paths under these prefixes need the key when one is set.
PROTECTED_PREFIXES = ("/api/", "/mcp")
#: ... except these, which hold nothing private.
OPEN_PATHS = frozenset(
    {
        "/api/v1/health",
        "/api/v1/openapi.json",
    }
)
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
#: Upload requests carry many files; their own caps apply (see :mod:`docsight.server.uploads`).
UPLOAD_PATH = "/api/v1/documents"
#: Room for multipart headers and boundaries on top of the files' bytes.
_MULTIPART_OVERHEAD = 1 << 20


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` (a name or address) listens on this machine only."""
    host = host.strip().strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def configured_key(server: ServerSettings) -> str | None:
    """The server's API key, or ``None`` when it has none (an empty key counts as none)."""
    secret: Any = server.api_key
    key = secret.get_secret_value() if isinstance(secret, SecretStr) else str(secret or "")
    return key.strip() or None


def require_key_beyond_loopback(host: str, api_key: str | None) -> None:
    """Refuse to serve beyond this machine without a key: documents would be open to anyone
    who can reach the port."""
    if not api_key and not is_loopback(host):
        raise UsageError(
            f"binding to {host} exposes the collection beyond this machine: set an API key with "
            "--api-key or DOCSIGHT_SERVER_API_KEY (clients send it as 'Authorization: Bearer "
            "KEY'), or bind to 127.0.0.1"
        )


def route_path(scope: Scope) -> str:
    """The request path within the app (without the ASGI ``root_path`` of a reverse proxy)."""
    path: str = scope.get("path", "")
    root: str = scope.get("root_path", "")
    if root and path.startswith(root):
        path = path[len(root) :] or "/"
    return path


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


class ApiKeyGuard:
    """Bearer-token check on the protected paths (see the module docstring)."""

    def __init__(self, app: ASGIApp, api_key: str | None) -> None:
        self.app = app
        self._key = api_key.encode() if api_key else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._key is None or scope["type"] != "http" or not self._needs_key(scope):
            await self.app(scope, receive, send)
            return
        header = _header(scope, b"authorization") or ""
        scheme, _, token = header.partition(" ")
        if not header:
            message = "this server needs an API key: send it as 'Authorization: Bearer KEY'"
        elif scheme.lower() != "bearer" or not hmac.compare_digest(
            token.strip().encode("utf-8", "replace"), self._key
        ):
            message = "the API key is wrong"
        else:
            await self.app(scope, receive, send)
            return
        response = error_response(401, "unauthorized", message, {"WWW-Authenticate": "Bearer"})
        await response(scope, receive, send)

    @staticmethod
    def _needs_key(scope: Scope) -> bool:
        if scope.get("method") == "OPTIONS":  # CORS preflights carry no credentials
            return False
        path = route_path(scope)
        return path.startswith(PROTECTED_PREFIXES) and path.rstrip("/") not in OPEN_PATHS


class HostGuard:
    """Only requests addressed to one of ``hosts`` (the ``Host`` header, port ignored)."""

    def __init__(self, app: ASGIApp, hosts: Iterable[str]) -> None:
        self.app = app
        self.hosts = frozenset(h.lower() for h in hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        host = (_header(scope, b"host") or "").lower()
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        if name in self.hosts:
            await self.app(scope, receive, send)
            return
        response = error_response(
            400,
            "bad_host",
            "this server answers requests to localhost only; set an API key to serve other names",
        )
        await response(scope, receive, send)


class BodyLimit:
    """Refuse request bodies larger than the limit with 413 (see the module docstring)."""

    def __init__(self, app: ASGIApp, max_body_bytes: int, max_upload_bytes: int) -> None:
        self.app = app
        self.max_body = max_body_bytes
        self.max_upload = max_upload_bytes + _MULTIPART_OVERHEAD

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        upload = scope.get("method") == "POST" and route_path(scope).rstrip("/") == UPLOAD_PATH
        limit = self.max_upload if upload else self.max_body
        what = "upload" if upload else "request body"
        declared = _header(scope, b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            refusal = LimitExceededError(what, _too_large(limit))
            await error_response(413, refusal.code, refusal.message)(scope, receive, send)
            return
        seen = 0

        async def bounded() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    # Raised inside the endpoint reading the body; the error handlers make it
                    # a 413 like any other docsight error.
                    raise LimitExceededError(what, _too_large(limit))
            return message

        await self.app(scope, bounded, send)


def _too_large(limit: int) -> str:
    size = f"{limit / 2**20:.1f} MiB" if limit >= 2**20 else f"{limit / 1024:.0f} KiB"
    return f"larger than the server's limit of {size}"


__all__ = [
    "LOOPBACK_NAMES",
    "ApiKeyGuard",
    "BodyLimit",
    "HostGuard",
    "configured_key",
    "is_loopback",
    "require_key_beyond_loopback",
    "route_path",
]
