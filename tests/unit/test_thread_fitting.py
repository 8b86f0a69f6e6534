"""Threads of the onnxruntime sessions that run at the same time fit the cores (issue 17): the
parse workers' OCR and layout sessions share the machine instead of each taking every core."""

from __future__ import annotations

import pytest

from docsight.settings import IngestSettings, thread_share


def test_each_session_gets_an_equal_share_of_the_cores_and_at_least_one() -> None:
    assert thread_share(2, cores=2) == 1
    assert thread_share(1, cores=2) == 2
    assert thread_share(3, cores=2) == 1  # more sessions than cores: one each, never zero
    assert thread_share(2, cores=8) == 4
    assert thread_share(3, cores=8) == 2
    assert thread_share(0, cores=4) == 4  # no concurrent session counts as one


def test_sessions_never_ask_for_more_threads_than_cores_when_each_can_have_one() -> None:
    for cores in range(1, 17):
        for sessions in range(1, cores + 1):
            assert 1 <= sessions * thread_share(sessions, cores=cores) <= cores


def test_parse_workers_share_the_cores_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DOCSIGHT_INGEST_MODEL_THREADS", raising=False)
    monkeypatch.delenv("DOCSIGHT_INGEST_WORKERS", raising=False)
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    assert IngestSettings().worker_count() == 2
    assert IngestSettings().model_thread_count() == 1  # 2 workers x 1 thread on 2 cores
    monkeypatch.setattr("os.cpu_count", lambda: 8)
    assert IngestSettings().model_thread_count() == 4  # min(2, cores) workers by default


def test_the_setting_still_chooses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    monkeypatch.setenv("DOCSIGHT_INGEST_MODEL_THREADS", "0")
    assert IngestSettings().model_thread_count() == 0  # onnxruntime's own default
    monkeypatch.setenv("DOCSIGHT_INGEST_MODEL_THREADS", "3")
    assert IngestSettings().model_thread_count() == 3
    monkeypatch.setenv("DOCSIGHT_INGEST_MODEL_THREADS", "-1")
    assert IngestSettings(workers=1).model_thread_count() == 2
