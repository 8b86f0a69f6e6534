"""Rich rendering of results for the terminal. Only the CLI prints.

Names, text, captions, messages and answers come from documents or from models that read them:
every such string goes through :func:`safe` (or :func:`terminal_text` where it becomes a ``Text``)
so that neither rich markup nor terminal escape sequences in it take effect.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from pydantic import BaseModel
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from docsight.agents.answer import Answer
from docsight.agents.trace import TraceStep
from docsight.document.sanitize import terminal_text
from docsight.index.base import CollectionStats, DocumentInfo
from docsight.ingest.report import IngestReport
from docsight.retrieval.hit import Hit

_STATUS_STYLE = {"added": "green", "skipped": "dim", "no_text": "yellow", "failed": "red"}
# Characters a terminal obeys that json.dumps(ensure_ascii=False) leaves raw: DEL, the C1
# controls and the bidi overrides and isolates (it escapes the C0 controls itself).
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def safe(text: str) -> str:
    """Untrusted text for a rich markup string: shown literally, with no terminal controls."""
    return escape(terminal_text(text))


def to_jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: to_jsonable(v) for k, v in value.items()}
    return value


def with_page_numbers(value: Any) -> Any:
    """JSON of results and answers with ``page_number`` (1-based, as the terminal shows pages)
    beside every ``page`` (0-based, as the API and the evaluation files count)."""
    if isinstance(value, list):
        return [with_page_numbers(v) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        out[key] = with_page_numbers(item)
        if key == "page" and isinstance(item, int) and not isinstance(item, bool):
            out["page_number"] = item + 1
    return out


def print_json(console: Console, value: Any) -> None:
    # Plain print, not rich's highlighter: the output must stay machine-readable. The characters
    # a terminal would obey are written as \u escapes, which leaves the data as it is.
    text = json.dumps(to_jsonable(value), ensure_ascii=False, indent=2)
    text = _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    console.file.write(text + "\n")


def _bbox(hit_bbox: Any) -> str:
    if hit_bbox is None:
        return ""
    return "[" + ", ".join(f"{v:.2f}" for v in hit_bbox.as_tuple()) + "]"


def ingest_report(console: Console, report: IngestReport, *, table: bool = True) -> None:
    """The batch's outcome: a table of every file (``table``), or, when each file was printed
    as a line while it finished, only the files that never reached a worker and the summary."""
    if table:
        _ingest_table(console, report)
    else:
        # Files found in folders but of no document type never reach the progress events.
        for f in report.files:
            if f.status == "skipped" and f.reason and f.reason.startswith("not a document type"):
                console.print(f"skipped {safe(f.name)}  {safe(f.reason)}", soft_wrap=True)
    _ingest_summary(console, report)


def _ingest_table(console: Console, report: IngestReport) -> None:
    table = Table(title="Ingestion", show_lines=False, expand=False)
    table.add_column("file", overflow="fold")
    table.add_column("status")
    table.add_column("pages", justify="right")
    table.add_column("chunks", justify="right")
    table.add_column("seconds", justify="right")
    table.add_column("note", overflow="fold")
    for f in report.files:
        note = f.reason or ""
        if f.error_code and f.status == "failed":
            note = f"{f.error_code}: {note}"
        if f.replaced:
            note = (note + " " if note else "") + f"replaced {len(f.replaced)} earlier version(s)"
        if f.hidden_elements:
            note = (note + " " if note else "") + (
                f"{f.hidden_elements} hidden passage(s) not indexed (docsight map lists them)"
            )
        table.add_row(
            safe(f.name),
            Text(f.status, style=_STATUS_STYLE[f.status]),
            str(f.pages),
            str(f.chunks),
            f"{f.seconds:.2f}",
            safe(note),
        )
    console.print(table)


def _ingest_summary(console: Console, report: IngestReport) -> None:
    counts = report.counts()
    if report.failed:
        # Many files fail for a few reasons: the summary groups them by cause.
        from collections import Counter

        causes = Counter(f.error_code or "unknown" for f in report.failed)
        summary_table = Table(title="Summary", expand=False)
        summary_table.add_column("outcome")
        summary_table.add_column("files", justify="right")
        for status, n in counts.items():
            if n:
                summary_table.add_row(Text(status, style=_STATUS_STYLE[status]), str(n))
        for code, n in causes.most_common():
            summary_table.add_row(Text(f"  failed: {code}", style="red"), str(n))
        console.print(summary_table)
    summary = ", ".join(f"{n} {status.replace('_', ' ')}" for status, n in counts.items() if n)
    console.print(f"{summary or 'nothing to do'} in {report.seconds:.1f} s")


def hits(console: Console, results: Sequence[Hit]) -> None:
    if not results:
        console.print("[yellow]no results[/yellow]")
        return
    for hit in results:
        where = f"{safe(hit.doc_name)} · page {hit.page + 1}"
        if hit.section_path:
            where += f" · {safe(' > '.join(hit.section_path))}"
        channels = " ".join(f"{name}#{rank}" for name, rank in sorted(hit.ranks.items()))
        console.print(
            f"[bold]{hit.rank}.[/bold] {where} [dim]({hit.kind}, score {hit.score:.4f}, "
            f"{channels}) {_bbox(hit.bbox)}[/dim]"
        )
        snippet = " ".join(hit.text.split())
        console.print("   " + safe(snippet[:300] + ("…" if len(snippet) > 300 else "")))


def answer(console: Console, result: Answer) -> None:
    style = "bold" if result.answerable else "bold yellow"
    label = "Answer" if result.mode == "llm" else "Answer (extractive: quoted from the sources)"
    if result.mode == "llm" and result.model:
        label += f" [dim]· {safe(result.model)}[/dim]"
    if result.strategy != "fast":
        label += f" [dim]· {result.strategy} mode[/dim]"
    console.print(f"[dim]{label}[/dim]")
    console.print(Text(terminal_text(result.answer), style=style))
    if result.explanation:
        console.print(Text(terminal_text(result.explanation), style="dim"))
    if result.citations:
        console.print("[dim]Sources[/dim]")
        for c in result.citations:
            where = f"{safe(c.doc_name)}, page {c.page + 1}"
            if c.section_path:
                where += f", {safe(' > '.join(c.section_path))}"
            console.print(f"  [{c.n}] {where} [dim]{_bbox(c.bbox)}[/dim]")
    for warning in result.warnings:
        console.print(f"[yellow]warning:[/yellow] {safe(warning)}")
    confidence = f" · confidence {result.confidence:.2f}" if result.confidence is not None else ""
    console.print(f"[dim]evidence {result.evidence:.2f}{confidence}[/dim]")


def trace(console: Console, steps: Sequence[TraceStep]) -> None:
    """The steps answering took, one line each (pages 1-based, as everywhere on screen)."""
    console.print("[dim]Trace[/dim]")
    for i, step in enumerate(steps, 1):
        pages = ", ".join(f"{safe(doc)} p{page + 1}" for doc, page in step.pages[:6])
        if len(step.pages) > 6:
            pages += f", +{len(step.pages) - 6}"
        extra = f" [dim]· {step.tokens} tokens[/dim]" if step.tokens else ""
        console.print(
            f"  {i}. [bold]{step.kind}[/bold] ({step.by}, {step.seconds:.2f} s){extra}: "
            f"{safe(step.output)}"
        )
        if pages:
            console.print(f"     [dim]pages: {pages}[/dim]")


#: Short names of media types, so the document list fits 80 columns.
_KINDS = {
    "application/pdf": "pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": "pptx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "text/markdown": "md",
    "text/plain": "txt",
    "text/html": "html",
    "image/png": "png",
    "image/jpeg": "jpeg",
    "image/tiff": "tiff",
}


def documents(console: Console, docs: Sequence[DocumentInfo]) -> None:
    if not docs:
        console.print("[yellow]the collection is empty[/yellow]")
        return
    # Names take the room that is left; the other columns never wrap. Ids are shown as long as
    # `rm` and --doc need them to be unique (at least 8 characters).
    id_width = _unique_prefix([d.id for d in docs])
    table = Table(
        title=f"{len(docs)} document{'s' * (len(docs) != 1)}",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    table.add_column("name", overflow="fold", ratio=1, min_width=16)
    table.add_column("pages", justify="right", no_wrap=True)
    table.add_column("chunks", justify="right", no_wrap=True)
    table.add_column("type", no_wrap=True)
    table.add_column("ingested", no_wrap=True)
    table.add_column("id", no_wrap=True)
    for d in docs:
        table.add_row(
            safe(d.name),
            str(d.pages),
            str(d.chunks),
            _KINDS.get(d.media_type, d.media_type.rsplit("/", 1)[-1][:8]),
            d.ingested_at.strftime("%Y-%m-%d"),
            d.id[:id_width],
        )
    console.print(table)


def _unique_prefix(ids: Sequence[str], shortest: int = 8) -> int:
    width = shortest
    while width < 64 and len({i[:width] for i in ids}) < len(set(ids)):
        width += 2
    return width


def stats(console: Console, s: CollectionStats, extra: dict[str, str]) -> None:
    table = Table(show_header=False, title="Collection")
    table.add_column("key", style="dim")
    table.add_column("value", overflow="fold")
    rows = {
        "path": s.path,
        "schema version": str(s.schema_version),
        "documents": str(s.documents),
        "pages": str(s.pages),
        "elements": str(s.elements),
        "chunks": str(s.chunks),
        "encoder": f"{s.encoder} (dim {s.dim})" if s.encoder else "none yet",
        "visual encoder": _visual(s),
        "indexes": ", ".join(s.indexes) or "none",
        "size on disk": _sizes(s),
        **({"working files": s.work_dir} if s.work_dir else {}),
        **extra,
    }
    for key, value in rows.items():
        table.add_row(key, safe(value))
    console.print(table)


def _visual(s: CollectionStats) -> str:
    """The page images' encoder as bound to the collection, and how many pages it embedded."""
    v = s.visual
    if v is None:
        return (
            "none (no page image is embedded; set DOCSIGHT_VISUAL_BACKEND, then ingest or "
            "`docsight reindex --visual`)"
        )
    model = f" {v.model}" if v.model else ""
    return (
        f"{v.backend or 'unknown'}{model}, {v.kind}-vector, dim {v.dim}; {s.page_vectors} page "
        f"vectors; fingerprint {v.fingerprint}"
    )


