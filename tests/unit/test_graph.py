"""The content graph without a store: nodes, edges, the reference index, summaries, evolution."""

from __future__ import annotations

import dataclasses
import tracemalloc
from collections import Counter

import numpy as np
import pytest
from pydantic import ValidationError

from docsight.document.artifacts import placeholder
from docsight.document.chunk import Chunk
from docsight.document.model import (
    Document,
    Edge,
    Element,
    ElementKind,
    Hidden,
    Page,
    Section,
)
from docsight.document.model import EdgeKind as MapEdge
from docsight.graph import make_graph
from docsight.graph.build import build_graph, rows_in_order
from docsight.graph.evolve import evolve_lite, evolve_model
from docsight.graph.model import ContentGraph, EdgeKind, GraphEdge, NodeKind
from docsight.graph.summarize import (
    KeywordModel,
    NodeSummary,
    SummaryRequest,
    first_sentence,
    keyword_tokens,
)
from docsight.settings import GraphSettings

DOC = "d" * 32


def _element(i: int, kind: ElementKind, text: str, page: int, section: str | None) -> Element:
    return Element(
        id=f"{i:032x}",
        kind=kind,
        text=text,
        markdown=text if kind == ElementKind.TABLE else None,
        page=page,
        order=i,
        section_id=section,
    )


def _chunk(order: int, elements: list[Element], body: str, kind: str = "text") -> Chunk:
    page = elements[0].page
    return Chunk(
        id=f"c{order:031x}",
        doc_id=DOC,
        doc_name="manual.pdf",
        text=body,
        body=body,
        kind=kind,
        element_ids=[e.id for e in elements],
        pages=sorted({e.page for e in elements}),
        page=page,
        order=order,
    )


@pytest.fixture
def document() -> tuple[Document, list[Chunk]]:
    s1 = Section(id="s1", title="1 Operating limits", level=1, page=0, order=0)
    s2 = Section(id="s2", title="Appendix B Specifications", level=1, page=2, order=1)
    e = [
        _element(0, ElementKind.HEADING, "1 Operating limits", 0, "s1"),
        _element(
            1,
            ElementKind.PARAGRAPH,
            "The K-40 pump must never exceed its rated pressure. The limits are in Table 2.",
            0,
            "s1",
        ),
        _element(2, ElementKind.PARAGRAPH, "Check the gauge before every start and", 0, "s1"),
        _element(3, ElementKind.PARAGRAPH, "stop the pump when the needle passes it.", 1, "s1"),
        _element(4, ElementKind.HEADING, "Appendix B Specifications", 2, "s2"),
        _element(5, ElementKind.CAPTION, "Table 2: Rated pressure by model", 2, "s2"),
        _element(6, ElementKind.TABLE, "| Model | Rated pressure |\n| K-40 | 380 kPa |", 2, "s2"),
        _element(7, ElementKind.FIGURE, "pressure curve", 2, "s2"),
    ]
    edges = [
        Edge(kind=MapEdge.CAPTION_OF, source=e[5].id, target=e[6].id, text=e[5].text),
        Edge(kind=MapEdge.REFERS_TO, source=e[1].id, target=e[6].id, text="Table 2"),
    ]
    doc = Document(
        id=DOC,
        name="manual.pdf",
        source="/tmp/manual.pdf",
        media_type="application/pdf",
        sha256="0" * 64,
        parser="test",
        pages=[Page(index=i) for i in range(3)],
        sections=[s1, s2],
        elements=e,
        edges=edges,
    )
    chunks = [
        _chunk(0, [e[0], e[1], e[2]], f"{e[1].text}\n{e[2].text}"),
        _chunk(1, [e[3]], e[3].text),
        _chunk(2, [e[4], e[5], e[6]], f"{e[5].text}\n{e[6].text}", kind="table"),
        _chunk(3, [e[7]], "Figure: pressure curve of the K-40 at full load.", kind="figure"),
    ]
    return doc, chunks


