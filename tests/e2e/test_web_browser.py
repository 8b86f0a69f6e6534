"""The web page in a real browser (issue 16).

A real ``uvicorn`` server over a fresh collection runs in a subprocess on a free loopback port;
Debian's Chromium, driven by Playwright (pointed at the system executable, since Playwright's
own browser download is not reachable), uploads the demo's annual report through the page's
file input, waits for ingestion, asks the README's question, clicks the citation and checks that
the page image with the cited box highlighted is shown. A second small file carries HTML in its
text, and searching for it shows that document text is escaped, never run. Every request the
page makes must stay on the server (no CDN): anything else is blocked and fails the test.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="needs the server extra: pip install '.[server]'")
pytest.importorskip("jinja2", reason="needs the server extra: pip install '.[server]'")

ROOT = Path(__file__).resolve().parents[2]
REPORT = "northwind-annual-report-2024.pdf"
QUESTION = "What was Northwind's revenue in 2024?"
#: Text with markup in it: shown as text, it proves the page never parses document text as HTML.
HOSTILE_NAME = "markup-notes.txt"
HOSTILE_TEXT = (
    "Zanzibar calibration notes. <script>window.__pwned = 1</script> "
    '<img src="x" onerror="window.__pwned = 2"> <b>not bold</b> & <i>not italic</i>\n'
)

#: Serves the app as ``docsight serve`` does, on port 0 so the OS picks a free port; the base URL
#: is printed once the socket listens (read back below: no race between choosing a port and
#: binding it).
SERVER = """
import sys

from docsight import DocSight
from docsight.server.app import serve

def ready(url: str) -> None:
    print(url, flush=True)


serve(DocSight(sys.argv[1]), host="127.0.0.1", port=0, on_ready=ready)
"""


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None


CHROMIUM = chromium_path()
#: CI runs as root in a container, where Chromium cannot use its sandbox (and /dev/shm is small).
BROWSER_ARGS = ["--no-sandbox", "--disable-dev-shm-usage"]


def test_page_and_assets_are_served_from_the_package() -> None:
    """Without a browser: the page, its headers and its assets, on a bare app."""
    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    from docsight.server import web

    app = FastAPI()
    web.install(app, None)
    client = TestClient(app)
    page = client.get("/")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in page.headers["content-security-policy"]
    for asset, kind in (("app.js", "javascript"), ("app.css", "text/css")):
        assert f"/static/{asset}?v=" in page.text
        response = client.get(f"/static/{asset}")
        assert response.status_code == 200 and kind in response.headers["content-type"]
        # Offline: nothing the page loads points anywhere but the server.
        assert not re.search(r"(src|href|url)\s*[=(]\s*[\"']?(https?:)?//", response.text)
    for element in ("file-input", "upload-button", "question", "ask-button", "page-view"):
        assert f'id="{element}"' in page.text
    # Autoescape is on: a root path with markup in it comes out as text.
    assert "&lt;b&gt;" in web.render_page("/<b>x</b>")
    assert "<b>" not in web.render_page("/<b>x</b>")


def start_server(
    collection: Path, log: Path, api_key: str | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """The server process and its base URL, once it answers."""
    pytest.importorskip("uvicorn", reason="needs the server extra: pip install '.[server]'")
    env = dict(os.environ)
    if api_key:
        env["DOCSIGHT_SERVER_API_KEY"] = api_key
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", SERVER, str(collection)],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=collection.parent,
            env=env,
            # Its own process group, so that stopping it stops its ingestion workers too.
            start_new_session=True,
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = re.search(rb"^(http://127\.0\.0\.1:\d+)$", log.read_bytes(), re.M)
        if found:
            base = found.group(1).decode()
            with urllib.request.urlopen(base + "/", timeout=10) as response:
                assert response.status == 200
            return proc, base
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    stop_server(proc)
    pytest.fail(f"the server did not start:\n{log.read_text(errors='replace')[-3000:]}")


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=15)


@pytest.fixture()
def sync_api() -> Any:
    """Playwright's sync API, checked before a server is started for it."""
    if CHROMIUM is None:
        pytest.skip("needs Chromium (apt-get install chromium)")
    return pytest.importorskip("playwright.sync_api", reason="needs playwright (the dev extra)")


