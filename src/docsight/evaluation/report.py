"""Run directories and Markdown reports, with plots when matplotlib is installed."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from docsight.document.sanitize import inert_markdown
from docsight.evaluation.types import QuestionResult

#: Metrics shown first in reports, when a run has them.
HEADLINE = (
    "recall@1",
    "recall@5",
    "recall@10",
    "ndcg@10",
    "mrr",
    "region_recall@5",
    "mmlongbench_strict",
    "mmlongbench_acc",
    "token_f1",
    "answer_in_context@5",
    "answer_in_sources",
    "source_chars",
    "abstention_f1",
    "judge_correct",
    "fact_f1",
    "faithfulness",
    "steps",
    "model_tokens",
)

# A "|" after an even number of backslashes (none included) is a cell separator.
_UNESCAPED_PIPE = re.compile(r"((?<!\\)(?:\\\\)*)\|")


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _md(value: Any) -> str:
    """A dataset- or document-derived value as inert Markdown on one line.

    Reports are read where Markdown renders (a code host, an editor preview): names and notes
    must not be able to pull in remote images, raw HTML or script links, nor break the layout.
    """
    return inert_markdown(" ".join(str(value).splitlines()))


def _cell(value: Any) -> str:
    """:func:`_md` for a table cell: an unescaped "|" would split the cell."""
    return _UNESCAPED_PIPE.sub(r"\1\\|", _md(value))


def _headline(summary: dict[str, Any]) -> list[str]:
    return [m for m in HEADLINE if summary.get(m) is not None]


def write_run(
    out: Path,
    summary: dict[str, Any],
    groups: dict[str, dict[str, dict[str, Any]]],
    results: Sequence[QuestionResult],
) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    (out / "metrics.json").write_text(json.dumps(groups, indent=2) + "\n")
    with (out / "questions.jsonl").open("w") as fh:
        for r in results:
            fh.write(r.model_dump_json() + "\n")
    (out / "report.md").write_text(run_report(summary, groups, plot_dir=out))


def _table(rows: dict[str, dict[str, Any]], metrics: list[str]) -> list[str]:
    lines = ["| group | questions | " + " | ".join(metrics) + " |"]
    lines.append("| --- | --- | " + " | ".join("---" for _ in metrics) + " |")
    for name, values in rows.items():
        cells = [_fmt(values.get(m)) for m in metrics]
        lines.append(
            f"| {_cell(name)} | {values.get('questions', 0)} | " + " | ".join(cells) + " |"
        )
    return lines


def run_report(
    summary: dict[str, Any], groups: dict[str, Any], plot_dir: Path | None = None
) -> str:
    metrics = _headline(summary)
    lines = [
        f"# {summary['kind'].capitalize()} evaluation: {_md(summary['dataset'])}",
        "",
        f"- questions: {summary['questions']} ({summary['scope']} scope, k = {summary['k']})",
        f"- documents: {summary['documents']} → collection {_md(summary['collection'])}",
        f"- time: {summary['seconds']} s ({summary['seconds_per_question']} s per question)",
    ]
    if summary.get("judge"):
        lines.append(f"- judge: {_md(summary['judge'])}")
    if summary.get("labels_dropped_out_of_range"):
        dropped = summary["labels_dropped_out_of_range"]
        lines.append(f"- page labels dropped (past the end of their document): {dropped}")
    if summary.get("documents_missing"):
        missing = ", ".join(_md(name) for name in summary["documents_missing"])
        lines.append(f"- documents not found (their questions are skipped): {missing}")
    for note in summary.get("notes") or []:
        lines.append(f"- note: {_md(note)}")
    lines += ["", "## Overall", "", *_table({"all": summary}, metrics), ""]
    for title, key in (("By domain", "by_domain"), ("By evidence type", "by_evidence")):
        if groups.get(key):
            lines += [f"## {title}", "", *_table(groups[key], metrics), ""]
    if plot_dir is not None and metrics:
        image = _bar_plot(
            plot_dir / "by_domain.png",
            {name: values for name, values in groups.get("by_domain", {}).items()},
            metrics[:4],
            f"{summary['dataset']}: by domain",
        )
        if image is not None:
            lines += ["![metrics by domain](by_domain.png)", ""]
    return "\n".join(lines)


def compare_report(run_dirs: Sequence[Path], out: Path) -> str:
    """A report comparing runs side by side (written to ``out/report.md`` with a plot)."""
    runs = []
    for run in run_dirs:
        summary = json.loads((run / "summary.json").read_text())
        runs.append((summary.get("label") or run.name, summary))
    metrics: list[str] = []
    for _, summary in runs:
        metrics.extend(m for m in _headline(summary) if m not in metrics)
    out.mkdir(parents=True, exist_ok=True)
    lines = [
        "# Comparison of runs",
        "",
        *_table({label: summary for label, summary in runs}, metrics),
        "",
    ]
    for label, s in runs:
        lines.append(
            f"- {_md(label)}: {s['kind']} on {_md(s['dataset'])}, {s['scope']} scope, "
            f"k = {s['k']}, collection {_md(s['collection'])}"
        )
    lines.append("")
    image = _bar_plot(out / "comparison.png", dict(runs), metrics[:5], "Comparison of runs")
    if image is not None:
        lines += ["![comparison](comparison.png)", ""]
    text = "\n".join(lines)
    (out / "report.md").write_text(text)
    return text


def _bar_plot(
    path: Path, groups: dict[str, dict[str, Any]], metrics: list[str], title: str
) -> Path | None:
    """A grouped bar chart; None when matplotlib is not installed or there is nothing to plot."""
    if not groups or not metrics:
        return None
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only: never a window, works without a display
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    names = list(groups)
    width = 0.8 / len(metrics)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 * len(names) + 2), 4))
    for i, metric in enumerate(metrics):
        values = [groups[n].get(metric) or 0.0 for n in names]
        ax.bar([x + i * width for x in range(len(names))], values, width, label=metric)
    ax.set_xticks([x + width * (len(metrics) - 1) / 2 for x in range(len(names))])
    ax.set_xticklabels(names, rotation=30, ha="right", fontsize=8)
    ax.set_ylim(0, 1)
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
