#!/usr/bin/env python3
"""Take the README's screenshot of the web page: ``docs/web-page.png``.

It writes the sample corpus, starts the server over a fresh collection on a free loopback port
(as the browser test does), uploads the corpus through the page, asks one of the demo's
questions, opens the citation and saves a screenshot of the page with the evidence shown.

    python scripts/screenshot_web.py [OUTPUT] [--url http://127.0.0.1:8000]

``--url`` uses a server that is already running (its collection is used as it is; upload
is skipped when the documents are there). Needs the ``server`` and ``dev`` extras and Debian's
Chromium (``apt-get install chromium``): Playwright drives that executable.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import expect, sync_playwright

ROOT = Path(__file__).resolve().parents[1]
QUESTION = "What was Northwind's revenue in 2024?"
SERVER = """
import sys

from docsight import DocSight
from docsight.server.app import serve

def ready(url: str) -> None:
    print(url, flush=True)


serve(DocSight(sys.argv[1]), host="127.0.0.1", port=0, on_ready=ready)
"""


def chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        if found := shutil.which(name):
            return found
    if Path("/usr/bin/chromium").exists():
        return "/usr/bin/chromium"
    sys.exit("Chromium not found: apt-get install chromium")


def start_server(collection: Path, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", SERVER, str(collection)],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if found := re.search(rb"^(http://127\.0\.0\.1:\d+)$", log.read_bytes(), re.M):
            base = found.group(1).decode()
            urllib.request.urlopen(base + "/", timeout=10).close()
            return proc, base
        time.sleep(0.1)
    stop_server(proc)
    sys.exit(f"the server did not start:\n{log.read_text(errors='replace')[-3000:]}")


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def shoot(base: str, corpus: Path, output: Path) -> None:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium(), args=["--no-sandbox", "--disable-dev-shm-usage"]
        )
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.goto(base + "/")
            page.wait_for_selector("#documents tbody tr, #documents-empty:not([hidden])")
            if page.locator("#documents tbody tr").count() == 0:
                page.set_input_files("#file-input", sorted(str(f) for f in corpus.iterdir()))
                page.click("#upload-button")
                expect(page.locator("#upload-status")).to_contain_text("Done", timeout=300_000)
            page.fill("#question", QUESTION)
            page.click("#ask-button")
            citation = page.locator("#answer a.citation").first
            expect(citation).to_be_visible(timeout=120_000)
            citation.click()
            page.wait_for_function(
                "() => { const i = document.querySelector('#page-view img');"
                " return i && i.complete && i.naturalWidth > 0; }"
            )
            page.evaluate("() => document.activeElement && document.activeElement.blur()")
            output.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(output))
        finally:
            browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("output", nargs="?", type=Path, default=ROOT / "docs" / "web-page.png")
    parser.add_argument("--url", help="use this running server instead of starting one")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="docsight-shot-") as tmp:
        corpus = Path(tmp) / "corpus"
        subprocess.run(
            [sys.executable, str(ROOT / "scripts" / "make_sample_corpus.py"), str(corpus)],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        if args.url:
            shoot(args.url.rstrip("/"), corpus, args.output)
        else:
            proc, base = start_server(Path(tmp) / "collection", Path(tmp) / "server.log")
            try:
                shoot(base, corpus, args.output)
            finally:
                stop_server(proc)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
