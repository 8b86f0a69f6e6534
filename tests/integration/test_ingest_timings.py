"""Per-file timings of an ingestion (issue 17, "profile first"): wall and CPU seconds per stage,
what each model cost in the worker, and what the file held, carried back to ``FileOutcome``.

Two generated PDFs go through the real worker processes: a born-digital report (a ruled table,
a picture without text, which picture OCR reads) and an image-only scan (page OCR, the layout
model and table structure). Durations are not asserted, only that the keys are there and agree.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from docsight import DocSight
from docsight.cli.main import app
from docsight.ingest.report import FileOutcome
from docsight.settings import Settings
from fixtures import pdfgen, scangen

#: Wall and CPU in the worker (``verify``, ``parse``, ``describe``, ``chunk``) and in the parent.
STAGES = ("read", "verify", "parse", "describe", "chunk", "embed", "graph", "store")
COUNTS = ("count.pages", "count.tables", "count.pictures", "count.pictures_ocr", "count.chunks")
MODEL_FIELDS = ("calls", "pixels", "wall", "cpu")


@pytest.fixture(scope="module")
def ingested(require_ocr: None, tmp_path_factory: pytest.TempPathFactory) -> dict[str, FileOutcome]:
    docs = tmp_path_factory.mktemp("timing-docs")
    pdfgen.make_report(docs / "report.pdf")
    # A small scan keeps the models quick: 100 dpi renders, read by OCR at 100 dpi.
    scangen.make_scans(docs / "scans", dpi=100)
    settings = Settings()
    settings.parse.ocr_dpi = 100
    report = DocSight(tmp_path_factory.mktemp("timing-col") / "col", settings=settings).ingest(
        [docs / "report.pdf", docs / "scans" / "scan-image-only.pdf"]
    )
    outcomes = {Path(f.path).name: f for f in report.files}
    assert [f.status for f in outcomes.values()] == ["added", "added"], report
    return outcomes


def _models(timings: dict[str, float]) -> set[str]:
    return {k.split(".")[1] for k in timings if k.startswith("model.")}


def _check_model(timings: dict[str, float], name: str) -> None:
    key = f"model.{name}"
    assert all(f"{key}.{f}" in timings for f in MODEL_FIELDS), sorted(timings)
    assert timings[f"{key}.calls"] >= 1 and timings[f"{key}.pixels"] >= 16 * timings[f"{key}.calls"]
    assert timings[f"{key}.wall"] > 0 and timings[f"{key}.cpu"] >= 0


def test_every_stage_has_wall_and_cpu_seconds(ingested: dict[str, FileOutcome]) -> None:
    for outcome in ingested.values():
        t = outcome.timings
        for stage in STAGES:
            assert stage in t and f"{stage}.cpu" in t, (outcome.name, stage, sorted(t))
            assert t[stage] >= 0 and t[f"{stage}.cpu"] >= 0
        assert outcome.peak_memory_mb is not None and outcome.peak_memory_mb > 0
        # This process, with the encoder and the store loaded: some hundreds of MiB.
        assert outcome.process_peak_memory_mb is not None
        assert outcome.process_peak_memory_mb > 100


def test_counts_match_the_outcome(ingested: dict[str, FileOutcome]) -> None:
    for outcome in ingested.values():
        t = outcome.timings
        assert all(k in t for k in COUNTS), sorted(t)
        assert t["count.pages"] == outcome.pages
        assert t["count.chunks"] == outcome.chunks > 0
        assert 0 <= t["count.pictures_ocr"] <= t["count.pictures"]
    report = ingested["report.pdf"].timings
    assert report["count.pages"] == 3 and report["count.tables"] >= 1
    assert report["count.pictures"] >= 1


def test_born_digital_pages_run_no_page_model_but_picture_ocr(
    ingested: dict[str, FileOutcome],
) -> None:
    t = ingested["report.pdf"].timings
    # The text layer answers every page; only the picture (no text of its own, 8 % of its page)
    # goes to OCR, while describing.
    assert _models(t) <= {"picture_ocr"}
    assert t["count.pictures_ocr"] >= 1
    _check_model(t, "picture_ocr")
    assert t["model.picture_ocr.calls"] == t["count.pictures_ocr"]
    assert t["model.picture_ocr.wall"] <= t["describe"]


def test_a_scan_runs_ocr_layout_and_table_structure_while_parsing(
    ingested: dict[str, FileOutcome],
) -> None:
    t = ingested["scan-image-only.pdf"].timings
    for name in ("ocr", "layout", "table"):
        _check_model(t, name)
    # One OCR and one layout call per page (the cache is fresh), a table on page 1.
    assert t["model.ocr.calls"] == t["model.layout.calls"] == t["count.pages"] == 2
    assert t["count.tables"] >= 1
    in_models = sum(t[f"model.{n}.wall"] + t.get(f"model.{n}.load", 0.0) for n in _models(t))
    assert in_models <= t["parse"] + t["describe"] + 0.01


def test_json_output_shows_the_timings(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    pdfgen.make_report(docs / "report.pdf")
    result = CliRunner().invoke(
        app, ["--collection", str(tmp_path / "col"), "ingest", str(docs), "--json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    (entry,) = data["files"]
    for key in ("parse", "parse.cpu", "describe.cpu", "embed.cpu", "count.pages"):
        assert key in entry["timings"], sorted(entry["timings"])
    assert entry["peak_memory_mb"] > 0 and entry["process_peak_memory_mb"] > 0
    again = CliRunner().invoke(
        app, ["--collection", str(tmp_path / "col"), "ingest", str(docs), "--json"]
    )
    (skipped,) = json.loads(again.output)["files"]
    assert skipped["status"] == "skipped"
    assert skipped["peak_memory_mb"] is None and skipped["process_peak_memory_mb"] is None