def _sizes(s: CollectionStats) -> str:
    """The total and its parts: kept source files, tables, model cache."""
    tables = sum(n for k, n in s.sizes.items() if k.startswith("tables/"))
    parts = {
        "sources": s.sizes.get("sources", 0),
        "tables": tables,
        "cache": s.sizes.get("cache", 0),
    }
    shown = ", ".join(f"{name} {_bytes(n)}" for name, n in parts.items() if n)
    return f"{_bytes(s.size_bytes)} ({shown})" if shown else _bytes(s.size_bytes)


def _bytes(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 1024:.0f} KiB"


def document_map(console: Console, data: dict[str, Any], *, pages: bool = False) -> None:
    title = safe(data["title"] or data["name"])
    root = Tree(
        f"[bold]{title}[/bold] [dim]({safe(data['name'])}, {data['pages']} pages, "
        f"{data['layout']})[/dim]"
    )

    def describe(node: dict[str, Any]) -> str:
        counts = ", ".join(f"{n} {kind}" for kind, n in sorted(node["elements"].items()))
        pages = node["pages"]
        span = (
            ""
            if not pages
            else f"p. {pages[0] + 1}"
            if pages[0] == pages[1]
            else (f"pp. {pages[0] + 1}-{pages[1] + 1}")
        )
        return f"[dim]{span}{' · ' if span and counts else ''}{counts}[/dim]"

    graph = data.get("graph") or {}
    summaries = graph.get("sections", {})

    def add(branch: Tree, node: dict[str, Any]) -> None:
        label = (
            f"{safe(node['title'])} {describe(node)}"
            if node["title"]
            else (f"[italic]before the first heading[/italic] {describe(node)}")
        )
        summary = summaries.get(node["id"] or "", {}).get("summary")
        if summary:
            label += f"\n[dim italic]{safe(summary)}[/dim italic]"
        child = branch.add(label)
        for artifact in node["artifacts"]:
            caption = safe(artifact["caption"] or "no caption")
            child.add(f"[cyan]{artifact['kind']}[/cyan] p. {artifact['page'] + 1}: {caption}")
        for sub in node["children"]:
            add(child, sub)

    if data["front_matter"]["elements"] or data["front_matter"]["artifacts"]:
        add(root, data["front_matter"])
    for section in data["sections"]:
        add(root, section)
    console.print(root)
    refs = data["references"]
    console.print(
        f"[dim]{data['captions_bound']} captions bound, {len(refs)} cross-references resolved[/dim]"
    )
    for ref in refs[:20]:
        console.print(f'  p. {ref["from_page"] + 1}: "{safe(ref["text"])}" → {safe(ref["to"])}')
    if len(refs) > 20:
        console.print(f"  [dim]… {len(refs) - 20} more (--json lists all)[/dim]")
    if graph:
        _graph(console, graph, pages)
    hidden = data.get("hidden", [])
    if hidden:
        console.print(
            f"[yellow]{len(hidden)} passage(s) a reader would not see[/yellow] "
            "[dim](kept out of search and answers)[/dim]"
        )
        for item in hidden[:20]:
            text = " ".join(item["text"].split())
            more = "…" if item["chars"] > len(item["text"]) or len(text) > 120 else ""
            console.print(
                f"  p. {item['page'] + 1} [dim]{', '.join(item['reasons'])}:[/dim] "
                f"{safe(text[:120])}{more}"
            )
        if len(hidden) > 20:
            console.print(f"  [dim]… {len(hidden) - 20} more (--json lists all)[/dim]")