@pytest.fixture()
def server(tmp_path: Path) -> Iterator[str]:
    proc, base = start_server(tmp_path / "collection", tmp_path / "server.log")
    try:
        yield base
    finally:
        stop_server(proc)


API_KEY = "test-key-for-the-page"


@pytest.fixture()
def keyed_server(tmp_path: Path) -> Iterator[str]:
    """A server that wants ``API_KEY`` as a bearer token."""
    proc, base = start_server(tmp_path / "collection", tmp_path / "server.log", API_KEY)
    try:
        yield base
    finally:
        stop_server(proc)


@pytest.fixture()
def files(tmp_path: Path) -> list[Path]:
    corpus = tmp_path / "corpus"
    subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "make_sample_corpus.py"), str(corpus)],
        check=True,
        capture_output=True,
    )
    hostile = tmp_path / HOSTILE_NAME
    hostile.write_text(HOSTILE_TEXT)
    return [corpus / REPORT, hostile]


#: True when the shown page image differs from the same page without highlight, pixel by pixel
#: (whatever colour the server draws the box in).
HIGHLIGHT_DRAWN = """async (img) => {
  const plain = new Image();
  plain.src = img.src.split("?")[0];
  await plain.decode();
  const pixels = (image) => {
    const canvas = document.createElement("canvas");
    canvas.width = image.naturalWidth;
    canvas.height = image.naturalHeight;
    const context = canvas.getContext("2d");
    context.drawImage(image, 0, 0);
    return context.getImageData(0, 0, canvas.width, canvas.height).data;
  };
  const a = pixels(img), b = pixels(plain);
  if (a.length !== b.length) return false;
  let differ = 0;
  for (let i = 0; i < a.length; i += 4) if (a[i] !== b[i] || a[i + 1] !== b[i + 1]) differ++;
  return differ > 100;
}"""


RENDER_MARKDOWN = r"""() => {
  const box = document.createElement("div");
  const markdown = '<img src=x onerror="window.__pwned = 3"> **bold** [1] [9]\n\n- one\n- two';
  window.docsightWeb.renderMarkdown(markdown, box, (n) => n === 1);
  document.body.append(box);
  const result = {
    html: box.innerHTML,
    text: box.textContent,
    img: box.querySelectorAll("img").length,
    citations: box.querySelectorAll("a.citation").length,
  };
  box.remove();
  return result;
}"""


