"""The graph's skeleton built in two passes (``graph.skeleton``): the nodes are those of the
whole texts, the chunks are never held, and chunks that are not the same twice are refused."""

from __future__ import annotations

import random
import tracemalloc
from collections.abc import Iterator

import pytest

from docsight.document.artifacts import strip_placeholders
from docsight.document.chunk import Chunk
from docsight.document.model import Document, Element, ElementKind, Page, Section
from docsight.graph.model import EdgeKind, GraphEdge, GraphNode, NodeKind
from docsight.graph.skeleton import SkeletonBuilder, build_skeleton, element_facts
from docsight.graph.summarize import KeywordModel, first_sentence, shorten

DOC = "e" * 32
_WORDS = (
    "pump pressure valve turbine revenue margin segment outlook capital reserve cooling "
    "throughput sensor gasket flange inventory dividend audit liability forecast"
).split()


def _doc(name: str, pages: int, **fields: object) -> Document:
    return Document(
        id=DOC,
        name=name,
        source=name,
        media_type="application/pdf",
        sha256="0" * 64,
        parser="test",
        pages=[Page(index=i) for i in range(pages)],
        **fields,  # type: ignore[arg-type]
    )


def _chunk(name: str, order: int, body: str, pages: list[int], **fields: object) -> Chunk:
    return Chunk(
        id=f"c{order:031x}",
        doc_id=DOC,
        doc_name=name,
        text=body,
        body=body,
        pages=pages,
        page=pages[0],
        order=order,
        **fields,  # type: ignore[arg-type]
    )


def _body(rng: random.Random) -> str:
    """A chunk body of the shapes the extractive summaries treat apart."""
    shape = rng.randrange(7)
    words = [rng.choice(_WORDS) for _ in range(rng.randrange(2, 14))]
    if shape == 0:  # a sentence with four words or more
        return " ".join(words).capitalize() + ". " + " ".join(rng.sample(_WORDS, 5)) + "."
    if shape == 1:  # a heading line, then text without a sentence end
        return f"## {words[0].title()}\n" + " ".join(words)
    if shape == 2:  # short lines only: no sentence anywhere
        return "\n".join(w.title() for w in words[:3])
    if shape == 3:  # blank
        return rng.choice(["", "  ", " \n "])
    if shape == 4:  # line breaks of both kinds
        return " ".join(words[:3]) + "\r\n" + " ".join(words).capitalize() + "."
    if shape == 5:  # many words, no sentence end: the summary is cut
        return " ".join(rng.choice(_WORDS) for _ in range(60))
    return "| " + " | ".join(words[:3]) + " |\n| 1 | 2 | 3 |"