def _vectors(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = rng.normal(size=(n, 16)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_nodes_form_a_summary_tree_over_the_chunks(document: tuple[Document, list[Chunk]]) -> None:
    doc, chunks = document
    graph = build_graph(doc, chunks, _vectors(len(chunks))).graph
    kinds = [n.kind for n in graph.nodes]
    assert kinds.count(NodeKind.CHUNK) == 4
    assert kinds.count(NodeKind.SECTION) == 2 and kinds.count(NodeKind.PAGE) == 3
    assert kinds.count(NodeKind.DOCUMENT) == 1
    index = graph.node_index()
    table = index[chunks[2].id]
    section = index[table.parent or ""]
    assert section.kind == NodeKind.SECTION and section.title == "Appendix B Specifications"
    assert index[section.parent or ""].kind == NodeKind.DOCUMENT
    # Summaries: the first real sentence of text, caption and header row of a table.
    assert index[chunks[0].id].summary.startswith("The K-40 pump must never exceed")
    assert "Columns: Model, Rated pressure" in table.summary
    assert all(n.summary_by == "extractive" for n in graph.nodes)
    assert index[chunks[0].id].keywords  # distinctive words of the chunk


def test_edges_link_captions_references_continuations_and_reading_order(
    document: tuple[Document, list[Chunk]],
) -> None:
    doc, chunks = document
    graph = build_graph(doc, chunks, _vectors(len(chunks)), window=1).graph
    edges = {(str(e.kind), e.source, e.target) for e in graph.edges}
    assert ("refers_to", chunks[0].id, chunks[2].id) in edges
    # "Check the gauge before every start and" / "stop the pump ..." runs over the page break.
    assert ("continues", chunks[0].id, chunks[1].id) in edges
    assert ("next", chunks[0].id, chunks[1].id) in edges
    assert ("next", chunks[0].id, chunks[2].id) not in edges  # window 1
    section_nodes = {n.id for n in graph.nodes if n.kind == NodeKind.SECTION}
    contained = {
        e.target for e in graph.edges if e.kind == "contains" and e.source in section_nodes
    }
    assert {c.id for c in chunks} <= contained


def test_placeholders_link_text_to_its_table() -> None:
    table = _element(1, ElementKind.TABLE, "| a | b |", 0, None)
    text = _element(0, ElementKind.PARAGRAPH, "See below.", 0, None)
    doc = Document(
        id=DOC,
        name="x.pdf",
        source="x",
        media_type="application/pdf",
        sha256="0" * 64,
        parser="test",
        pages=[Page(index=0)],
        elements=[text, table],
    )
    chunks = [
        _chunk(0, [text, table], f"See below.\n{placeholder(table, None)}"),
        _chunk(1, [table], "| a | b |", kind="table"),
    ]
    graph = build_graph(doc, chunks, _vectors(2)).graph
    assert any(
        e.kind == EdgeKind.ARTIFACT and (e.source, e.target) == (chunks[0].id, chunks[1].id)
        for e in graph.edges
    )


def test_reference_index_names_tables_appendices_and_artifacts(
    document: tuple[Document, list[Chunk]],
) -> None:
    doc, chunks = document
    graph = build_graph(doc, chunks, _vectors(len(chunks))).graph
    assert [r.node for r in graph.references["table 2"]] == [chunks[2].id]
    assert graph.references["table 2"][0].page == 2
    assert graph.references["appendix b"][0].page == 2
    assert graph.references["section 1"][0].page == 0
    assert [r.node for r in graph.artifacts["table"]] == [chunks[2].id]
    assert [r.node for r in graph.artifacts["figure"]] == [chunks[3].id]


def test_structure_vectors_are_the_mean_of_their_chunks(
    document: tuple[Document, list[Chunk]],
) -> None:
    doc, chunks = document
    vectors = _vectors(len(chunks))
    bundle = build_graph(doc, chunks, vectors)
    page0 = next(n for n in bundle.graph.nodes if n.kind == NodeKind.PAGE and n.page == 0)
    expected = vectors[0] / np.linalg.norm(vectors[0])
    np.testing.assert_allclose(bundle.vectors[page0.id], expected, atol=1e-6)
    doc_node = next(n for n in bundle.graph.nodes if n.kind == NodeKind.DOCUMENT)
    mean = vectors.mean(0)
    np.testing.assert_allclose(bundle.vectors[doc_node.id], mean / np.linalg.norm(mean), atol=1e-6)
    assert "Appendix B Specifications" in bundle.texts[doc_node.id]


def test_lite_evolution_pulls_neighbours_together_and_adds_similar_edges(
    document: tuple[Document, list[Chunk]],
) -> None:
    doc, chunks = document
    vectors = _vectors(len(chunks), seed=3)
    graph = build_graph(doc, chunks, vectors, window=1).graph
    ids = [c.id for c in chunks]
    evolved_graph, evolved = evolve_lite(graph, ids, vectors, rounds=2, neighbours=2, alpha=1.0)
    before = float(vectors[0] @ vectors[2])
    after = float(evolved[0] @ evolved[2])
    assert after > before  # linked by a reference: closer after evolution
    np.testing.assert_allclose(np.linalg.norm(evolved, axis=1), 1.0, atol=1e-5)
    assert evolved_graph.evolution == "lite" and evolved_graph.rounds == 2
    none = evolve_lite(graph, ids, vectors, rounds=0)[1]
    np.testing.assert_array_equal(none, vectors)


def _evolve_by_the_book(
    links: list[tuple[int, int]], x: np.ndarray, rounds: int, k: int, alpha: float, reach: int
) -> np.ndarray:
    """G-Reader's lite evolution written plainly, as the oracle of the one that saves memory:
    each round mixes every vector with its most similar linked or nearby vectors of the round
    before."""
    n = len(x)
    x = x / np.linalg.norm(x, axis=1, keepdims=True)
    for _ in range(rounds):
        before = x.copy()
        for i in range(n):
            lo, hi = (0, n) if n <= 2 * reach else (max(0, i - i % 512 - reach), n)
            if n > 2 * reach:
                hi = min(n, i - i % 512 + 512 + reach)
            others = [j for j in range(lo, hi) if j != i]
            sims = before[others] @ before[i]
            order = sorted(range(len(others)), key=lambda r: -sims[r])[:k]
            candidates = {others[r] for r in order}
            candidates |= {b for a, b in links if a == i} | {a for a, b in links if b == i}
            chosen = sorted(candidates, key=lambda j: -float(before[j] @ before[i]))[:k]
            weights = np.clip(np.array([before[j] @ before[i] for j in chosen]), 0.0, None)
            if weights.sum() > 0:
                pulled = (weights[:, None] * before[chosen]).sum(0) / weights.sum()
                x[i] = before[i] + alpha * pulled
        x = x / np.linalg.norm(x, axis=1, keepdims=True)
    return x


@pytest.mark.parametrize("overwrite", [False, True])
def test_lite_evolution_matches_the_plain_rule_in_two_buffers(overwrite: bool) -> None:
    # More chunks than twice the local reach, so that far chunks are not compared.
    n = 1100
    rng = np.random.default_rng(11)
    vectors = rng.standard_normal((n, 16)).astype(np.float32)
    ids = [f"c{i}" for i in range(n)]
    links = [(i, i + 1) for i in range(0, n - 1, 3)] + [(5, 1000), (40, 900)]
    graph = ContentGraph(
        doc_id="d",
        edges=[GraphEdge(kind=EdgeKind.REFERS_TO, source=ids[a], target=ids[b]) for a, b in links],
    )
    given = vectors.copy()
    _, evolved = evolve_lite(graph, ids, given, rounds=2, neighbours=3, overwrite=overwrite)
    expected = _evolve_by_the_book(links, vectors, rounds=2, k=3, alpha=0.5, reach=500)
    np.testing.assert_allclose(evolved, expected, atol=2e-6)
    if not overwrite:
        np.testing.assert_array_equal(given, vectors)  # the caller's vectors are untouched


def _mixed_in_two_buffers(
    x: np.ndarray, links: list[tuple[int, int]], nearest: np.ndarray, k: int, alpha: float
) -> np.ndarray:
    """One round the plain way, every row read from the round before's copy: the reference
    the in-place rounds must equal bit for bit (the same operations on the same values)."""
    before = x.copy()
    linked: dict[int, set[int]] = {}
    for a, b in links:
        linked.setdefault(a, set()).add(b)
        linked.setdefault(b, set()).add(a)
    for i in range(len(x)):
        candidates = sorted(linked.get(i, set()) | set(nearest[i].tolist()))
        values = before[candidates]
        sims = values @ before[i]
        top = np.argsort(-sims, kind="stable")[:k]
        weights = np.clip(sims[top], 0.0, None)
        if weights.sum() > 0:
            x[i] = before[i] + alpha * (weights[:, None] * values[top]).sum(0) / weights.sum()
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-9)


def test_lite_evolution_mixes_in_place_as_it_would_in_two_buffers() -> None:
    """A long document (rows written back long before the last is mixed), with links reaching
    further than the nearest rows do, both ways, and a run of zero vectors (no weight)."""
    from docsight.graph import evolve

    n, k, alpha = 3000, 3, 0.5
    rng = np.random.default_rng(5)
    walk = np.cumsum(rng.standard_normal((n, 24)), axis=0) * 0.3
    vectors = (walk + rng.standard_normal((n, 24))).astype(np.float32)
    vectors[200:260] = 0.0
    ids = [f"c{i}" for i in range(n)]
    links = [(i, i + 1) for i in range(n - 1)]
    links += [(int(a), int(b)) for a, b in rng.integers(0, n, size=(60, 2))]
    links += [(10, 2990), (2990, 11), (1500, 3), (7, 7)]
    for a, b in links[n - 1 :]:
        # Linked from afar and alike, so that what is read of the far row decides the mix.
        vectors[b] = vectors[a] + 0.1 * rng.standard_normal(24).astype(np.float32)
    graph = ContentGraph(
        doc_id="d",
        edges=[GraphEdge(kind=EdgeKind.REFERS_TO, source=ids[a], target=ids[b]) for a, b in links],
    )
    expected = evolve._normalise(vectors.copy())
    for _ in range(2):
        nearest = evolve._nearest(expected, k)
        expected = _mixed_in_two_buffers(expected, links, nearest, k, alpha)
    _, evolved = evolve_lite(graph, ids, vectors, rounds=2, neighbours=k, alpha=alpha)
    np.testing.assert_array_equal(evolved, expected)


def test_lite_evolution_holds_the_vectors_once_however_long_the_document() -> None:
    """Its working memory beside the caller's vectors does not grow with them: no second
    buffer of mixed rows, no temporary as large as the vectors when normalising, no set per
    row for the links."""

    def peak(n: int) -> int:
        rng = np.random.default_rng(n)
        vectors = rng.standard_normal((n, 384)).astype(np.float32)
        ids = [f"c{i}" for i in range(n)]
        graph = ContentGraph(
            doc_id="d",
            edges=[
                GraphEdge(kind=EdgeKind.NEXT, source=ids[i], target=ids[i + 1])
                for i in range(n - 1)
            ],
        )
        tracemalloc.start()
        try:
            evolve_lite(graph, ids, vectors, rounds=1, overwrite=True)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    small, large = peak(2000), peak(8000)
    grown_vectors = (8000 - 2000) * 384 * 4
    # Two buffers and a whole-array norm grew by twice the vectors' growth.
    assert large - small < 0.25 * grown_vectors


def test_similar_edges_need_the_threshold(document: tuple[Document, list[Chunk]]) -> None:
    doc, chunks = document
    vectors = _vectors(len(chunks), seed=5)
    graph = build_graph(doc, chunks, vectors, window=0).graph
    ids = [c.id for c in chunks]
    strict, _ = evolve_lite(graph, ids, vectors, rounds=1, min_similarity=1.01)
    loose, _ = evolve_lite(graph, ids, vectors, rounds=1, min_similarity=-1.0)
    assert not [e for e in strict.edges if e.kind == EdgeKind.SIMILAR]
    assert [e for e in loose.edges if e.kind == EdgeKind.SIMILAR]


class _Scripted:
    """A summarizer that records its requests and answers from a function."""

    name = "scripted-model"

    def __init__(self) -> None:
        self.requests: list[SummaryRequest] = []

    def summarize(self, requests: list[SummaryRequest]) -> list[NodeSummary | None]:
        self.requests.extend(requests)
        return [
            None
            if r.kind == "page"
            else NodeSummary(summary=f"about {r.title or r.kind}", keywords=["k"])
            for r in requests
        ]


def test_model_summaries_replace_extractive_ones_where_the_model_answered(
    document: tuple[Document, list[Chunk]],
) -> None:
    doc, chunks = document
    scripted = _Scripted()
    graph = build_graph(doc, chunks, _vectors(len(chunks)), summarizer=scripted).graph
    index = graph.node_index()
    table = index[chunks[2].id]
    assert table.summary_by == "scripted-model" and table.keywords == ["k"]
    assert index[chunks[0].id].summary_by == "extractive"  # running text stays extractive
    pages = [n for n in graph.nodes if n.kind == NodeKind.PAGE]
    assert all(p.summary_by == "extractive" for p in pages)  # the model returned None
    evolved = evolve_model(graph, scripted, rounds=2)
    assert evolved.evolution == "model" and evolved.rounds == 2
    section = next(n for n in evolved.nodes if n.kind == NodeKind.SECTION)
    assert section.summary_by == "scripted-model"
    # Evolution requests carry the neighbours' summaries.
    assert any("Related parts:" in r.content for r in scripted.requests)


def test_make_graph_follows_the_settings(document: tuple[Document, list[Chunk]]) -> None:
    doc, chunks = document
    vectors = _vectors(len(chunks))
    lite = make_graph(doc, chunks, vectors, GraphSettings(evolution="lite", rounds=2))
    assert lite.graph.evolution == "lite"
    assert not np.allclose(lite.vectors[chunks[0].id], vectors[0])
    none = make_graph(doc, chunks, vectors, GraphSettings(evolution="none"))
    np.testing.assert_allclose(none.vectors[chunks[0].id], vectors[0])
    # Without a chat model "auto" stays offline.
    auto = make_graph(doc, chunks, vectors, GraphSettings())
    assert auto.graph.evolution == "lite"
    assert all(n.summary_by == "extractive" for n in auto.graph.nodes)


def test_keywords_prefer_distinctive_words() -> None:
    model = KeywordModel(["the pump and the seal", "the pump and the filter", "the pump"])
    assert model.keywords("pump seal seal", k=1) == ["seal"]
    assert first_sentence("# Heading\nShort. This sentence has enough words in it.") == (
        "This sentence has enough words in it."
    )


def test_edges_validate_and_read_back_the_stored_json_unchanged() -> None:
    # The stored form: defaults left out, kinds as strings (as graphs written before edges
    # became dataclasses were stored).
    stored = (
        '{"doc_id":"d","edges":[{"kind":"next","source":"a","target":"b","weight":0.5},'
        '{"kind":"refers_to","source":"b","target":"c","text":"Table 3"}]}'
    )
    graph = ContentGraph.model_validate_json(stored)
    assert graph.edges == [
        GraphEdge(kind=EdgeKind.NEXT, source="a", target="b", weight=0.5),
        GraphEdge(kind=EdgeKind.REFERS_TO, source="b", target="c", text="Table 3"),
    ]
    assert graph.edges[0].kind is EdgeKind.NEXT
    assert graph.model_dump_json(exclude_defaults=True) == stored
    assert len({*graph.edges, GraphEdge(kind="next", source="a", target="b", weight=0.5)}) == 2
    with pytest.raises(ValidationError):
        GraphEdge(kind="points_at", source="a", target="b")
    with pytest.raises(dataclasses.FrozenInstanceError):
        graph.edges[0].weight = 2.0  # type: ignore[misc]


def test_an_edge_costs_a_fraction_of_a_model() -> None:
    # A 1,000-page report's graph has about 41,000 edges: as pydantic models they held about
    # 500 bytes each, read back from JSON about 1,000.
    ids = [f"{i:032x}" for i in range(1000)]
    tracemalloc.start()
    try:
        edges = [
            GraphEdge(kind=EdgeKind.NEXT, source=ids[i % 1000], target=ids[(i * 7) % 1000])
            for i in range(10_000)
        ]
        held, _ = tracemalloc.get_traced_memory()
        stored = ContentGraph(doc_id="d", edges=edges).model_dump_json()
        del edges
        before, _ = tracemalloc.get_traced_memory()
        graph = ContentGraph.model_validate_json(stored)
        read_back = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(graph.edges) == 10_000
    assert held / 10_000 < 200
    assert read_back / 10_000 < 250


def test_keywords_counted_piece_by_piece_are_those_of_the_joined_text() -> None:
    pieces = [
        "The pump's seal failed twice; the seal was replaced.",
        "Filter-housing pressure rose\nwhile the pump ran dry",
        "Seal, pump, filter: the pump again.",
    ]
    model = KeywordModel(pieces)
    counts: Counter[str] = Counter()
    for piece in pieces:
        counts.update(keyword_tokens(piece))
    assert model.top(counts) == model.keywords("\n".join(pieces))
    assert model.top(counts, k=2) == model.keywords("\n".join(pieces), k=2)


def test_vectors_already_in_reading_order_are_not_copied() -> None:
    vectors = np.arange(12, dtype=np.float32).reshape(4, 3)
    assert rows_in_order(vectors, [0, 1, 2, 3]) is vectors
    np.testing.assert_array_equal(rows_in_order(vectors, [2, 0, 3, 1]), vectors[[2, 0, 3, 1]])
    np.testing.assert_array_equal(rows_in_order(vectors, [0, 1]), vectors[:2])


def test_chunks_out_of_order_give_the_graph_of_chunks_in_order(
    document: tuple[Document, list[Chunk]],
) -> None:
    doc, chunks = document
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(len(chunks), 8)).astype(np.float32)
    shuffled = [int(i) for i in rng.permutation(len(chunks))]
    settings = GraphSettings()
    in_order = make_graph(doc, chunks, vectors, settings)
    mixed = make_graph(doc, [chunks[i] for i in shuffled], vectors[shuffled], settings)
    assert mixed.graph == in_order.graph
    assert mixed.vectors.keys() == in_order.vectors.keys()
    for key, vector in in_order.vectors.items():
        np.testing.assert_allclose(mixed.vectors[key], vector, rtol=1e-6)


