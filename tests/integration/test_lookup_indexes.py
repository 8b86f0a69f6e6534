"""Lookup indexes (``docsight.index.lookup``): BTREE indexes on ``id`` and ``doc_id`` that a
large collection gets at its final optimize. They change how fast rows are found, never which:
every read below returns the same with and without them, a damaged one is found by ``check``
and rebuilt by ``check --repair``, and a small collection does not get them."""

from __future__ import annotations

import errno
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from docsight import DocSight
from docsight.index import lookup
from docsight.settings import Settings
from fixtures import damage
from fixtures.corpus_fixtures import write_corpus

INLINE = Settings(ingest={"isolation": "none"})
QUERY = "warranty two years"


@pytest.fixture(scope="module")
def collections(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, Any]]:
    """The same files ingested into two collections: without lookup indexes (the default
    threshold, far above these tables' rows) and with them (a threshold of one row). A second
    ingest then changes one file and adds another, so the indexes have rows deleted, added and
    compacted since they were built."""
    base = tmp_path_factory.mktemp("lookup")
    corpus = write_corpus(base / "corpus")
    plain = DocSight(base / "plain", settings=INLINE)
    indexed = DocSight(base / "indexed", settings=INLINE)
    indexed._encoder = plain.encoder()

    def ingest(ds: DocSight, added: int) -> None:
        with pytest.MonkeyPatch.context() as patch:
            if ds is indexed:
                patch.setattr(lookup, "MIN_ROWS", 1)
            report = ds.ingest([corpus])
        assert not report.failed and len(report.added) == added

    for ds in (plain, indexed):
        ingest(ds, 2)
    faq = corpus / "faq.txt"
    faq.write_text(faq.read_text() + "\nShipping takes five working days.\n")
    (corpus / "notes.md").write_text("# Notes\n\nThe warranty can be extended by a year.\n")
    for ds in (plain, indexed):
        ingest(ds, 2)
    yield base / "plain", base / "indexed", plain.encoder()


def _ds(collection: Path, encoder: Any) -> DocSight:
    ds = DocSight(collection, settings=INLINE)
    ds._encoder = encoder
    return ds


def _lookup_indexes(ds: DocSight) -> set[str]:
    return {i for i in ds.info().indexes if "(BTree)" in i}


def test_a_large_table_gets_its_lookup_indexes_and_a_small_one_none(
    collections: tuple[Path, Path, Any],
) -> None:
    plain, indexed, encoder = collections
    assert _lookup_indexes(_ds(plain, encoder)) == set()
    ds = _ds(indexed, encoder)
    with_rows = [
        name
        for name in lookup.LOOKUP_COLUMNS
        if (table := ds.store._table(name)) is not None and table.count_rows()
    ]
    assert {"documents", "chunks", "elements", "pages"} <= set(with_rows)
    expected = {
        f"{name}.{column}_idx (BTree)"
        for name in with_rows
        for column in lookup.LOOKUP_COLUMNS[name]
    }
    assert _lookup_indexes(ds) == expected


def _info(info: Any) -> dict[str, Any]:
    assert info is not None
    return dict(info.model_dump(exclude={"ingested_at"}))


def test_reads_are_the_same_with_lookup_indexes(collections: tuple[Path, Path, Any]) -> None:
    plain_ds, indexed_ds = (_ds(c, collections[2]) for c in collections[:2])
    plain, indexed = plain_ds.store, indexed_ds.store
    docs = plain.list_documents()
    assert len(docs) == 3
    for doc in docs:
        assert _info(indexed.has_document(doc.id)) == _info(plain.has_document(doc.id))
        assert [_info(i) for i in indexed.documents_by_source(doc.source)] == [
            _info(i) for i in plain.documents_by_source(doc.source)
        ]
        chunks = plain.document_chunks(doc.id)
        assert chunks and indexed.document_chunks(doc.id) == chunks
        ids = [c.id for c in chunks]
        assert indexed.get_chunks(ids) == plain.get_chunks(ids)
        elements = [e for c in chunks for e in c.element_ids]
        assert indexed.get_elements(elements) == plain.get_elements(elements)
        assert indexed.get_document(doc.id) == plain.get_document(doc.id)
        scoped = [(h.chunk_id, round(h.score, 5)) for h in plain.text_search(QUERY, 5, [doc.id])]
        assert [
            (h.chunk_id, round(h.score, 5)) for h in indexed.text_search(QUERY, 5, [doc.id])
        ] == scoped
    assert [h.chunk_id for h in indexed_ds.search(QUERY, k=5)] == [
        h.chunk_id for h in plain_ds.search(QUERY, k=5)
    ]


def test_ensuring_twice_builds_nothing_new(
    collections: tuple[Path, Path, Any], tmp_path: Path
) -> None:
    collection = damage.copy_collection(collections[1], tmp_path / "col")
    store = _ds(collection, collections[2]).store
    with store._lock:
        assert lookup.ensure_lookup_indexes(store, min_rows=1) == []


def test_a_damaged_lookup_index_is_found_and_rebuilt(
    collections: tuple[Path, Path, Any], tmp_path: Path
) -> None:
    collection = damage.copy_collection(collections[1], tmp_path / "col")
    broken = damage.damage_index(collection, "chunks", "doc_id_idx")
    assert broken
    ds = _ds(collection, collections[2])
    report = ds.check()
    assert [(p.code, p.table) for p in report.errors] == [("index_damaged", "chunks")]
    repaired = ds.check(repair=True)
    assert repaired.ok, repaired.problems
    assert any("rebuilt the BTree index of table chunks" in r for r in repaired.repairs)
    assert not repaired.reingest
    ds = _ds(collection, collections[2])
    assert ds.check().ok
    doc = ds.documents()[0]
    assert ds.store.document_chunks(doc.id)
    assert "chunks.doc_id_idx (BTree)" in _lookup_indexes(ds)


def test_an_index_that_cannot_be_built_fails_no_file(
    collections: tuple[Path, Path, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A lookup index only saves time: failing to build one (a full disk) is logged, and the
    ingest, its final optimize and every search go on without it."""

    def refuse(table: Any, column: str) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(lookup, "MIN_ROWS", 1)
    monkeypatch.setattr(lookup, "create_lookup_index", refuse)
    ds = _ds(tmp_path / "col", collections[2])
    with caplog.at_level(logging.WARNING, logger="docsight.index.maintenance"):
        report = ds.ingest([write_corpus(tmp_path / "corpus")])
    assert not report.failed and len(report.added) == 2 and not report.warnings
    assert "lookup indexes could not be built yet" in caplog.text
    assert not _lookup_indexes(ds)
    assert ds.check().ok and ds.search(QUERY, k=3)
    # The final optimize still ran to the end: one version of each table is left.
    for table in (tmp_path / "col" / "tables").glob("*.lance"):
        assert len(list((table / "_versions").glob("*.manifest"))) == 1, table.name
