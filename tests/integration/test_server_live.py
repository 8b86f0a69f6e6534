"""``docsight serve`` for real: uvicorn on a loopback port, spoken to over HTTP.

One server runs in a thread of the test (started and stopped by the fixture); one is the
``docsight serve`` command in a subprocess, stopped with Ctrl-C as a user would.
"""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")

from docsight import DocSight  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
REPORT = "northwind-annual-report-2024.pdf"
API = "/api/v1"


def sse_events(lines: Iterable[str]) -> Iterator[tuple[str, Any]]:
    """``(event, data)`` as the frames arrive; comments skipped."""
    event, data = None, None
    for line in lines:
        if line.startswith(":"):
            continue
        if line.startswith("event: "):
            event = line[len("event: ") :]
        elif line.startswith("data: "):
            data = json.loads(line[len("data: ") :])
        elif not line and event is not None:
            yield event, data
            event, data = None, None


@pytest.fixture()
def collection(text_collection: Path, tmp_path: Path) -> Path:
    target = tmp_path / "col"
    shutil.copytree(text_collection, target)
    return target


@pytest.fixture()
def report_pdf(tmp_path: Path) -> Path:
    corpus = tmp_path / "corpus"
    subprocess.run(
        [sys.executable, str(REPO / "scripts" / "make_sample_corpus.py"), str(corpus)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return corpus / REPORT


@pytest.fixture()
def server(collection: Path) -> Iterator[str]:
    from docsight.server.app import BackgroundServer, create_app

    with BackgroundServer(create_app(DocSight(collection))) as running:
        assert running.url.startswith("http://127.0.0.1:")
        yield running.url


def test_upload_watch_and_ask_over_http(server: str, collection: Path, report_pdf: Path) -> None:
    with httpx.Client(base_url=server, timeout=60) as client:
        upload = client.post(
            f"{API}/documents",
            files=[("files", (REPORT, report_pdf.read_bytes(), "application/pdf"))],
        )
        assert upload.status_code == 202, upload.text
        job = upload.json()["job"]

        seen: list[tuple[str, Any]] = []
        with client.stream("GET", f"{API}/jobs/{job}/events") as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            for event in sse_events(stream.iter_lines()):
                seen.append(event)
                if event[0] == "done":
                    break
        progress = [data for name, data in seen if name == "progress"]
        stages = {p["stage"] for p in progress}
        assert {"parse", "store", "done"} <= stages, stages
        assert max(p["pages"] for p in progress) >= 2  # page n of N, from the worker
        assert all(p["file"] in (REPORT, "") and p["total"] == 1 for p in progress)
        done = seen[-1][1]
        assert done["status"] == "done" and done["report"]["counts"]["added"] == 1
        assert client.get(f"{API}/jobs/{job}").json() == done

        # The upload is gone; the collection's own copy of the PDF still renders the pages.
        assert [p for p in (collection / "uploads").rglob("*") if p.is_file()] == []
        page = client.get(f"{API}/documents/{REPORT}/pages/1.png")
        assert page.status_code == 200 and page.content.startswith(b"\x89PNG")

        answer = client.post(
            f"{API}/ask", json={"question": "What was Northwind's revenue in 2024?"}
        ).json()
        assert answer["answerable"], answer
        cited = next(c for c in answer["citations"] if c["doc_name"] == REPORT)
        box = ",".join(str(cited["bbox"][k]) for k in ("x0", "y0", "x1", "y1"))
        lit = client.get(
            f"{API}/documents/{REPORT}/pages/{cited['page']}.png", params={"highlight": box}
        )
        assert lit.status_code == 200 and lit.content != page.content

        with client.stream(
            "POST",
            f"{API}/ask",
            json={"question": "What was Northwind's revenue in 2024?", "stream": True},
        ) as stream:
            streamed = list(sse_events(stream.iter_lines()))
        names = [name for name, _ in streamed]
        assert names[-2:] == ["answer", "done"] and set(names[:-2]) == {"step"}
        assert streamed[-2][1]["answer"] == answer["answer"]

        listed = client.get(f"{API}/documents").json()["documents"]
        assert REPORT in {d["name"] for d in listed}
        removed = client.delete(f"{API}/documents/{REPORT}")
        assert removed.json()["removed"]["name"] == REPORT
    assert DocSight(collection).check().ok


def test_the_serve_command_starts_answers_and_stops(collection: Path) -> None:
    env = {**os.environ, "COLUMNS": "200"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "docsight.cli.main", "serve", "--port", "0", "-c", str(collection)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(
        target=lambda: [lines.put(line) for line in iter(proc.stdout.readline, "")],  # type: ignore[union-attr]
        daemon=True,
    )
    reader.start()
    try:
        printed: list[str] = []
        url = None
        while url is None:
            printed.append(lines.get(timeout=60))
            found = re.search(r"web page\s+(http://127\.0\.0\.1:\d+)/", printed[-1])
            url = found.group(1) if found else None
        with httpx.Client(base_url=url, timeout=30) as client:
            assert client.get(f"{API}/health").json() == {"status": "ok"}
            names = {d["name"] for d in client.get(f"{API}/documents").json()["documents"]}
            assert names == {"guide.md", "faq.txt"}
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert "Traceback" not in "".join(printed)


def test_the_serve_command_refuses_to_expose_a_collection_without_a_key(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "docsight.cli.main",
            "serve",
            "--host",
            "0.0.0.0",
            "-c",
            str(tmp_path / "col"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "DOCSIGHT_SERVER_API_KEY" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "col").exists()  # refused before anything was created


def test_the_serve_command_names_the_missing_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    from typer.testing import CliRunner

    from docsight.cli.main import app

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "uvicorn" else real(name, *a)
    )
    result = CliRunner().invoke(app, ["serve", "-c", str(tmp_path / "col")])
    assert result.exit_code == 1
    assert "pip install 'docsight[server]'" in result.output
    assert "uvicorn" in result.output and "Traceback" not in result.output
