"""Contracts every implementation of a swappable backend must keep: stores and rerankers.

Each test runs once per registered implementation (stores) or per shipped one (rerankers), so a
new backend is checked by adding it to the parameter list.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from docsight.errors import StoreError
from docsight.graph import make_graph
from docsight.index import STORES
from docsight.index.base import Store
from docsight.llm.client import OpenAIChatClient
from docsight.retrieval.hit import Hit
from docsight.retrieval.rerank import FeatureReranker, NoReranker, Reranker
from docsight.retrieval.rerank_llm import LLMReranker
from docsight.settings import GraphSettings
from fixtures.fake_llm import FakeLLM, error, ok
from fixtures.llm_fixtures import llm_settings
from fixtures.stored import paragraph_document

DIM = 8


def _sentences(words: list[str]) -> list[str]:
    return [f"The {word} section explains {word} in detail." for word in words]


def _vectors(n: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.fixture(params=STORES.names())
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    instance: Store = STORES.create(request.param, tmp_path / "collection")
    instance.bind_encoder("test-encoder", DIM)
    yield instance


def _put(store: Store, doc_id: str, name: str, words: list[str], seed: int) -> None:
    parsed, chunks = paragraph_document(doc_id, name, _sentences(words))
    vectors = _vectors(len(chunks), seed)
    graph = make_graph(parsed.document, chunks, vectors, GraphSettings(evolution="lite"))
    store.put_document(parsed, chunks, vectors, "test/1", graph)


def test_store_returns_on_commit_what_a_read_returns(store: Store) -> None:
    """The info ``put_document`` returns is the stored row, to the microsecond of its time."""
    parsed, chunks = paragraph_document("a" * 32, "alpha.txt", _sentences(["pumps", "valves"]))
    info = store.put_document(parsed, chunks, _vectors(len(chunks), 1), "test/1")
    assert info.id == "a" * 32 and info.chunks == len(chunks) and info.name == "alpha.txt"
    assert info == store.has_document("a" * 32)
    assert store.list_documents() == [info]


@pytest.mark.parametrize("name", STORES.names())
def test_store_hides_a_superseded_version_from_a_fresh_reader(name: str, tmp_path: Path) -> None:
    """Two committed versions of one file (a replacement cut short before the old one was
    removed): every read, of a writer or of a reader that has read nothing yet, sees the newer."""
    writer: Store = STORES.create(name, tmp_path / "collection")
    writer.bind_encoder("test-encoder", DIM)
    old, old_chunks = paragraph_document("a" * 32, "report.txt", _sentences(["pumps"]))
    writer.put_document(old, old_chunks, _vectors(len(old_chunks), 1), "test/1")
    new, new_chunks = paragraph_document("b" * 32, "report.txt", _sentences(["valves"]))
    writer.put_document(new, new_chunks, _vectors(len(new_chunks), 2), "test/1")
    _put(writer, "c" * 32, "other.txt", ["seals"], 3)
    for store in (writer, STORES.create(name, tmp_path / "collection")):
        assert store.has_document("a" * 32) is None
        newer = store.has_document("b" * 32)
        assert newer is not None and newer.source == "/data/report.txt"
        assert store.has_document("c" * 32) is not None
        assert {d.id for d in store.list_documents()} == {"b" * 32, "c" * 32}
        assert len(store.documents_by_source("/data/report.txt")) == 2


def test_store_keeps_documents_with_their_graph(store: Store) -> None:
    _put(store, "a" * 32, "alpha.txt", ["pumps", "valves", "seals"], 1)
    _put(store, "b" * 32, "beta.txt", ["budgets", "invoices"], 2)
    info = store.has_document("a" * 32)
    assert info is not None and info.chunks == 3 and info.nodes > 3
    graph = store.get_graph("a" * 32)
    assert graph is not None and graph.doc_id == "a" * 32
    assert {str(n.kind) for n in graph.nodes} == {"document", "section", "page", "chunk"}
    refs = store.graph_references(["a" * 32, "b" * 32, "missing"])
    assert sorted(r.doc_id for r in refs) == ["a" * 32, "b" * 32]
    assert refs[0].references.get("section 1")


def test_store_node_searches_filter_by_document_and_kind(store: Store) -> None:
    _put(store, "a" * 32, "alpha.txt", ["pumps", "valves", "seals"], 1)
    _put(store, "b" * 32, "beta.txt", ["budgets", "invoices"], 2)
    store.optimize()
    pages = store.node_text_search("valves", 10, None, ["page"])
    assert pages and pages[0].doc_id == "a" * 32 and pages[0].page == 1
    assert all(h.kind == "page" for h in pages)
    assert store.node_text_search("valves", 10, ["b" * 32], ["page"]) == []
    chunks = store.node_vector_search(_vectors(1, 9)[0], 10, ["b" * 32], ["chunk"])
    assert len(chunks) == 2 and {h.doc_id for h in chunks} == {"b" * 32}
    assert store.node_vector_search(_vectors(1, 9)[0], 10, [], ["chunk"]) == []


def test_store_deletes_a_document_with_its_graph(store: Store) -> None:
    _put(store, "a" * 32, "alpha.txt", ["pumps", "valves"], 1)
    assert store.get_graph("a" * 32) is not None
    store.delete_document("a" * 32)
    assert store.get_graph("a" * 32) is None
    assert store.node_text_search("valves", 10) == []
    assert store.graph_references(["a" * 32]) == []
    report = store.check()
    assert report.ok and report.counts.get("nodes", 0) == 0


def test_store_hides_uncommitted_graph_rows(store: Store) -> None:
    _put(store, "a" * 32, "alpha.txt", ["pumps", "valves"], 1)
    # A crash between the children and the documents row leaves nodes of an uncommitted
    # document: reads must not see them, and recover removes them.
    parsed, chunks = paragraph_document("c" * 32, "gamma.txt", _sentences(["valves", "gauges"]))
    vectors = _vectors(2, 3)
    graph = make_graph(parsed.document, chunks, vectors, GraphSettings())
    documents = store._table("documents")  # type: ignore[attr-defined]
    store.put_document(parsed, chunks, vectors, "test/1", graph)
    documents.delete(f"id = '{'c' * 32}'")
    assert store.get_graph("c" * 32) is None
    assert {h.doc_id for h in store.node_text_search("valves", 10)} == {"a" * 32}
    assert store.recover() == 1
    assert store.check().ok


def test_store_writes_a_document_again_without_duplicates(store: Store) -> None:
    """A document's rows are appended, never merged: writing it again, whether it was committed
    or cut short before its commit (and not recovered), replaces its rows rather than adding a
    second copy of each."""
    _put(store, "b" * 32, "beta.txt", ["budgets", "invoices"], 2)
    parsed, chunks = paragraph_document("a" * 32, "alpha.txt", _sentences(["pumps", "valves"]))
    vectors = _vectors(len(chunks), 1)
    graph = make_graph(parsed.document, chunks, vectors, GraphSettings(evolution="lite"))
    store.put_document(parsed, chunks, vectors, "test/1", graph)
    store.put_document(parsed, chunks, vectors, "test/1", graph)  # committed: written again
    documents = store._table("documents")  # type: ignore[attr-defined]
    documents.delete(f"id = '{'a' * 32}'")  # as if killed before the commit row
    store.put_document(parsed, chunks, vectors, "test/1", graph)
    report = store.check()
    assert report.ok, report.problems
    assert [c.id for c in store.document_chunks("a" * 32)] == [c.id for c in chunks]
    assert store.has_document("b" * 32) is not None  # another document's rows are untouched
    assert len(store.document_chunks("b" * 32)) == 2
    for name in ("chunks", "elements", "pages", "nodes", "graphs"):
        ids = store._table(name).to_arrow().column("id").to_pylist()  # type: ignore[attr-defined]
        assert len(ids) == len(set(ids)), name


def test_store_writes_a_document_in_steps_visible_only_once_committed(store: Store) -> None:
    """``begin_document``: chunks in several calls, then the graph; nothing is visible before
    the commit, the rows are those ``put_document`` writes, and an abort leaves nothing."""
    words = ["pumps", "valves", "seals", "gaskets", "bearings"]
    parsed, chunks = paragraph_document("a" * 32, "alpha.txt", _sentences(words))
    vectors = _vectors(len(chunks), 1)
    graph = make_graph(parsed.document, chunks, vectors, GraphSettings(evolution="lite"))
    writer = store.begin_document(parsed, "test/1")
    writer.add_chunks(chunks[:2], vectors[:2])
    writer.add_chunks(chunks[2:], vectors[2:])
    assert store.has_document("a" * 32) is None
    assert store.text_search("valves", 10) == [] and store.document_chunks("a" * 32) == []
    writer.add_graph(graph)
    with pytest.raises(StoreError):
        writer.add_graph(graph)  # once
    info = writer.commit()
    assert info.chunks == len(chunks) and info.nodes > len(chunks)
    assert [c.id for c in store.document_chunks("a" * 32)] == [c.id for c in chunks]
    assert store.get_graph("a" * 32) == graph.graph
    with pytest.raises(StoreError):
        writer.add_chunks(chunks, vectors)  # committed
    assert store.check().ok

    other, other_chunks = paragraph_document("b" * 32, "beta.txt", _sentences(["budgets"]))
    writer = store.begin_document(other, "test/1")
    with pytest.raises(StoreError):
        writer.add_chunks(chunks[:1], vectors[:1])  # another document's chunk
    with pytest.raises(StoreError):
        writer.add_chunks(other_chunks, _vectors(2, 2))  # one vector per chunk
    writer.add_chunks(other_chunks, _vectors(1, 2))
    writer.abort()
    assert store.has_document("b" * 32) is None and store.check().ok
    assert store.recover() == 0  # nothing of it was left


# --- rerankers -----------------------------------------------------------------------------------


def _hits() -> list[Hit]:
    return [
        Hit(
            unit="page",
            rank=i + 1,
            score=1.0 - i / 10,
            doc_id="a" * 32,
            doc_name="alpha.txt",
            page=i,
            chunk_id=f"aaaa{i:028x}",
            text=f"The {w} section explains {w} in detail.",
            ranks={"bm25": i + 1},
        )
        for i, w in enumerate(["pumps", "valves", "seals"])
    ]


@pytest.fixture
def rerankers(tmp_path: Path, fake_llm: FakeLLM) -> Iterator[dict[str, Reranker]]:
    store: Store = STORES.create("lance", tmp_path / "collection")
    store.bind_encoder("test-encoder", DIM)
    _put(store, "a" * 32, "alpha.txt", ["pumps", "valves", "seals"], 1)
    chat = OpenAIChatClient(llm_settings(fake_llm.base_url, cache=False, max_retries=0))
    yield {
        "none": NoReranker(),
        "features": FeatureReranker(store),
        "llm": LLMReranker(chat, timeout=5.0),
    }


@pytest.mark.parametrize("name", ["none", "features", "llm"])
def test_reranker_returns_the_same_hits_renumbered(
    name: str, rerankers: dict[str, Reranker], fake_llm: FakeLLM
) -> None:
    fake_llm.script(ok(json.dumps({"order": [2, 3, 1]})))
    hits = _hits()
    out = rerankers[name].rerank("Which section explains valves?", hits)
    assert sorted(h.chunk_id or "" for h in out) == sorted(h.chunk_id or "" for h in hits)
    assert [h.rank for h in out] == [1, 2, 3]
    assert rerankers[name].last_warning is None
    if name == "llm":
        assert [h.page for h in out] == [1, 2, 0]


@pytest.mark.parametrize("name", ["none", "features", "llm"])
def test_reranker_never_raises_for_a_model_fault(
    name: str, rerankers: dict[str, Reranker], fake_llm: FakeLLM
) -> None:
    fake_llm.script(error(500))
    hits = _hits()
    out = rerankers[name].rerank("valves", hits)
    assert len(out) == len(hits)
    if name == "llm":
        assert [h.page for h in out] == [0, 1, 2]  # the fused order
        assert rerankers[name].last_warning
    assert rerankers[name].rerank("valves", hits[:1]) == hits[:1]


def test_a_long_document_is_written_in_bounded_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Storing a long document writes its rows a few at a time (memory stays bounded), and the
    stored rows are those of one write, vectors bit for bit."""
    from docsight.index import schema as S

    words = ["pumps", "valves", "seals", "gaskets", "bearings", "filters", "motors"]
    stores = {}
    for rows in (0, 2):  # 0: the default, more rows than the document has
        if rows:
            monkeypatch.setattr(S, "WRITE_ROWS", rows)
        store = STORES.create("lance", tmp_path / f"c{rows}")
        store.bind_encoder("test-encoder", DIM)
        _put(store, "a" * 32, "alpha.txt", words, 1)
        stores[rows] = store
    whole, batched = stores[0], stores[2]
    for name in ("pages", "elements", "chunks", "nodes", "documents"):
        mine = batched._table(name)  # type: ignore[attr-defined]
        theirs = whole._table(name)  # type: ignore[attr-defined]
        # Seven pages, elements and chunks in writes of two: four writes each, not one.
        if name in ("pages", "elements", "chunks"):
            assert mine.version - theirs.version == 3, name
        got, want = mine.to_arrow().to_pylist(), theirs.to_arrow().to_pylist()
        for row in got + want:
            row.pop("ingested_at", None)  # the time of the write
        assert sorted(got, key=str) == sorted(want, key=str), name
