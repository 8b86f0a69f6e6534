"""``docsight eval``: retrieval and QA evaluation, ablation grids, run comparisons."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from docsight.cli import render
from docsight.cli.app import (
    JsonOption,
    ModeOption,
    app,
    cli_errors,
    console,
    err_console,
    state,
)
from docsight.evaluation.runner import Kind, Scope

eval_app = typer.Typer(
    help="Measure retrieval and answers on benchmarks or your own questions.", no_args_is_help=True
)
app.add_typer(eval_app, name="eval")

DatasetArg = Annotated[
    Path,
    typer.Argument(
        help="samples.json, mmdocir.jsonl, rag_dataset.json, an mmquery folder, or a JSONL file."
    ),
]
DocsOption = Annotated[
    Path | None,
    typer.Option("--docs", help="Folder with the documents \\[default: next to the dataset]."),
]
FormatOption = Annotated[
    str | None,
    typer.Option(
        "--format", help="mmlongbench, mmdocir, vidoseek, mmquery or jsonl \\[default: detected]."
    ),
]
ScopeOption = Annotated[
    str,
    typer.Option(
        "--scope",
        help="'document': search within each question's document; 'corpus': the whole collection.",
    ),
]
KOption = Annotated[
    int, typer.Option("--k", "-k", min=1, max=100, help="Results retrieved per question.")
]
OutOption = Annotated[
    Path | None,
    typer.Option("--out", help="Run directory \\[default: eval-runs/<time>-<dataset>-<kind>]."),
]
LimitOption = Annotated[
    int | None, typer.Option("--limit", min=1, help="Only the first N questions.")
]
EvalCollectionOption = Annotated[
    Path | None,
    typer.Option(
        "--collection",
        "-c",
        show_default=False,
        help="Collection to ingest the documents into and evaluate \\[default: "
        ".docsight-eval/<folder>-<fingerprint>, reused while the documents and settings stay "
        "the same]; accepted before or after the command name.",
    ),
]
ImagesOption = Annotated[
    bool,
    typer.Option(
        "--images/--no-images",
        help="Search with the questions' images (--no-images: their text only).",
    ),
]


@contextmanager
def _progress(quiet: bool) -> Iterator[tuple[Any, Any]]:
    if quiet:
        yield None, None
        return
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=err_console, transient=True) as progress:
        task = progress.add_task("preparing", total=None)

        def on_question(i: int, total: int, qid: str) -> None:
            progress.update(task, description="questions", total=total, completed=i)

        def on_ingest(event: Any) -> None:
            progress.update(
                task,
                description=f"ingesting {Path(event.path).name}"[:60],
                total=event.total,
                completed=event.index - 1,
            )

        yield on_question, on_ingest


def _run(
    kind: Kind,
    dataset: Path,
    docs: Path | None,
    fmt: str | None,
    scope: str,
    k: int,
    out: Path | None,
    limit: int | None,
    judge: bool,
    as_json: bool,
    images: bool = True,
    mode: str | None = None,
) -> None:
    from docsight.evaluation.runner import EvalConfig, Evaluator
    from docsight.settings import Settings

    if scope not in ("document", "corpus"):
        raise typer.BadParameter("--scope must be 'document' or 'corpus'")
    checked_scope: Scope = "document" if scope == "document" else "corpus"
    with cli_errors(as_json):
        config = EvalConfig(
            dataset=dataset,
            docs=docs,
            format=fmt,
            scope=checked_scope,
            k=k,
            collection=state.collection,
            out=out,
            limit=limit,
            judge=judge,
            images=images,
        )
        settings = Settings()
        if mode is not None:
            if mode not in ("fast", "agent", "plan", "auto"):
                from docsight.errors import UsageError

                raise UsageError(f"--mode must be fast, agent, plan or auto, not {mode!r}")
            settings.answer.mode = mode  # type: ignore[assignment]
        with _progress(as_json) as (on_question, on_ingest):
            summary = Evaluator(config, settings).run(
                kind, progress=on_question, ingest_progress=on_ingest
            )
    if as_json:
        render.print_json(console, summary)
    else:
        _print_summary(summary)


def _print_summary(summary: dict[str, Any]) -> None:
    from docsight.evaluation.report import HEADLINE

    # Dataset names and notes come from the dataset's files: shown literally, never obeyed.
    safe = render.safe
    title = (
        f"{summary['kind']} · {safe(str(summary['dataset']))} · {summary['questions']} questions"
    )
    table = Table(title=f"{title} · {summary['scope']} scope")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for metric in HEADLINE:
        if summary.get(metric) is not None:
            table.add_row(metric, f"{summary[metric]:.3f}")
    console.print(table)
    console.print(
        f"[dim]{summary['seconds']} s · run directory {safe(str(summary['run_dir']))}[/dim]"
    )
    for note in summary.get("notes") or []:
        console.print(f"[yellow]note:[/yellow] {safe(str(note))}")


@eval_app.command("retrieval")
def eval_retrieval(
    dataset: DatasetArg,
    docs: DocsOption = None,
    fmt: FormatOption = None,
    scope: ScopeOption = "document",
    k: KOption = 10,
    out: OutOption = None,
    limit: LimitOption = None,
    images: ImagesOption = True,
    collection: EvalCollectionOption = None,
    as_json: JsonOption = False,
) -> None:
    """Page retrieval: recall@k, precision, nDCG, MRR, hit@k (and region recall for MMDocIR)."""
    if collection is not None:
        state.collection = collection
    _run("retrieval", dataset, docs, fmt, scope, k, out, limit, False, as_json, images)


@eval_app.command("qa")
def eval_qa(
    dataset: DatasetArg,
    docs: DocsOption = None,
    fmt: FormatOption = None,
    scope: ScopeOption = "document",
    k: KOption = 10,
    out: OutOption = None,
    limit: LimitOption = None,
    judge: Annotated[
        bool, typer.Option("--judge/--no-judge", help="Judge answers with the configured LLM.")
    ] = True,
    images: ImagesOption = True,
    mode: ModeOption = None,
    collection: EvalCollectionOption = None,
    as_json: JsonOption = False,
) -> None:
    """Answers: exact match, token F1/recall, MMLongBench accuracy, answer-in-context@5.

    Also abstention; with an LLM a 1-5 judge, atomic-fact precision/recall and faithfulness.
    --mode answers in that mode (and records model tokens and steps per question).
    """
    if collection is not None:
        state.collection = collection
    _run("qa", dataset, docs, fmt, scope, k, out, limit, judge, as_json, images, mode)


@eval_app.command("grid")
def eval_grid(
    config: Annotated[Path, typer.Argument(help="A TOML or JSON grid of variants.")],
    out: Annotated[
        Path, typer.Option("--out", help="Directory for the runs and the comparison.")
    ] = Path("eval-runs/grid"),
    as_json: JsonOption = False,
) -> None:
    """Run a grid of configurations (ablations) and compare them in one report."""
    from docsight.evaluation.grid import load_grid, run_grid

    with cli_errors(as_json):
        grid = load_grid(config)
        with _progress(as_json) as (on_question, _):
            result = run_grid(grid, out, progress=on_question)
    if as_json:
        render.print_json(console, {k: v for k, v in result.items() if k != "markdown"})
    else:
        console.print(render.safe(result["markdown"]))
        console.print(f"[dim]report: {render.safe(str(result['report']))}[/dim]")


@eval_app.command("report")
def eval_report(
    runs: Annotated[list[Path], typer.Argument(help="Run directories to compare.")],
    out: Annotated[Path, typer.Option("--out", help="Where to write the comparison.")] = Path(
        "eval-runs/comparison"
    ),
) -> None:
    """Compare finished runs in one Markdown report with a plot."""
    from docsight.evaluation.report import compare_report

    with cli_errors(False):
        missing = [r for r in runs if not (r / "summary.json").is_file()]
        if missing:
            from docsight.errors import ConfigurationError

            raise ConfigurationError(f"not a run directory (no summary.json): {missing[0]}")
        console.print(render.safe(compare_report(runs, out)))
