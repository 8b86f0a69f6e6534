"""MCP tools over the :class:`~docsight.api.DocSight` facade, for AI assistants.

Five tools (``search``, ``ask``, ``list_documents``, ``document_map``, ``get_page``) and one
resource template (a page's PNG image), served by the official ``mcp`` SDK:

- over stdio by ``docsight mcp`` (:func:`run_stdio`);
- over streamable HTTP under ``/mcp`` of ``docsight serve`` (:func:`mount_http`).

The input schemas of ``search`` and ``ask`` are generated from the REST API's request models
(``server.models``), so both entry points accept the same arguments with the same bounds. Every
tool returns structured content (with an output schema) and the same data as JSON text for
clients that only read text. A docsight error becomes a tool error carrying its stable ``code``
and ``message`` (the REST API's ``{"error": {...}}`` body), never a Python traceback.

The facade blocks (SQLite, vector search, model calls), so every tool is a plain function: the
SDK runs those on a worker thread, which keeps the event loop (and, under ``docsight serve``,
the REST API sharing it) responsive.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import inspect
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, Field

from docsight.document.model import BBox
from docsight.errors import (
    DocsightError,
    DocumentNotFoundError,
    MissingDependencyError,
    QueryImageError,
)
from docsight.server.models import AskRequest, SearchRequest

try:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError
    from mcp_types import (
        CallToolResult,
        ContentBlock,
        ImageContent,
        ResourceLink,
        TextContent,
        ToolAnnotations,
    )
except ImportError as exc:  # the `server` extra is optional; say which one to install
    raise MissingDependencyError("MCP (docsight mcp, /mcp)", "server", str(exc)) from exc

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

    from docsight.api import DocSight

#: Where :func:`mount_http` serves MCP on the app.
MCP_PATH = "/mcp"
#: The page image resource; ``document`` is a name or id, ``page`` 0-based.
PAGE_IMAGE_URI = "docsight://pages/{document}/{page}"
#: Longest document reference accepted (names are file names; ids are hex digests).
_MAX_REF_CHARS = 1000
#: Request fields the MCP tools leave out: MCP has its own progress and streaming, and a tool
#: result is one message.
_NOT_IN_MCP = frozenset({"stream"})

_INSTRUCTIONS = (
    "docsight answers questions over a collection of documents (PDF, Office, HTML, Markdown, "
    "images) with citations to document, page and box. Use `ask` for an answer with numbered "
    "[n] citations, `search` for ranked passages, `list_documents` and `document_map` to see "
    "what is there, and `get_page` to read a cited page and see its image. Pages are 0-based "
    "everywhere; boxes are normalised to [0, 1] with the origin at the top left. Document "
    "arguments take a name (with or without its extension, or a unique start of it) or an id."
)


# --- results -----------------------------------------------------------------------------------
# The tools' output schemas. They name things as an assistant reads them (``document``, not
# ``doc_name``) and leave out what only the library needs (channel ranks, source texts).


class HitResult(BaseModel):
    """One search result."""

    rank: int = Field(description="1-based rank.")
    document: str = Field(description="Document name.")
    document_id: str
    page: int = Field(description="0-based page.")
    bbox: BBox | None = Field(description="Region on the page, normalised, origin top left.")
    score: float = Field(description="Fused score; higher is better within one result list.")
    text: str
    kind: str = Field(description="text, table, figure, ...")
    unit: Literal["chunk", "page"]
    section_path: list[str] = Field(description="Section titles from the top down.")
    pages: list[int] = Field(description="Every 0-based page the result spans.")


class SearchResult(BaseModel):
    results: list[HitResult]


class CitationResult(BaseModel):
    """A source the answer relies on; ``n`` matches the ``[n]`` marker in the answer."""

    n: int
    document: str
    document_id: str
    page: int = Field(description="0-based page.")
    bbox: BBox | None = Field(description="Region on the page, normalised, origin top left.")
    quote: str | None = Field(description="The sentence or row quoted (extractive answers).")
    section_path: list[str]


class AskResult(BaseModel):
    question: str
    answer: str = Field(description="Markdown with [n] citation markers, or 'Not answerable'.")
    answerable: bool
    mode: Literal["llm", "extractive"] = Field(
        description="llm: written by a model from the sources; extractive: quoted, offline."
    )
    strategy: Literal["fast", "agent", "plan"]
    citations: list[CitationResult]
    warnings: list[str]
    explanation: str | None = Field(
        description="For a refusal: what was looked for and where the closest evidence was."
    )
    session: str | None = Field(description="The conversation to continue with `session`.")
    standalone: str | None = Field(
        description="The follow-up as searched, when it was rewritten to stand alone."
    )


class DocumentSummary(BaseModel):
    id: str
    name: str
    title: str | None
    media_type: str = Field(description="The file's format, as a media type.")
    pages: int
    elements: int
    chunks: int
    size_bytes: int
    parser: str
    ingested_at: datetime


class DocumentsResult(BaseModel):
    documents: list[DocumentSummary]


class PageResult(BaseModel):
    document: str
    document_id: str
    page: int = Field(description="0-based page.")
    page_count: int
    labels: list[str] = Field(description="Page numbers as printed on the page.")
    text: str = Field(description="The page's visible text in reading order (tables as Markdown).")
    image_uri: str | None = Field(
        description="The page image's resource (PNG); null when the page has none."
    )


# --- errors ------------------------------------------------------------------------------------


def _error_body(code: str, message: str) -> dict[str, Any]:
    """The REST API's error body (``server.models.ErrorResponse``)."""
    return {"error": {"code": code, "message": message}}