def image_analysis(console: Console, analysis: Any) -> None:
    """What the query image was read as: types, typed text and caption."""
    types = ", ".join(f"{t.type} {t.confidence:.2f}" for t in analysis.routing.types)
    state = "cached" if analysis.warm else "analysed"
    console.print(
        f"[dim]image {safe(analysis.source)}: {safe(types)} "
        f"({safe(analysis.routing.strategy)}, {state})[/dim]"
    )
    for typed in analysis.typed:
        text = " ".join(typed.text.split())
        console.print(
            f"  [bold]{typed.type.upper()}[/bold] "
            + safe(text[:240] + ("…" if len(text) > 240 else ""))
        )
    if analysis.caption:
        console.print(f"  [dim]caption:[/dim] {safe(analysis.caption)}")
    for warning in analysis.warnings:
        console.print(f"[yellow]warning:[/yellow] {safe(warning)}")


def check_report(console: Console, report: Any) -> None:
    """A ``CheckReport``: what was repaired, the row counts, then every problem."""
    for repair in report.repairs:
        console.print(f"[green]repaired[/green] {safe(repair)}")
    counts = ", ".join(
        f"{n} {name}" for name, n in report.counts.items() if n or name != "uncommitted"
    )
    version = f"schema v{report.schema_version}" if report.schema_version is not None else ""
    console.print(f"[dim]{safe(report.path)}: {safe(counts or 'no tables')} {version}[/dim]")
    if getattr(report, "work_dir", None):
        console.print(f"[dim]working files (caches, sessions): {safe(report.work_dir)}[/dim]")
    if report.problems:
        table = Table(title="Problems", expand=False)
        table.add_column("severity")
        table.add_column("code")
        table.add_column("table")
        table.add_column("message", overflow="fold")
        for p in report.problems:
            style = "red" if p.severity == "error" else "yellow"
            table.add_row(Text(p.severity, style=style), p.code, p.table or "", safe(p.message))
        console.print(table)
    errors = len(report.errors)
    warnings = len(report.problems) - errors
    warned = f"{warnings} warning{'s' * (warnings != 1)}"
    if report.ok:
        console.print(
            "[green]collection is consistent[/green]" + (f" ({warned})" if warnings else "")
        )
    else:
        console.print(
            f"[red]{errors} error{'s' * (errors != 1)}[/red]"
            + (f" and {warned}" if warnings else "")
            + "; `docsight check --repair` removes what interrupted writes left"
        )


