"""How the store's optimize compacts tables: bounded with Lance's package, lancedb's otherwise.

The bounded compaction leaves full files alone, so an ingest's optimize rewrites only the rows
that came since; both ways must end with the same rows, found by the same searches, one table
version, and deleted rows gone from the files.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from docsight.index import compaction
from docsight.index.lance import LanceStore
from fixtures.stored import paragraph_document

DIM = 8
WORDS = ["pumps", "valves", "seals", "budgets", "invoices", "ledgers", "gauges", "boilers"]


def _vector(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def _put(store: LanceStore, n: int) -> str:
    """Document ``n``: three chunks about ``WORDS[n]``, each with its own vector."""
    doc_id = f"{n + 1:032x}"
    word = WORDS[n]
    texts = [f"The {word} register, part {k}, lists every {word} we keep." for k in range(3)]
    parsed, chunks = paragraph_document(doc_id, f"{word}.txt", texts)
    vectors = np.stack([_vector(10 * n + k) for k in range(3)])
    store.put_document(parsed, chunks, vectors, "test/1")
    return doc_id


@pytest.fixture
def store(tmp_path: Path) -> Iterator[LanceStore]:
    instance = LanceStore(tmp_path / "collection")
    instance.bind_encoder("test-encoder", DIM)
    yield instance


def _table(store: LanceStore, name: str = "chunks") -> Any:
    table = store._table(name)
    assert table is not None
    return table


def _files(store: LanceStore) -> list[tuple[int, int, str | None]]:
    """The chunks table's fragments: id, rows, and the data file (a rewrite changes it)."""
    out = []
    for fragment in _table(store).to_lance().get_fragments():
        meta = fragment.metadata
        assert meta.deletion_file is None, "deleted rows were left in the files"
        out.append((fragment.fragment_id, fragment.count_rows(), meta.files[0].path))
    return out


def _file_ids(store: LanceStore, fragment_id: int) -> str:
    """The document ids of the rows in one fragment, joined."""
    fragment = _table(store).to_lance().get_fragment(fragment_id)
    return " ".join(fragment.to_table(columns=["doc_id"]).column("doc_id").to_pylist())


def _same_answers(store: LanceStore, present: list[int]) -> None:
    """Every stored document is found by words and by vector, and nothing else is."""
    for n in range(len(WORDS)):
        hits = store.text_search(WORDS[n], 10)
        if n in present:
            assert hits and {h.doc_id for h in hits} == {f"{n + 1:032x}"}
            nearest = store.vector_search(_vector(10 * n + 1), 1)
            assert nearest[0].doc_id == f"{n + 1:032x}"
        else:
            assert hits == []
    assert _table(store).count_rows() == 3 * len(present)
    assert len(_table(store).list_versions()) == 1, "older versions were kept"
    assert store.check().ok


