"""A parse result cut into windows (``ingest.windows``): what a worker sends and the ingesting
process unpacks one window at a time."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from docsight.document.chunk import Chunk
from docsight.document.model import Document, Element, ElementKind, Page, ParsedDocument
from docsight.graph.build import build_skeleton
from docsight.graph.skeleton import SkeletonBuilder, element_facts
from docsight.index import schema as S
from docsight.ingest.spool import Spooled, SpoolWriter
from docsight.ingest.windows import ParseWindows, SkeletonWriter

DOC = "d" * 32


def _document(pages: int, per_page: int = 3) -> tuple[ParsedDocument, list[Chunk]]:
    elements = []
    for page in range(pages):
        for k in range(per_page):
            order = len(elements)
            kind = ElementKind.HEADER if k == 0 else ElementKind.PARAGRAPH
            elements.append(
                Element(
                    id=f"{order:032x}",
                    kind=kind,
                    text=f"Page {page} part {k}: the pumps of hall {page} were checked.",
                    page=page,
                    order=order,
                )
            )
    doc = Document(
        id=DOC,
        name="report.pdf",
        source="/tmp/report.pdf",
        media_type="application/pdf",
        sha256="0" * 64,
        parser="pdf/1",
        pages=[Page(index=i, width=612, height=792) for i in range(pages)],
        elements=elements,
    )
    chunks = [
        Chunk(
            id=f"c{e.order:031x}",
            doc_id=DOC,
            doc_name="report.pdf",
            text=e.text,
            body=e.text,
            element_ids=[e.id],
            pages=[e.page],
            page=e.page,
            order=i,
        )
        for i, e in enumerate(x for x in elements if x.kind == ElementKind.PARAGRAPH)
    ]
    return ParsedDocument(document=doc), chunks


@pytest.mark.parametrize("packed", [False, True])
def test_windows_cover_the_pages_in_order_and_give_the_whole_back(packed: bool) -> None:
    parsed, chunks = _document(70)
    graph = build_skeleton(parsed.document, chunks)
    windows = ParseWindows.cut(
        parsed, chunks, graph, packed=packed, pages_per_window=32, chunks_per_window=50
    )
    assert windows.head.document.elements == [] and windows.head.document.pages
    assert (windows.n_elements, windows.n_chunks) == (210, 140)
    assert [(w.start, w.stop) for w in windows.element_windows] == [(0, 32), (32, 64), (64, 70)]
    assert len(windows.chunk_windows) == 3
    if packed:
        assert all(isinstance(w.data, bytes) for w in windows.element_windows)
        assert all(isinstance(w, bytes) for w in windows.chunk_windows)
        assert windows.graph is not None and [type(p) for p in windows.graph] == [bytes]
    assert windows.chunk_texts() == [c.text for c in chunks]  # and the windows stay
    seen = []
    for start, stop, elements in windows.elements():
        assert all(start <= e.page < stop for e in elements)
        seen.extend(elements)
    assert seen == parsed.document.elements
    # Each window is let go once read: a second pass finds nothing.
    assert all(w.data == [] for w in windows.element_windows)
    assert [c for window in windows.chunks() for c in window] == chunks
    assert windows.chunk_windows == [[], [], []]
    assert windows.skeleton() == graph and windows.skeleton() is None


def test_whole_rebuilds_the_document_and_chunks() -> None:
    parsed, chunks = _document(40)
    windows = ParseWindows.pack(parsed, chunks, None)
    again, again_chunks = windows.whole()
    assert again.document == parsed.document
    assert again_chunks == chunks
    assert windows.skeleton() is None


def test_an_element_past_the_last_page_goes_with_the_last_window() -> None:
    parsed, chunks = _document(3)
    stray = parsed.document.elements[-1].model_copy(update={"id": "f" * 32, "page": 9})
    parsed.document.elements.append(stray)
    windows = ParseWindows.cut(parsed, chunks, None, pages_per_window=2)
    got = [(start, stop, [e.id for e in els]) for start, stop, els in windows.elements()]
    assert got[-1][:2] == (2, 3) and got[-1][2][-1] == "f" * 32


def test_pages_and_elements_written_by_window_are_those_written_whole() -> None:
    parsed, chunks = _document(70)
    doc = parsed.document

    def rows(tables: object) -> dict[str, list[dict[str, object]]]:
        out: dict[str, list[dict[str, object]]] = {}
        for name, table, _ in tables:  # type: ignore[attr-defined]
            assert isinstance(table, pa.Table)
            out.setdefault(name, []).extend(table.to_pylist())
        return out

    whole = rows(S.structure_tables(doc))
    windows = ParseWindows.cut(parsed, chunks, None, packed=True, pages_per_window=32)
    head = windows.head.document
    by_window: dict[str, list[dict[str, object]]] = {}
    for start, stop, elements in windows.elements():
        for name, got in rows(S.window_tables(head, start, stop, elements)).items():
            by_window.setdefault(name, []).extend(got)
    assert by_window == whole
    # Page text leaves out the running header, as on the whole document.
    assert "part 0" not in str(whole["pages"][0]["text"])
    assert "part 1" in str(whole["pages"][0]["text"])


def _spool_chunks(
    windows: ParseWindows,
    chunks: list[Chunk],
    directory: Path,
    per: int,
    graph: bool = False,
    elements: list[Any] | None = None,
) -> None:
    """Chunk windows of ``per`` and, with ``graph``, the graph's skeleton in parts, as the
    worker writes them (``ingest.streamed``)."""
    with SpoolWriter(str(directory), ".windows") as writer:
        for k in range(0, len(chunks), per):
            windows.add_chunk_window(chunks[k : k + per], writer)
        if graph:
            writer.flush()
            facts = element_facts(elements or [])
            builder = SkeletonBuilder(windows.head.document, facts, window=2)
            parts = SkeletonWriter(windows, writer)
            parts.finish(builder.build(windows.each_chunk, parts))


def test_a_skeleton_written_in_parts_is_the_skeleton_built_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker builds the skeleton from its spooled chunks and writes it in batches; read
    back, it is the graph built whole, with each node id and keyword one string again."""
    import docsight.graph.skeleton as skeleton

    monkeypatch.setattr(skeleton, "NODE_BATCH", 16)
    monkeypatch.setattr(skeleton, "EDGE_BATCH", 64)
    parsed, chunks = _document(70)
    whole = build_skeleton(parsed.document, chunks)
    elements = parsed.document.elements
    windows = ParseWindows.spool_elements(parsed, str(tmp_path))
    _spool_chunks(windows, chunks, tmp_path, 50, graph=True, elements=elements)
    parts = windows.graph
    assert parts is not None and all(isinstance(p, Spooled) for p in parts)
    # The nodes in batches of 16, the edges in batches of 64, and the head.
    nodes, edges = len(whole.nodes), len(whole.edges)
    assert len(parts) == -(-nodes // 16) + -(-edges // 64) + 1
    got = windows.skeleton()
    assert got == whole and windows.skeleton() is None
    assert got is not None
    ids = {n.id: n.id for n in got.nodes}
    assert all(ids[e.source] is e.source and ids[e.target] is e.target for e in got.edges)
    words: dict[str, str] = {}
    for node in got.nodes:
        assert all(words.setdefault(w, w) is w for w in node.keywords)
    windows.discard()
    assert list(tmp_path.iterdir()) == []


def test_windows_spooled_give_back_what_was_cut_and_their_file_goes(tmp_path: Path) -> None:
    parsed, chunks = _document(70)
    windows = ParseWindows.spool_elements(parsed, str(tmp_path))
    _spool_chunks(windows, chunks, tmp_path, 512)
    first, second = windows.spool_paths
    assert Path(first).is_file() and Path(second).is_file()
    elements: list[Any] = [w.data for w in windows.element_windows]
    assert all(isinstance(d, Spooled) and d.path == first for d in elements)
    assert all(isinstance(d, Spooled) and d.path == second for d in windows.chunk_windows)
    assert windows.head.document.elements == [] and windows.n_elements == 210
    # Read twice for the texts (a look-ahead), then once as the document.
    assert windows.chunk_texts() == [c.text for c in chunks] == windows.chunk_texts()
    whole, again = windows.whole()
    assert whole.document.elements == parsed.document.elements and again == chunks
    windows.discard()
    assert list(tmp_path.iterdir()) == [] and windows.spool_paths == []
    windows.discard()


def test_windows_that_cannot_be_pickled_leave_no_file(tmp_path: Path) -> None:
    parsed, chunks = _document(3)

    class Unpicklable(Chunk):
        def __reduce__(self) -> Any:
            raise pickle.PicklingError("no")

    bad = [Unpicklable(**chunks[0].model_dump())]
    windows = ParseWindows.spool_elements(parsed, str(tmp_path))
    with pytest.raises(pickle.PicklingError):
        _spool_chunks(windows, bad, tmp_path, 512)
    assert [Path(p) for p in windows.spool_paths] == list(tmp_path.iterdir())  # elements only
    windows.discard()
    assert list(tmp_path.iterdir()) == []


def test_chunk_windows_added_one_at_a_time_hold_every_chunk_in_order(tmp_path: Path) -> None:
    parsed, chunks = _document(40)
    windows = ParseWindows.spool_elements(parsed, str(tmp_path))
    _spool_chunks(windows, chunks, tmp_path, 7)
    assert windows.n_chunks == len(chunks) and len(windows.chunk_windows) == -(-len(chunks) // 7)
    assert len(windows.spool_paths) == 2 and windows.skeleton() is None
    assert [c for window in windows.chunks() for c in window] == chunks
    windows.discard()
    assert list(tmp_path.iterdir()) == []
