"""The FastAPI application of ``docsight serve``, and the runner that puts it on a socket.

One :class:`~docsight.api.DocSight` serves every request of an app: its store, encoder and
models load once and are shared by the threads FastAPI runs blocking calls in. The app holds:

* the REST API under ``/api/v1`` (:mod:`docsight.server.routes`), described by the OpenAPI
  schema at ``/api/v1/openapi.json``;
* the web page at ``/`` (:mod:`docsight.server.web`) and MCP over streamable HTTP at ``/mcp``
  (:mod:`docsight.server.mcp`);
* the guards of :mod:`docsight.server.security` and the error mapping of
  :mod:`docsight.server.errors`.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING, Any

import uvicorn
from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.openapi.utils import get_openapi
from pydantic import SecretStr
from starlette.concurrency import run_in_threadpool

from docsight.errors import UsageError
from docsight.server import errors
from docsight.server.models import AskRequest, SearchRequest
from docsight.server.security import (
    LOOPBACK_NAMES,
    ApiKeyGuard,
    BodyLimit,
    HostGuard,
    configured_key,
    is_loopback,
    require_key_beyond_loopback,
)

if TYPE_CHECKING:
    from docsight.api import DocSight
    from docsight.settings import Settings

log = logging.getLogger(__name__)

API_PREFIX = "/api/v1"
#: Seconds between keep-alive comments on an idle event stream.
SSE_KEEPALIVE_S = 15.0
#: Seconds shutdown waits for running ingestion jobs.
SHUTDOWN_WAIT_S = 30.0

_DESCRIPTION = (
    "Answers over documents with citations to document, page and box. Every error is "
    '`{"error": {"code", "message"}}` with a stable `code` from docsight\'s error tree. When the '
    "server has an API key, send it as `Authorization: Bearer KEY` (all routes but `/health`). "
    "Pages are 0-based; boxes are normalised with a top-left origin."
)


def create_app(
    ds: DocSight | None = None,
    *,
    settings: Settings | None = None,
    trusted_hosts: Sequence[str] | None = None,
) -> FastAPI:
    """The app serving ``ds`` (a :class:`DocSight` over ``settings`` when absent).

    The server's own settings (key, limits, CORS) come from ``settings.server``, else from
    ``ds.settings.server``. ``trusted_hosts``: accept only requests whose ``Host`` header names
    one of them (:class:`~docsight.server.security.HostGuard`); ``serve`` sets it to the
    loopback names for a server without a key.
    """
    from docsight.api import DocSight
    from docsight.server.jobs import JobManager
    from docsight.server.routes import router

    if ds is None:
        ds = DocSight(settings=settings)
    server = (settings or ds.settings).server
    api_key = configured_key(server)
    _ = ds.store  # made now, once: requests in several threads must share one store object
    jobs = JobManager(ds, server.max_jobs)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        await run_in_threadpool(jobs.close, SHUTDOWN_WAIT_S)

    from docsight import __version__

    app = FastAPI(
        title="docsight",
        version=__version__,
        description=_DESCRIPTION,
        openapi_url=f"{API_PREFIX}/openapi.json",
        # FastAPI's Swagger page loads its scripts from a CDN; docsight serves nothing that
        # needs the internet, so the schema is served alone (any OpenAPI viewer reads it).
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.docsight = ds
    app.state.jobs = jobs
    app.state.server_settings = server
    app.state.sse_keepalive_s = SSE_KEEPALIVE_S
    errors.install(app)
    app.include_router(router, prefix=API_PREFIX)

    from docsight.server import mcp, web

    web.install(app, ds)
    mcp.mount_http(app, ds)

    # Added innermost first: the request meets CatchAll, CORS, the Host check, the key check,
    # then the body limit.
    app.add_middleware(
        BodyLimit,
        max_body_bytes=server.max_body_kb * 1024,
        max_upload_bytes=int(server.max_files * server.max_upload_mb * 2**20),
    )
    app.add_middleware(ApiKeyGuard, api_key=api_key)
    if trusted_hosts:
        app.add_middleware(HostGuard, hosts=trusted_hosts)
    if server.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=server.cors_origins,
            allow_methods=["GET", "POST", "DELETE"],
            allow_headers=["Authorization", "Content-Type"],
        )
    app.add_middleware(errors.CatchAll)
    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
    return app


def _openapi(app: FastAPI) -> dict[str, Any]:
    """FastAPI's schema plus the request models that routes parse themselves (ask and search
    take JSON or multipart, so FastAPI does not see their bodies)."""
    if app.openapi_schema:
        return app.openapi_schema
    schema = get_openapi(
        title=app.title, version=app.version, description=app.description, routes=app.routes
    )
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    for model in (AskRequest, SearchRequest):
        model_schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        for name, definition in model_schema.pop("$defs", {}).items():
            components.setdefault(name, definition)
        components[model.__name__] = model_schema
    app.openapi_schema = schema
    return schema


# --- running -------------------------------------------------------------------------------------


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (``port`` 0: any free port); :class:`UsageError`
    naming the address when it cannot be had (taken, or not an address of this machine)."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
    except (OSError, UnicodeError) as exc:
        raise UsageError(f"cannot listen on {host}:{port} ({exc})") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        why = exc.strerror or str(exc)
        raise UsageError(
            f"cannot listen on {host}:{port} ({why}); choose another port with --port"
        ) from None
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def _uvicorn(app: FastAPI) -> uvicorn.Server:
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=int(SHUTDOWN_WAIT_S),
        # No "Server: uvicorn" banner: a client has no use for it.
        server_header=False,
    )
    return uvicorn.Server(config)


def prepare(
    ds: DocSight,
    *,
    host: str | None = None,
    port: int | None = None,
    api_key: str | None = None,
) -> tuple[FastAPI, socket.socket]:
    """The app for ``ds`` and its listening socket, with every refusal raised before anything
    listens: a host beyond loopback without a key, a port that is taken."""
    settings = ds.settings.model_copy(deep=True)
    server = settings.server
    host = host if host is not None else server.host
    port = port if port is not None else server.port
    key = api_key if api_key is not None else configured_key(server)
    require_key_beyond_loopback(host, key)
    settings.server = server.model_copy(
        update={"host": host, "port": port, "api_key": SecretStr(key) if key else None}
    )
    sock = bind(host, port)
    # Without a key, only requests addressed to this machine: see security.HostGuard.
    trusted = None if key else sorted(LOOPBACK_NAMES | ({host} if is_loopback(host) else set()))
    try:
        app = create_app(ds, settings=settings, trusted_hosts=trusted)
    except BaseException:
        sock.close()
        raise
    return app, sock


def serve(
    ds: DocSight,
    *,
    host: str | None = None,
    port: int | None = None,
    api_key: str | None = None,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve ``ds`` until interrupted (Ctrl-C or SIGTERM). Host, port and key default to
    ``ds.settings.server``; ``on_ready`` gets the base URL once the socket listens."""
    app, sock = prepare(ds, host=host, port=port, api_key=api_key)
    with contextlib.closing(sock):
        if on_ready is not None:
            on_ready(url_of(sock))
        _uvicorn(app).run(sockets=[sock])


class BackgroundServer:
    """A server on a loopback port in a thread of this process, for tests and benchmarks::

    with BackgroundServer(create_app(ds)) as server:
        httpx.get(server.url + "/api/v1/health")
    """

    def __init__(self, app: FastAPI, host: str = "127.0.0.1", port: int = 0) -> None:
        self.app = app
        self.host = host
        self.port = port
        self.url = ""
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._sock: socket.socket | None = None

    def start(self, timeout: float = 20.0) -> BackgroundServer:
        self._sock = bind(self.host, self.port)
        self.url = url_of(self._sock)
        self._server = _uvicorn(self.app)
        self._thread = threading.Thread(
            target=self._server.run,
            kwargs={"sockets": [self._sock]},
            name="docsight-server",
            daemon=True,
        )
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the server at {self.url} did not start")
            time.sleep(0.01)
        return self

    def stop(self, timeout: float = 30.0) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
        if self._sock is not None:
            self._sock.close()

    def __enter__(self) -> BackgroundServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = ["API_PREFIX", "BackgroundServer", "bind", "create_app", "prepare", "serve", "url_of"]