def _graph(console: Console, graph: dict[str, Any], pages: bool) -> None:
    nodes = ", ".join(f"{n} {kind}" for kind, n in sorted(graph["nodes"].items()))
    edges = ", ".join(f"{n} {kind}" for kind, n in sorted(graph["edges"].items()))
    evolution = graph["evolution"] + (f", {graph['rounds']} rounds" if graph["rounds"] else "")
    console.print(f"[bold]Content graph[/bold] [dim](evolution {evolution})[/dim]")
    console.print(f"  nodes: {nodes}")
    console.print(f"  edges: {edges}")
    document = graph.get("document")
    if document and document["summary"]:
        console.print(f"  [dim]document:[/dim] {safe(document['summary'])}")
        if document["keywords"]:
            console.print(f"  [dim]keywords:[/dim] {safe(', '.join(document['keywords']))}")
    # Links across pages are the ones a reader cannot see from one page.
    links = [
        link
        for link in graph["links"]
        if link["kind"] != "similar" or link["from_page"] != link["to_page"]
    ]
    shown = [link for link in links if link["kind"] != "similar"][:20]
    for link in shown:
        words = f' "{safe(link["text"])}"' if link["text"] else ""
        console.print(
            f"  [cyan]{link['kind']}[/cyan]{words}: {safe(link['from'])} [dim]→[/dim] "
            f"{safe(link['to'])}"
        )
    more = len(links) - len(shown)
    if more > 0:
        console.print(f"  [dim]… {more} more links (--json lists all)[/dim]")
    if pages:
        for page in graph["pages"]:
            keywords = ", ".join(page["keywords"][:6])
            console.print(
                f"  p. {page['page'] + 1}: {safe(page['summary'])} [dim]{safe(keywords)}[/dim]"
            )


