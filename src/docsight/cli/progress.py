"""How the CLI shows an ingest while it runs.

On a terminal: a bar counted in pages, with the stage and file at hand, the pages per second so
far and an estimate of the time left. Piped or logged: a plain line per file as it finishes, so
a log never sits silent for minutes. Both read the same :class:`IngestProgress` events.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, ProgressColumn, Task, TextColumn
from rich.text import Text

from docsight.cli.render import safe
from docsight.ingest.report import FileOutcome, IngestProgress

_STAGE_WORDS = {
    "read": "reading",
    "parse": "parsing",
    "describe": "describing",
    "embed": "embedding",
    "graph": "linking",
    "store": "storing",
    "done": "done",
    "optimize": "indexing",
}


def duration(seconds: float) -> str:
    """``42 s``, ``3 min``, ``1 h 05 min``: coarse enough to read at a glance."""
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    hours, rest = divmod(int(seconds), 3600)
    return f"{hours} h {rest // 60:02d} min"


class _PagesColumn(ProgressColumn):
    def render(self, task: Task) -> Text:
        if not task.total:
            return Text("")
        return Text(f"{int(task.completed):,}/{int(task.total):,} pages", style="progress.download")


class _RateColumn(ProgressColumn):
    """Pages per second over the batch so far, as the events count them (not a moving window:
    files differ too much in cost page by page for a short window to mean anything)."""

    def render(self, task: Task) -> Text:
        rate = task.fields.get("rate")
        if not rate:
            return Text("")
        return Text(f"{rate:.1f} pages/s", style="progress.data.speed")


class _LeftColumn(ProgressColumn):
    def render(self, task: Task) -> Text:
        left = task.fields.get("left")
        if left is None or left < 1:  # unknown, or only the last steps remain
            return Text(duration(task.elapsed or 0.0), style="progress.elapsed")
        return Text(f"~{duration(left)} left", style="progress.remaining")


def file_line(index: int, total: int, outcome: FileOutcome) -> str:
    """One finished file as a plain line: position, status, name, sizes or reason."""
    width = len(str(total))
    head = f"[{index:>{width}}/{total}] {outcome.status:<7} {outcome.name}"
    if outcome.status == "failed":
        return f"{head}  {outcome.error_code or 'failed'}: {outcome.reason or ''}"
    if outcome.status == "skipped":
        return f"{head}  {outcome.reason or ''}"
    detail = (
        f"{_count(outcome.pages, 'page')}, {_count(outcome.chunks, 'chunk')}, "
        f"{outcome.seconds:.1f} s"
    )
    if outcome.status == "no_text" and outcome.reason:
        detail += f"; {outcome.reason}"
    return f"{head}  {detail}"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


@contextmanager
def ingest_progress(
    out: Console, err: Console, *, lines: bool
) -> Iterator[Callable[[IngestProgress], None]]:
    """A progress callback: a bar on ``err`` when it is a terminal, and with ``lines`` a plain
    line per finished file on ``out``."""
    printed: set[str] = set()

    def line(event: IngestProgress) -> None:
        if lines and event.stage == "done" and event.outcome is not None:
            printed.add(event.outcome.path)
            out.print(safe(file_line(event.index, event.total, event.outcome)), soft_wrap=True)

    if not err.is_terminal:
        yield line
        return
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        _PagesColumn(),
        _RateColumn(),
        _LeftColumn(),
    )
    with Progress(*columns, console=err, transient=True) as bar:
        task = bar.add_task("starting", total=None, left=None, rate=None)
        # The file shown is the one the batch waits for (the lowest not finished); workers
        # parsing files ahead of it only move the page counts.
        finished: set[int] = set()
        stages: dict[int, tuple[str, int, int, str]] = {}

        def update(event: IngestProgress) -> None:
            line(event)
            if event.stage == "done":
                finished.add(event.index)
            else:
                name = Path(event.path).name
                stages[event.index] = (event.stage, event.page, event.pages, name)
            description = _describe(event, finished, stages)
            total = event.batch_pages or None
            bar.update(
                task,
                description=description,
                total=total,
                completed=event.batch_pages_done,
                left=event.seconds_left(),
                rate=event.pages_per_second(),
            )

        yield update


def _describe(
    event: IngestProgress, finished: set[int], stages: dict[int, tuple[str, int, int, str]]
) -> str:
    if event.stage == "optimize":
        return "[bold]indexing[/bold]"
    current = next((i for i in range(1, event.total + 1) if i not in finished), event.total)
    stage, page, pages, name = stages.get(current, ("read", 0, 0, ""))
    word = _STAGE_WORDS.get(stage, stage)
    where = f" p. {page}/{pages}" if stage == "parse" and pages else ""
    return f"[{current}/{event.total}] [bold]{word}[/bold]{where} [dim]{safe(_short(name))}[/dim]"


def _short(name: str, width: int = 40) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def interrupted(out: Console, report: Any) -> None:
    """What a Ctrl-C left: the files kept (committed) and the files not stored."""
    kept = [f for f in report.files if f.status in ("added", "no_text", "skipped")]
    failed = [f for f in report.files if f.status == "failed"]
    out.print("[yellow]interrupted[/yellow]")
    if kept:
        names = ", ".join(f.name for f in kept[:10]) + (" …" if len(kept) > 10 else "")
        out.print(f"kept {len(kept)} file(s), stored and searchable: {safe(names)}")
    else:
        out.print("kept nothing: no file was stored")
    if failed:
        names = ", ".join(f.name for f in failed[:10])
        out.print(f"{len(failed)} file(s) had failed by then: {safe(names)}")
    if report.not_done:
        names = [Path(p).name for p in report.not_done]
        shown = ", ".join(names[:10]) + (" …" if len(names) > 10 else "")
        out.print(f"not stored {len(names)} file(s): {safe(shown)}")
        out.print("run the same command again to finish: kept files are skipped as unchanged")
