"""Every command's --help, rendered as a user sees it: nothing swallowed as markup."""

from __future__ import annotations

import re
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from docsight.cli.main import app

runner = CliRunner()


def _commands() -> list[tuple[list[str], Any]]:
    """Every command and group, as click sees them (typer may bring its own click)."""
    root = typer.main.get_command(app)
    found: list[tuple[list[str], Any]] = [([], root)]

    def walk(prefix: list[str], group: Any) -> None:
        for name, command in group.commands.items():
            found.append(([*prefix, name], command))
            if hasattr(command, "commands"):
                walk([*prefix, name], command)

    walk([], root)
    return found


COMMANDS = _commands()


def _words(text: str) -> list[str]:
    # Rich unescapes "\[" and the table wraps lines anywhere between words.
    return re.findall(r"[\w$./<>-]+", text.replace("\\[", "["))


@pytest.mark.parametrize("path_and_command", COMMANDS, ids=lambda pc: " ".join(pc[0]) or "docsight")
def test_help_renders_every_word(path_and_command: tuple[list[str], Any]) -> None:
    path, command = path_and_command
    result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    flat = " ".join(result.stdout.replace("│", " ").split())
    for param in command.params:
        help_text = getattr(param, "help", None)
        if not help_text:
            continue
        for word in _words(help_text):
            assert word in flat, f"{' '.join(path)}: {param.name}: {word!r} missing from --help"
    if command.help:
        first = command.help.split("\n\n")[0]
        for word in _words(first):
            assert word in flat, f"{' '.join(path)}: {word!r} of the description missing"


def test_defaults_in_brackets_survive() -> None:
    out = runner.invoke(app, ["--help"], env={"COLUMNS": "100"}).stdout
    assert "[default: $DOCSIGHT_COLLECTION_DIR or ./.docsight]" in " ".join(
        out.replace("│", " ").split()
    )
    # The language model settings are named where a new user looks first.
    assert "DOCSIGHT_LLM_MODEL" in out and "DOCSIGHT_LLM_BASE_URL" in out
    ask = " ".join(runner.invoke(app, ["ask", "--help"], env={"COLUMNS": "100"}).stdout.split())
    assert "[default: chosen per question, 3 to 8" in ask.replace("│ ", "")
