"""The REST API of ``docsight serve``, in process: every endpoint and every error status.

Reads go to the shared demo collection; writes (uploads, removals, locks) to a copy of the small
text collection, so each test starts from the same documents and only three tests ingest.
"""

from __future__ import annotations

import base64
import io
import json
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")

from fastapi.testclient import TestClient
from filelock import FileLock
from PIL import Image, ImageDraw, ImageFont

from docsight import DocSight
from docsight.errors import LLMConnectionError, SessionNotFoundError
from docsight.settings import Settings

API = "/api/v1"
REPORT = "northwind-annual-report-2024.pdf"


# --- helpers -------------------------------------------------------------------------------------


def client_for(ds: DocSight, **server: Any) -> TestClient:
    """A client of an app over ``ds`` with server settings ``server``."""
    from docsight.server.app import create_app

    return TestClient(create_app(ds, settings=Settings(server=server)))


def assert_error(response: Any, status: int, code: str | None = None) -> dict[str, str]:
    """The response is the one error shape, with ``status`` and ``code``, and no traceback."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, body
    if code is not None:
        assert body["error"]["code"] == code, body
    assert body["error"]["message"]
    assert "Traceback" not in response.text and 'File "' not in response.text
    return dict(body["error"])


def events(text: str) -> list[tuple[str, Any]]:
    """Server-sent events as ``(event, data)``; comment frames dropped."""
    out = []
    for frame in text.split("\n\n"):
        lines = [line for line in frame.splitlines() if line and not line.startswith(":")]
        if not lines:
            continue
        fields = dict(line.split(": ", 1) for line in lines)
        out.append((fields["event"], json.loads(fields["data"])))
    return out


def wait_for_job(client: TestClient, job: str, timeout: float = 120.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        body: dict[str, Any] = client.get(f"{API}/jobs/{job}").json()
        if body["status"] in ("done", "failed"):
            return body
        time.sleep(0.1)
    raise AssertionError(f"job {job} did not finish in {timeout} s")


def png_of_text(text: str) -> bytes:
    image = Image.new("RGB", (520, 120), "white")
    ImageDraw.Draw(image).text((12, 40), text, fill="black", font=ImageFont.load_default(size=28))
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


# --- fixtures ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo(demo_collection: Path) -> Iterator[TestClient]:
    """A client over the demo collection (read-only: conversations only)."""
    with client_for(DocSight(demo_collection)) as client:
        yield client


@pytest.fixture()
def writable(text_collection: Path, tmp_path: Path) -> Path:
    """A copy of the text collection (guide.md, faq.txt) this test may change."""
    target = tmp_path / "col"
    shutil.copytree(text_collection, target)
    return target


# --- health, info, auth, OpenAPI -----------------------------------------------------------------


def test_health_info_and_the_api_key(demo_collection: Path) -> None:
    settings = Settings(
        llm={"model": "tiny-model", "base_url": "http://127.0.0.1:9/v1", "api_key": "sk-llm-9f3"}
    )
    ds = DocSight(demo_collection, settings=settings)
    with client_for(ds, api_key="s3cret-key") as client:
        assert client.get(f"{API}/health").json() == {"status": "ok"}  # open, no key

        missing = client.get(f"{API}/info")
        assert_error(missing, 401, "unauthorized")
        assert missing.headers["www-authenticate"] == "Bearer"
        wrong = client.get(f"{API}/info", headers={"Authorization": "Bearer nope"})
        assert "wrong" in assert_error(wrong, 401, "unauthorized")["message"]
        basic = client.get(f"{API}/info", headers={"Authorization": "Basic s3cret-key"})
        assert_error(basic, 401, "unauthorized")
        # What is mounted beside the API (MCP over HTTP) is behind the same key.
        assert_error(client.post("/mcp", json={}), 401, "unauthorized")
        assert_error(client.get(f"{API}/documents"), 401, "unauthorized")

        ok = client.get(f"{API}/info", headers={"Authorization": "Bearer s3cret-key"})
        assert ok.status_code == 200
        info = ok.json()
    assert info["collection"]["documents"] == 6
    assert info["models"]["llm"] == {"configured": True, "model": "tiny-model"}
    assert info["server"]["auth"] is True
    assert ".pdf" in info["server"]["file_types"]
    assert "version" in info
    # No secret, and no endpoint, ever leaves the server.
    for secret in ("s3cret-key", "sk-llm-9f3", "127.0.0.1:9"):
        assert secret not in ok.text


def test_openapi_describes_every_route_and_its_errors(demo: TestClient) -> None:
    schema = demo.get(f"{API}/openapi.json").json()
    paths = schema["paths"]
    expected = {
        ("/documents", "post"),
        ("/documents", "get"),
        ("/documents/{name}", "get"),
        ("/documents/{name}", "delete"),
        ("/documents/{name}/pages/{page}.png", "get"),
        ("/jobs/{job_id}", "get"),
        ("/jobs/{job_id}/events", "get"),
        ("/search", "post"),
        ("/ask", "post"),
        ("/health", "get"),
        ("/info", "get"),
    }
    for path, method in expected:
        assert method in paths[API + path], (path, method)
    ask = paths[f"{API}/ask"]["post"]
    assert ask["responses"]["422"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "/ErrorResponse"
    )
    body = ask["requestBody"]["content"]
    assert body["application/json"]["schema"]["$ref"] == "#/components/schemas/AskRequest"
    assert "image" in body["multipart/form-data"]["schema"]["properties"]
    components = schema["components"]
    assert {"AskRequest", "SearchRequest", "ErrorResponse", "JobCreated", "JobState"} <= set(
        components["schemas"]
    )
    assert components["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
    assert "429" in paths[f"{API}/documents"]["post"]["responses"]
    # Every error a route describes has the one error body, not FastAPI's default shape.
    for path, operations in paths.items():
        for method, operation in operations.items():
            for status, described in operation["responses"].items():
                if status.startswith(("4", "5")):
                    ref = described["content"]["application/json"]["schema"]["$ref"]
                    assert ref.endswith("/ErrorResponse"), (path, method, status)
    # No Swagger page: it would load its scripts from a CDN.
    assert demo.get(f"{API}/docs").status_code == 404


# --- documents, maps, page images ----------------------------------------------------------------


def test_documents_and_maps_have_the_cli_shapes(demo: TestClient, demo_collection: Path) -> None:
    from docsight.document.map import document_map

    listed = demo.get(f"{API}/documents").json()["documents"]
    ds = DocSight(demo_collection)
    assert listed == [d.model_dump(mode="json") for d in ds.documents()]
    assert REPORT in {d["name"] for d in listed}

    # The name without its extension resolves as --doc does.
    body = demo.get(f"{API}/documents/northwind-annual-report-2024").json()
    assert body["document"]["name"] == REPORT
    expected = document_map(ds.document(REPORT))
    assert {k: body["map"][k] for k in expected} == json.loads(json.dumps(expected))
    assert body["map"]["sections"] and "graph" in body["map"]

    assert_error(demo.get(f"{API}/documents/no-such-doc"), 404, "document_not_found")
    assert_error(demo.get(f"{API}/documents/{'x' * 600}"), 422, "invalid_request")


def test_page_images_highlights_and_caching(demo: TestClient) -> None:
    url = f"{API}/documents/{REPORT}/pages/0.png"
    plain = demo.get(url)
    assert plain.status_code == 200 and plain.headers["content-type"] == "image/png"
    assert "max-age" in plain.headers["cache-control"]
    again = demo.get(url, headers={"If-None-Match": plain.headers["etag"]})
    assert again.status_code == 304 and not again.content

    lit = demo.get(url, params={"highlight": "0.2,0.3,0.6,0.4;0.1,0.8,0.3,0.9"})
    assert lit.status_code == 200 and lit.headers["etag"] != plain.headers["etag"]
    before = Image.open(io.BytesIO(plain.content)).convert("RGB")
    after = Image.open(io.BytesIO(lit.content)).convert("RGB")
    assert before.size == after.size
    w, h = after.size
    inside = (int(0.4 * w), int(0.35 * h))
    outside = (int(0.8 * w), int(0.05 * h))
    assert after.getpixel(inside) != before.getpixel(inside)  # tinted
    assert after.getpixel(outside) == before.getpixel(outside)  # untouched
    r, _, b = after.getpixel(inside)
    assert r > b  # the warm highlight colour, not a grey

    assert_error(demo.get(f"{API}/documents/{REPORT}/pages/999.png"), 404, "document_not_found")
    # A Markdown document is stored without page images.
    assert_error(demo.get(f"{API}/documents/t200-field-guide.md/pages/0.png"), 404)
    assert_error(demo.get(f"{API}/documents/{REPORT}/pages/-1.png"), 422, "invalid_request")
    for bad in ("0.1,0.2,0.3", "a,b,c,d", "0.1,0.2,1.5,0.4", "0.5,0.5,0.1,0.6", ";", "1,2,3,4"):
        assert_error(demo.get(url, params={"highlight": bad}), 422, "usage_error")
    many = ";".join(["0.1,0.1,0.2,0.2"] * 51)
    assert_error(demo.get(url, params={"highlight": many}), 422, "usage_error")


# --- search and ask ------------------------------------------------------------------------------


def test_search_by_json_and_by_form(demo: TestClient) -> None:
    hits = demo.post(f"{API}/search", json={"query": "error E47", "k": 3}).json()["hits"]
    assert 1 <= len(hits) <= 3 and hits[0]["rank"] == 1
    assert {"doc_name", "page", "bbox", "text", "score"} <= set(hits[0])

    scoped = demo.post(
        f"{API}/search", json={"query": "revenue", "k": 5, "documents": ["northwind"]}
    ).json()["hits"]
    assert scoped and {h["doc_name"] for h in scoped} == {REPORT}

    pages = demo.post(f"{API}/search", json={"query": "revenue", "unit": "page"}).json()["hits"]
    assert all(h["unit"] == "page" for h in pages)

    form = demo.post(
        f"{API}/search",
        data={"query": "revenue", "k": "2", "documents": ["northwind"]},
        files={"image": ("q.png", png_of_text("Revenue 2024"), "image/png")},
    )
    assert form.status_code == 200, form.text
    assert [h["doc_name"] for h in form.json()["hits"]] == [REPORT] * len(form.json()["hits"])


def test_search_and_ask_refuse_bad_requests(demo: TestClient, demo_collection: Path) -> None:
    search = f"{API}/search"
    assert_error(demo.post(search, json={"query": "x", "k": 0}), 422, "invalid_request")
    assert_error(demo.post(search, json={"query": ""}), 422, "invalid_request")
    assert_error(demo.post(search, json={"query": "x", "colour": "red"}), 422, "invalid_request")
    assert_error(demo.post(search, json={"query": "!!!"}), 422, "empty_question")
    assert_error(demo.post(search, json={"query": "x", "documents": ["nope"]}), 404)
    assert_error(
        demo.post(search, content=b'{"query": ', headers={"content-type": "application/json"}),
        400,
        "bad_request",
    )
    assert_error(
        demo.post(search, content=b"query=x", headers={"content-type": "text/plain"}),
        415,
        "unsupported_format",
    )
    assert_error(demo.post(search, json={"query": "x", "image_base64": "@@not base64@@"}), 400)
    assert_error(demo.post(f"{API}/ask", json={"question": "x", "image_base64": ""}), 400)
    both = demo.post(
        f"{API}/ask",
        data={"question": "what is this", "image_base64": base64.b64encode(b"png").decode()},
        files={"image": ("q.png", png_of_text("x"), "image/png")},
    )
    assert_error(both, 422, "usage_error")
    bad_image = demo.post(
        f"{API}/ask",
        data={"question": "what is this"},
        files={"image": ("q.png", b"this is not an image", "image/png")},
    )
    assert_error(bad_image, 400, "bad_query_image")
    assert_error(demo.post(f"{API}/ask", json={"question": "x", "k": 3, "session": "new"}), 422)
    # The server's own bound on question length is stricter than the model's.
    with client_for(DocSight(demo_collection), max_query_chars=20) as strict:
        long = strict.post(f"{API}/ask", json={"question": "why " * 10})
        assert "max_query_chars" in assert_error(long, 422, "invalid_request")["message"]


def test_ask_answers_with_citations(demo: TestClient) -> None:
    response = demo.post(f"{API}/ask", json={"question": "What was Northwind's revenue in 2024?"})
    answer = response.json()
    assert response.status_code == 200 and answer["answerable"] is True
    assert answer["citations"], answer
    cited = answer["citations"][0]
    assert cited["doc_name"] == REPORT and cited["page"] >= 0
    assert cited["bbox"] is not None and 0 <= cited["bbox"]["x0"] <= cited["bbox"]["x1"] <= 1
    assert [s["kind"] for s in answer["trace"]] == ["retrieve", "answer"]

    # The cited box is one highlight parameter away.
    box = ",".join(str(cited["bbox"][k]) for k in ("x0", "y0", "x1", "y1"))
    page = demo.get(
        f"{API}/documents/{cited['doc_id']}/pages/{cited['page']}.png", params={"highlight": box}
    )
    assert page.status_code == 200 and page.content.startswith(b"\x89PNG")

    image = base64.b64encode(png_of_text("Error E47 on the T-200")).decode()
    with_image = demo.post(
        f"{API}/ask",
        json={
            "question": "What does this error mean?",
            "image_base64": "data:image/png;base64," + image,
        },
    ).json()
    assert any(c["doc_name"].startswith("t200") for c in with_image["citations"]), with_image


def test_ask_streams_steps_then_the_answer(demo: TestClient) -> None:
    question = {"question": "How long is the warranty?", "stream": True}
    response = demo.post(f"{API}/ask", json=question)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    stream = events(response.text)
    names = [name for name, _ in stream]
    assert names[-2:] == ["answer", "done"] and names[:-2] == ["step"] * (len(names) - 2)
    steps = [data["kind"] for name, data in stream if name == "step"]
    answer = stream[-2][1]
    assert steps == [s["kind"] for s in answer["trace"]] and steps
    assert answer["answerable"] and "warranty" in answer["answer"].lower()


def test_ask_continues_a_conversation(demo: TestClient) -> None:
    first = demo.post(
        f"{API}/ask", json={"question": "What does error E47 mean on the T-200?", "session": "new"}
    ).json()
    session = first["session"]
    assert session and first["answerable"]
    follow = demo.post(
        f"{API}/ask", data={"question": "How do I fix it?", "session": session}
    ).json()
    assert follow["session"] == session
    assert follow["trace"][0]["kind"] == "rewrite"
    unknown = demo.post(f"{API}/ask", json={"question": "and then?", "session": "0" * 12})
    assert_error(unknown, 404, SessionNotFoundError.code)


def test_model_and_server_failures_become_clean_errors(
    demo_collection: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No collection at all: unavailable (503), with the reason.
    with client_for(DocSight(tmp_path / "missing")) as gone:
        assert_error(gone.get(f"{API}/documents"), 503, "collection_not_found")
        assert_error(gone.get(f"{API}/info"), 503, "collection_not_found")
        assert_error(gone.post(f"{API}/search", json={"query": "x"}), 503)

    ds = DocSight(demo_collection)
    with client_for(ds) as client:

        def endpoint_down(*args: Any, **kwargs: Any) -> Any:
            raise LLMConnectionError("cannot reach the model endpoint")

        monkeypatch.setattr(ds, "ask", endpoint_down)
        down = client.post(f"{API}/ask", json={"question": "revenue?"})
        assert_error(down, 503, "llm_connection")
        assert down.headers["retry-after"]
        streamed = events(client.post(f"{API}/ask", json={"question": "r?", "stream": True}).text)
        assert streamed == [
            ("error", {"code": "llm_connection", "message": "cannot reach the model endpoint"})
        ]

        def bug(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("secret detail at /etc/hidden-path")

        monkeypatch.setattr(ds, "ask", bug)
        monkeypatch.setattr(ds, "search", bug)
        monkeypatch.setattr(ds, "documents", bug)
        for response in (
            client.post(f"{API}/search", json={"query": "x"}),
            client.get(f"{API}/documents"),
        ):
            assert_error(response, 500, "internal_error")
            assert "secret detail" not in response.text and "RuntimeError" not in response.text
        streamed = events(client.post(f"{API}/ask", json={"question": "r?", "stream": True}).text)
        assert [name for name, _ in streamed] == ["error"]
        assert streamed[0][1]["code"] == "internal_error"
        assert "secret" not in json.dumps(streamed)


def test_unknown_routes_methods_and_oversized_bodies(demo_collection: Path) -> None:
    with client_for(DocSight(demo_collection), max_body_kb=1) as client:
        assert_error(client.get(f"{API}/nothing-here"), 404, "not_found")
        assert_error(client.put(f"{API}/documents"), 405, "method_not_allowed")
        assert_error(client.delete(f"{API}/search"), 405, "method_not_allowed")
        big = {"query": "revenue " * 300}
        assert_error(client.post(f"{API}/search", json=big), 413, "limit_exceeded")

        def chunked() -> Iterator[bytes]:  # no Content-Length: counted while it streams
            yield b'{"query": "'
            for _ in range(40):
                yield b"x" * 100
            yield b'"}'

        streamed = client.post(
            f"{API}/search", content=chunked(), headers={"content-type": "application/json"}
        )
        assert_error(streamed, 413, "limit_exceeded")
        assert client.post(f"{API}/search", json={"query": "revenue"}).status_code == 200


def test_cors_and_host_checks(demo_collection: Path) -> None:
    from docsight.server.app import create_app

    ds = DocSight(demo_collection)
    origin = {"Origin": "http://elsewhere.example"}
    with client_for(ds) as plain:
        assert (
            "access-control-allow-origin" not in plain.get(f"{API}/health", headers=origin).headers
        )
    with client_for(ds, cors_origins=["http://elsewhere.example"]) as cors:
        allowed = cors.get(f"{API}/health", headers=origin)
        assert allowed.headers["access-control-allow-origin"] == "http://elsewhere.example"
    app = create_app(ds, trusted_hosts=["127.0.0.1", "localhost"])
    with TestClient(app, base_url="http://127.0.0.1:8000") as local:
        assert local.get(f"{API}/health").status_code == 200
        rebound = local.get(f"{API}/health", headers={"Host": "attacker.example"})
        assert_error(rebound, 400, "bad_host")


# --- uploads and jobs ----------------------------------------------------------------------------


def test_upload_ingests_and_documents_can_be_removed(writable: Path, tmp_path: Path) -> None:
    ds = DocSight(writable)
    with client_for(ds) as client:
        files = [
            (
                "files",
                ("../../escape.md", b"# Escape\n\nThe llama count is 41.\n", "text/markdown"),
            ),
            ("files", (".hidden notes.txt", b"The heron count is 17 this spring.\n", "text/plain")),
        ]
        created = client.post(f"{API}/documents", files=files)
        assert created.status_code == 202, created.text
        job = created.json()["job"]
        assert created.json()["files"] == ["escape.md", "hidden notes.txt"]
        assert created.headers["location"] == f"{API}/jobs/{job}"

        status = wait_for_job(client, job)
        assert status["status"] == "done" and status["error"] is None
        report = status["report"]
        assert report["counts"] == {"added": 2, "skipped": 0, "no_text": 0, "failed": 0}
        assert {f["name"] for f in report["files"]} == {"escape.md", "hidden notes.txt"}
        assert status["progress"]["stage"] in ("done", "optimize")

        # A late watcher gets the outcome at once.
        late = events(client.get(f"{API}/jobs/{job}/events").text)
        assert late == [("done", status)]

        names = {d["name"] for d in client.get(f"{API}/documents").json()["documents"]}
        assert {"escape.md", "hidden notes.txt", "guide.md", "faq.txt"} <= names
        hit = client.post(f"{API}/search", json={"query": "heron count", "k": 1}).json()["hits"]
        assert hit[0]["doc_name"] == "hidden notes.txt"

        removed = client.delete(f"{API}/documents/escape").json()["removed"]
        assert removed["name"] == "escape.md"
        assert_error(client.get(f"{API}/documents/escape.md"), 404, "document_not_found")
        assert_error(client.delete(f"{API}/documents/escape.md"), 404, "document_not_found")
        assert_error(client.get(f"{API}/jobs/{'f' * 32}"), 404, "job_not_found")
        assert_error(client.get(f"{API}/jobs/{'f' * 32}/events"), 404, "job_not_found")

    # Nothing escaped the upload directory, and nothing of the upload is left behind.
    assert not list(tmp_path.rglob("escape.md"))
    uploads = writable / "uploads"
    assert [p for p in uploads.rglob("*") if p.is_file()] == []
    assert DocSight(writable).check().ok


def test_uploads_are_refused_before_they_are_stored(writable: Path) -> None:
    ds = DocSight(writable)
    with client_for(ds, max_upload_mb=0.01, max_files=2) as client:
        url = f"{API}/documents"
        note = ("files", ("a.md", b"# A\n\ntext\n", "text/markdown"))
        refusals = [
            (
                client.post(url, files=[("files", ("tool.exe", b"MZ", "application/x-dosexec"))]),
                415,
            ),
            (client.post(url, files=[("files", ("noext", b"text", "text/plain"))]), 415),
            (client.post(url, json={"files": ["a.md"]}), 415),
            (client.post(url, files=[("files", ("big.txt", b"x" * 20_000, "text/plain"))]), 413),
            (
                client.post(
                    url,
                    files=[
                        note,
                        ("files", ("b.md", b"b", "text/markdown")),
                        ("files", ("c.md", b"c", "text/markdown")),
                    ],
                ),
                413,
            ),
            (client.post(url, files=[note, note]), 422),
            (client.post(url, files=[("other", ("a.md", b"x", "text/markdown"))]), 422),
            (client.post(url, files=[("files", ("...", b"x", "text/plain"))]), 422),
            (client.post(url, data={"files": "not a file"}, files=[note]), 422),
            (
                client.post(
                    url,
                    content=b'--XYZ\r\nContent-Disposition: form-data; name="files"; '
                    b'filename="a.md"\r\n\r\npartial',
                    headers={"content-type": "multipart/form-data; boundary=XYZ"},
                ),
                400,
            ),
            (
                client.post(url, content=b"x", headers={"content-type": "multipart/form-data"}),
                400,
            ),
        ]
        for response, status in refusals:
            assert_error(response, status)
        assert client.app.state.jobs.active() == 0  # type: ignore[attr-defined]
    incoming = writable / "uploads" / ".incoming"
    assert not incoming.exists() or list(incoming.iterdir()) == []
    assert not (writable / "uploads" / "a.md").exists()


def test_too_many_jobs_and_a_locked_collection(writable: Path) -> None:
    lock = FileLock(str(writable / "writer.lock"))

    # A job waits on a writer lock held elsewhere; a second upload finds no free job slot.
    patient = DocSight(writable, settings=Settings(lock_timeout=60))
    with client_for(patient, max_jobs=1) as client:
        note = [("files", ("wait.md", b"# Wait\n\nThe otter count is 5.\n", "text/markdown"))]
        lock.acquire()
        try:
            first = client.post(f"{API}/documents", files=note)
            assert first.status_code == 202
            refused = client.post(f"{API}/documents", files=note)
            assert_error(refused, 429, "too_many_jobs")
            assert refused.headers["retry-after"]
            watching: list[str] = []
            watcher = threading.Thread(
                target=lambda: watching.append(
                    client.get(f"{API}/jobs/{first.json()['job']}/events").text
                )
            )
            watcher.start()
            assert client.get(f"{API}/jobs/{first.json()['job']}").json()["status"] in (
                "queued",
                "running",
            )
        finally:
            lock.release()
        done = wait_for_job(client, first.json()["job"])
        assert done["report"]["counts"]["added"] == 1
        watcher.join(60)
        stream = events(watching[0])
        assert stream[-1] == ("done", done)
        progress = [data for name, data in stream if name == "progress"]
        assert progress and {
            "file",
            "stage",
            "page",
            "pages",
            "index",
            "total",
            "batch_pages_done",
            "batch_pages",
        } == set(progress[0])
        assert "store" in {p["stage"] for p in progress}

    # An impatient server: removal is refused while another process writes (409), and an
    # ingestion job fails as a whole, saying why.
    impatient = DocSight(writable, settings=Settings(lock_timeout=0))
    with client_for(impatient) as client, lock:
        assert_error(client.delete(f"{API}/documents/guide.md"), 409, "collection_locked")
        job = client.post(
            f"{API}/documents", files=[("files", ("late.md", b"# L\n\nx\n", "text/markdown"))]
        )
        failed = wait_for_job(client, job.json()["job"])
        assert failed["status"] == "failed" and failed["report"] is None
        assert failed["error"]["code"] == "collection_locked"
    assert "guide.md" in {d.name for d in DocSight(writable).documents()}


def test_safe_names() -> None:
    from docsight.server.uploads import safe_name

    assert safe_name("../../etc/passwd.md") == "passwd.md"
    assert safe_name("C:\\Users\\x\\report.pdf") == "report.pdf"
    assert safe_name(".bashrc") == "bashrc"
    assert safe_name("a\u202egnp.pdf") == "agnp.pdf"  # no bidi override
    assert safe_name("bad\x00name\n.txt") == "badname.txt"
    assert safe_name('what?*"<>|.md') == "what______.md"
    assert safe_name("..") is None and safe_name(" / ") is None and safe_name("") is None
    long = safe_name("x" * 400 + ".pdf")
    assert long is not None and long.endswith(".pdf") and len(long.encode()) <= 200


def test_ask_streams_a_models_words_as_it_writes_them(demo_collection: Path) -> None:
    from docsight.llm.scripted import ScriptedChat

    chat = ScriptedChat(default="The warranty lasts two years from delivery [1].")
    client = client_for(DocSight(demo_collection, chat=chat))
    question = {"question": "How long is the warranty?", "stream": True}
    stream = events(client.post(f"{API}/ask", json=question).text)
    names = [name for name, _ in stream]
    tokens = [data for name, data in stream if name == "token"]
    assert len(tokens) > 3 and {t["draft"] for t in tokens} == {1}
    assert "".join(t["text"] for t in tokens).strip() == chat.default
    # Words come while the answer step runs: after retrieval's step, before the answer's.
    first_token = names.index("token")
    assert names[first_token - 1] == "step" and names[-2:] == ["answer", "done"]
    answer_steps = [i for i, (n, d) in enumerate(stream) if n == "step" and d["kind"] == "answer"]
    assert answer_steps and answer_steps[0] > first_token
    assert stream[-2][1]["mode"] == "llm" and stream[-2][1]["citations"]