def _error_result(error: DocsightError) -> CallToolResult:
    """A tool error with docsight's code and message, shaped like the REST API's error body."""
    body = _error_body(error.code, error.message)
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(body, ensure_ascii=False))],
        structured_content=body,
        is_error=True,
    )


def _guard(ds: DocSight, call: Callable[[], CallToolResult]) -> CallToolResult:
    """Run a tool body; docsight errors (and a full or read-only disk) become tool errors.

    Anything else propagates to the SDK, which logs it on the server and tells the client only
    "Error executing tool <name>", so no traceback or internal detail reaches a client.
    """
    try:
        try:
            return call()
        except OSError as exc:
            from docsight.index.guard import storage_error

            mapped = storage_error(exc, ds.path, "reading")
            if mapped is None:
                raise
            raise mapped from exc
    except DocsightError as exc:
        return _error_result(exc)


def _ok(
    result: BaseModel | dict[str, Any], content: list[ContentBlock] | None = None
) -> CallToolResult:
    """A successful result: structured content, and the same as JSON text unless ``content``
    says what a text-only client should read instead."""
    data = result.model_dump(mode="json") if isinstance(result, BaseModel) else result
    if content is None:
        text = json.dumps(data, ensure_ascii=False, indent=1)
        content = [TextContent(type="text", text=text)]
    return CallToolResult(content=content, structured_content=data)


# --- input schemas from the API's models -------------------------------------------------------


def _parameters(model: type[BaseModel]) -> list[inspect.Parameter]:
    """The model's fields as keyword parameters with the same types, bounds and descriptions.

    The SDK builds a tool's input schema from its function's signature, so a signature made from
    the request model gives the MCP tool exactly the REST API's arguments.
    """
    params = []
    for name, field in model.model_fields.items():
        if name in _NOT_IN_MCP:
            continue
        # ``metadata`` holds the bounds (ge, le, min_length, max_length); the description rides
        # along in a fresh Field, since a field's default belongs to the parameter instead.
        extras = (*field.metadata, Field(description=field.description))
        annotation = Annotated[(field.annotation, *extras)]  # type: ignore[name-defined]
        default = inspect.Parameter.empty if field.is_required() else field.default
        params.append(
            inspect.Parameter(
                name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
            )
        )
    return params


def _model_tool(
    request: type[BaseModel], output: type[BaseModel], body: Callable[[Any], CallToolResult]
) -> Callable[..., CallToolResult]:
    """A tool function taking ``request``'s fields, validating them into ``request`` (so the
    model's own validators run too) and calling ``body`` with it."""

    def tool(**arguments: Any) -> CallToolResult:
        return body(request(**arguments))

    tool.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        _parameters(request), return_annotation=Annotated[CallToolResult, output]
    )
    return tool


