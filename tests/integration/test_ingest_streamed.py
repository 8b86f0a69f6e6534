"""A worker with a spool streams a PDF's elements out of the parse (``ingest.streamed``): the
result is the one a whole parse gives, and a full disk fails the file cleanly."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from docsight import Settings
from docsight.document.ids import bytes_sha256
from docsight.errors import IngestError
from docsight.ingest.spool import SpoolWriter
from docsight.ingest.streamed import StreamedParse
from docsight.ingest.worker import ParseJob, ParseOutput, WorkerSetup, WorkerState, run_job
from fixtures.pdfgen import make_chart_report, make_hidden_text, make_referenced_table

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from make_large_pdf import make_large_pdf

_SLIDES = Path(__file__).resolve().parents[3] / "shared/data/smoke/slides-and-manuals"


def _large(path: Path) -> Path:
    return make_large_pdf(path, pages=40)


def _slides(path: Path) -> Path:
    source = _SLIDES / "beamerexample-conference-talk.pdf"
    if not source.is_file():
        pytest.skip(f"{source} is absent (../shared/data)")
    path.write_bytes(source.read_bytes())
    return path


@pytest.fixture(scope="module")
def state() -> WorkerState:
    return WorkerState(WorkerSetup(Settings()))


def _run(state: WorkerState, pdf: Path, spool: Path | None) -> ParseOutput:
    job = ParseJob(str(pdf), bytes_sha256(pdf.read_bytes()), "application/pdf")
    if spool is not None:
        job = dataclasses.replace(job, spool=str(spool))
    return run_job(job, state.settings, state.context, state.chunker)


@pytest.mark.parametrize(
    "make", [_large, make_chart_report, make_hidden_text, make_referenced_table, _slides]
)
def test_a_streamed_parse_gives_what_a_whole_parse_gives(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    state: WorkerState,
    make: Callable[[Path], Path],
) -> None:
    pdf = make(tmp_path / "doc.pdf")
    whole = _run(state, pdf, None)

    batches: list[int] = []
    take = StreamedParse.__call__

    def count(self: StreamedParse, batch: Any) -> None:
        batches.append(len(batch.elements))
        take(self, batch)

    monkeypatch.setattr(StreamedParse, "__call__", count)
    spool = tmp_path / "spool"
    spool.mkdir()
    streamed = _run(state, pdf, spool)
    windows = streamed.windows
    assert windows is not None and sum(batches) == windows.n_elements > 0
    assert streamed.parsed.document.elements == []
    assert windows.skeleton() == whole.graph
    parsed, chunks = windows.whole()
    assert parsed.document == whole.parsed.document
    assert parsed.warnings == whole.parsed.warnings
    assert parsed.assets == whole.parsed.assets
    assert chunks == whole.chunks
    counts = {k: v for k, v in streamed.timings.items() if k.startswith("count.")}
    assert counts == {k: v for k, v in whole.timings.items() if k.startswith("count.")}
    # The time spent describing inside the parse is counted as describing.
    assert streamed.timings["describe"] > 0 and streamed.timings["parse"] > 0
    windows.discard()
    assert list(spool.iterdir()) == []


def test_each_window_written_gives_the_freed_memory_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, state: WorkerState
) -> None:
    """The C allocator keeps freed blocks between live ones (a page's renders, crops and OCR
    arrays) unless asked: with a photograph a page, the worker that finishes a long report
    grew by about 140 KiB a page. The stream asks once a window is written."""
    import docsight.ingest.streamed as streamed_module

    calls: list[int] = []
    monkeypatch.setattr(streamed_module, "release_freed_memory", lambda: calls.append(1) or True)
    pdf = make_large_pdf(tmp_path / "long.pdf", pages=70)
    spool = tmp_path / "spool"
    spool.mkdir()
    out = _run(state, pdf, spool)
    assert out.windows is not None
    assert len(calls) == len(out.windows.element_windows) == 3  # 32 pages a window
    out.windows.discard()


def test_a_full_disk_while_streaming_fails_the_file_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, state: WorkerState
) -> None:
    """The first window is written while the parse is still running (40 pages, 32 a window):
    the file fails with the reason, not as a PDF that could not be parsed."""
    pdf = make_large_pdf(tmp_path / "long.pdf", pages=40)
    spool = tmp_path / "spool"
    spool.mkdir()

    def full(self: SpoolWriter, value: Any) -> Any:
        raise OSError(28, "No space left on device")

    # Both ways a worker writes to its spool: values pickled into it, and bytes.
    monkeypatch.setattr(SpoolWriter, "dump", full)
    monkeypatch.setattr(SpoolWriter, "put", full)
    with pytest.raises(IngestError, match=r"temporary directory .*No space left on device"):
        _run(state, pdf, spool)
    assert list(spool.iterdir()) == []
