"""MCP (issue 16): the SDK's own client against a real `docsight mcp` over stdio, and against
`mount_http` on a FastAPI app served by uvicorn on a loopback port."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp", reason="the MCP SDK is in the server extra")

from mcp import Client, StdioServerParameters
from mcp_types import CallToolResult

from docsight.server.models import AskRequest, SearchRequest

REPORT = "northwind-annual-report-2024.pdf"
QUESTION = "What was Northwind's revenue in 2024?"
TOOLS = {"search", "ask", "list_documents", "document_map", "get_page"}
EXE = Path(sys.executable).with_name("docsight")


def _child_env() -> dict[str, str]:
    # The test environment without DOCSIGHT_* (conftest removed them), so the server sees the
    # same model caches and offline switches as the test process.
    return {k: v for k, v in os.environ.items() if not k.startswith("DOCSIGHT_")}


def _error(result: CallToolResult) -> dict[str, str]:
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert "Traceback" not in text
    body = json.loads(text)
    assert body == result.structured_content
    return body["error"]


# --- stdio: one server process, every call recorded, asserted by the tests below -----------------


@pytest.fixture(scope="module")
def stdio(demo_collection: Path) -> dict[str, Any]:
    """Start `docsight mcp -c COLLECTION` and make the calls once (a process start costs about
    two seconds); the tests check what came back."""
    params = StdioServerParameters(
        command=str(EXE), args=["mcp", "-c", str(demo_collection)], env=_child_env()
    )
    got: dict[str, Any] = {}

    async def session() -> None:
        with anyio.fail_after(60):
            async with Client(params) as client:
                got["tools"] = {t.name: t for t in (await client.list_tools()).tools}
                got["ask"] = await client.call_tool("ask", {"question": QUESTION})
                got["search"] = await client.call_tool("search", {"query": "warranty", "k": 3})
                got["pages"] = await client.call_tool(
                    "search", {"query": "revenue", "unit": "page", "documents": [REPORT]}
                )
                got["docs"] = await client.call_tool("list_documents", {})
                got["map"] = await client.call_tool("document_map", {"document": "northwind"})
                got["page"] = await client.call_tool("get_page", {"document": REPORT, "page": 0})
                got["unknown"] = await client.call_tool(
                    "get_page", {"document": "no-such-report", "page": 0}
                )
                got["no_page"] = await client.call_tool(
                    "get_page", {"document": REPORT, "page": 999}
                )
                got["bad_k"] = await client.call_tool("search", {"query": "x", "k": 0})
                got["new"] = await client.call_tool("ask", {"question": QUESTION, "session": "new"})
                session_id = got["new"].structured_content["session"]
                got["follow"] = await client.call_tool(
                    "ask", {"question": "And in 2023?", "session": session_id}
                )
                got["lost"] = await client.call_tool(
                    "ask", {"question": QUESTION, "session": "0123456789ab"}
                )
                uri = got["page"].structured_content["image_uri"]
                got["resource"] = await client.read_resource(uri)

    started = time.monotonic()
    anyio.run(session)
    got["seconds"] = time.monotonic() - started
    return got


def test_tools_are_listed_with_input_schemas_from_the_api_models(stdio: dict[str, Any]) -> None:
    tools = stdio["tools"]
    assert set(tools) == TOOLS
    for name, model in (("search", SearchRequest), ("ask", AskRequest)):
        expected = model.model_json_schema()
        fields = {f for f in expected["properties"] if f != "stream"}  # streaming is not MCP's
        schema = tools[name].input_schema
        assert set(schema["properties"]) == fields, name
        for field in fields:
            # Same types, bounds (minLength, maximum, maxItems ...), defaults and descriptions.
            assert schema["properties"][field] == expected["properties"][field], (name, field)
        assert schema.get("required", []) == expected.get("required", []), name
    assert tools["search"].input_schema["properties"]["k"]["maximum"] == 1000
    assert tools["ask"].input_schema["properties"]["k"]["anyOf"][0]["maximum"] == 50
    page = tools["get_page"].input_schema
    assert page["required"] == ["document", "page"]
    assert page["properties"]["page"]["minimum"] == 0
    assert tools["list_documents"].input_schema["properties"] == {}
    for name in TOOLS:
        assert tools[name].output_schema is not None, name
    assert tools["search"].annotations.read_only_hint is True
    assert tools["ask"].annotations.read_only_hint is False


def test_ask_answers_with_cited_pages_and_boxes(stdio: dict[str, Any]) -> None:
    result = stdio["ask"]
    assert not result.is_error
    answer = result.structured_content
    assert answer["answerable"] and answer["answer"].startswith("468.5 [1]")
    citation = answer["citations"][0]
    assert citation["n"] == 1 and citation["document"] == REPORT and citation["page"] == 0
    assert set(citation["bbox"]) == {"x0", "y0", "x1", "y1"}
    assert "468.5" in citation["quote"]
    assert answer["session"] is None and isinstance(answer["warnings"], list)
    # Text-only clients read the same as JSON.
    assert json.loads(result.content[0].text) == answer


def test_search_ranks_passages_and_pages(stdio: dict[str, Any]) -> None:
    hits = stdio["search"].structured_content["results"]
    assert 1 <= len(hits) <= 3
    assert hits[0]["document"] == "support-faq.txt" and "warranty" in hits[0]["text"].lower()
    assert [h["rank"] for h in hits] == list(range(1, len(hits) + 1))
    assert hits[0]["page"] == 0 and hits[0]["score"] > 0
    pages = stdio["pages"].structured_content["results"]
    assert pages and {h["document"] for h in pages} == {REPORT}
    assert {h["unit"] for h in pages} == {"page"}


def test_list_documents_and_a_document_map(stdio: dict[str, Any]) -> None:
    docs = stdio["docs"].structured_content["documents"]
    assert len(docs) == 6 and REPORT in {d["name"] for d in docs}
    report = next(d for d in docs if d["name"] == REPORT)
    assert report["media_type"] == "application/pdf" and report["pages"] == 2
    assert "source" not in report  # the server's file paths stay on the server
    data = stdio["map"].structured_content
    assert data["name"] == REPORT and data["pages"] == 2
    titles = [s["title"] for s in data["sections"]]
    assert any("Financial Highlights" in t for t in titles), titles
    assert all("text" not in item for item in data["hidden"])


def test_get_page_gives_text_and_the_page_image(stdio: dict[str, Any]) -> None:
    result = stdio["page"]
    assert not result.is_error
    page = result.structured_content
    assert page["document"] == REPORT and page["page"] == 0 and page["page_count"] == 2
    assert "Annual Report 2024" in page["text"]
    kinds = [block.type for block in result.content]
    assert kinds == ["text", "image", "resource_link"]
    image = result.content[1]
    assert image.mime_type == "image/png"  # type: ignore[union-attr]
    assert image.data.startswith("iVBORw0KGgo")  # type: ignore[union-attr]  # PNG signature
    assert result.content[2].uri == page["image_uri"]  # type: ignore[union-attr]
    blob = stdio["resource"].contents[0]
    assert blob.mime_type == "image/png" and blob.blob == image.data  # type: ignore[union-attr]


def test_a_conversation_continues_with_its_session(stdio: dict[str, Any]) -> None:
    first = stdio["new"].structured_content
    assert first["session"] and first["answer"].startswith("468.5 [1]")
    follow = stdio["follow"].structured_content
    assert follow["session"] == first["session"]
    assert follow["standalone"] == "What was Northwind's revenue in 2023?"
    assert follow["answer"].startswith("412.0 [1]")


def test_errors_carry_docsight_codes_never_tracebacks(stdio: dict[str, Any]) -> None:
    unknown = _error(stdio["unknown"])
    assert unknown["code"] == "document_not_found"
    assert "no-such-report" in unknown["message"]
    assert _error(stdio["no_page"])["code"] == "document_not_found"
    assert _error(stdio["lost"])["code"] == "session_not_found"
    # Out-of-bounds arguments are refused by the schema before any work, as an error result.
    bad = stdio["bad_k"]
    assert bad.is_error and "Traceback" not in bad.content[0].text
    assert stdio["seconds"] < 45


def test_a_missing_extra_is_a_clear_error_on_stderr(demo_collection: Path) -> None:
    # `mcp` hidden from the import system, as on an install without the server extra.
    code = (
        "import sys; sys.modules['mcp'] = None; sys.modules['mcp.server'] = None; "
        "sys.modules['mcp.server.mcpserver'] = None; "
        "from docsight.cli.main import main; sys.argv = ['docsight', 'mcp', '-c', sys.argv[1]]; "
        "main()"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(demo_collection)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env=_child_env(),
        timeout=60,
    )
    assert done.returncode == 1, done.stderr
    assert done.stdout == ""  # stdout is the protocol's, even for errors
    assert "missing_dependency" in done.stderr and "docsight[server]" in done.stderr
    assert "Traceback" not in done.stderr


# --- streamable HTTP under a FastAPI app ---------------------------------------------------------


def _app(collection: Path, events: list[str]) -> Any:
    """A bare FastAPI app with a lifespan of its own, and MCP mounted on it."""
    fastapi = pytest.importorskip("fastapi", reason="FastAPI is in the server extra")
    from docsight import DocSight
    from docsight.server.mcp import mount_http

    @asynccontextmanager
    async def lifespan(_: Any) -> AsyncIterator[None]:
        events.append("app started")
        yield
        events.append("app stopped")

    app = fastapi.FastAPI(lifespan=lifespan)

    @app.get("/health")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    mount_http(app, DocSight(collection))
    return app


@pytest.fixture()
def served(demo_collection: Path) -> Iterator[tuple[str, list[str]]]:
    """The app on a free loopback port under uvicorn, stopped after the test."""
    uvicorn = pytest.importorskip("uvicorn", reason="uvicorn is in the server extra")
    events: list[str] = []
    app = _app(demo_collection, events)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}", events
    finally:
        server.should_exit = True
        thread.join(timeout=20)
        sock.close()
        assert not thread.is_alive(), "uvicorn did not stop"
        assert events == ["app started", "app stopped"]


def test_mount_http_serves_tools_beside_the_app(served: tuple[str, list[str]]) -> None:
    import httpx

    base, events = served
    assert events == ["app started"]  # the app's own lifespan still runs, inside MCP's
    assert httpx.get(f"{base}/health").json() == {"status": "ok"}
    got: dict[str, Any] = {}

    async def session() -> None:
        with anyio.fail_after(30):
            async with Client(f"{base}/mcp") as client:
                got["tools"] = {t.name for t in (await client.list_tools()).tools}
                got["ask"] = await client.call_tool("ask", {"question": QUESTION, "k": 3})
                got["unknown"] = await client.call_tool("document_map", {"document": "nope"})

    anyio.run(session)
    assert got["tools"] == TOOLS
    answer = got["ask"].structured_content
    assert answer["answer"].startswith("468.5 [1]")
    assert answer["citations"][0]["document"] == REPORT
    assert _error(got["unknown"])["code"] == "document_not_found"
    # The route is not in the REST API's OpenAPI schema.
    assert "/mcp" not in httpx.get(f"{base}/openapi.json").json()["paths"]


def test_mount_http_outside_a_lifespan_is_a_503_not_a_crash(demo_collection: Path) -> None:
    import httpx

    app = _app(demo_collection, [])

    async def post() -> httpx.Response:
        # httpx's ASGI transport does not run the lifespan.
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            return await http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})

    response = anyio.run(post)
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "mcp_not_running"


def test_mount_http_with_an_api_key_refuses_other_callers(demo_collection: Path) -> None:
    import fastapi
    import httpx

    from docsight import DocSight
    from docsight.server.mcp import mount_http

    app = fastapi.FastAPI()
    mount_http(app, DocSight(demo_collection), api_key="s3cret")

    async def post(headers: dict[str, str]) -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
            return await http.post("/mcp", json=body, headers=headers)

    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret"}):
        refused = anyio.run(post, headers)
        assert refused.status_code == 401, headers
        assert refused.json()["error"]["code"] == "unauthorized"
    # The right key gets through to MCP (not running here: no lifespan under ASGITransport).
    assert anyio.run(post, {"Authorization": "Bearer s3cret"}).status_code == 503


# --- in process: failures that a real collection does not produce ------------------------------


def test_bad_images_and_crashes_are_tool_errors_without_details(demo_collection: Path) -> None:
    from docsight import DocSight
    from docsight.server.mcp import create_mcp

    ds = DocSight(demo_collection)
    got: dict[str, CallToolResult] = {}

    def crash(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("internal detail /srv/secret")

    async def session() -> None:
        async with Client(create_mcp(ds)) as client:
            got["image"] = await client.call_tool(
                "search", {"query": "revenue", "image_base64": "not base64 at all!"}
            )
            ds.search = crash  # type: ignore[method-assign]
            got["crash"] = await client.call_tool("search", {"query": "revenue"})

    anyio.run(session)
    assert _error(got["image"])["code"] == "bad_query_image"
    crashed = got["crash"]
    assert crashed.is_error
    text = crashed.content[0].text  # type: ignore[union-attr]
    assert "internal detail" not in text and "Traceback" not in text
    assert text == "Error executing tool search"