def _image(encoded: str | None) -> bytes | None:
    if encoded is None:
        return None
    try:
        return base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise QueryImageError("image_base64", "not valid base64") from exc


# --- conversions -------------------------------------------------------------------------------


def _hit(hit: Any) -> HitResult:
    return HitResult(
        rank=hit.rank,
        document=hit.doc_name,
        document_id=hit.doc_id,
        page=hit.page,
        bbox=hit.bbox,
        score=hit.score,
        text=hit.text,
        kind=hit.kind,
        unit=hit.unit,
        section_path=hit.section_path,
        pages=hit.pages or [hit.page],
    )


def _answer(answer: Any) -> AskResult:
    return AskResult(
        question=answer.question,
        answer=answer.answer,
        answerable=answer.answerable,
        mode=answer.mode,
        strategy=answer.strategy,
        citations=[
            CitationResult(
                n=c.n,
                document=c.doc_name,
                document_id=c.doc_id,
                page=c.page,
                bbox=c.bbox,
                quote=c.quote,
                section_path=c.section_path,
            )
            for c in answer.citations
        ],
        warnings=answer.warnings,
        explanation=answer.explanation,
        session=answer.session,
        standalone=answer.standalone,
    )


def _page_text(document: Any, page: int) -> str:
    """Visible text of a page in reading order. Hidden text (white, off-page, tiny) is left
    out: the reader is a model, and hidden text is where instructions to it get planted."""
    parts = [
        element.markdown or element.text
        for element in sorted(document.elements_on_page(page), key=lambda e: e.order)
        if not element.hidden and not element.is_furniture and (element.markdown or element.text)
    ]
    return "\n\n".join(parts)


def _map_for_model(data: dict[str, Any]) -> dict[str, Any]:
    """The document map without the previews of hidden text (kept: where, why and how long),
    for the same reason as :func:`_page_text`."""
    hidden = [{k: v for k, v in item.items() if k != "text"} for item in data.get("hidden", [])]
    return {**data, "hidden": hidden}


# --- the server --------------------------------------------------------------------------------