@pytest.mark.skipif(
    not compaction.bounded_compaction(), reason="needs pylance 9 (pip install 'docsight[large]')"
)
def test_full_files_are_left_alone_and_only_new_rows_are_rewritten(
    store: LanceStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(compaction, "TARGET_ROWS", 6)
    for n in range(4):
        _put(store, n)
    assert len(_files(store)) == 4  # one write per document
    store.optimize()
    # Lance merges neighbouring files that are indexed alike: the first document's file was
    # indexed at its commit (the text index is built with the first rows), the others not.
    full = [f for f in _files(store) if f[1] >= 6]
    assert full and all(rows <= 6 for _, rows, _ in _files(store))
    _same_answers(store, [0, 1, 2, 3])

    # More documents, more optimizes: files that were full are never rewritten.
    for n in (4, 5, 6):
        _put(store, n)
        store.optimize()
        files = _files(store)
        assert all(f in files for f in full) and all(rows <= 6 for _, rows, _ in files)
        full = [f for f in files if f[1] >= 6]
    assert len(full) >= 2
    _same_answers(store, [0, 1, 2, 3, 4, 5, 6])

    # Deleting a document rewrites the full file that held its rows, without them.
    held = [f for f in full if f"{2:032x}" in _file_ids(store, f[0])]
    store.delete_document(f"{2:032x}")
    store.optimize()
    files = _files(store)
    assert held and held[0] not in files and sum(r for _, r, _ in files) == 18
    _same_answers(store, [0, 2, 3, 4, 5, 6])


@pytest.mark.skipif(
    not compaction.bounded_compaction(), reason="needs pylance 9 (pip install 'docsight[large]')"
)
def test_compacting_without_the_indexes_leaves_new_rows_to_the_final_optimize(
    store: LanceStore,
) -> None:
    from docsight.index.maintenance import indexes_lag

    _put(store, 0)  # its commit builds the text index
    for n in (1, 2, 3):
        _put(store, n)
    assert len(_files(store)) == 4
    assert store.optimize(indexes=False) == []
    # The three unindexed files are one now (the first, indexed, is kept apart: Lance merges
    # files indexed alike), old versions are gone; the new rows are not indexed yet, and a
    # search still finds them (by a scan beside the index).
    assert sorted(rows for _, rows, _ in _files(store)) == [3, 9]
    assert _table(store, "documents").stats()["fragment_stats"]["num_fragments"] == 1
    assert indexes_lag(store)
    _same_answers(store, [0, 1, 2, 3])
    store.optimize()
    assert not indexes_lag(store)
    _same_answers(store, [0, 1, 2, 3])


def _segments(store: LanceStore, name: str = "chunks") -> list[int]:
    (index,) = [i for i in _table(store, name).to_lance().describe_indices() if i.segments]
    return [s.size_bytes for s in index.segments]


def _scores(store: LanceStore) -> list[list[tuple[float, str]]]:
    """Every chunk a query finds, with its score (ties in any order: sorted)."""
    found = []
    for word in WORDS:
        hits = store.text_search(f"{word} register part", 50)
        found.append(sorted((-round(h.score, 5), h.chunk_id or "") for h in hits))
    return found


@pytest.mark.skipif(
    not compaction.bounded_compaction(), reason="needs pylance 9 (pip install 'docsight[large]')"
)
def test_a_text_index_in_segments_scores_as_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stores = []
    for limit in (1, 1 << 30):  # a new segment every optimize / always the one
        monkeypatch.setattr(compaction, "SEGMENT_BYTES", limit)
        store = LanceStore(tmp_path / f"col-{limit}")
        store.bind_encoder("test-encoder", DIM)
        for n in range(len(WORDS)):
            _put(store, n)
            store.optimize()
        stores.append(store)
    split, whole = stores
    # The first document's rows were indexed at its commit; each optimize after it added its
    # own segment, or merged into the one.
    assert len(_segments(split)) == len(WORDS) and len(_segments(whole)) == 1
    assert _scores(split) == _scores(whole)
    _same_answers(split, list(range(len(WORDS))))
    # Below the limit, new rows go into the newest segment (a deleted document's segment
    # goes with its rows).
    monkeypatch.setattr(compaction, "SEGMENT_BYTES", 1 << 30)
    newest = _segments(split)[-1]
    split.delete_document(f"{2:032x}")  # document 1
    _put(split, 1)
    split.optimize()
    assert len(_segments(split)) < len(WORDS) and _segments(split)[-1] > newest
    _same_answers(split, list(range(len(WORDS))))


@pytest.mark.skipif(
    not compaction.bounded_compaction(), reason="needs pylance 9 (pip install 'docsight[large]')"
)
def test_rows_added_after_the_vector_index_is_built_are_compacted_and_found(
    tmp_path: Path,
) -> None:
    # Lance's default gave each optimize's rows a vector segment of their own, and files of
    # different segments are never compacted together: a file and a segment per ingest. (An
    # IVF-PQ index needs a few hundred vectors of some width: the 8-wide ones above are too few.)
    dim, per_doc = 64, 96
    rng = np.random.default_rng(3)
    store = LanceStore(tmp_path / "collection", vector_index_min_rows=3 * per_doc)
    store.bind_encoder("test-encoder", dim)
    kept = []
    for n in range(len(WORDS)):
        texts = [f"{WORDS[n]} entry {k}" for k in range(per_doc)]
        parsed, chunks = paragraph_document(f"{n + 1:032x}", f"{WORDS[n]}.txt", texts)
        vectors = rng.normal(size=(per_doc, dim)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        store.put_document(parsed, chunks, vectors, "test/1")
        store.optimize()
        kept.append((f"{n + 1:032x}", vectors[n]))
    dataset = _table(store).to_lance()
    segments = {i.name: len(i.segments) for i in dataset.describe_indices() if i.segments}
    assert any("vector" in name for name in segments) and set(segments.values()) == {1}
    assert len(_files(store)) <= 2  # the first document's, indexed at its commit, and the rest
    for doc_id, vector in kept:
        assert store.vector_search(vector, 1)[0].doc_id == doc_id


def test_without_lance_a_compaction_between_files_leaves_large_tables_alone(
    store: LanceStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # lancedb's optimize rewrites a whole table below a million rows and merges its indexes:
    # every 32 files of a batch, for a large table, that would cost more than it saves.
    monkeypatch.setattr(compaction, "bounded_compaction", lambda: False)
    monkeypatch.setattr(compaction, "TARGET_ROWS", 6)
    for n in range(4):
        _put(store, n)
    assert store.optimize(indexes=False) == []
    assert len(_files(store)) == 4  # 12 chunk rows: past the bound, left alone
    assert _table(store, "documents").stats()["fragment_stats"]["num_fragments"] == 1
    store.optimize()
    assert len(_files(store)) == 1
    _same_answers(store, [0, 1, 2, 3])


def test_without_lance_lancedb_optimizes_to_the_same_rows(
    store: LanceStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(compaction, "bounded_compaction", lambda: False)
    for n in range(4):
        _put(store, n)
    store.optimize()
    stats = _table(store).stats()["fragment_stats"]
    assert stats["num_fragments"] == 1  # lancedb rewrites every file below a million rows
    _same_answers(store, [0, 1, 2, 3])
    store.delete_document(f"{1:032x}")
    store.optimize()
    _same_answers(store, [1, 2, 3])


@pytest.mark.parametrize("module", [None, types.SimpleNamespace(__version__="14.0.2")])
def test_an_absent_or_untested_lance_falls_back(
    monkeypatch: pytest.MonkeyPatch, module: object
) -> None:
    monkeypatch.setitem(sys.modules, "lance", module)  # None: importing it fails
    compaction.bounded_compaction.cache_clear()
    try:
        assert compaction.bounded_compaction() is False
    finally:
        compaction.bounded_compaction.cache_clear()
