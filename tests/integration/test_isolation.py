"""Parsing in worker processes: hangs, memory hogs, crashes and exceptions cost one file each.

The misbehaving parser (``fixtures.hostile_parsers``) is registered for plain text; the
supervisor replays the parser registry in its workers, so what a file's first line commands
happens inside a real worker process under the real limits.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from docsight import DocSight
from docsight.ingest.chunking import create_chunker
from docsight.ingest.pipeline import IngestPipeline
from docsight.ingest.supervisor import Supervisor
from docsight.ingest.worker import ParseJob, WorkerSetup
from docsight.parsers import PARSERS
from docsight.parsers.base import ParseContext
from docsight.parsers.sniff import TEXT
from docsight.settings import IngestSettings, Settings
from fixtures.fake_llm import FakeLLM, ok
from fixtures.hostile_parsers import TARGET

#: Seconds a killed file may take beyond its limit: the watchdog's poll, killing and reaping.
MARGIN_S = 3.0
TEXT_BODY = "Pallets are inspected weekly. Damaged pallets are tagged and removed from service."


@pytest.fixture
def hostile(monkeypatch: pytest.MonkeyPatch) -> None:
    """Plain text goes through the hostile parser, in this process and in every worker."""
    monkeypatch.setattr(PARSERS, "_entries", dict(PARSERS._entries))
    PARSERS.register(TEXT, TARGET, description="test: misbehaves on command")


def _files(folder: Path, commands: list[str]) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, command in enumerate(commands):
        path = folder / f"{i:02d}-{command.lower()}.txt"
        path.write_text(f"{command}\n\n{TEXT_BODY} File {i}.\n")
        paths.append(path)
    return paths


def _pipeline(ds: DocSight) -> IngestPipeline:
    """The pipeline ``DocSight.ingest`` builds, kept so the test can look at its supervisor."""
    return IngestPipeline(
        ds.store,
        ds.encoder,
        create_chunker(ds.settings.chunk),
        ds.settings,
        ParseContext(),
        WorkerSetup(ds.settings),
    )


@pytest.mark.usefixtures("hostile")
def test_hangs_hogs_crashes_and_errors_cost_one_file_each(tmp_path: Path) -> None:
    settings = Settings(
        ingest={"timeout_s": 4, "memory_mb": 700, "cpu_s": 30, "workers": 2},
    )
    commands = ["OK", "HANG", "ALLOC", "ABORT", "OK", "RAISE", "SEGV", "EXIT", "OK"]
    files = _files(tmp_path / "docs", commands)
    ds = DocSight(tmp_path / "col", settings=settings)
    pipeline = _pipeline(ds)
    events: list[tuple[int, str]] = []
    started = time.perf_counter()
    report = pipeline.run([tmp_path / "docs"], lambda e: events.append((e.index, e.stage)))
    elapsed = time.perf_counter() - started

    # Every file has an outcome, in input order, and the good ones made it in.
    assert [f.path for f in report.files] == [str(p) for p in files]
    by_command = {c: [f for f, cc in zip(report.files, commands, strict=True) if cc == c]
                  for c in commands}  # fmt: skip
    assert [f.status for f in by_command["OK"]] == ["added"] * 3
    assert len(ds.documents()) == 3

    hang, hog, abort = by_command["HANG"][0], by_command["ALLOC"][0], by_command["ABORT"][0]
    raised, segv, exited = by_command["RAISE"][0], by_command["SEGV"][0], by_command["EXIT"][0]
    assert (hang.error_code, hog.error_code) == ("timeout", "out_of_memory")
    assert "killed after 4 s" in (hang.reason or "") and "ingest.timeout_s" in (hang.reason or "")
    assert 4 <= hang.seconds <= 4 + MARGIN_S
    assert "ingest.memory_mb" in (hog.reason or "")
    # The watchdog polls every 50 ms: the hog is stopped soon after it crosses the cap.
    assert hog.peak_memory_mb is not None and 700 < hog.peak_memory_mb < 700 + 400
    assert abort.error_code == "worker_crashed" and "SIGABRT" in (abort.reason or "")
    assert segv.error_code == "worker_crashed" and "SIGSEGV" in (segv.reason or "")
    assert exited.error_code == "worker_crashed" and "exit status 3" in (exited.reason or "")
    assert raised.error_code == "internal_error" and "ValueError" in (raised.reason or "")
    for outcome in report.files:
        assert outcome.reason or outcome.status == "added"
        assert outcome.seconds <= 4 + MARGIN_S

    # Five workers died and were replaced (on demand: not after the last death); the exception
    # cost no worker.
    supervisor = pipeline.supervisor
    assert supervisor is not None
    assert supervisor.replaced == 5
    assert 2 + 5 - 2 <= supervisor.started <= 2 + 5
    # Progress: every file reports "done", in order.
    assert [i for i, stage in events if stage == "done"] == list(range(1, len(files) + 1))
    # The batch ran in parallel: well under the sum of the limits it waited on.
    assert elapsed < 60


@pytest.mark.usefixtures("hostile")
def test_workers_collect_cyclic_garbage_less_often(tmp_path: Path) -> None:
    """A worker raises the collector's young-generation threshold and freezes what it loaded
    before the first file (a parse's many long-lived small objects were rescanned thousands of
    times); the calling process keeps its own settings."""
    import gc

    before = gc.get_threshold()
    (path,) = _files(tmp_path / "docs", ["GC"])
    ds = DocSight(tmp_path / "col", settings=Settings(ingest={"workers": 1}))
    assert ds.ingest([path]).added
    (doc,) = ds.documents()
    text = " ".join(c.text for c in ds.store.document_chunks(doc.id))
    assert "GC threshold (20000, 20, 10)" in text
    frozen = int(text.split("frozen ")[1].split()[0])
    assert frozen > 10_000  # the modules and parsers loaded at start
    assert gc.get_threshold() == before


@pytest.mark.usefixtures("hostile")
def test_cpu_budget_stops_a_spinning_parser(tmp_path: Path) -> None:
    settings = Settings(ingest={"timeout_s": 60, "cpu_s": 2, "workers": 1})
    spin, ok = _files(tmp_path / "docs", ["SPIN", "OK"])
    report = DocSight(tmp_path / "col", settings=settings).ingest([spin, ok])
    first, second = report.files
    assert first.error_code == "cpu_limit"
    assert "2 CPU seconds" in (first.reason or "") and "ingest.cpu_s" in (first.reason or "")
    assert first.seconds < 20  # the CPU budget, not the 60 s clock, stopped it
    assert second.status == "added"


@pytest.mark.usefixtures("hostile")
def test_supervisor_replaces_a_dead_worker_and_keeps_order(tmp_path: Path) -> None:
    from docsight.document.ids import bytes_sha256

    abort, ok = _files(tmp_path, ["ABORT", "OK"])
    settings = Settings(ingest={"workers": 1})
    jobs = [ParseJob(str(p), bytes_sha256(p.read_bytes()), TEXT) for p in (abort, ok)]
    with Supervisor(WorkerSetup(settings)) as supervisor:
        for key, job in enumerate(jobs):
            supervisor.submit(key, job)
        # Results can be collected in any order.
        second, first = supervisor.result(1), supervisor.result(0)
        assert second.output is not None and second.error_code is None
        # Read while the supervisor is open: its spool holds the windows until it closes.
        texts = second.output.chunk_texts()
    assert first.error_code == "worker_crashed" and "SIGABRT" in (first.reason or "")
    assert any("Pallets are inspected" in text for text in texts)
    assert second.peak_rss_mb is not None and second.peak_rss_mb > 10
    assert (supervisor.started, supervisor.replaced) == (2, 1)


@pytest.mark.usefixtures("hostile")
def test_in_process_isolation_reports_errors_too(tmp_path: Path) -> None:
    raised, ok = _files(tmp_path / "docs", ["RAISE", "OK"])
    settings = Settings(ingest={"isolation": "none"})
    report = DocSight(tmp_path / "col", settings=settings).ingest([raised, ok])
    assert report.files[0].error_code == "internal_error"
    assert report.files[1].status == "added"
    assert report.files[1].peak_memory_mb is None  # no worker measured it


def test_unchanged_files_start_no_worker(corpus: Path, tmp_path: Path) -> None:
    ds = DocSight(tmp_path / "col")
    first = ds.ingest([corpus])
    assert first.added and not first.failed
    pipeline = _pipeline(ds)
    started = time.perf_counter()
    again = pipeline.run([corpus])
    assert {f.status for f in again.files} == {"skipped"}
    assert pipeline.supervisor is not None and pipeline.supervisor.started == 0
    assert time.perf_counter() - started < 2.0


def test_duplicate_files_in_one_batch_are_parsed_once(corpus: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    copy.mkdir()
    source = corpus / "guide.md"
    (copy / "guide-copy.md").write_bytes(source.read_bytes())
    report = DocSight(tmp_path / "col").ingest([source, copy / "guide-copy.md"])
    first, second = report.files
    assert first.status == "added"
    assert second.status == "skipped" and second.reason == f"same content as {source.resolve()}"


def test_misnamed_files_are_refused_with_a_reason(tmp_path: Path) -> None:
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
    (tmp_path / "scan.pdf").write_bytes(png)
    (tmp_path / "notes.docx").write_bytes(b"%PDF-1.7\n%junk\n")
    report = DocSight(tmp_path / "col").ingest([tmp_path / "scan.pdf", tmp_path / "notes.docx"])
    first, second = report.files
    assert first.error_code == "content_mismatch"
    assert first.reason == (
        "named .pdf, but the content is a PNG image; rename the file to match its content"
    )
    assert second.error_code == "content_mismatch" and "a PDF" in (second.reason or "")


def test_vision_model_describes_pictures_from_the_workers(
    report_pdf: Path, tmp_path: Path, fake_llm: FakeLLM
) -> None:
    # One answer that fits every question the describer asks (layout, picture, page).
    fake_llm.default = ok(
        json.dumps(
            {"layout": "vertical", "picture_class": "chart", "description": "Revenue by region."}
        )
    )
    vlm = {"model": "vision", "base_url": fake_llm.base_url, "cache": False, "max_retries": 0}
    ds = DocSight(tmp_path / "col", settings=Settings(vlm=vlm))
    assert ds.settings.ingest.isolation == "process"
    report = ds.ingest([report_pdf])
    assert report.added, report.files
    assert fake_llm.chat_requests  # the worker process called the endpoint
    described = [e for e in ds.document(report_pdf.name).elements if e.attrs.get("described_by")]
    assert described and all(e.attrs["described_by"] == "vlm" for e in described)
    assert any(e.attrs.get("description") == "Revenue by region." for e in described)


def test_time_budget_grows_with_pages_up_to_a_ceiling() -> None:
    limits = IngestSettings(timeout_s=120, per_page_s=6, max_timeout_s=1800)
    assert limits.budget() == (120, 240)  # CPU: twice the wall clock by default
    assert limits.budget(10) == (180, 360)
    assert limits.budget(1000) == (1800, 3600)
    assert IngestSettings(timeout_s=10, cpu_s=30).budget(5) == (10 + 30, 30 * 4)
    assert IngestSettings(cpu_s=-1).budget(5)[1] is None
    assert IngestSettings(workers=3).worker_count() == 3