def create_mcp(ds: DocSight) -> MCPServer[Any]:
    """The MCP server over ``ds``: tools and the page image resource; no transport yet."""
    from docsight import __version__

    # WARNING: the SDK configures the root logger when none is (`logging.basicConfig`) at this
    # level; the CLI configures logging first, so this only matters to library callers.
    server: MCPServer[Any] = MCPServer(
        "docsight",
        title="docsight",
        instructions=_INSTRUCTIONS,
        version=__version__,
        log_level="WARNING",
    )
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    def search(request: SearchRequest) -> CallToolResult:
        def run() -> CallToolResult:
            hits = ds.search(
                request.query,
                k=request.k,
                doc_names=request.documents,
                unit=request.unit,
                image=_image(request.image_base64),
            )
            return _ok(SearchResult(results=[_hit(h) for h in hits]))

        return _guard(ds, run)

    def ask(request: AskRequest) -> CallToolResult:
        def run() -> CallToolResult:
            image = _image(request.image_base64)
            if request.session is None:
                answer = ds.ask(
                    request.question,
                    doc_names=request.documents,
                    k=request.k,
                    image=image,
                    mode=request.mode,
                )
                return _ok(_answer(answer))
            # A conversation: "new" starts one, anything else continues it. Follow-ups pick
            # their own sources (the previous answer's documents first), so k does not apply.
            answer = ds.chat(
                request.question,
                session=None if request.session == "new" else request.session,
                doc_names=request.documents,
                image=image,
                mode=request.mode,
            )
            if request.k is not None:
                answer.warnings.append("k is not used in a conversation (session); ignored")
            return _ok(_answer(answer))

        return _guard(ds, run)

    server.add_tool(
        _model_tool(SearchRequest, SearchResult, search),
        name="search",
        title="Search the documents",
        description="Rank passages (or whole pages) of the collection by keywords and meaning. "
        "Each result names its document, 0-based page and box.",
        annotations=read_only,
    )
    server.add_tool(
        _model_tool(AskRequest, AskResult, ask),
        name="ask",
        title="Ask a question",
        description="Answer a question from the documents, with [n] markers that match the "
        "citations (document, 0-based page, box, quote). Says 'Not answerable' rather than "
        "guess. `session`: `new` starts a conversation, its returned id continues it.",
        # Not read-only: a `session` keeps the conversation in the collection.
        annotations=ToolAnnotations(read_only_hint=False, open_world_hint=False),
    )

    def list_documents() -> Annotated[CallToolResult, DocumentsResult]:
        """The documents in the collection."""

        def run() -> CallToolResult:
            summaries = [
                DocumentSummary.model_validate(info.model_dump()) for info in ds.documents()
            ]
            return _ok(DocumentsResult(documents=summaries))

        return _guard(ds, run)

    def document_map(
        document: Annotated[
            str,
            Field(
                min_length=1,
                max_length=_MAX_REF_CHARS,
                description="Document name (with or without the extension, or its start) or id.",
            ),
        ],
    ) -> Annotated[CallToolResult, dict[str, Any]]:
        """A document's map: sections with their pages and what they hold (tables, figures
        and their captions), references between parts, and the content graph's summaries."""

        def run() -> CallToolResult:
            from docsight.document.map import document_map as build_map
            from docsight.graph.view import graph_map

            doc = ds.document(document)
            data = build_map(doc)
            graph = ds.store.get_graph(doc.id)
            data["graph"] = graph_map(graph, doc) if graph is not None else None
            return _ok(_map_for_model(data))

        return _guard(ds, run)

    def get_page(
        document: Annotated[
            str,
            Field(
                min_length=1,
                max_length=_MAX_REF_CHARS,
                description="Document name (with or without the extension, or its start) or id.",
            ),
        ],
        page: Annotated[int, Field(ge=0, description="0-based page, as in citations.")],
    ) -> Annotated[CallToolResult, PageResult]:
        """A page's visible text and its image (PNG), to read a cited page and see the
        region a citation's box marks."""

        def run() -> CallToolResult:
            doc = ds.document(document)
            if page >= doc.page_count:
                raise DocumentNotFoundError(
                    f"{doc.name} has no page {page} (pages are 0-based; it has {doc.page_count})"
                )
            png = ds.page_image(doc.id, page)
            uri = PAGE_IMAGE_URI.format(document=doc.id, page=page) if png else None
            result = PageResult(
                document=doc.name,
                document_id=doc.id,
                page=page,
                page_count=doc.page_count,
                labels=doc.pages[page].labels,
                text=_page_text(doc, page),
                image_uri=uri,
            )
            content: list[ContentBlock] = [TextContent(type="text", text=result.text)]
            if png and uri:
                encoded = base64.b64encode(png).decode("ascii")
                content.append(ImageContent(type="image", data=encoded, mime_type="image/png"))
                content.append(
                    ResourceLink(
                        type="resource_link",
                        uri=uri,
                        name=f"{doc.name} page {page}",
                        mime_type="image/png",
                    )
                )
            return _ok(result, content)

        return _guard(ds, run)

    server.add_tool(list_documents, title="List the documents", annotations=read_only)
    server.add_tool(document_map, title="Map a document", annotations=read_only)
    server.add_tool(get_page, title="Read a page", annotations=read_only)

    @server.resource(
        PAGE_IMAGE_URI,
        name="page_image",
        title="Page image",
        description="The PNG image of a document's page (0-based), as cited.",
        mime_type="image/png",
    )
    def page_image(document: str, page: int) -> bytes:
        try:
            png = ds.page_image(document, page)
        except DocumentNotFoundError as exc:
            raise ResourceNotFoundError(f"{exc.code}: {exc.message}") from exc
        except DocsightError as exc:
            raise ResourceError(f"{exc.code}: {exc.message}") from exc
        if png is None:
            raise ResourceNotFoundError(f"document_not_found: page {page} has no image")
        return png

    return server


def run_stdio(ds: DocSight) -> None:
    """Serve MCP over this process's stdin and stdout until the client closes stdin.

    While it runs, the SDK points file descriptor 1 at stderr, so stray output of a library
    cannot corrupt the protocol.
    """
    create_mcp(ds).run("stdio")


