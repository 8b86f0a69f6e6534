"""Search and ask: JSON bodies (the models of :mod:`docsight.server.models`) or multipart forms
with an ``image`` file, answers as JSON or streamed as server-sent events.

The body is parsed here rather than by FastAPI because one route takes two content types: JSON,
where an image comes as ``image_base64``, and multipart, where it comes as a file and the other
arguments as form fields (``documents`` repeated). Both end in the same model, validated the
same way, so the bounds and the 422s are the same whichever was sent.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import logging
import re
from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from docsight.agents.answer import Answer
from docsight.agents.trace import TraceStep
from docsight.api import DocSight
from docsight.errors import QueryImageError, UnsupportedFormatError, UsageError
from docsight.retrieval.hit import Hit
from docsight.server.errors import error_json, responses
from docsight.server.models import AskRequest, SearchRequest
from docsight.server.routes_documents import get_ds, get_server_settings
from docsight.server.sse import SSE_HEADERS, comment, sse
from docsight.settings import ServerSettings

log = logging.getLogger(__name__)
router = APIRouter()

Body = TypeVar("Body", bound=BaseModel)
DS = Annotated[DocSight, Depends(get_ds)]
Server = Annotated[ServerSettings, Depends(get_server_settings)]

#: Form fields of a multipart ask or search; the image file field is ``image``.
IMAGE_FIELD = "image"
_DATA_URL = re.compile(r"^data:[\w/+.-]*;base64,", re.IGNORECASE)


def _body(model: type[BaseModel], multipart_fields: dict[str, Any]) -> dict[str, Any]:
    """An OpenAPI request body: the model as JSON, or its fields plus an image as multipart."""
    return {
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {"schema": {"$ref": f"#/components/schemas/{model.__name__}"}},
                "multipart/form-data": {
                    "schema": {
                        "type": "object",
                        "properties": {
                            **multipart_fields,
                            IMAGE_FIELD: {"type": "string", "format": "binary"},
                        },
                    }
                },
            },
        }
    }


_SEARCH_FORM = {
    "query": {"type": "string"},
    "k": {"type": "integer"},
    "documents": {"type": "array", "items": {"type": "string"}},
    "unit": {"type": "string", "enum": ["chunk", "page"]},
}
_ASK_FORM = {
    "question": {"type": "string"},
    "k": {"type": "integer"},
    "documents": {"type": "array", "items": {"type": "string"}},
    "mode": {"type": "string", "enum": ["fast", "agent", "plan", "auto"]},
    "session": {"type": "string"},
    "stream": {"type": "boolean"},
}


@router.post(
    "/search",
    summary="Search the collection",
    openapi_extra=_body(SearchRequest, _SEARCH_FORM),
    responses={
        200: {"description": '`{"hits": [Hit, ...]}`, best first'},
        **responses(400, 401, 404, 413, 415, 422, 503),
    },
)
async def search(request: Request, ds: DS, server: Server) -> JSONResponse:
    """Hybrid search (keywords, meaning, named pages and parts); with an image, also what the
    image shows. `page` in each hit is 0-based."""
    body, image = await read_body(request, SearchRequest, server)
    _check_length("query", body.query, server)

    def run() -> list[Hit]:
        return ds.search(
            body.query, k=body.k, doc_names=body.documents, unit=body.unit, image=image
        )

    hits = await run_in_threadpool(run)
    return JSONResponse({"hits": [h.model_dump(mode="json") for h in hits]})


@router.post(
    "/ask",
    summary="Answer a question with citations",
    openapi_extra=_body(AskRequest, _ASK_FORM),
    responses={
        200: {
            "model": Answer,
            "description": "The answer, or with `stream`, server-sent events: `step` per trace "
            "step, `token` (`{text, draft}`) while a model writes, `answer` with the Answer, "
            "`done`; `error` with `{code, message}` if it fails.",
            "content": {"text/event-stream": {}},
        },
        **responses(400, 401, 404, 413, 415, 422, 503),
    },
)
async def ask(request: Request, ds: DS, server: Server) -> Any:
    """Citations carry the document, the 0-based page and the normalised box (top-left
    origin) of their evidence; `GET /documents/{doc}/pages/{page}.png?highlight=...` shows it.
    With `session` (`new` to start one), the question continues a conversation and the
    answer's `session` names it."""
    body, image = await read_body(request, AskRequest, server)
    _check_length("question", body.question, server)
    if body.session is not None and body.k is not None:
        raise UsageError("k cannot be combined with session: a conversation chooses its own")
    answer_fn = _answerer(ds, body, image)
    if not body.stream:
        answer = await run_in_threadpool(answer_fn, None, None)
        return JSONResponse(answer.model_dump(mode="json"))
    keepalive: float = request.app.state.sse_keepalive_s
    return StreamingResponse(
        _answer_events(answer_fn, keepalive), media_type="text/event-stream", headers=SSE_HEADERS
    )


#: Answers a question, telling the callbacks each trace step and each streamed word.
StepFn = Callable[[TraceStep], None]
TokenFn = Callable[[str, int], None]
AnswerFn = Callable[[StepFn | None, TokenFn | None], Answer]


