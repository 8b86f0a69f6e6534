"""The ``docsight`` command line."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from docsight.cli import render
from docsight.cli.app import (
    CollectionOption,
    DocOption,
    ImageOption,
    JsonOption,
    ModeOption,
    app,
    clean_question_arg,
    cli_errors,
    console,
    err_console,
    open_docsight,
)


@app.command()
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Files or directories to ingest.")],
    collection: CollectionOption = None,
    as_json: JsonOption = False,
    strict: Annotated[
        bool, typer.Option("--strict", help="Exit with status 1 if any file failed.")
    ] = False,
    engine: Annotated[
        str | None,
        typer.Option(
            "--engine",
            show_default=False,
            help="local: worker processes on this machine; ray: parse and embed on a Ray "
            "cluster, needs pip install 'docsight\\[distributed]' \\[default: "
            "DOCSIGHT_INGEST_ENGINE, local].",
        ),
    ] = None,
    address: Annotated[
        str | None,
        typer.Option(
            "--address",
            show_default=False,
            help="With --engine ray: the cluster (auto, ray://host:10001) \\[default: "
            "DOCSIGHT_INGEST_RAY_ADDRESS, $RAY_ADDRESS, else a local instance].",
        ),
    ] = None,
) -> None:
    """Parse, chunk, embed and store documents; unchanged files are skipped.

    A terminal shows progress in pages with the time left; piped or logged output gets a line
    per file as it finishes. Ctrl-C keeps every file stored by then and lists the rest.
    """
    from docsight.cli.progress import ingest_progress, interrupted
    from docsight.errors import UsageError
    from docsight.ingest.report import IngestInterrupted

    lines = not as_json and not console.is_terminal
    try:
        with cli_errors(as_json):
            if engine is not None and engine not in ("local", "ray"):
                raise UsageError(f"--engine must be local or ray, not {engine!r}")
            ds = open_docsight(collection)
            if engine is not None:
                ds.settings.ingest.engine = engine
            if address is not None:
                if ds.settings.ingest.engine != "ray":
                    raise UsageError("--address names a Ray cluster: use it with --engine ray")
                ds.settings.ingest.ray_address = address
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
    with cli_errors(as_json):
        query = clean_question_arg(query)
        ds = open_docsight(collection)
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
    with cli_errors(as_json):
        ds = open_docsight(collection)
        analysis = ds.analyze_image(image) if image is not None else None
        with render.live_answer(console, enabled=not as_json) as listeners:
            result = ds.ask(question, doc_names=doc, k=k, image=analysis, mode=mode, **listeners)
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
    with cli_errors(as_json):
        documents = open_docsight(collection).documents()
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

    with cli_errors(as_json):
        ds = open_docsight(collection)
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
    from docsight.index.sources import collection_bytes

    with cli_errors(as_json):
        ds = open_docsight(collection)
        before = collection_bytes(ds.location)
        info = ds.remove(doc)
        freed = max(0, before - collection_bytes(ds.location))
    if as_json:
        render.print_json(console, {"removed": info, "freed_bytes": freed})
    else:
        console.print(
            f"removed {render.safe(info.name)} ({info.id[:12]}); freed {freed / 2**20:.1f} MiB"
        )


@app.command()
def info(collection: CollectionOption = None, as_json: JsonOption = False) -> None:
    """Show the collection's size, indexes, encoder and model configuration."""
    with cli_errors(as_json):
        ds = open_docsight(collection)
        stats = ds.info()
        extra = _configuration(ds.settings)
    if as_json:
        render.print_json(console, {**stats.model_dump(mode="json"), **extra})
    else:
        render.stats(console, stats, extra)


def _configuration(settings: Any) -> dict[str, str]:
    from docsight.retrieval.visual import chunking_variant

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
        "chunking": chunking_variant(settings.chunk.strategy, settings.visual.backend),
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
    with cli_errors(as_json):
        report = open_docsight(collection).check(repair=repair)
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

    from docsight.llm.local import resolve_model_path, shut_down, start_in_process

    with cli_errors(False):
        path = resolve_model_path(model)
        server = start_in_process(path, threads=threads, ctx=ctx, port=port, embedding=embedding)
    base_url = f"{server.listening_address}/v1"
    # Everything after the start is inside the try: a Ctrl-C while the lines below print still
    # stops the server in order.
    try:
        console.print(f"serving [bold]{path.name}[/bold] at {base_url}")
        console.print(
            "use it with:\n"
            f"  export DOCSIGHT_LLM_BASE_URL={base_url}\n"
            f"  export DOCSIGHT_LLM_MODEL={path.stem}\n"
            "press Ctrl-C to stop"
        )
        threading.Event().wait()
    except KeyboardInterrupt:
        console.print("stopping")
    finally:
        shut_down(server)


# The evaluation and chat commands live in their own modules; importing registers them.
from docsight.cli import chat as _chat  # noqa: E402, F401
from docsight.cli import evaluate as _evaluate  # noqa: E402, F401
from docsight.cli import mcp_cmd as _mcp  # noqa: E402, F401
from docsight.cli import reindex as _reindex  # noqa: E402, F401
from docsight.cli import serve as _serve  # noqa: E402, F401


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
