"""A new document is stored in steps (``ingest.pipeline``, ``ingest.windows``): a worker sends
it cut into windows, pickled one by one, and this process writes its pages and elements window
by window, then its chunks window by window as it embeds them, then its graph, finished from the
chunks' ids and vectors. Nothing is visible before the commit, a failure on the way removes what
was written, and what is stored is what an in-process ingest and a one-go write store."""

from __future__ import annotations

import dataclasses
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from docsight import DocSight, Settings
from docsight.errors import EncoderError
from docsight.ingest.spool import Spooled

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from make_large_pdf import make_large_pdf


def _inline(path: Path) -> DocSight:
    return DocSight(path, settings=Settings(ingest={"isolation": "none"}))


def _failing_encoder(ds: DocSight, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """An encoder that fails; it records how many element rows of the pending document were on
    disk when it was called."""
    store, encoder = ds.store, ds.encoder()
    begun: list[str] = []
    seen: list[int] = []
    begin = store.begin_document

    def begin_document(parsed: Any, *args: Any, **kwargs: Any) -> Any:
        begun.append(parsed.document.id)
        return begin(parsed, *args, **kwargs)

    def encode_documents(texts: list[str]) -> np.ndarray:
        elements = store._table("elements")  # type: ignore[attr-defined]
        seen.append(elements.count_rows(f"doc_id = '{begun[-1]}'") if begun else 0)
        raise EncoderError("simulated failure of the encoder")

    monkeypatch.setattr(store, "begin_document", begin_document)
    monkeypatch.setattr(encoder, "encode_documents", encode_documents)
    return seen


def _rows(ds: DocSight, table: str) -> list[dict[str, Any]]:
    got = ds.store._table(table).to_arrow().to_pylist()  # type: ignore[attr-defined]
    for row in got:
        row.pop("ingested_at", None)
    return sorted(got, key=lambda r: str(r.get("id")))


TABLES = ("documents", "pages", "elements", "chunks", "nodes", "graphs")


def test_a_workers_result_arrives_in_windows_and_is_stored_as_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import docsight.ingest.pipeline as pipeline

    pdf = make_large_pdf(tmp_path / "report.pdf", pages=40)
    arrived: list[Any] = []
    store = pipeline.IngestPipeline._store

    spools: list[Path] = []

    def record(self: Any, slot: Any, key: int, output: Any, *args: Any) -> None:
        windows = output.windows
        spools.extend(Path(p) for p in windows.spool_paths)
        arrived.append(
            (
                len(output.parsed.document.elements),
                [(w.start, w.stop, type(w.data)) for w in windows.element_windows],
                [type(w) for w in windows.chunk_windows],
                {type(p) for p in windows.graph},
                [p.is_file() for p in spools],
            )
        )
        store(self, slot, key, output, *args)

    monkeypatch.setattr(pipeline.IngestPipeline, "_store", record)
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    tempfile.tempdir = None  # read TMPDIR again
    try:
        workers = DocSight(tmp_path / "workers", settings=Settings(ingest={"workers": 1}))
        report = workers.ingest([pdf])
    finally:
        tempfile.tempdir = None
    assert [f.status for f in report.files] == ["added"]
    # The head came without elements; pages 0-31 and 32-39 came pickled into a spool file
    # (written before the graph was built), and the chunks and the graph's skeleton into
    # a second one.
    spooled = [(0, [(0, 32, Spooled), (32, 40, Spooled)], [Spooled], {Spooled}, [True, True])]
    assert arrived == spooled
    # The files went once the document was stored, and the spool with the supervisor.
    assert all(p.parent.parent == tmp_path / "tmp" and not p.exists() for p in spools)
    assert not list((tmp_path / "tmp").glob("docsight-spool-*"))
    monkeypatch.undo()
    inline = _inline(tmp_path / "inline")
    inline.ingest([pdf])
    for table in TABLES:
        got, expected = _rows(workers, table), _rows(inline, table)
        if table in ("chunks", "nodes"):  # vectors agree to rounding (batches may differ)
            for row in got + expected:
                row["vector"] = np.round(np.asarray(row["vector"]), 4).tolist()
        assert got == expected, table
    stored = workers.store.get_document(report.files[0].doc_id)
    assert _rows(workers, "documents")[0]["elements"] == len(stored.elements) > 40
    assert workers.check().ok


def test_a_stepwise_write_stores_what_a_one_go_write_stores(corpus: Path, tmp_path: Path) -> None:
    """Same bytes, new chunker version: the stored version is replaced in one go (its rows
    share the new one's id); a new document goes in steps. Both store the same rows."""
    stepwise = _inline(tmp_path / "a")
    stepwise.ingest([corpus / "guide.md"])
    once = _inline(tmp_path / "b")
    once.ingest([corpus / "guide.md"])
    doc_id = once.documents()[0].id
    # Make the stored version look as if another chunker wrote it: the next ingest replaces it.
    once.store._table("documents").update(  # type: ignore[attr-defined]
        where=f"id = '{doc_id}'", values={"chunker": "element/0"}
    )
    report = once.ingest([corpus / "guide.md"])
    assert [f.status for f in report.files] == ["added"]

    for table in TABLES:
        assert _rows(stepwise, table) == _rows(once, table), table


def test_an_embedding_failure_leaves_no_rows(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = _inline(tmp_path / "col")
    ds.ingest([corpus / "faq.txt"])
    seen = _failing_encoder(ds, monkeypatch)
    report = ds.ingest([corpus / "guide.md"])
    assert [f.error_code for f in report.files] == ["encoder_error"]
    monkeypatch.undo()
    # The element rows were written before the embedding, and removed again at once.
    assert seen and all(rows > 0 for rows in seen), seen
    assert ds.check().ok
    assert ds.store.recover() == 0
    assert [d.name for d in ds.documents()] == ["faq.txt"]
    assert (
        ds.store._table("elements").count_rows(  # type: ignore[attr-defined]
            f"doc_id = '{report.files[0].doc_id}'"
        )
        == 0
    )


def test_a_window_that_cannot_be_read_leaves_no_rows(corpus: Path, tmp_path: Path) -> None:
    from docsight.document.model import ParsedDocument

    source = _inline(tmp_path / "source")
    report = source.ingest([corpus / "guide.md"])
    doc = source.store.get_document(report.files[0].doc_id)
    head = ParsedDocument(document=doc.model_copy(update={"elements": []}))
    target = _inline(tmp_path / "target")

    def windows() -> Any:
        yield 0, doc.page_count, doc.elements
        raise EOFError("a window cut short")

    with pytest.raises(EOFError):
        target.store.begin_document(head, "element/3", windows=windows())
    for table in ("pages", "elements"):
        assert target.store._table(table).count_rows() == 0, table  # type: ignore[attr-defined]
    assert target.check().ok


def test_a_job_with_a_spool_lets_the_elements_go_before_the_graph(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``run_job`` with a spool writes the elements there before it builds the graph, which it
    builds from their facts and from its chunks read back twice from the spool, and writes in
    parts; a failure after that leaves no file behind."""
    import docsight.graph.skeleton as skeleton_module
    from docsight.document.ids import bytes_sha256
    from docsight.ingest.worker import ParseJob, WorkerSetup, WorkerState, run_job

    pdf = make_large_pdf(tmp_path / "report.pdf", pages=12)
    spool = tmp_path / "spool"
    spool.mkdir()
    state = WorkerState(WorkerSetup(Settings()))
    job = ParseJob(str(pdf), bytes_sha256(pdf.read_bytes()), "application/pdf")
    inline = run_job(job, state.settings, state.context, state.chunker)
    assert inline.windows is None and inline.graph is not None

    def run_spooled() -> Any:
        return run_job(
            dataclasses.replace(job, spool=str(spool)),
            state.settings,
            state.context,
            state.chunker,
        )

    seen: list[tuple[int, int, int]] = []
    build = skeleton_module.SkeletonBuilder.build

    def spy(self: Any, chunks: Any, sink: Any) -> Any:
        first, second = list(chunks()), list(chunks())
        # The same chunks, read back from the spool for each pass (not kept from the first).
        assert [c.id for c in first] == [c.id for c in second]
        assert all(a is not b for a, b in zip(first, second, strict=True))
        seen.append((len(self.doc.elements), len(first), len(self.elements)))
        return build(self, lambda: iter(first), sink)

    monkeypatch.setattr(skeleton_module.SkeletonBuilder, "build", spy)
    # The chunker reads the elements back from the spool, not from the document.
    from docsight.ingest.page_chunker import AutoChunker

    streamed: list[int] = []
    chunk_elements = AutoChunker.chunk_elements

    def whole(self: Any, document: Any) -> Any:
        raise AssertionError("the document was chunked whole")

    def stream(self: Any, document: Any, elements: Any, captions: Any) -> Any:
        streamed.append(len(document.elements))
        return chunk_elements(self, document, elements, captions)

    monkeypatch.setattr(AutoChunker, "chunk", whole)
    monkeypatch.setattr(AutoChunker, "chunk_elements", stream)
    spooled = run_spooled()
    windows = spooled.windows
    assert windows is not None and streamed == [0]
    # The builder had no elements, the chunks twice, and every element's facts.
    assert seen == [(0, len(inline.chunks), len(inline.parsed.document.elements))]
    assert len(windows.spool_paths) == 2 and all(Path(p).is_file() for p in windows.spool_paths)
    assert windows.graph is not None and len(windows.graph) >= 3  # nodes, edges, head
    assert windows.skeleton() == inline.graph
    parsed, chunks = windows.whole()
    assert parsed.document == inline.parsed.document and chunks == inline.chunks
    assert spooled.timings["count.tables"] == inline.timings["count.tables"] > 0
    windows.discard()
    assert list(spool.iterdir()) == []

    # The disk fills between the elements and the chunks: a clear failure, no file left.
    from docsight.errors import IngestError
    from docsight.ingest.windows import ParseWindows

    def full(*args: Any, **kwargs: Any) -> None:
        raise OSError(28, "No space left on device")

    add_chunk_window = ParseWindows.add_chunk_window
    monkeypatch.setattr(ParseWindows, "add_chunk_window", full)
    with pytest.raises(IngestError, match=r"temporary directory .*No space left on device"):
        run_spooled()
    assert list(spool.iterdir()) == []
    monkeypatch.setattr(ParseWindows, "add_chunk_window", add_chunk_window)

    def fail(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the graph could not be built")

    monkeypatch.setattr(skeleton_module.SkeletonBuilder, "build", fail)
    with pytest.raises(RuntimeError):
        run_spooled()
    assert list(spool.iterdir()) == []


def test_chunk_vectors_that_the_temporary_directory_cannot_take_fail_the_file_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chunk vectors wait on disk while a document is embedded: a full temporary
    directory fails that file with a reason naming it, and stores none of its rows."""
    import docsight.ingest.spool as spool_module

    folder = tmp_path / "docs"
    folder.mkdir()
    make_large_pdf(folder / "a.pdf", pages=6, seed=1)
    make_large_pdf(folder / "b.pdf", pages=6, seed=2)
    add = spool_module.RowSpool.add
    calls: list[int] = []

    def full_once(self: Any, vectors: Any) -> None:
        calls.append(len(vectors))
        if len(calls) == 1:
            raise OSError(28, "No space left on device")
        add(self, vectors)

    monkeypatch.setattr(spool_module.RowSpool, "add", full_once)
    _fails_alone(
        tmp_path,
        folder,
        "chunk vectors could not be kept in the temporary directory",
        "No space left on device",
        "TMPDIR",
    )
    assert len(calls) == 2


def _fails_alone(tmp_path: Path, folder: Path, *why: str) -> None:
    """Ingesting ``folder`` (a.pdf, b.pdf) fails a.pdf for ``why`` and stores b.pdf, and no
    row of a.pdf is left."""
    ds = DocSight(tmp_path / "col", settings=Settings(ingest={"workers": 1}))
    report = ds.ingest([folder])
    failed, stored = report.files
    assert (failed.status, failed.error_code) == ("failed", "ingest_error")
    assert all(part in (failed.reason or "") for part in why), failed.reason
    assert stored.status == "added" and failed.doc_id and failed.doc_id != stored.doc_id
    assert [d.name for d in ds.documents()] == ["b.pdf"]
    for table in TABLES:
        rows = _rows(ds, table)
        assert all(r.get("doc_id", r.get("id")) != failed.doc_id for r in rows), table
    assert ds.check().ok


def test_a_spool_emptied_during_the_ingest_fails_the_file_and_stores_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cleaner of the temporary directory deletes a result before it is stored: the file
    fails with a reason that says so, the next one is stored, and no row of the first is left."""
    import docsight.ingest.pipeline as pipeline

    folder = tmp_path / "docs"
    folder.mkdir()
    first = make_large_pdf(folder / "a.pdf", pages=6, seed=1)
    make_large_pdf(folder / "b.pdf", pages=6, seed=2)
    store = pipeline.IngestPipeline._store

    def clean(self: Any, slot: Any, key: int, output: Any, *args: Any) -> None:
        if slot.outcome.path == str(first):
            for path in output.windows.spool_paths[1:]:  # the chunks' file
                Path(path).unlink()
        store(self, slot, key, output, *args)

    monkeypatch.setattr(pipeline.IngestPipeline, "_store", clean)
    _fails_alone(
        tmp_path,
        folder,
        "could not be read back from the temporary file",
        "ingest the file again",
    )