def _document(seed: int) -> tuple[Document, list[Chunk]]:
    rng = random.Random(seed)
    pages = 12
    sections = [
        Section(id="s1", title="1 Overview", level=1, page=0, order=0),
        Section(id="s2", title="1.1 Pumps", level=2, page=1, order=1, parent_id="s1"),
        Section(id="s3", title="2 Finance", level=1, page=4, order=2),
        Section(id="s4", title="2.1 Margins", level=2, page=6, order=3, parent_id="s3"),
        Section(id="s5", title="Appendix A Empty", level=1, page=11, order=4),  # no chunks
    ]
    elements: list[Element] = []
    chunks: list[Chunk] = []
    for order in range(rng.randrange(25, 45)):
        page = min(pages - 2, order * pages // 45)  # the last page has no chunk
        section = rng.choice(["s1", "s2", "s3", "s4", None])
        members = []
        if rng.random() < 0.3:
            kind = rng.choice([ElementKind.HEADING, ElementKind.CAPTION])
            text = f"{rng.choice(_WORDS).title()} {order}"
            members.append(
                Element(
                    id=f"{len(elements):032x}",
                    kind=kind,
                    text=text,
                    page=page,
                    order=len(elements),
                    section_id=section,
                )
            )
            elements.append(members[-1])
        members.append(
            Element(
                id=f"{len(elements):032x}",
                kind=ElementKind.PARAGRAPH,
                text="x",
                page=page,
                order=len(elements),
                section_id=section,
            )
        )
        elements.append(members[-1])
        body = _body(rng)
        spans = [page, page + 1] if rng.random() < 0.2 else [page]
        if rng.random() < 0.1:
            spans = [page, page]  # a page named twice: contained once, read twice
        chunks.append(
            _chunk(
                "r.pdf",
                order,
                body,
                spans,
                kind="table" if body.startswith("|") else "text",
                element_ids=[e.id for e in members],
                section_path=[section] if section else [],
            )
        )
    return _doc("r.pdf", pages, sections=sections, elements=elements), chunks


def _plain_structure(document: Document, chunks: list[Chunk]) -> dict[str, tuple[str, list[str]]]:
    """Each structure node's summary and keywords by the rule written plainly: from the texts
    of its chunks joined whole."""
    model = KeywordModel([strip_placeholders(c.body) for c in chunks])
    section_of = {
        c.id: next(e.section_id for e in document.elements if e.id in c.element_ids) for c in chunks
    }
    out: dict[str, tuple[str, list[str]]] = {}
    for section in document.sections:
        own = [c for c in chunks if section_of[c.id] == section.id]
        text = "\n".join(strip_placeholders(c.body) for c in own)
        summary = first_sentence(text) if text.strip() else ""
        subs = [s.title for s in document.sections if s.parent_id == section.id]
        if subs:
            summary = (summary + " " if summary else "") + "Covers: " + "; ".join(subs)
        node = GraphNode.make_id(DOC, NodeKind.SECTION, section.id)
        out[node] = (shorten(summary, 60), model.keywords(section.title + "\n" + text))
    for page in document.pages:
        on = [c for c in chunks for p in c.pages if p == page.index]
        text = "\n".join(strip_placeholders(c.body) for c in on)
        lines = [
            e.text
            for e in document.elements
            if e.page == page.index and e.kind in (ElementKind.HEADING, ElementKind.CAPTION)
        ]
        opening = first_sentence(text) if text.strip() else ""
        parts = [shorten("; ".join(dict.fromkeys(lines)), 40)] if lines else []
        if opening and not any(opening.startswith(line) for line in lines):
            parts.append(opening)
        node = GraphNode.make_id(DOC, NodeKind.PAGE, page.index)
        out[node] = (" ".join(parts), model.keywords(text + "\n" + "\n".join(lines)))
    text = "\n".join(strip_placeholders(c.body) for c in chunks[:20])
    opening = first_sentence(text) if text.strip() else ""
    top = "Sections: " + "; ".join(s.title for s in document.sections if s.level == 1)
    summary = shorten((opening + " " if opening else "") + top, 80)
    all_text = "\n".join(strip_placeholders(c.body) for c in chunks)
    out[GraphNode.make_id(DOC, NodeKind.DOCUMENT, "")] = (summary, model.keywords(all_text))
    return out


@pytest.mark.parametrize("seed", range(12))
def test_structure_nodes_read_chunk_by_chunk_are_those_of_the_joined_texts(seed: int) -> None:
    document, chunks = _document(seed)
    graph = build_skeleton(document, chunks)
    plain = _plain_structure(document, chunks)
    got = {n.id: (n.summary, n.keywords) for n in graph.nodes if n.kind != NodeKind.CHUNK}
    assert got == plain
    # Structure nodes follow the chunks: sections, pages, then the document, in order.
    kinds = [n.kind for n in graph.nodes]
    assert kinds == sorted(
        kinds, key=[NodeKind.CHUNK, NodeKind.SECTION, NodeKind.PAGE, NodeKind.DOCUMENT].index
    )
    # A chunk that names its page twice is read twice but contained once.
    contains = _pair_counts(graph.edges, EdgeKind.CONTAINS)
    assert max(contains.values()) == 1


def _pair_counts(edges: list[GraphEdge], kind: EdgeKind) -> dict[tuple[str, str], int]:
    counts: dict[tuple[str, str], int] = {}
    for edge in edges:
        if edge.kind == kind:
            counts[(edge.source, edge.target)] = counts.get((edge.source, edge.target), 0) + 1
    return counts


class _Count:
    """A sink that counts what it is given and keeps nothing."""

    def __init__(self) -> None:
        self.n_nodes = 0
        self.n_edges = 0

    def nodes(self, nodes: list[GraphNode]) -> None:
        self.n_nodes += len(nodes)

    def edges(self, edges: list[GraphEdge]) -> None:
        self.n_edges += len(edges)


def test_the_builder_holds_neither_the_chunks_nor_the_graph() -> None:
    """Chunks made afresh for each pass (as read back from a spool) and a sink that keeps
    nothing: the builder's peak is a fraction of the chunks' bodies."""
    pages, per_page = 100, 4
    rng = random.Random(7)
    bodies = [
        " ".join(rng.choice(_WORDS) for _ in range(1500)) + "." for _ in range(pages * per_page)
    ]
    document = _doc("long.pdf", pages)

    def each() -> Iterator[Chunk]:
        for order, body in enumerate(bodies):
            yield _chunk("long.pdf", order, body, [order // per_page], kind="text")

    size = sum(len(b) for b in bodies)
    sink = _Count()
    tracemalloc.start()
    try:
        SkeletonBuilder(document, [], window=2).build(each, sink)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert sink.n_nodes == pages * per_page + pages + 1
    assert sink.n_edges > pages * per_page * 3
    assert peak < size / 4, (peak, size)


def test_chunks_out_of_order_or_not_the_same_twice_are_refused() -> None:
    document, chunks = _document(1)
    facts = element_facts(document.elements)
    backwards = list(reversed(chunks))
    with pytest.raises(ValueError, match="not in reading order"):
        SkeletonBuilder(document, facts, window=2).build(lambda: iter(backwards), _Count())
    passes = iter([chunks, chunks[:-1]])
    with pytest.raises(ValueError, match="changed between the passes"):
        SkeletonBuilder(document, facts, window=2).build(lambda: iter(next(passes)), _Count())
    swapped = [*chunks[:-2], chunks[-1], chunks[-2]]
    passes = iter([chunks, swapped])
    with pytest.raises(ValueError, match="changed between the passes"):
        SkeletonBuilder(document, facts, window=2).build(lambda: iter(next(passes)), _Count())
    # build_skeleton sorts what it is given.
    assert build_skeleton(document, backwards) == build_skeleton(document, chunks)
