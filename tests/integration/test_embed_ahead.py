"""A small next file is embedded while the current one is stored (``ingest.embedding``).

With worker processes, the next file's chunks are often back before the current file's store
begins; they are then embedded on the ingest's embedding thread meanwhile. What is stored must
be exactly what an ingest without that overlap stores (``isolation="none"`` never looks ahead:
its jobs run only when their turn comes).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from docsight import DocSight
from docsight.document.ids import bytes_sha256
from docsight.ingest.supervisor import Supervisor
from docsight.ingest.worker import ParseJob, WorkerSetup
from docsight.parsers.sniff import TEXT
from docsight.settings import Settings

TOPICS = ["pallets", "forklifts", "ladders", "conveyors", "loading docks", "shelving", "gloves"]


def _notes(folder: Path) -> list[Path]:
    folder.mkdir(parents=True)
    paths = []
    for i, topic in enumerate(TOPICS):
        path = folder / f"note-{i}.md"
        path.write_text(
            f"# {topic.title()}\n\n{topic.capitalize()} are checked every week by the site "
            f"team. Note {i} lists what was found and repaired.\n\n## Findings\n\nThe {topic} "
            f"in hall {i} passed; two items were tagged for repair before the next audit.\n"
        )
        paths.append(path)
    return paths


def _vectors(ds: DocSight) -> dict[str, np.ndarray]:
    rows = ds.store._table("chunks").to_arrow().to_pylist()  # type: ignore[attr-defined]
    return {row["id"]: np.asarray(row["vector"], dtype=np.float32) for row in rows}


def test_files_embedded_ahead_are_stored_as_without_it(tmp_path: Path) -> None:
    notes = _notes(tmp_path / "notes")
    ahead = DocSight(tmp_path / "ahead")
    report = ahead.ingest(notes)
    assert [f.status for f in report.files] == ["added"] * len(notes)
    # Parsing a note takes milliseconds and embedding it a tenth of a second: once the workers
    # run, the next note is back before this one is stored.
    early = [f for f in report.files if f.timings.get("count.embedded_ahead")]
    assert len(early) >= 2, [f.timings for f in report.files]
    inline = DocSight(tmp_path / "inline", settings=Settings(ingest={"isolation": "none"}))
    again = inline.ingest(notes)
    assert not any(f.timings.get("count.embedded_ahead") for f in again.files)
    got, expected = _vectors(ahead), _vectors(inline)
    assert got.keys() == expected.keys() and len(got) >= len(notes)
    for chunk_id, vector in expected.items():
        np.testing.assert_allclose(got[chunk_id], vector, atol=1e-6)
    assert [h.doc_name for h in ahead.search("forklifts checked", k=1)] == ["note-1.md"]


def test_the_supervisor_hands_out_a_finished_result_without_waiting(tmp_path: Path) -> None:
    path = tmp_path / "note.txt"
    path.write_text("Pallets are inspected weekly.\n")
    job = ParseJob(str(path), bytes_sha256(path.read_bytes()), TEXT)
    with Supervisor(WorkerSetup(Settings(ingest={"workers": 1}))) as supervisor:
        assert supervisor.ready(0) is None  # nothing submitted under that key
        supervisor.submit(0, job)
        deadline = time.monotonic() + 60
        early = supervisor.ready(0)
        while early is None and time.monotonic() < deadline:
            time.sleep(0.05)
            early = supervisor.ready(0)
        assert early is not None and early.output is not None
        assert supervisor.ready(0) is early
        assert supervisor.result(0) is early  # still there for its turn


def test_a_failing_look_ahead_fails_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(self: Supervisor, key: int) -> None:
        raise RuntimeError("no peeking")

    monkeypatch.setattr(Supervisor, "ready", broken)
    notes = _notes(tmp_path / "notes")[:3]
    report = DocSight(tmp_path / "col").ingest(notes)
    assert [f.status for f in report.files] == ["added"] * 3
    assert not any(f.timings.get("count.embedded_ahead") for f in report.files)
    assert "looking ahead to the next file failed" in caplog.text