# --- streamable HTTP under a FastAPI app -------------------------------------------------------


class _Endpoint:
    """The ASGI app at ``/mcp``: hands requests to the session manager of the running
    lifespan. A session manager runs once only, so each lifespan gets a new one (an app served
    twice, as tests do, keeps working); outside a lifespan the answer is a 503, not a crash."""

    def __init__(self, server: MCPServer[Any], host: str, api_key: str | None) -> None:
        self.server = server
        self.host = host
        self.api_key = api_key
        self.manager: Any = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        # `streamable_http_app` is the SDK's public way to make a session manager; the
        # Starlette app it also returns is not used, its route is ours.
        self.server.streamable_http_app(streamable_http_path=MCP_PATH, host=self.host)
        manager = self.server.session_manager
        async with manager.run():
            self.manager = manager
            try:
                yield
            finally:
                self.manager = None

    def _authorised(self, scope: Scope) -> bool:
        if self.api_key is None:
            return True
        headers = dict(scope.get("headers") or [])
        given = headers.get(b"authorization", b"").decode("latin-1")
        scheme, _, token = given.partition(" ")
        # Constant-time comparison: the key must not leak through response timing.
        return scheme.lower() == "bearer" and hmac.compare_digest(
            token.strip().encode(), self.api_key.encode()
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        from starlette.responses import JSONResponse

        if not self._authorised(scope):
            body = _error_body("unauthorized", "send the API key as `Authorization: Bearer KEY`")
            headers = {"WWW-Authenticate": "Bearer"}
            await JSONResponse(body, status_code=401, headers=headers)(scope, receive, send)
            return
        manager = self.manager
        if manager is None:
            body = _error_body(
                "mcp_not_running",
                "MCP over HTTP runs inside the app's lifespan, which has not started (serve "
                "the app with uvicorn, or enter its lifespan)",
            )
            await JSONResponse(body, status_code=503)(scope, receive, send)
            return
        await manager.handle_request(scope, receive, send)


def mount_http(
    app: Any, ds: DocSight, *, host: str = "127.0.0.1", api_key: str | None = None
) -> None:
    """Serve MCP over streamable HTTP at ``/mcp`` of ``app`` (a FastAPI or Starlette app).

    Lifespan: the MCP session manager must run for as long as the app serves, so this wraps
    the app's lifespan (``app.router.lifespan_context``) around whatever lifespan the app
    already has (the manager starts before it and stops after it). Build the app with its own
    ``lifespan=`` first, then call this, and do not replace the lifespan afterwards. ``/mcp``
    answers only while the lifespan runs: uvicorn runs it, an in-process httpx
    ``ASGITransport`` does not (``/mcp`` then answers 503 ``mcp_not_running``).

    ``host`` is the address the server binds: on loopback the SDK checks the ``Host`` and
    ``Origin`` headers against loopback names (DNS rebinding protection); elsewhere it cannot.
    ``api_key``: when given, ``/mcp`` requires ``Authorization: Bearer <api_key>`` (401
    ``unauthorized`` otherwise), whether or not the app's own authentication covers it.
    """
    from starlette.routing import Route

    endpoint = _Endpoint(create_mcp(ds), host, api_key)
    # Any method: the transport uses POST (messages), GET (the server's stream) and DELETE
    # (end of session). A Route, not a Mount, so ``/mcp`` itself answers without a redirect;
    # first in line, so a catch-all mounted at ``/`` (static files) cannot shadow it.
    app.router.routes.insert(0, Route(MCP_PATH, endpoint=endpoint, include_in_schema=False))
    outer = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(application: ASGIApp) -> AsyncIterator[Any]:
        async with endpoint.running(), outer(application) as state:
            yield state

    app.router.lifespan_context = lifespan


__all__ = [
    "MCP_PATH",
    "PAGE_IMAGE_URI",
    "AskResult",
    "DocumentsResult",
    "HitResult",
    "PageResult",
    "SearchResult",
    "create_mcp",
    "mount_http",
    "run_stdio",
]