@pytest.mark.parametrize("items", [1, 2, 1000])
def test_the_stored_graph_is_written_piece_by_piece_and_reads_back_whole(
    document: tuple[Document, list[Chunk]], items: int
) -> None:
    """The stored blob is compressed as its nodes and edges are serialised, a few at a time; it
    holds the same JSON as the whole graph's, and an empty graph keeps its other fields."""
    import json
    import zlib

    from docsight.index.schema import graph_blob, graph_from_row

    doc, chunks = document
    graph = make_graph(doc, chunks, _vectors(len(chunks)), GraphSettings(evolution="lite")).graph
    assert len(graph.nodes) > 2 and len(graph.edges) > 2
    blob = graph_blob(graph, items)
    whole = json.loads(graph.model_dump_json(exclude_defaults=True))
    assert json.loads(zlib.decompress(blob)) == whole
    assert graph_from_row({"graph": blob}) == graph
    empty = ContentGraph(doc_id="d", rounds=2)
    assert graph_from_row({"graph": graph_blob(empty, items)}) == empty


class _EchoChat:
    """A chat model whose summary names the first words of what it was shown."""

    model = "echo-chat"

    def chat_json(self, messages: list[dict[str, str]], schema: type, **_: object) -> object:
        content = messages[0]["content"].split("<content>")[1]
        return schema(summary="shown: " + " ".join(content.split()[:6]), keywords=["echo"])


