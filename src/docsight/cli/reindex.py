"""``docsight reindex --visual``: embed every page image again with the configured visual encoder.

A collection's page-image vectors are bound to the visual encoder that made them; ingesting with
another one is refused rather than mixing two models' vectors. This command is the explicit way
to change (or add, or remove) the visual encoder of a collection.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from docsight.cli import render
from docsight.cli.app import (
    CollectionOption,
    JsonOption,
    app,
    cli_errors,
    console,
    err_console,
    open_docsight,
)


@app.command()
def reindex(
    visual: Annotated[
        bool,
        typer.Option(
            "--visual",
            help="Embed every page image with the configured visual encoder "
            "(DOCSIGHT_VISUAL_*) and bind it to the collection.",
        ),
    ] = False,
    collection: CollectionOption = None,
    as_json: JsonOption = False,
) -> None:
    """Embed stored content again after a model change; --visual: the page images.

    Page vectors of another visual encoder are dropped first, so two models' vectors are never
    mixed; pages this encoder already embedded are kept, so an interrupted run resumes. With
    DOCSIGHT_VISUAL_BACKEND=none the page vectors are removed. It waits for any running ingest.
    """
    with cli_errors(as_json):
        if not visual:
            from docsight.errors import UsageError

            raise UsageError("say what to embed again: `docsight reindex --visual`")
        ds = open_docsight(collection)
        with _progress(enabled=not as_json) as progress:
            report = ds.reindex_visual(progress=progress)
    if as_json:
        render.print_json(console, report.model_dump(mode="json"))
        return
    console.print(render.safe(_summary(report)), soft_wrap=True)


def _summary(report: Any) -> str:
    if report.visual is None:
        if report.rebound:
            return "removed the page vectors: no visual encoder is configured"
        return "nothing to do: no visual encoder is configured and no page is embedded"
    bound = report.visual
    text = (
        f"embedded {report.pages} page image(s) of {report.documents} document(s) with "
        f"{bound.fingerprint} ({bound.kind}, dim {bound.dim}) in {report.seconds:.1f} s"
    )
    if report.rebound:
        text += "; the previous page vectors were dropped"
    if report.kept_documents:
        text += f"; {report.kept_documents} document(s) already had theirs"
    if report.failed_pages:
        text += (
            f"; {report.failed_pages} page image(s) could not be read (`docsight check` names them)"
        )
    return text


@contextmanager
def _progress(*, enabled: bool) -> Iterator[Callable[[int, int, str], None] | None]:
    """A bar counted in pages on a terminal's stderr; nothing when piped or with --json."""
    if not enabled or not err_console.is_terminal:
        yield None
        return
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("pages"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=err_console, transient=True) as bar:
        task = bar.add_task("embedding page images", total=None)

        def update(done: int, total: int, name: str) -> None:
            bar.update(
                task,
                completed=done,
                total=total or None,
                description=f"[bold]embedding[/bold] [dim]{render.safe(name[:40])}[/dim]",
            )

        yield update
