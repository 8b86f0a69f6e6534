"""The Ray engine's parts that need no cluster: the default install never imports ray, a
missing ``distributed`` extra and bad options are one-line errors, the settings carry it, and a
parse task works from the bytes shipped with it."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from docsight import Settings
from docsight.cli.main import app
from docsight.errors import InvalidSettingError

runner = CliRunner()


def test_importing_docsight_and_its_pipeline_does_not_import_ray() -> None:
    code = (
        "import sys, docsight, docsight.ingest.pipeline, docsight.cli.main; "
        "print('ray' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_without_ray_the_engine_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("Some text to ingest.\n")
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    args = ["ingest", str(tmp_path / "a.txt"), "-c", str(tmp_path / "col"), "--engine", "ray"]
    result = runner.invoke(app, args)
    assert result.exit_code == 1, result.output
    assert "missing_dependency" in result.output
    assert "docsight[distributed]" in result.output and "--engine ray" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    json_result = runner.invoke(app, [*args, "--json"])
    assert '"code": "missing_dependency"' in json_result.output


def test_engine_options_are_checked(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("Some text to ingest.\n")
    base = ["ingest", str(tmp_path / "a.txt"), "-c", str(tmp_path / "col")]
    bad = runner.invoke(app, [*base, "--engine", "spark"])
    assert bad.exit_code == 2 and "--engine must be local or ray" in bad.output
    stray = runner.invoke(app, [*base, "--address", "auto"])
    assert stray.exit_code == 2 and "--engine ray" in stray.output
    assert not (tmp_path / "col").exists()  # refused before anything was written


def test_engine_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings().ingest.engine == "local"
    monkeypatch.setenv("DOCSIGHT_INGEST_ENGINE", "ray")
    monkeypatch.setenv("DOCSIGHT_INGEST_RAY_ADDRESS", "ray://head:10001")
    monkeypatch.setenv("DOCSIGHT_INGEST_RAY_EMBEDDERS", "3")
    ingest = Settings().ingest
    assert (ingest.engine, ingest.ray_address, ingest.ray_embedders) == (
        "ray",
        "ray://head:10001",
        3,
    )
    monkeypatch.setenv("DOCSIGHT_INGEST_ENGINE", "dask")
    with pytest.raises(InvalidSettingError, match="DOCSIGHT_INGEST_ENGINE"):
        Settings()


def test_a_task_parses_shipped_bytes_when_its_node_cannot_see_the_file(tmp_path: Path) -> None:
    """A node without the driver's file parses the bytes that came with the task, under the
    file's name, and the document keeps the driver's path (run here without a cluster)."""
    from docsight.document.ids import bytes_sha256
    from docsight.ingest.ray_engine import parse_task
    from docsight.ingest.worker import ParseJob, WorkerSetup
    from docsight.parsers.sniff import TEXT

    data = b"Field notes\n\nThe pump is serviced every spring before the first frost.\n"
    elsewhere = "/srv/driver-only/notes/field-notes.txt"  # not on this machine
    job = ParseJob(path=elsewhere, sha256=bytes_sha256(data), media_type=TEXT)
    setup = WorkerSetup(settings=Settings(ingest={"isolation": "none"}))
    result, texts = parse_task(setup, job, data)
    assert result.output is not None, result.reason
    document = result.output.parsed.document
    assert (document.source, document.name) == (elsewhere, "field-notes.txt")
    assert texts and "serviced every spring" in " ".join(texts)
    # A node whose file at that path has other bytes must not parse it either.
    local = tmp_path / "field-notes.txt"
    local.write_bytes(b"Other bytes entirely.\n")
    moved = ParseJob(path=str(local), sha256=job.sha256, media_type=TEXT)
    result, texts = parse_task(setup, moved, data)
    assert result.output is not None and "serviced every spring" in " ".join(texts)
    assert result.output.parsed.document.source == str(local)


def test_an_address_that_does_not_answer_is_a_clear_error_at_once(tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="ray is not installed (pip install '.[distributed]')")
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    (tmp_path / "a.txt").write_text("Some text to ingest.\n")
    args = ["ingest", str(tmp_path / "a.txt"), "-c", str(tmp_path / "col"), "--engine", "ray"]
    started = time.perf_counter()
    result = runner.invoke(app, [*args, "--address", f"127.0.0.1:{port}", "--json"])
    assert time.perf_counter() - started < 30
    assert result.exit_code == 1, result.output
    error = json.loads(result.output)["error"]
    assert error["code"] == "engine_unavailable"
    assert f"127.0.0.1:{port}" in error["message"] and "--address" in error["message"]