@pytest.mark.parametrize("chat", [None, _EchoChat()], ids=["offline", "model"])
def test_a_skeleton_from_elsewhere_finishes_to_the_graph_built_here(
    document: tuple[Document, list[Chunk]], chat: object | None
) -> None:
    """The ingest worker builds the skeleton beside the chunks and sends it; the parent finishes
    it with the chunks' ids, vectors and (for model summaries) texts alone, in any order."""
    import pickle

    from docsight.document.artifacts import strip_placeholders
    from docsight.graph import build_skeleton, finish_graph

    doc, chunks = document
    rng = np.random.default_rng(5)
    vectors = rng.normal(size=(len(chunks), 8)).astype(np.float32)
    settings = GraphSettings(evolution="auto", rounds=2)
    whole = make_graph(doc, chunks, vectors, settings, chat=chat)
    skeleton = pickle.loads(pickle.dumps(build_skeleton(doc, chunks, window=settings.window)))
    assert all(not n.summary_by or n.summary_by == "extractive" for n in skeleton.nodes)
    shuffled = [int(i) for i in rng.permutation(len(chunks))]
    texts = {c.id: strip_placeholders(c.body) for c in chunks} if chat else None
    finished = finish_graph(
        skeleton,
        [chunks[i].id for i in shuffled],
        vectors[shuffled],
        settings,
        chat=chat,
        texts=texts,
    )
    assert finished.graph == whole.graph
    assert finished.texts == whole.texts
    assert finished.vectors.keys() == whole.vectors.keys()
    for key, vector in whole.vectors.items():
        np.testing.assert_allclose(finished.vectors[key], vector, rtol=1e-6)
    if chat is not None:  # the table chunk's summary came from its text, a page's from its chunks'
        index = finished.graph.node_index()
        table = index[chunks[2].id]
        assert table.summary_by == "echo-chat" and table.summary.startswith("shown: ")
        # Without model evolution (which rewrites them), summaries are the first the model wrote.
        lite = GraphSettings(evolution="lite")
        written = finish_graph(
            skeleton, [c.id for c in chunks], vectors, lite, chat=chat, texts=texts
        )
        page = next(n for n in written.graph.nodes if n.kind == NodeKind.PAGE)
        first = next(c for c in sorted(chunks, key=lambda c: c.order) if page.page in c.pages)
        words = " ".join(strip_placeholders(first.body).split()[:6])
        assert page.summary_by == "echo-chat"
        assert page.summary.startswith("shown: " + words[: len(page.summary) - 7]), page.summary


