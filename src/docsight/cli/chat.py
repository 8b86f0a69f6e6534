"""``docsight chat``: a conversation over the collection, kept in it and resumable."""

from __future__ import annotations

from typing import Annotated

import typer

from docsight.cli import render
from docsight.cli.app import (
    CollectionOption,
    DocOption,
    JsonOption,
    ModeOption,
    app,
    cli_errors,
    console,
    err_console,
    open_docsight,
)

_QUIT = {"exit", "quit", ":q", "bye"}


@app.command()
def chat(
    session: Annotated[
        str | None,
        typer.Option("--session", help="Continue this conversation (its id is printed)."),
    ] = None,
    doc: DocOption = None,
    mode: ModeOption = None,
    trace: Annotated[
        bool, typer.Option("--trace", help="Also print the steps each answer took.")
    ] = False,
    collection: CollectionOption = None,
    as_json: JsonOption = False,
) -> None:
    """Ask questions one after another; follow-ups ("And in 2023?") are rewritten to stand
    alone before retrieval, and the rewrite is shown.

    Reads one question per line until an empty line, "exit" or end of input. The conversation
    is kept in the collection: --session ID resumes it. With --json, prints one JSON answer
    per line.
    """
    with cli_errors(as_json):
        ds = open_docsight(collection)
        if session:
            history = ds.conversation(session)
            if not as_json:
                console.print(
                    f"[dim]conversation {history.id}, {len(history.turns)} turns so far[/dim]"
                )
    while True:
        try:
            line = input("" if as_json or not console.is_terminal else "> ")
        except EOFError:
            break
        question = line.strip()
        if not question or question.lower() in _QUIT:
            break
        with cli_errors(as_json):
            result = ds.chat(question, session=session, doc_names=doc, mode=mode)
        if session is None and not as_json:
            console.print(f"[dim]conversation {result.session} (--session to resume)[/dim]")
        session = result.session
        if as_json:
            render.print_json(console, render.with_page_numbers(render.to_jsonable(result)))
            continue
        if result.standalone:
            console.print(f"[dim]searching for:[/dim] {render.safe(result.standalone)}")
        render.answer(console, result)
        if trace:
            render.trace(console, result.trace)
        console.print()
    if session is None and not as_json:
        err_console.print("[dim]no question asked[/dim]")
