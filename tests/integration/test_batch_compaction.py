"""A long batch compacts the collection between files (``ingest.compact_every``, issue 17).

Every stored file adds a small file to each table, and each read of the ingest (the unchanged
check, the commit) scans them all: without compaction a batch of small files slows down file by
file (``benchmarks/results/batch_compaction.md``). These tests ingest small text files in
process and watch the store's optimize calls and the tables' files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from docsight import DocSight
from docsight.errors import InvalidSettingError, StoreError
from docsight.index.lance import LanceStore
from docsight.settings import Settings

TOPICS = ["pumps", "valves", "seals", "budgets", "invoices", "ledgers", "gauges"]


def _notes(folder: Path) -> Path:
    folder.mkdir()
    for i, topic in enumerate(TOPICS):
        (folder / f"{i}-{topic}.md").write_text(
            f"# {topic.title()}\n\nThe {topic} register lists every one of our {topic}, "
            f"checked each quarter by the {topic} team.\n"
        )
    return folder


def _watched(ds: DocSight, calls: list[tuple[bool, int]], fail: bool = False) -> None:
    """Record each optimize: whether it updated the indexes, and the documents table's files
    at that moment (what the reads of the next files scan)."""
    store = ds.store
    assert isinstance(store, LanceStore)
    original = store.optimize

    def optimize(*, indexes: bool = True) -> list[str]:
        table = store._table("documents")
        files = table.stats()["fragment_stats"]["num_fragments"] if table is not None else 0
        calls.append((indexes, files))
        if fail and not indexes:
            raise StoreError("the disk went away")
        return original(indexes=indexes)

    store.optimize = optimize  # type: ignore[method-assign]


def _settings(every: int) -> Settings:
    return Settings(ingest={"isolation": "none", "compact_every": every})


def test_a_batch_is_compacted_every_few_files_and_indexed_at_the_end(tmp_path: Path) -> None:
    folder = _notes(tmp_path / "notes")
    ds = DocSight(tmp_path / "col", settings=_settings(3))
    calls: list[tuple[bool, int]] = []
    _watched(ds, calls)
    report = ds.ingest(folder)
    assert [f.status for f in report.files] == ["added"] * len(TOPICS)
    # After the 3rd and the 6th file (three new files each time, the first compaction's one
    # file before them), then the final optimize with the indexes over the last file.
    assert [indexes for indexes, _ in calls] == [False, False, True]
    assert [files for _, files in calls][1:] == [4, 2]
    assert report.warnings == []
    for topic in TOPICS:
        hits = ds.search(f"{topic} register", k=1)
        assert hits and topic in hits[0].text.lower()
    assert ds.store.check().ok


def test_the_last_file_leaves_compaction_to_the_final_optimize(tmp_path: Path) -> None:
    ds = DocSight(tmp_path / "col", settings=_settings(len(TOPICS)))
    calls: list[tuple[bool, int]] = []
    _watched(ds, calls)
    ds.ingest(_notes(tmp_path / "notes"))
    assert [indexes for indexes, _ in calls] == [True]


def test_zero_compacts_only_at_the_end(tmp_path: Path) -> None:
    ds = DocSight(tmp_path / "col", settings=_settings(0))
    calls: list[tuple[bool, int]] = []
    _watched(ds, calls)
    ds.ingest(_notes(tmp_path / "notes"))
    assert calls == [(True, len(TOPICS))]


def test_a_failed_compaction_is_a_warning_and_the_files_stay_stored(tmp_path: Path) -> None:
    ds = DocSight(tmp_path / "col", settings=_settings(2))
    calls: list[Any] = []
    _watched(ds, calls, fail=True)
    report = ds.ingest(_notes(tmp_path / "notes"))
    assert [f.status for f in report.files] == ["added"] * len(TOPICS)
    # Said once, however many compactions failed; the final optimize still ran.
    assert len(calls) == 4 and calls[-1][0] is True
    assert len(report.warnings) == 1
    assert "compaction between files failed" in report.warnings[0]
    assert "the disk went away" in report.warnings[0]
    assert {d.name for d in ds.documents()} == {f"{i}-{t}.md" for i, t in enumerate(TOPICS)}


@pytest.mark.parametrize("value", [-1, "often"])
def test_a_bad_setting_is_refused_naming_it(value: object) -> None:
    with pytest.raises(InvalidSettingError, match="DOCSIGHT_INGEST_COMPACT_EVERY"):
        Settings(ingest={"compact_every": value})