def test_a_skeleton_over_other_chunks_is_refused(document: tuple[Document, list[Chunk]]) -> None:
    from docsight.graph import build_skeleton, finish_graph

    doc, chunks = document
    skeleton = build_skeleton(doc, chunks)
    with pytest.raises(ValueError, match="chunk nodes that are not"):
        finish_graph(
            skeleton, [c.id for c in chunks[:-1]], _vectors(len(chunks) - 1), GraphSettings()
        )


def test_the_skeleton_from_element_facts_is_the_skeleton_from_the_elements(
    document: tuple[Document, list[Chunk]],
) -> None:
    """The worker lets a long document's elements go before it builds the graph, which then
    reads their facts: the graph must be the same."""
    from docsight.graph.build import build_skeleton, element_facts

    doc, chunks = document
    elements = list(doc.elements)
    # A chart, a page header and a hidden caption: what the facts must tell apart.
    elements[7] = elements[7].model_copy(update={"attrs": {"picture_class": "chart"}})
    elements.append(_element(8, ElementKind.HEADER, "K-40 manual", 1, None))
    hidden = _element(9, ElementKind.CAPTION, "Figure 9: not shown", 1, "s1")
    elements.append(hidden.model_copy(update={"hidden": [Hidden.NO_CONTRAST]}))
    doc = doc.model_copy(update={"elements": elements})
    facts = element_facts(doc.elements)
    assert [f.id for f in facts] == [e.id for e in elements]
    assert [f.indexable for f in facts][-2:] == [False, False] and facts[7].chart
    assert facts[1].text == "" and facts[5].text == "Table 2: Rated pressure by model"

    whole = build_skeleton(doc, chunks, window=2)
    head = doc.model_copy(update={"elements": []})
    assert build_skeleton(head, chunks, window=2, facts=facts) == whole
    assert whole.artifacts["chart"] and whole.references["table 2"]
    assert "figure 9" not in whole.references  # hidden text is no caption


def test_keywords_share_one_string_per_word() -> None:
    """A long document's nodes name a few hundred words tens of thousands of times: each word
    is one object, in the worker and wherever the pickled graph is read."""
    import pickle

    from docsight.graph.summarize import KeywordModel

    model = KeywordModel(["revenue grew in europe", "revenue fell in asia", "costs rose"])
    first = model.keywords("".join(["reve", "nue grew strongly"]))
    second = model.keywords("revenue fell " + "sharply")
    shared = [w for w in first if w in second]
    assert shared and all(any(w is v for v in second) for w in shared)
    back = pickle.loads(pickle.dumps([first, second]))
    assert all(any(w is v for v in back[1]) for w in back[0] if w in back[1])
