"""The ``docsight`` command line."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from docsight.cli import render
from docsight.errors import DocsightError

app = typer.Typer(
    name="docsight",
    help="Ask questions over your documents and get answers with cited pages, offline by default.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

console = Console()
err_console = Console(stderr=True)

JsonOption = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
DocOption = Annotated[
    list[str] | None,
    typer.Option("--doc", "-d", help="Restrict to a document (name or id); repeatable."),
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
    collection: Annotated[
        Path | None,
        typer.Option(
            "--collection",
            "-c",
            help="Collection directory [default: ./.docsight or $DOCSIGHT_COLLECTION_DIR].",
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option(
            "--version", help="Show the version and exit.", callback=_version, is_eager=True
        ),
    ] = False,
) -> None:
    state.collection = collection


def _docsight() -> Any:
    from docsight.api import DocSight

    return DocSight(state.collection)


@contextmanager
def _errors(as_json: bool) -> Iterator[None]:
    """Turn docsight errors into a message and exit code 1, never a traceback."""
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
            err_console.print(f"[red]error[/red] ({exc.code}): {render.safe(exc.message)}")
        raise typer.Exit(1) from exc


def _clean_question(text: str) -> str:
    """Bytes that are not UTF-8 (a mis-encoded terminal or file) are replaced, with a warning on
    stderr, so --json output stays valid."""
    from docsight.query.question import clean_question

    cleaned, warning = clean_question(text)
    if warning is not None:
        err_console.print(f"[yellow]warning[/yellow]: {render.safe(warning)}")
    return cleaned


@app.command()
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Files or directories to ingest.")],
    as_json: JsonOption = False,
    strict: Annotated[
        bool, typer.Option("--strict", help="Exit with status 1 if any file failed.")
    ] = False,
) -> None:
    """Parse, chunk, embed and store documents. Unchanged files are skipped."""
    with _errors(as_json):
        ds = _docsight()
        if as_json:
            report = ds.ingest(paths)
        else:
            with _progress() as progress_cb:
                report = ds.ingest(paths, progress=progress_cb)
    if as_json:
        render.print_json(console, {**report.model_dump(mode="json"), "counts": report.counts()})
    else:
        render.ingest_report(console, report)
        for warning in report.warnings:
            err_console.print(f"[yellow]warning[/yellow]: {render.safe(warning)}")
    if strict and report.failed:
        raise typer.Exit(1)


@contextmanager
def _progress() -> Iterator[Callable[[Any], None]]:
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("[dim]{task.fields[file]}"),
    )
    with Progress(*columns, console=err_console, transient=True) as progress:
        task = progress.add_task("ingesting", total=None, file="")

        def update(event: Any) -> None:
            if event.stage == "optimize":
                progress.update(task, description="indexing", file="")
                return
            completed = event.index if event.stage == "done" else event.index - 1
            progress.update(
                task,
                total=event.total,
                completed=completed,
                description=event.stage if event.stage != "done" else "ingesting",
                file=render.safe(Path(event.path).name),
            )

        yield update


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    k: Annotated[int, typer.Option("--k", "-k", min=1, max=1000, help="Number of results.")] = 10,
    doc: DocOption = None,
    pages: Annotated[bool, typer.Option("--pages", help="Rank pages instead of chunks.")] = False,
    image: ImageOption = None,
    as_json: JsonOption = False,
) -> None:
    """Hybrid search (BM25 + dense) over the collection; with --image, also by what the image
    shows. JSON output is a list of results, or {"image": ..., "results": [...]} with --image."""
    unit: Literal["chunk", "page"] = "page" if pages else "chunk"
    with _errors(as_json):
        query = _clean_question(query)
        ds = _docsight()
        analysis = ds.analyze_image(image) if image is not None else None
        results = ds.search(query, k=k, doc_names=doc, unit=unit, image=analysis)
    if as_json:
        if analysis is None:
            render.print_json(console, results)
        else:
            render.print_json(console, {"image": analysis.to_json(), "results": results})
    else:
        if analysis is not None:
            render.image_analysis(console, analysis)
        render.hits(console, results)


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="The question.")],
    doc: DocOption = None,
    k: Annotated[
        int | None, typer.Option("--k", "-k", min=1, max=50, help="Sources to use.")
    ] = None,
    image: ImageOption = None,
    as_json: JsonOption = False,
) -> None:
    """Answer a question with numbered citations to pages and regions; with --image, a question
    about an image (JSON output then carries the image's analysis under "image")."""
    with _errors(as_json):
        ds = _docsight()
        analysis = ds.analyze_image(image) if image is not None else None
        result = ds.ask(question, doc_names=doc, k=k, image=analysis)
    if as_json:
        payload = render.to_jsonable(result)
        if analysis is not None:
            payload["image"] = analysis.to_json()
        render.print_json(console, payload)
    else:
        if analysis is not None:
            render.image_analysis(console, analysis)
        render.answer(console, result)


@app.command()
def docs(as_json: JsonOption = False) -> None:
    """List the documents in the collection."""
    with _errors(as_json):
        documents = _docsight().documents()
    if as_json:
        render.print_json(console, documents)
    else:
        render.documents(console, documents)


@app.command("map")
def map_(
    doc: Annotated[str, typer.Argument(help="Document name or id.")],
    pages: Annotated[
        bool, typer.Option("--pages", help="Also print every page's summary and keywords.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Show a document's map: sections with their summaries, tables and figures, references,
    and the content graph's links (captions, references, continuations across pages)."""
    from docsight.document.map import document_map
    from docsight.graph.view import graph_map

    with _errors(as_json):
        ds = _docsight()
        document = ds.document(doc)
        data = document_map(document)
        graph = ds.store.get_graph(document.id)
        data["graph"] = graph_map(graph, document) if graph is not None else None
    if as_json:
        render.print_json(console, data)
    else:
        render.document_map(console, data, pages=pages)


@app.command("rm")
def remove(
    doc: Annotated[str, typer.Argument(help="Document name or id (a unique id prefix works).")],
    as_json: JsonOption = False,
) -> None:
    """Remove a document and everything derived from it."""
    with _errors(as_json):
        info = _docsight().remove(doc)
    if as_json:
        render.print_json(console, {"removed": info})
    else:
        console.print(f"removed {render.safe(info.name)} ({info.id[:12]})")


@app.command()
def info(as_json: JsonOption = False) -> None:
    """Show the collection's size, indexes, encoder and model configuration."""
    with _errors(as_json):
        ds = _docsight()
        stats = ds.info()
        llm = ds.settings.llm
        vlm = ds.settings.vlm
        extra = {
            "llm": f"{llm.model} at {llm.base_url or 'api.openai.com'}"
            if llm.enabled
            else "none (offline answers)",
            "vision model": f"{vlm.model} at {vlm.base_url or 'api.openai.com'}"
            if vlm.enabled
            else "none (offline descriptions)",
            "embedding backend": ds.settings.embed.backend,
            "chunking": ds.settings.chunk.strategy,
        }
    if as_json:
        render.print_json(console, {**stats.model_dump(mode="json"), **extra})
    else:
        render.stats(console, stats, extra)


@app.command()
def check(
    repair: Annotated[
        bool,
        typer.Option(
            "--repair",
            help="First finish or undo what interrupted writes left (rows of uncommitted "
            "documents, missing or lagging indexes), then check.",
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Verify the collection's integrity (after any running ingest); exit status 1 if errors
    remain. Warnings, such as rows not yet in an index, do not fail the check."""
    with _errors(as_json):
        report = _docsight().check(repair=repair)
    if as_json:
        render.print_json(console, {**report.model_dump(mode="json"), "ok": report.ok})
    else:
        render.check_report(console, report)
    if not report.ok:
        raise typer.Exit(1)


llm_app = typer.Typer(help="Local language models.", no_args_is_help=True)
app.add_typer(llm_app, name="llm")


@llm_app.command("serve")
def llm_serve(
    model: Annotated[
        Path | None, typer.Option(help="A GGUF model file [default: SmolLM2-135M-Instruct].")
    ] = None,
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port on 127.0.0.1.")] = 8081,
    threads: Annotated[int, typer.Option(min=1, help="CPU threads (1 is best on 2 cores).")] = 1,
    ctx: Annotated[int, typer.Option(min=256, help="Context window in tokens.")] = 4096,
    embedding: Annotated[bool, typer.Option(help="Also serve /v1/embeddings.")] = False,
) -> None:
    """Serve a local GGUF model as an OpenAI-compatible endpoint (needs the local-llm extra)."""
    import threading

    from docsight.llm.local import resolve_model_path, start_in_process

    with _errors(False):
        path = resolve_model_path(model)
        server = start_in_process(path, threads=threads, ctx=ctx, port=port, embedding=embedding)
    base_url = f"{server.listening_address}/v1"
    console.print(f"serving [bold]{path.name}[/bold] at {base_url}")
    console.print(
        "use it with:\n"
        f"  export DOCSIGHT_LLM_BASE_URL={base_url}\n"
        f"  export DOCSIGHT_LLM_MODEL={path.stem}\n"
        "press Ctrl-C to stop"
    )
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        console.print("stopping")
    finally:
        del server


# The evaluation commands live in their own module; importing it registers them on ``app``.
from docsight.cli import evaluate as _evaluate  # noqa: E402, F401


def _configure_logging() -> None:
    # The application decides what reaches the terminal: warnings, minus pdfminer's complaints
    # about font descriptors, which real-world PDFs trigger by the hundred and which change
    # nothing in the result.
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("pdfminer").setLevel(logging.ERROR)
    # Some model packages (rapid-layout) force their loggers to INFO with handlers of their own;
    # a terminal user wants warnings and errors only.
    logging.disable(logging.INFO)


def main() -> None:
    _configure_logging()
    try:
        app()
    except KeyboardInterrupt:
        err_console.print("[yellow]interrupted[/yellow]")
        sys.exit(130)


if __name__ == "__main__":
    main()