def _answerer(ds: DocSight, body: AskRequest, image: bytes | None) -> AnswerFn:
    def answer(on_step: StepFn | None, on_token: TokenFn | None = None) -> Answer:
        kwargs: dict[str, Any] = {
            "doc_names": body.documents,
            "image": image,
            "mode": body.mode,
            "on_step": on_step,
            "on_token": on_token,
        }
        if body.session is not None:
            session = None if body.session == "new" else body.session
            return ds.chat(body.question, session=session, **kwargs)
        return ds.ask(body.question, k=body.k, **kwargs)

    return answer


async def _answer_events(answer_fn: AnswerFn, keepalive: float) -> AsyncIterator[bytes]:
    """``step`` events as answering goes, ``token`` events while a model writes (``{"text",
    "draft"}``: drafts are numbered by answering, and a new draft replaces the words shown so
    far), then ``answer`` and ``done``; ``error`` instead when it fails. Answering runs in a
    thread; its events cross to this loop through a queue."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

    def on_step(step: TraceStep) -> None:
        loop.call_soon_threadsafe(queue.put_nowait, ("step", step.model_dump(mode="json")))

    def on_token(piece: str, draft: int) -> None:
        event = ("token", {"text": piece, "draft": draft})
        loop.call_soon_threadsafe(queue.put_nowait, event)

    def work() -> None:
        try:
            answer = answer_fn(on_step, on_token)
        except BaseException as exc:  # reported in the stream, never raised into the executor
            loop.call_soon_threadsafe(queue.put_nowait, ("error", error_json(exc)))
            return
        loop.call_soon_threadsafe(queue.put_nowait, ("answer", answer.model_dump(mode="json")))

    loop.run_in_executor(None, work)
    while True:
        try:
            event, data = await asyncio.wait_for(queue.get(), keepalive)
        except TimeoutError:
            yield comment("keep-alive")
            continue
        yield sse(event, data)
        if event == "error":
            return
        if event == "answer":
            yield sse("done", {})
            return


async def read_body(
    request: Request, model: type[Body], server: ServerSettings
) -> tuple[Body, bytes | None]:
    """The request as ``model`` and its image bytes (if any), from JSON or multipart."""
    content_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    image: bytes | None = None
    if content_type == "application/json" or content_type.endswith("+json"):
        raw = await request.body()
        try:
            body = model.model_validate_json(raw)
        except ValidationError as exc:
            raise RequestValidationError(exc.errors(include_input=False)) from None
    elif content_type in ("multipart/form-data", "application/x-www-form-urlencoded"):
        fields, image = await _read_form(request, server)
        try:
            body = model.model_validate(fields)
        except ValidationError as exc:
            raise RequestValidationError(exc.errors(include_input=False)) from None
    else:
        raise UnsupportedFormatError(
            "request", "send JSON (application/json) or a form (multipart/form-data)"
        )
    encoded = getattr(body, "image_base64", None)
    if encoded is not None:
        if image is not None:
            raise UsageError("send the image once: as the file 'image' or as image_base64")
        image = decode_image(encoded)
    return body, image


async def _read_form(
    request: Request, server: ServerSettings
) -> tuple[dict[str, Any], bytes | None]:
    form = await request.form(
        max_files=1, max_fields=64, max_part_size=max(4 * server.max_query_chars, 64 * 1024)
    )
    fields: dict[str, Any] = {}
    image: bytes | None = None
    try:
        for key, value in form.multi_items():
            if isinstance(value, UploadFile):
                if key != IMAGE_FIELD:
                    raise UsageError(f"unexpected file field {key[:40]!r}: only '{IMAGE_FIELD}'")
                image = await value.read()
            elif key == "documents":
                fields.setdefault("documents", []).append(value)
            elif key in fields:
                raise UsageError(f"form field {key[:40]!r} given twice")
            else:
                fields[key] = value
    finally:
        await form.close()
    if image is not None and not image:
        raise QueryImageError(IMAGE_FIELD, "the image file is empty")
    return fields, image


def decode_image(encoded: str) -> bytes:
    """Base64 (optionally a ``data:`` URL) as bytes; :class:`QueryImageError` (400) if not."""
    text = _DATA_URL.sub("", encoded.strip(), count=1)
    try:
        data = base64.b64decode("".join(text.split()), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise QueryImageError("image_base64", f"not valid base64 ({exc})") from None
    if not data:
        raise QueryImageError("image_base64", "the image is empty")
    return data


def _check_length(field: str, text: str, server: ServerSettings) -> None:
    """Longer questions than ``server.max_query_chars`` are refused like any invalid field."""
    if len(text) > server.max_query_chars:
        raise RequestValidationError(
            [
                {
                    "type": "string_too_long",
                    "loc": ("body", field),
                    "msg": f"at most {server.max_query_chars} characters (server.max_query_chars)",
                }
            ]
        )


__all__ = ["decode_image", "read_body", "router"]
