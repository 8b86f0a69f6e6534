"""Ingest progress counted in pages, plain lines off a terminal, and Ctrl-C that says what was
kept (issue 13)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from docsight import DocSight
from docsight.cli.main import app
from docsight.ingest.pipeline import IngestPipeline
from docsight.ingest.report import IngestInterrupted, IngestProgress
from fixtures.corpus_fixtures import write_corpus

TOPICS = ("harbours", "bridges", "tunnels", "canals", "railways", "airports")


def make_long_pdf(path: Path, pages: int) -> Path:
    """``pages`` pages of body text, a different topic on each (nothing repeats as furniture)."""
    from reportlab.lib.pagesizes import letter
    from reportlab.pdfgen.canvas import Canvas

    c = Canvas(str(path), pagesize=letter)
    for k in range(pages):
        topic = TOPICS[k % len(TOPICS)]
        c.setFont("Helvetica", 11)
        for line in range(6):
            c.drawString(
                72,
                700 - 16 * line,
                f"Section {k + 1} on {topic}: fact {line} about {topic} number {k * 7 + line}.",
            )
        c.showPage()
    c.save()
    return path


def test_progress_counts_pages_of_a_long_file_as_they_are_parsed(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    make_long_pdf(docs / "long.pdf", 12)
    (docs / "note.md").write_text("# Note\n\nA short note about page counts.\n")
    events: list[IngestProgress] = []
    report = DocSight(tmp_path / "col").ingest([docs], progress=events.append)
    assert [f.status for f in report.files] == ["added", "added"]

    parsed = [e for e in events if e.index == 1 and e.stage == "parse" and e.pages]
    # The worker reports the page count first, then every page: a long file never sits at 0/1.
    assert [e.page for e in parsed] == list(range(0, 13))
    assert all(e.pages == 12 and e.path.endswith("long.pdf") for e in parsed)
    assert [e.stage for e in events if e.index == 1][-4:] == ["embed", "graph", "store", "done"]
    done = [e for e in events if e.stage == "done"]
    assert [e.outcome.name for e in done if e.outcome] == ["long.pdf", "note.md"]
    last = done[-1]
    assert last.batch_pages == last.batch_pages_done == 13 and last.files_counted == 2
    # Once pages are done there is an estimate of the time left, and it is 0 at the end.
    assert any(e.seconds_left() is not None for e in parsed[1:])
    assert last.seconds_left() == 0.0
    assert events[-1].stage == "optimize"


def test_estimate_assumes_uncounted_files_are_like_counted_ones() -> None:
    event = IngestProgress(
        index=1,
        total=4,
        path="a.pdf",
        stage="parse",
        batch_pages_done=10,
        batch_pages=20,
        files_to_parse=4,
        files_counted=2,
        elapsed=5.0,
    )
    # 2 pages a second; 20 counted pages plus two more files of 10 pages: 30 pages to go.
    assert event.seconds_left() == pytest.approx(15.0)


def test_piped_output_prints_a_line_per_file(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpus")
    (corpus / "data.json").write_text("{}")
    result = CliRunner().invoke(app, ["-c", str(tmp_path / "col"), "ingest", str(corpus)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("[1/2] added   faq.txt  1 page, ")
    assert lines[1].startswith("[2/2] added   guide.md  1 page, ")
    assert any(line.startswith("skipped data.json  not a document type") for line in lines)
    assert lines[-1].startswith("2 added, 1 skipped in ")
    assert "┃" not in result.stdout  # no table repeating the lines


def _interrupt_at(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """Ctrl-C while the pipeline is about to finish the file called ``name``."""
    original = IngestPipeline._finish

    def finish(self, slot, runner, key, emit):  # type: ignore[no-untyped-def]
        if slot.outcome.name == name:
            raise KeyboardInterrupt
        return original(self, slot, runner, key, emit)

    monkeypatch.setattr(IngestPipeline, "_finish", finish)


def test_ctrl_c_keeps_what_was_stored_and_names_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = write_corpus(tmp_path / "corpus")
    (corpus / "zeta.md").write_text("# Zeta\n\nThe last file of the batch.\n")
    ds = DocSight(tmp_path / "col")
    _interrupt_at(monkeypatch, "guide.md")
    with pytest.raises(IngestInterrupted) as caught:
        ds.ingest([corpus])
    report = caught.value.report
    assert report.interrupted and [f.name for f in report.added] == ["faq.txt"]
    assert [Path(p).name for p in report.not_done] == ["guide.md", "zeta.md"]
    assert [d.name for d in ds.documents()] == ["faq.txt"]
    assert ds.check().ok

    monkeypatch.undo()
    again = ds.ingest([corpus])
    assert again.counts() == {"added": 2, "skipped": 1, "no_text": 0, "failed": 0}


def test_ctrl_c_in_the_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    corpus = write_corpus(tmp_path / "corpus")
    _interrupt_at(monkeypatch, "guide.md")
    runner = CliRunner()
    result = runner.invoke(app, ["-c", str(tmp_path / "col"), "ingest", str(corpus)])
    assert result.exit_code == 130
    assert "interrupted" in result.stderr
    assert "kept 1 file(s), stored and searchable: faq.txt" in result.stderr
    assert "not stored 1 file(s): guide.md" in result.stderr
    assert "run the same command again" in result.stderr
    result = runner.invoke(app, ["-c", str(tmp_path / "col2"), "ingest", str(corpus), "--json"])
    data = json.loads(result.stdout)
    assert result.exit_code == 130 and data["interrupted"] is True
    assert data["counts"]["added"] == 1 and [Path(p).name for p in data["not_done"]] == ["guide.md"]


def test_the_terminal_bar_shows_pages_per_second_and_time_left() -> None:
    import io

    from rich.console import Console

    from docsight.cli.progress import ingest_progress

    screen = io.StringIO()
    err = Console(file=screen, force_terminal=True, width=120)
    out = Console(file=io.StringIO(), force_terminal=False)
    event = IngestProgress(
        index=1, total=2, path="/d/long.pdf", stage="parse", page=30, pages=100,
        batch_pages_done=30, batch_pages=100, files_to_parse=2, files_counted=1, elapsed=10.0,
    )  # fmt: skip
    assert event.pages_per_second() == pytest.approx(3.0)
    with ingest_progress(out, err, lines=True) as update:
        update(event)
    shown = screen.getvalue()
    assert "30/100 pages" in shown and "3.0 pages/s" in shown and "left" in shown
    # Before the first page there is no rate to show.
    assert IngestProgress(index=1, total=1, path="x", stage="read").pages_per_second() is None
