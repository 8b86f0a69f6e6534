"""The ``docsight`` command line."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Literal

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
    "Collection directory \\[default: $DOCSIGHT_COLLECTION_DIR or ./.docsight]; accepted "
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


def _docsight(collection: Path | None = None) -> Any:
    """The facade over the collection named after the command (``collection``) or before it."""
    from docsight.api import DocSight

    if collection is not None:
        state.collection = collection
    return DocSight(state.collection)


@contextmanager
def _errors(as_json: bool) -> Iterator[None]:
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
    collection: CollectionOption = None,
    as_json: JsonOption = False,
    strict: Annotated[
        bool, typer.Option("--strict", help="Exit with status 1 if any file failed.")
    ] = False,
) -> None:
    """Parse, chunk, embed and store documents; unchanged files are skipped.

    A terminal shows progress in pages with the time left; piped or logged output gets a line
    per file as it finishes. Ctrl-C keeps every file stored by then and lists the rest.
    """
    from docsight.cli.progress import ingest_progress, interrupted
    from docsight.ingest.report import IngestInterrupted

    lines = not as_json and not console.is_terminal
    try:
        with _errors(as_json):
            ds = _docsight(collection)
            with ingest_progress(console, err_console, lines=lines) as progress_cb:
                report = ds.ingest(paths, progress=progress_cb)
    except IngestInterrupted as stop:
        if as_json:
            render.print_json(
                console, {**stop.report.model_dump(mode="json"), "counts": stop.report.counts()}
            )
        else:
            interrupted(err_console, stop.report)
        raise typer.Exit(130) from None
    if as_json:
        render.print_json(console, {**report.model_dump(mode="json"), "counts": report.counts()})
    else:
        render.ingest_report(console, report, table=not lines)
        for warning in report.warnings:
            err_console.print(f"[yellow]warning[/yellow]: {render.safe(warning)}")
    if strict and report.failed:
        raise typer.Exit(1)


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    k: Annotated[int, typer.Option("--k", "-k", min=1, max=1000, help="Number of results.")] = 10,
    doc: DocOption = None,
    pages: Annotated[bool, typer.Option("--pages", help="Rank pages instead of chunks.")] = False,
    image: ImageOption = None,
    collection: CollectionOption = None,
    as_json: JsonOption = False,
) -> None:
    """Search the collection by keywords, meaning and the pages or parts a query names.

    --image adds what an image shows. JSON output is a list of results, or an object with
    "image" and "results" with --image; "page" is 0-based there and "page_number" is the
    1-based page shown on screen.
    """
    unit: Literal["chunk", "page"] = "page" if pages else "chunk"
    with _errors(as_json):
        query = _clean_question(query)
        ds = _docsight(collection)
        analysis = ds.analyze_image(image) if image is not None else None
        results = ds.search(query, k=k, doc_names=doc, unit=unit, image=analysis)
    if as_json:
        payload = render.with_page_numbers(render.to_jsonable(results))
        if analysis is None:
            render.print_json(console, payload)
        else:
            render.print_json(console, {"image": analysis.to_json(), "results": payload})
    else:
        if analysis is not None:
            render.image_analysis(console, analysis)
        render.hits(console, results)


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="The question.")],
    doc: DocOption = None,
    k: Annotated[
        int | None,
        typer.Option(
            "--k",
            "-k",
            min=1,
            max=50,
            show_default=False,
            help="Search results to read \\[default: chosen per question, 3 to 8 "
            "(DOCSIGHT_ANSWER_K_MIN, _K_MAX)].",
        ),
    ] = None,
    image: ImageOption = None,
    mode: ModeOption = None,
    trace: Annotated[
        bool, typer.Option("--trace", help="Also print the steps answering took.")
    ] = False,
    collection: CollectionOption = None,
    as_json: JsonOption = False,
) -> None:
    """Answer a question with numbered citations to pages and regions.

    Offline, the answer quotes the sources ("extractive"); with DOCSIGHT_LLM_MODEL and
    DOCSIGHT_LLM_BASE_URL set, a language model writes it from the sources. Citations are
    numbered 1, 2, ... in the order the answer cites them. --image asks about an image too, and
    JSON output then carries its analysis under "image"; "page" is 0-based in JSON,
    "page_number" 1-based as on screen.
    """
    with _errors(as_json):
        ds = _docsight(collection)
        analysis = ds.analyze_image(image) if image is not None else None
        result = ds.ask(question, doc_names=doc, k=k, image=analysis, mode=mode)
    if as_json:
        payload = render.with_page_numbers(render.to_jsonable(result))
        if analysis is not None:
            payload["image"] = analysis.to_json()
        render.print_json(console, payload)
    else:
        if analysis is not None:
            render.image_analysis(console, analysis)
        render.answer(console, result)
        if trace:
            render.trace(console, result.trace)


@app.command()
def docs(collection: CollectionOption = None, as_json: JsonOption = False) -> None:
    """List the documents in the collection."""
    with _errors(as_json):
        documents = _docsight(collection).documents()
    if as_json:
        render.print_json(console, documents)
    else:
        render.documents(console, documents)


@app.command("map")
def map_(
    doc: Annotated[
        str,
        typer.Argument(help="Document name (with or without the extension, or its start) or id."),
    ],
    pages: Annotated[
        bool, typer.Option("--pages", help="Also print every page's summary and keywords.")
    ] = False,
    collection: CollectionOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show a document's map: sections with summaries, tables, figures and references.

    Also the content graph's links: captions, references and continuations across pages.
    """
    from docsight.document.map import document_map
    from docsight.graph.view import graph_map

    with _errors(as_json):
        ds = _docsight(collection)
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
    doc: Annotated[
        str,
        typer.Argument(help="Document name (with or without the extension, or its start) or id."),
    ],
    collection: CollectionOption = None,
    as_json: JsonOption = False,
) -> None:
    """Remove a document and everything derived from it, and free its space."""
    from docsight.index.sources import disk_sizes

    with _errors(as_json):
        ds = _docsight(collection)
        before = sum(disk_sizes(ds.path).values())
        info = ds.remove(doc)
        freed = max(0, before - sum(disk_sizes(ds.path).values()))
    if as_json:
        render.print_json(console, {"removed": info, "freed_bytes": freed})
    else:
        console.print(
            f"removed {render.safe(info.name)} ({info.id[:12]}); freed {freed / 2**20:.1f} MiB"
        )


