"""Errors as HTTP: docsight's error tree becomes ``{"error": {"code", "message"}}`` with a status.

Every failure a client can see goes through here, so the body has one shape whatever failed: a
docsight error (its stable ``code`` and its message, written for users), a request FastAPI could
not validate (``invalid_request``, 422), an unknown route or method (``not_found``,
``method_not_allowed``), or a bug. A bug is logged with its traceback on the server and reaches
the client as ``internal_error`` with a fixed message: tracebacks and exception text can hold
paths, data and library internals, none of which a client should see.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from docsight import errors as E
from docsight.server.models import ErrorResponse

log = logging.getLogger(__name__)

#: HTTP status per docsight error class; the most specific class listed in an error's MRO wins.
#: 503 is for what the server cannot reach or use right now (the collection, a model endpoint,
#: a configuration that cannot read the collection), not for what the client asked.
STATUS: dict[type[E.DocsightError], int] = {
    E.DocsightError: 500,
    E.ConfigurationError: 503,
    E.IngestError: 422,
    E.UnsupportedFormatError: 415,
    E.LimitExceededError: 413,
    E.StoreError: 500,
    E.CollectionNotFoundError: 503,
    E.CollectionLockedError: 409,
    E.DocumentNotFoundError: 404,
    E.SessionNotFoundError: 404,
    E.AmbiguousDocumentError: 422,
    E.StorageFullError: 507,
    E.ReadOnlyCollectionError: 503,
    E.CollectionDamagedError: 503,
    E.SchemaVersionError: 503,
    E.LLMError: 503,
    E.EncoderError: 503,
    E.UsageError: 422,
    E.QueryImageError: 400,
    E.UnauthorizedError: 401,
    E.TooManyJobsError: 429,
    E.JobNotFoundError: 404,
}

#: Codes of errors that are not docsight errors: the request itself was malformed.
INVALID_REQUEST = "invalid_request"
BAD_REQUEST = "bad_request"
INTERNAL_ERROR = "internal_error"
_INTERNAL_MESSAGE = "an unexpected error occurred on the server; it has been logged"

_HTTP_CODES = {
    400: BAD_REQUEST,
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    413: "too_large",
    415: "unsupported_media_type",
    422: INVALID_REQUEST,
    429: "too_many_requests",
}

#: Seconds a client should wait before retrying a refused upload (429) or an unavailable
#: collection or model (503).
RETRY_AFTER_S = 5


def status_for(exc: E.DocsightError) -> int:
    for cls in type(exc).__mro__:
        if cls in STATUS:
            return STATUS[cls]  # type: ignore[index]
    return 500


def error_response(
    status: int, code: str, message: str, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(
        {"error": {"code": code, "message": message}}, status_code=status, headers=headers
    )


def docsight_error_response(exc: E.DocsightError) -> JSONResponse:
    status = status_for(exc)
    headers: dict[str, str] = {}
    if status == 401:
        headers["WWW-Authenticate"] = "Bearer"
    if status in (429, 503):
        headers["Retry-After"] = str(RETRY_AFTER_S)
    if status >= 500 and status != 503:
        # On purpose, but the server's fault (a damaged table, a full disk): worth a log line.
        log.warning("%s: %s", exc.code, exc.message)
    return error_response(status, exc.code, exc.message, headers)


def error_json(exc: BaseException) -> dict[str, str]:
    """``{code, message}`` for an error met where no response can be sent any more (inside a
    stream, a background job); a bug is logged here and described generically."""
    if isinstance(exc, E.DocsightError):
        return {"code": exc.code, "message": exc.message}
    log.error("unexpected error", exc_info=exc)
    return {"code": INTERNAL_ERROR, "message": _INTERNAL_MESSAGE}


def validation_message(errors: Sequence[Any]) -> str:
    """The validation errors in a line: where and what, never the input (it can be huge, or
    the very data the client sent by mistake)."""
    parts = []
    for error in list(errors)[:5]:
        loc = [str(p) for p in error.get("loc", ()) if p not in ("body", "query", "path")]
        where = ".".join(loc) or "request"
        parts.append(f"{where}: {error.get('msg', 'invalid')}")
    more = len(errors) - 5
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


async def _on_docsight_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, E.DocsightError)
    return docsight_error_response(exc)


async def _on_validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = exc.errors()
    # A body that is not JSON at all is malformed (400), not merely invalid (422).
    if errors and all(e.get("type") == "json_invalid" for e in errors):
        return error_response(400, BAD_REQUEST, "the request body is not valid JSON")
    return error_response(422, INVALID_REQUEST, validation_message(errors))


async def _on_http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    code = _HTTP_CODES.get(exc.status_code, f"http_{exc.status_code}")
    detail = exc.detail if isinstance(exc.detail, str) else None
    if exc.status_code == 404:
        message = f"no such resource: {request.url.path}"
    elif exc.status_code == 405:
        message = f"{request.method} is not allowed on {request.url.path}"
    else:
        message = detail or code.replace("_", " ")
    return error_response(exc.status_code, code, message, exc.headers)


async def _on_os_error(request: Request, exc: Exception) -> JSONResponse:
    # A full disk or a read-only collection met outside the store's own guarded writes (the
    # upload directory, a cache) is the same error to a client as inside them.
    from docsight.index.guard import storage_error

    ds = getattr(request.app.state, "docsight", None)
    mapped = storage_error(exc, ds.path, "writing") if ds is not None else None  # type: ignore[arg-type]
    if mapped is None:
        log.error("unexpected error on %s %s", request.method, request.url.path, exc_info=exc)
        return error_response(500, INTERNAL_ERROR, _INTERNAL_MESSAGE)
    return docsight_error_response(mapped)


def install(app: FastAPI) -> None:
    """Register the handlers and the last-resort middleware on ``app``."""
    app.add_exception_handler(E.DocsightError, _on_docsight_error)
    app.add_exception_handler(RequestValidationError, _on_validation_error)
    app.add_exception_handler(StarletteHTTPException, _on_http_error)
    app.add_exception_handler(OSError, _on_os_error)


class CatchAll:
    """Outermost middleware: any exception no handler took becomes a logged 500 with a generic
    body. (Starlette's own last resort re-raises after answering, which sends the traceback to
    the server log twice and makes in-process clients raise; this one ends it.)"""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception:
            log.exception("unexpected error on %s %s", scope.get("method"), scope.get("path"))
            if not started:  # otherwise the client sees the response cut short, nothing more
                await error_response(500, INTERNAL_ERROR, _INTERNAL_MESSAGE)(scope, receive, send)


def responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI descriptions of the error statuses a route can return (all the same body);
    500 is added to every route, since any may fail unexpectedly."""
    described = {
        400: "Malformed request: invalid JSON, multipart or base64 (`bad_request`, "
        "`bad_query_image`).",
        401: "Missing or wrong API key (`unauthorized`); send `Authorization: Bearer KEY`.",
        404: "No such document, page, job or conversation.",
        409: "Another process is writing to the collection (`collection_locked`).",
        413: "Request body, upload or file count over the server's limits.",
        415: "Unsupported content type, or a file type docsight cannot read.",
        422: "Invalid arguments (`invalid_request`, `usage_error`, `empty_question`, ...).",
        429: "Too many ingestion jobs running (`too_many_jobs`); retry later.",
        500: "Unexpected server error (`internal_error`); details are in the server log only.",
        503: "Collection or model endpoint unavailable (`collection_not_found`, `llm_*`, ...).",
    }
    return {
        status: {"model": ErrorResponse, "description": described[status]}
        for status in (*statuses, 500)
    }


__all__ = [
    "INTERNAL_ERROR",
    "INVALID_REQUEST",
    "STATUS",
    "CatchAll",
    "docsight_error_response",
    "error_json",
    "error_response",
    "install",
    "responses",
    "status_for",
    "validation_message",
]
