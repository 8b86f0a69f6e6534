"""The README's sample session is what the demo prints (issue 13).

``make demo`` writes the sample corpus, ingests it and asks the questions in the Makefile. The
README opens with one of those questions and its answer; both are read from the files here, so
a change to the answers that leaves the README behind fails this test.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from typer.testing import CliRunner

from docsight.cli.main import app

ROOT = Path(__file__).resolve().parents[2]


def readme_sample() -> tuple[str, list[str]]:
    """The question asked in the README's first console block and the lines printed for it."""
    text = (ROOT / "README.md").read_text()
    match = re.search(r"```console\n(.*?)```", text, re.S)
    assert match, "the README opens with a console session"
    lines = match.group(1).splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("$ docsight ask "))
    question = shlex.split(lines[at][2:])[2]
    printed = []
    for line in lines[at + 1 :]:
        if line.startswith("$ "):
            break
        printed.append(line)
    return question, printed


def demo_questions() -> list[str]:
    makefile = (ROOT / "Makefile").read_text()
    return [shlex.split(m)[0] for m in re.findall(r"^\t\$\(DS\) ask (.+)$", makefile, re.M)]


def ask(collection: Path, question: str) -> str:
    # Wide enough that rich never wraps a line the README shows whole.
    result = CliRunner().invoke(
        app, ["-c", str(collection), "ask", question], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    return result.stdout


def test_the_readme_sample_is_what_the_demo_prints(demo_collection: Path) -> None:
    question, printed = readme_sample()
    assert question in demo_questions(), "the README's question is one the demo asks"
    got = [line.rstrip() for line in ask(demo_collection, question).splitlines()]
    assert got == [line.rstrip() for line in printed]


def test_the_demo_answers_all_but_the_question_it_cannot(demo_collection: Path) -> None:
    questions = demo_questions()
    assert len(questions) >= 5
    for question in questions:
        out = ask(demo_collection, question)
        cited = [int(n) for n in re.findall(r"^  \[(\d+)\] ", out, re.M)]
        if "Contoso" in question:  # the README says the demo asks one it cannot answer
            assert "Not answerable" in out and not cited, out
        else:
            assert "Not answerable" not in out and cited == list(range(1, len(cited) + 1)), out
