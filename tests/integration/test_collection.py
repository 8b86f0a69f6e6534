"""The collection lifecycle through the public API, on Markdown and text files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from filelock import FileLock

from docsight import DocSight, Settings
from docsight.errors import (
    CollectionLockedError,
    CollectionNotFoundError,
    ConfigurationError,
    DocumentNotFoundError,
    PathNotFoundError,
    SchemaVersionError,
)
from fixtures.commit_faults import Killed, commit_fails, commit_killed
from fixtures.corpus_fixtures import GUIDE


def test_ingest_then_skip_unchanged_without_loading_models(corpus: Path, tmp_path: Path) -> None:
    ds = DocSight(tmp_path / "col")
    report = ds.ingest([corpus])
    assert report.counts() == {"added": 2, "skipped": 1, "no_text": 0, "failed": 0}
    assert {f.name for f in report.added} == {"guide.md", "faq.txt"}
    # Every file of the folder is accounted for: the JSON file is reported, not ignored;
    # hidden folders are passed over silently.
    (passed,) = report.skipped
    assert passed.name == "notes.json" and "not a document type" in (passed.reason or "")
    assert "secret.md" not in {f.name for f in report.files}
    assert all(f.chunks > 0 and f.doc_id for f in report.added)
    assert sorted(d.name for d in ds.documents()) == ["faq.txt", "guide.md"]

    again = DocSight(tmp_path / "col")
    second = again.ingest([corpus])
    assert second.counts()["skipped"] == 3
    assert {f.name for f in second.skipped if f.reason == "unchanged"} == {"guide.md", "faq.txt"}
    assert again._encoder is None  # nothing was parsed or embedded


def test_search_filters_pages_and_reopen(corpus: Path, tmp_path: Path) -> None:
    DocSight(tmp_path / "col").ingest([corpus])
    ds = DocSight(tmp_path / "col")  # a fresh process view: nothing is rebuilt
    hits = ds.search("how much does the team plan cost per month", k=3)
    assert hits[0].doc_name == "guide.md" and hits[0].kind == "table"
    assert hits[0].section_path == ["Widget Guide", "Pricing"]
    assert set(hits[0].scores) == {"bm25", "dense", "page_bm25"} and hits[0].ranks["bm25"] == 1
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))

    only_faq = ds.search("widget", k=10, doc_names=["faq.txt"])
    assert only_faq and {h.doc_name for h in only_faq} == {"faq.txt"}
    with pytest.raises(DocumentNotFoundError):
        ds.search("widget", doc_names=["nope.pdf"])

    pages = ds.search("widget", k=10, unit="page")
    assert len({(h.doc_id, h.page) for h in pages}) == len(pages)
    assert all(h.unit == "page" for h in pages)
    stats = ds.info()
    assert stats.documents == 2 and any("FTS" in i for i in stats.indexes)


def test_same_content_elsewhere_is_skipped_and_changed_file_replaces(
    corpus: Path, tmp_path: Path
) -> None:
    ds = DocSight(tmp_path / "col")
    ds.ingest([corpus])
    copy = tmp_path / "copy.md"
    copy.write_text(GUIDE)
    report = ds.ingest([copy])
    assert report.skipped[0].reason.startswith("same content as")

    old_id = ds.resolve("guide.md").id
    (corpus / "guide.md").write_text(GUIDE.replace("Error E42", "Error E99"))
    report = ds.ingest([corpus])
    added = report.added
    assert len(added) == 1 and added[0].replaced == [old_id]
    assert len(ds.documents()) == 2
    texts = " ".join(h.text for h in ds.search("error licence key expired", k=10))
    assert "E99" in texts and "E42" not in texts


def test_remove_document(corpus: Path, tmp_path: Path) -> None:
    ds = DocSight(tmp_path / "col")
    ds.ingest([corpus])
    removed = ds.remove("faq.txt")
    assert removed.name == "faq.txt"
    assert [d.name for d in ds.documents()] == ["guide.md"]
    assert all(h.doc_name != "faq.txt" for h in ds.search("warranty two years", k=10))
    assert ds.store.document_chunks(removed.id) == []
    with pytest.raises(DocumentNotFoundError):
        ds.remove("faq.txt")


def test_bad_file_fails_alone_with_a_reason(corpus: Path, tmp_path: Path) -> None:
    junk = tmp_path / "junk.pdf"
    junk.write_bytes(bytes(range(256)) * 8)
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    ds = DocSight(tmp_path / "col")
    # A path that does not exist is a mistake in the command, refused before anything is made.
    with pytest.raises(PathNotFoundError, match=r"missing\.md"):
        ds.ingest([junk, empty, tmp_path / "missing.md", corpus])
    assert not (tmp_path / "col").exists()
    report = ds.ingest([junk, empty, corpus])
    failed = {f.name: f for f in report.failed}
    assert set(failed) == {"junk.pdf", "empty.txt"}
    assert failed["junk.pdf"].error_code == "unsupported_format"
    assert "binary" in (failed["junk.pdf"].reason or "")
    assert failed["empty.txt"].reason == "file is empty"
    assert len(report.added) == 2


def test_an_error_before_the_commit_leaves_no_rows(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = DocSight(tmp_path / "col")
    ds.ingest([corpus / "guide.md"])
    store = ds.store
    commit_fails(monkeypatch, store)
    report = ds.ingest([corpus / "faq.txt"])
    assert report.failed and report.failed[0].error_code == "store_error"
    monkeypatch.undo()
    # The pending rows were removed at once: nothing for check to report or recover to do.
    assert ds.check().ok
    assert store.recover() == 0
    assert [d.name for d in ds.documents()] == ["guide.md"]


def test_uncommitted_rows_are_invisible_and_recovered(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = DocSight(tmp_path / "col")
    ds.ingest([corpus / "guide.md"])
    store = ds.store
    commit_killed(monkeypatch, store)
    with pytest.raises(Killed):
        ds.ingest([corpus / "faq.txt"])
    monkeypatch.undo()

    # The half-written document's chunks exist on disk but are never returned.
    assert all(h.doc_name != "faq.txt" for h in ds.search("warranty two years", k=10))
    assert [d.name for d in ds.documents()] == ["guide.md"]
    assert store.recover() == 1
    assert store.recover() == 0
    report = ds.ingest([corpus / "faq.txt"])
    assert report.added and ds.search("warranty two years", k=1)[0].doc_name == "faq.txt"


def test_writer_lock_is_exclusive(corpus: Path, tmp_path: Path) -> None:
    settings = Settings(lock_timeout=0.2)
    ds = DocSight(tmp_path / "col", settings=settings)
    (tmp_path / "col").mkdir()
    with FileLock(str(tmp_path / "col" / "writer.lock")), pytest.raises(CollectionLockedError):
        ds.ingest([corpus])


def test_missing_collection_schema_and_encoder_mismatch(corpus: Path, tmp_path: Path) -> None:
    with pytest.raises(CollectionNotFoundError):
        DocSight(tmp_path / "nothing").search("x")
    assert not (tmp_path / "nothing").exists()

    ds = DocSight(tmp_path / "col")
    ds.ingest([corpus])
    with pytest.raises(ConfigurationError, match="embedded with"):
        ds.store.bind_encoder("some-other-model", 768)

    manifest = tmp_path / "col" / "collection.json"
    data = json.loads(manifest.read_text())
    data["schema_version"] = 999
    manifest.write_text(json.dumps(data))
    with pytest.raises(SchemaVersionError, match="v999"):
        DocSight(tmp_path / "col").search("widget")


@pytest.mark.slow
def test_vector_index_is_built_for_large_collections(tmp_path: Path) -> None:
    sections = [
        f"## Topic {i}\n\nItem {i} describes product line {i} with a unique code Q{i:04d}. "
        + " ".join(f"detail{i}x{j}" for j in range(30))
        for i in range(300)
    ]
    doc = tmp_path / "big.md"
    doc.write_text("# Catalogue\n\n" + "\n\n".join(sections))
    ds = DocSight(tmp_path / "col", settings=Settings(retrieval={"vector_index_min_rows": 256}))
    ds.ingest([doc])
    stats = ds.info()
    assert stats.chunks >= 256
    assert any("ivf" in i.lower() for i in stats.indexes)
    # Through the ANN index a chunk's own embedding still finds the chunk first.
    target = next(c for c in ds.store.document_chunks(ds.resolve("big.md").id) if "Q0123" in c.text)
    found = ds.store.vector_search(ds.encoder().encode_documents([target.text])[0], 5)
    assert found[0].chunk_id == target.id and found[0].score > 0.95
    assert "Q0123" in ds.search("Q0123", k=1)[0].text


def test_new_chunker_version_rebuilds_what_it_changed(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from docsight.ingest.element_chunker import ElementChunker
    from docsight.ingest.page_chunker import PageChunker

    ds = DocSight(tmp_path / "col")
    ds.ingest([corpus])
    before = {d.name: d for d in ds.documents()}
    assert before["guide.md"].chunker == f"auto/{ElementChunker.version}.{PageChunker.version}"
    monkeypatch.setattr(ElementChunker, "version", "999")
    report = DocSight(tmp_path / "col").ingest([corpus])
    assert report.counts()["added"] == 2  # same bytes, re-chunked
    after = {d.name: d for d in ds.documents()}
    assert after["guide.md"].id == before["guide.md"].id
    assert after["guide.md"].chunker == f"auto/999.{PageChunker.version}"
    assert len(ds.store.document_chunks(after["guide.md"].id)) == before["guide.md"].chunks


def test_installing_ocr_reparses_documents_that_needed_it(
    tmp_path: Path, image_only_pdf: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from docsight.parsers.pdf import PdfParser
    from docsight.vision import common

    monkeypatch.setattr(common, "ocr_available", lambda: False)
    ds = DocSight(tmp_path / "col", settings=Settings(parse={"ocr": "never"}))
    first = ds.ingest([image_only_pdf])
    assert first.files[0].status == "no_text"
    assert ds.documents()[0].parser == f"pdf/{PdfParser.version}"  # OCR off: no suffix
    # Same settings, nothing changed: skipped without parsing.
    assert (
        DocSight(tmp_path / "col", settings=Settings(parse={"ocr": "never"}))
        .ingest([image_only_pdf])
        .files[0]
        .status
        == "skipped"
    )
    # OCR switched on while the extra is missing: the id says so ...
    missing = DocSight(tmp_path / "col").ingest([image_only_pdf])
    assert missing.files[0].status == "no_text"
    assert DocSight(tmp_path / "col").documents()[0].parser.endswith("-ocr")
    # ... and once it is installed, the document is parsed again.
    monkeypatch.setattr(common, "ocr_available", lambda: True)
    ids = {d.id: d.parser for d in DocSight(tmp_path / "col").documents()}
    report = DocSight(tmp_path / "col").ingest([image_only_pdf])
    assert report.files[0].status != "skipped"
    assert all(p.endswith("-ocr") for p in ids.values())
    assert DocSight(tmp_path / "col").documents()[0].parser.endswith("+ocr")
