"""The command-line application and what every command module shares: the Typer app, the
consoles, common options, the collection chosen before the command, and the error boundary.

Command modules (``main``, ``chat``, ``evaluate``, ``serve``, ...) import from here and never from
each other, so a new entry point joins without an import cycle.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from docsight.cli import render
from docsight.errors import DocsightError

# Help text is rich markup: a literal "[" must be written "\\[" or it vanishes with what
# follows (tests/e2e/test_cli_help.py renders every command's help to catch it).
app = typer.Typer(
    name="docsight",
    help="Ask questions over your documents and get answers with cited pages, offline by default.",
    epilog=(
        "Answers are quoted from the sources offline. To have a language model write them, set "
        "DOCSIGHT_LLM_MODEL, DOCSIGHT_LLM_BASE_URL (an OpenAI-compatible endpoint: vLLM, Ollama, "
        "llama.cpp, OpenAI) and DOCSIGHT_LLM_API_KEY if it needs one; `docsight info` shows "
        "what is configured. Every setting is an environment variable DOCSIGHT_<GROUP>_<FIELD> "
        "(see the README)."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

console = Console()
err_console = Console(stderr=True)

JsonOption = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
ModeOption = Annotated[
    str | None,
    typer.Option(
        "--mode",
        show_default=False,
        help="fast: one search, one answer; agent: search again for what is missing; plan: "
        "sub-questions in order; auto: chosen per question \\[default: DOCSIGHT_ANSWER_MODE, "
        "fast].",
    ),
]
DocOption = Annotated[
    list[str] | None,
    typer.Option(
        "--doc",
        "-d",
        help="Restrict to a document: its name (with or without the extension, or a unique "
        "start of it) or id; repeatable.",
    ),
]
_COLLECTION_HELP = (
    "Collection directory, or a URI such as s3://bucket/prefix \\[default: "
    "$DOCSIGHT_COLLECTION_DIR or ./.docsight]; accepted "
    "before or after the command name."
)
CollectionOption = Annotated[
    Path | None,
    typer.Option("--collection", "-c", help=_COLLECTION_HELP, show_default=False),
]
ImageOption = Annotated[
    Path | None,
    typer.Option(
        "--image",
        "-i",
        help="An image that goes with the question (chart, table, screenshot, code, ...).",
    ),
]


class _State:
    collection: Path | None = None


state = _State()


def _version(value: bool) -> None:
    if value:
        from docsight import __version__

        console.print(f"docsight {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    collection: CollectionOption = None,
    version: Annotated[
        bool,
        typer.Option(
            "--version", help="Show the version and exit.", callback=_version, is_eager=True
        ),
    ] = False,
) -> None:
    state.collection = collection


def open_docsight(collection: Path | None = None) -> Any:
    """The facade over the collection named after the command (``collection``) or before it."""
    from docsight.api import DocSight

    if collection is not None:
        state.collection = collection
    return DocSight(state.collection)


@contextmanager
def cli_errors(as_json: bool) -> Iterator[None]:
    """Turn docsight errors into a one-line message and an exit status, never a traceback:
    2 for usage errors (a bad argument, path or setting), 1 for the rest."""
    try:
        try:
            yield
        except OSError as exc:
            # A full disk or a read-only collection outside the store's own writes (a cache, the
            # collection directory itself) is the same error to the user.
            from docsight.index.guard import storage_error

            mapped = storage_error(exc, state.collection or Path(".docsight"), "writing")
            if mapped is None:
                raise
            raise mapped from exc
    except DocsightError as exc:
        if as_json:
            render.print_json(console, {"error": {"code": exc.code, "message": exc.message}})
        else:
            err_console.print(
                f"[red]error[/red] ({exc.code}): {render.safe(exc.message)}", soft_wrap=True
            )
        raise typer.Exit(exc.exit_status) from exc


def clean_question_arg(text: str) -> str:
    """Bytes that are not UTF-8 (a mis-encoded terminal or file) are replaced, with a warning on
    stderr, so --json output stays valid."""
    from docsight.query.question import clean_question

    cleaned, warning = clean_question(text)
    if warning is not None:
        err_console.print(f"[yellow]warning[/yellow]: {render.safe(warning)}")
    return cleaned


__all__ = [
    "CollectionOption",
    "DocOption",
    "ImageOption",
    "JsonOption",
    "ModeOption",
    "app",
    "clean_question_arg",
    "cli_errors",
    "console",
    "err_console",
    "open_docsight",
    "state",
]