@pytest.mark.slow
def test_upload_ask_and_see_the_evidence(
    sync_api: Any, server: str, files: list[Path], tmp_path: Path
) -> None:
    started = time.monotonic()
    errors: list[str] = []
    failed: list[str] = []
    outside: list[str] = []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=BROWSER_ARGS,
        )
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.on("pageerror", lambda exc: errors.append(str(exc)))

            def console(message: Any) -> None:
                # Chromium logs each 4xx/5xx response as an error too: those are checked by
                # their status below instead.
                text = message.text
                if message.type == "error" and not text.startswith("Failed to load resource"):
                    errors.append(text)

            def response(answer: Any) -> None:
                if answer.status >= 400:
                    failed.append(f"{answer.status} {answer.request.method} {answer.url}")

            page.on("console", console)
            page.on("response", response)

            def only_the_server(route: Any) -> None:
                if route.request.url.startswith(server + "/"):
                    route.continue_()
                else:
                    outside.append(route.request.url)
                    route.abort()

            page.route("**/*", only_the_server)
            page.goto(server + "/")
            sync_api.expect(page.locator("#documents-empty")).to_be_visible()

            # Upload through the file input; the bar ends at 100% and both files are listed.
            page.set_input_files("#file-input", [str(f) for f in files])
            page.click("#upload-button")
            sync_api.expect(page.locator("#upload-status")).to_contain_text(
                "Done: 2 of 2", timeout=90_000
            )
            assert page.eval_on_selector("#upload-progress", "p => p.value") == 100
            for f in files:
                row = page.locator(f'#documents tr[data-name="{f.name}"]')
                sync_api.expect(row.locator(".status")).to_have_text("ready")

            # Ask: the answer carries the figure and a citation marker that is a link.
            page.fill("#question", QUESTION)
            page.click("#ask-button")
            citation = page.locator("#answer a.citation").first
            sync_api.expect(citation).to_be_visible(timeout=60_000)
            sync_api.expect(page.locator("#answer")).to_contain_text("468.5")
            sync_api.expect(page.locator("#sources .source.cited").first).to_contain_text(REPORT)

            # The citation opens the cited page with the box drawn on it.
            citation.click()
            image = page.locator("#page-view img")
            sync_api.expect(image).to_be_visible()
            page.wait_for_function(
                "() => { const i = document.querySelector('#page-view img');"
                " return i && i.complete && i.naturalWidth > 0; }",
                timeout=30_000,
            )
            src = image.get_attribute("src") or ""
            assert "highlight=" in src and f"/documents/{REPORT}/pages/0.png" in src, src
            assert image.evaluate(HIGHLIGHT_DRAWN), "no box drawn on the page image"
            sync_api.expect(page.locator("#page-view-title")).to_contain_text("page 1")
            page.screenshot(path=str(tmp_path / "web-page.png"))
            assert (tmp_path / "web-page.png").stat().st_size > 10_000

            # Document text with markup is shown as text: nothing is parsed or run.
            page.click("#page-close")
            page.fill("#query", "Zanzibar calibration notes")
            page.click("#search-button")
            hit = page.locator("#search-results .hit-text").first
            sync_api.expect(hit).to_contain_text("<script>window.__pwned = 1</script>")
            sync_api.expect(hit).to_contain_text('<img src="x"')
            injected = page.evaluate(
                "() => document.querySelectorAll("
                "'#search-results script, #search-results img, #search-results b').length"
            )
            assert injected == 0
            # The answer's Markdown renderer builds its few elements and escapes the rest.
            rendered = page.evaluate(RENDER_MARKDOWN)
            assert rendered["img"] == 0 and rendered["citations"] == 1, rendered
            assert "<strong>bold</strong>" in rendered["html"], rendered
            assert rendered["text"].startswith('<img src=x onerror="window.__pwned = 3">')
            assert page.evaluate("() => window.__pwned === undefined")
        finally:
            browser.close()
    assert not outside, f"the page fetched from outside the server: {outside}"
    assert not errors, f"errors in the page: {errors}"
    # The one expected failure: listing the collection that the first upload creates.
    empty = f"503 GET {server}/api/v1/documents"
    assert [f for f in failed if f != empty] == [], failed
    assert time.monotonic() - started < 90


@pytest.mark.slow
def test_the_page_asks_for_the_key_and_sends_it(
    sync_api: Any, keyed_server: str, files: list[Path]
) -> None:
    """With an API key, every way the page calls the API carries it: JSON requests, the
    upload (XMLHttpRequest) and the job's event stream (fetch)."""
    hostile = next(f for f in files if f.name == HOSTILE_NAME)
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        try:
            page = browser.new_page()
            page.goto(keyed_server + "/")
            sync_api.expect(page.locator("#auth")).to_be_visible()
            sync_api.expect(page.locator("#notice")).to_be_visible()
            page.fill("#api-key", API_KEY)
            page.click("#api-key-save")
            sync_api.expect(page.locator("#documents-empty")).to_be_visible()
            sync_api.expect(page.locator("#notice")).to_be_hidden()

            page.set_input_files("#file-input", str(hostile))
            page.click("#upload-button")
            sync_api.expect(page.locator("#upload-status")).to_contain_text(
                "Done: 1 of 1", timeout=60_000
            )
            page.fill("#query", "Zanzibar")
            page.click("#search-button")
            sync_api.expect(page.locator("#search-results .hit-text").first).to_contain_text(
                "Zanzibar"
            )
            # Kept for the tab: a reload lists the documents without asking again.
            page.reload()
            sync_api.expect(
                page.locator(f'#documents tr[data-name="{HOSTILE_NAME}"]')
            ).to_be_visible()
            assert page.evaluate("() => sessionStorage.getItem('docsight.apiKey')") == API_KEY
        finally:
            browser.close()