@app.command()
def info(collection: CollectionOption = None, as_json: JsonOption = False) -> None:
    """Show the collection's size, indexes, encoder and model configuration."""
    with _errors(as_json):
        ds = _docsight(collection)
        stats = ds.info()
        extra = _configuration(ds.settings)
    if as_json:
        render.print_json(console, {**stats.model_dump(mode="json"), **extra})
    else:
        render.stats(console, stats, extra)


def _configuration(settings: Any) -> dict[str, str]:
    llm, vlm = settings.llm, settings.vlm
    if llm.enabled:
        where = llm.base_url or "https://api.openai.com/v1"
        model = (
            f"{llm.model} at {where} (timeout {llm.timeout:g} s, budget {llm.budget:g} s, "
            f"{llm.max_retries} retries)"
        )
    else:
        model = (
            "none: answers are quoted from the sources (extractive); set DOCSIGHT_LLM_MODEL and "
            "DOCSIGHT_LLM_BASE_URL (and DOCSIGHT_LLM_API_KEY if needed) to use a model"
        )
    return {
        "llm": model,
        "vision model": f"{vlm.model} at {vlm.base_url or 'https://api.openai.com/v1'}"
        if vlm.enabled
        else "none (offline descriptions; DOCSIGHT_VLM_MODEL sets one)",
        "embedding backend": settings.embed.backend,
        "chunking": settings.chunk.strategy,
        "retrieval channels": ", ".join(settings.retrieval.channels),
    }


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
    collection: CollectionOption = None,
    as_json: JsonOption = False,
) -> None:
    """Verify the collection's integrity; exit status 1 if errors remain.

    It waits for any running ingest. Warnings, such as rows not yet in an index, do not fail
    the check.
    """
    with _errors(as_json):
        report = _docsight(collection).check(repair=repair)
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
        Path | None,
        typer.Option(
            help="A GGUF model file \\[default: SmolLM2-135M-Instruct].", show_default=False
        ),
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


# The evaluation and chat commands live in their own modules; importing registers them.
from docsight.cli import chat as _chat  # noqa: E402, F401
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