@contextmanager
def live_answer(console: Console, *, enabled: bool = True) -> Iterator[dict[str, Any]]:
    """While ``ask`` runs on a terminal: the step at hand, then a model's words as it writes
    them, in a transient view that the final, cited answer replaces. Yields the ``on_step`` and
    ``on_token`` listeners to pass to ``ask`` (none when not a terminal, or for ``--json``)."""
    if not enabled or not console.is_terminal:
        yield {}
        return
    from rich.live import Live

    state = {"words": "", "draft": 0, "step": "searching"}

    def view() -> Text:
        if state["words"]:
            # A model's words, from documents it read: control characters are made inert.
            return Text(terminal_text(str(state["words"])), style="dim")
        return Text(f"{state['step']}…", style="dim")

    with Live(view(), console=console, transient=True, refresh_per_second=12) as live:

        def on_step(step: Any) -> None:
            state["step"] = {"retrieve": "reading", "seek": "reading", "plan": "planning"}.get(
                step.kind, "answering"
            )
            live.update(view())

        def on_token(piece: str, draft: int) -> None:
            if draft != state["draft"]:  # a new draft replaces the words shown so far
                state["draft"], state["words"] = draft, ""
            state["words"] = str(state["words"]) + piece
            live.update(view())

        yield {"on_step": on_step, "on_token": on_token}
