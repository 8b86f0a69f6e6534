"""The command line, as a user drives it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from docsight.cli.main import app
from fixtures.corpus_fixtures import write_corpus

runner = CliRunner()


def run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout


def run_json(*args: str) -> object:
    code, out = run(*args, "--json")
    assert code == 0, out
    return json.loads(out)


def test_ingest_search_ask_docs_info_rm(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpus")
    col = str(tmp_path / "col")

    report = run_json("-c", col, "ingest", str(corpus))
    assert report["counts"] == {"added": 2, "skipped": 0, "no_text": 0, "failed": 0}
    assert {f["name"] for f in report["files"]} == {"guide.md", "faq.txt"}
    again = run_json("-c", col, "ingest", str(corpus))
    assert again["counts"]["skipped"] == 2

    hits = run_json("-c", col, "search", "team plan price", "-k", "2")
    assert len(hits) == 2 and hits[0]["doc_name"] == "guide.md" and hits[0]["kind"] == "table"
    assert set(hits[0]) >= {
        "doc_id",
        "page",
        "bbox",
        "section_path",
        "element_ids",
        "scores",
        "ranks",
    }
    filtered = run_json("-c", col, "search", "widget", "--doc", "faq.txt")
    assert {h["doc_name"] for h in filtered} == {"faq.txt"}
    pages = run_json("-c", col, "search", "widget", "--pages")
    assert all(h["unit"] == "page" for h in pages)

    answer = run_json("-c", col, "ask", "How long does the warranty last?")
    assert answer["mode"] == "extractive" and answer["answerable"]
    assert "two years" in answer["answer"] and answer["citations"][0]["doc_name"] == "faq.txt"

    docs = run_json("-c", col, "docs")
    assert sorted(d["name"] for d in docs) == ["faq.txt", "guide.md"]
    info = run_json("-c", col, "info")
    assert info["documents"] == 2 and info["llm"].startswith("none")

    removed = run_json("-c", col, "rm", "faq.txt")
    assert removed["removed"]["name"] == "faq.txt"
    assert [d["name"] for d in run_json("-c", col, "docs")] == ["guide.md"]


def test_human_output(text_collection: Path) -> None:
    code, out = run("-c", str(text_collection), "ask", "What does error E42 mean?")
    assert code == 0
    assert "Answer (extractive" in out and "licence key has expired" in out
    assert re.search(r"\[\d+\] guide\.md, page 1, Widget Guide > Troubleshooting", out)
    code, out = run("-c", str(text_collection), "search", "warranty", "-k", "1")
    assert code == 0 and "faq.txt · page 1" in out
    code, out = run("-c", str(text_collection), "docs")
    assert code == 0 and "2 documents" in out


def test_errors_are_messages_with_exit_code(tmp_path: Path, text_collection: Path) -> None:
    # A collection or document that is not there is a usage error (exit status 2).
    result = runner.invoke(app, ["-c", str(tmp_path / "none"), "search", "x"])
    assert result.exit_code == 2
    assert "no collection at" in result.stderr and "Traceback" not in result.stderr
    code, out = run("-c", str(text_collection), "rm", "missing.pdf", "--json")
    assert code == 2 and json.loads(out)["error"]["code"] == "document_not_found"


def test_strict_flag_controls_exit_status(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pdf"
    bad.write_bytes(b"%PDF-1.7\n this is not really a pdf")
    good = write_corpus(tmp_path / "corpus") / "faq.txt"
    col = str(tmp_path / "col")
    code, out = run("-c", col, "ingest", str(bad), str(good), "--json")
    data = json.loads(out)
    assert code == 0 and data["counts"]["failed"] == 1 and data["counts"]["added"] == 1
    failure = next(f for f in data["files"] if f["status"] == "failed")
    assert failure["name"] == "bad.pdf" and failure["reason"]
    code, _ = run("-c", col, "ingest", str(bad), "--strict", "--json")
    assert code == 1


@pytest.mark.slow
def test_console_script_end_to_end(tmp_path: Path) -> None:
    """The installed `docsight` executable, in a subprocess, as a new user runs it."""
    exe = Path(sys.executable).with_name("docsight")
    assert exe.exists(), "the console script is installed with the package"
    corpus = write_corpus(tmp_path / "corpus")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCSIGHT_")}
    version = subprocess.run(
        [exe, "--version"], capture_output=True, text=True, env=env, check=True
    )
    assert version.stdout.startswith("docsight ")
    done = subprocess.run(
        [exe, "ingest", str(corpus)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "2 added" in done.stdout
    assert (tmp_path / ".docsight" / "collection.json").is_file()  # the default collection dir
    asked = subprocess.run(
        [exe, "ask", "What does error E42 mean?", "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert asked.returncode == 0, asked.stderr
    assert "licence key has expired" in json.loads(asked.stdout)["answer"]
