"""Building a document's content graph from its map and its chunks.

Everything here is derived: the document model gives sections, captions and references
(``document.relations``), the chunker gives the retrievable units, the encoder's chunk vectors
give evolution its starting point. Building costs no model call unless a summarizer is given.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from docsight.document.artifacts import ARTIFACT_KINDS, PLACEHOLDER_RE, strip_placeholders
from docsight.document.captions import CAPTION_RE, caption_target
from docsight.document.chunk import Chunk
from docsight.document.model import Document, Element, ElementKind
from docsight.document.model import EdgeKind as MapEdge
from docsight.graph.model import (
    ContentGraph,
    EdgeKind,
    GraphEdge,
    GraphNode,
    NodeKind,
    Reference,
)
from docsight.graph.summarize import (
    KeywordModel,
    Summarizer,
    SummaryRequest,
    first_sentence,
    keyword_tokens,
    shorten,
    with_summary,
)

#: Chunk kinds that hold a table or a picture rather than running text.
ARTIFACT_CHUNK_KINDS = frozenset({"table", "figure", "chart"})
_SECTION_NUMBER = re.compile(
    r"^\s*(?:section\s+|chapter\s+|part\s+)?([0-9]+(?:\.[0-9]+)*)\.?\s", re.I
)
_APPENDIX = re.compile(
    r"^\s*(appendix|annex|chapter|part|schedule|exhibit)\s+([A-Z0-9]{1,6})\b", re.I
)
_SENTENCE_END = re.compile(r"[.!?:;\"'”)\]]\s*$")


@dataclass
class GraphBundle:
    """A built graph and what the store indexes of it: per node, the text the ``tree`` channel
    searches and a vector (evolved for chunks, the mean of their chunks for structure nodes)."""

    graph: ContentGraph
    texts: dict[str, str] = field(default_factory=dict)
    vectors: dict[str, np.ndarray] = field(default_factory=dict)


def search_text(node: GraphNode) -> str:
    """What the ``tree`` channel matches for a node: its title, summary and keywords."""
    parts = [node.title, node.summary, " ".join(node.keywords)]
    return "\n".join(p for p in parts if p)


def rows_in_order(vectors: np.ndarray, rows: list[int]) -> np.ndarray:
    """``vectors[rows]``, without the copy when the rows are already in order (chunks come in
    reading order: a long document's vectors are megabytes, and the graph held several copies)."""
    if len(rows) == len(vectors) and all(r == i for i, r in enumerate(rows)):
        return vectors
    return vectors[rows]


@dataclass(frozen=True, slots=True)
class ElementFact:
    """What the graph reads of one element. A long document's elements are tens of MiB as
    objects; their facts are a twentieth of that, so the worker that builds the graph can let
    the elements go first (:func:`build_skeleton`'s ``facts``)."""

    id: str
    kind: ElementKind
    page: int
    section_id: str | None
    #: Not furniture and not hidden (``Document.indexable_elements``).
    indexable: bool
    #: The text of a title, heading or caption (page titles, caption numbers); "" otherwise.
    text: str
    #: A picture that shows a chart (the ``chart`` artifacts of the reference index).
    chart: bool


_NAMED_KINDS = frozenset({ElementKind.TITLE, ElementKind.HEADING, ElementKind.CAPTION})


def element_facts(elements: Iterable[Element]) -> list[ElementFact]:
    """The facts of ``elements``, in their order."""
    return [
        ElementFact(
            id=e.id,
            kind=e.kind,
            page=e.page,
            section_id=e.section_id,
            indexable=e.is_indexable,
            text=e.text if e.kind in _NAMED_KINDS else "",
            chart=_is_chart(e),
        )
        for e in elements
    ]


@dataclass(frozen=True, slots=True)
class ChunkFact:
    """What the graph reads of one chunk: all but its indexed text (the body with a section
    prefix), its names and boxes. A third of a chunk's size as an object, so a worker can write
    a long document's chunks away as the chunker makes them and build the graph from these."""

    id: str
    kind: str
    order: int
    page: int
    pages: list[int]
    body: str
    section_path: list[str]
    element_ids: list[str]

    @classmethod
    def of(cls, chunk: Chunk) -> ChunkFact:
        return cls(
            id=chunk.id,
            kind=chunk.kind,
            order=chunk.order,
            page=chunk.page,
            pages=chunk.pages,
            body=chunk.body,
            section_path=chunk.section_path,
            element_ids=chunk.element_ids,
        )


def build_skeleton(
    document: Document,
    chunks: Sequence[Chunk | ChunkFact],
    *,
    window: int = 2,
    facts: Sequence[ElementFact] | None = None,
) -> ContentGraph:
    """The content graph of ``document`` over ``chunks`` (or their :class:`ChunkFact`) before
    any vector is known: its nodes with extractive summaries, its edges and reference index.
    It needs the whole document (or its elements' ``facts``, with the rest of the document) and
    its chunks, where they are built (the ingest worker); :func:`finish_graph
    <docsight.graph.finish_graph>` adds what needs the vectors, with the chunks' ids alone."""
    if facts is None:
        facts = element_facts(document.elements)
    read = [c if isinstance(c, ChunkFact) else ChunkFact.of(c) for c in chunks]
    return _Builder(document, facts, read, window).build()


def build_graph(
    document: Document,
    chunks: Sequence[Chunk],
    vectors: np.ndarray,
    *,
    window: int = 2,
    summarizer: Summarizer | None = None,
) -> GraphBundle:
    """The content graph of ``document`` over ``chunks`` (in any order, with their ``vectors``),
    its node texts and structure vectors, without evolution."""
    graph = build_skeleton(document, chunks, window=window)
    if summarizer is not None:
        texts = {c.id: strip_placeholders(c.body) for c in chunks}
        graph = model_summaries(graph, texts, summarizer)
    bundle = bundle_of(graph, in_graph_order(graph, [c.id for c in chunks], vectors))
    bundle.texts = {n.id: search_text(n) for n in graph.nodes}
    return bundle


def in_graph_order(
    graph: ContentGraph, chunk_ids: Sequence[str], vectors: np.ndarray
) -> np.ndarray:
    """``vectors`` (in ``chunk_ids`` order) in the order of ``graph``'s chunk nodes, copied only
    when the orders differ (see :func:`chunk_order`)."""
    if not len(vectors):
        chunk_order(graph, chunk_ids)  # still a graph over these chunks
        return np.zeros((0, 1), np.float32)
    return rows_in_order(vectors, chunk_order(graph, chunk_ids))


def bundle_of(graph: ContentGraph, rows: np.ndarray) -> GraphBundle:
    """``graph`` with its node vectors: each chunk's own (``rows``: one per chunk node, in the
    graph's order, see :func:`in_graph_order`) and each structure node's mean of its chunks'.
    The node texts are left to the caller, which sets them once the graph is final."""
    bundle = GraphBundle(graph=graph)
    bundle.vectors.update(structure_vectors(graph, rows))
    chunk_nodes = [n.id for n in graph.nodes if n.kind == NodeKind.CHUNK]
    for chunk_id, vector in zip(chunk_nodes, rows, strict=True):
        bundle.vectors[chunk_id] = vector
    return bundle


def chunk_order(graph: ContentGraph, chunk_ids: Sequence[str]) -> list[int]:
    """For each chunk node of ``graph`` in reading order, its row in ``chunk_ids``; a graph
    built over other chunks than these is an error (a worker's graph must match its chunks)."""
    row = {cid: i for i, cid in enumerate(chunk_ids)}
    nodes = [n.id for n in graph.nodes if n.kind == NodeKind.CHUNK]
    if len(nodes) != len(row) or any(n not in row for n in nodes):
        raise ValueError(
            f"the graph of {graph.doc_id} has {len(nodes)} chunk nodes that are not the "
            f"{len(row)} chunks given"
        )
    return [row[n] for n in nodes]


def structure_vectors(graph: ContentGraph, vectors: np.ndarray) -> dict[str, np.ndarray]:
    """Section, page and document vectors: the normalised mean of their chunks' vectors
    (``vectors``: one row per chunk node of ``graph``, in its order)."""
    if not len(vectors):
        return {}
    index = {n.id: i for i, n in enumerate(n for n in graph.nodes if n.kind == NodeKind.CHUNK)}
    doc_node = next((n.id for n in graph.nodes if n.kind == NodeKind.DOCUMENT), None)
    members: dict[str, list[int]] = {}
    if doc_node is not None:
        members[doc_node] = list(range(len(index)))
    for edge in graph.edges:
        if edge.kind == EdgeKind.CONTAINS and edge.target in index:
            members.setdefault(edge.source, []).append(index[edge.target])
    # Sections hold their subsections' chunks too.
    parents = {n.id: n.parent for n in graph.nodes if n.kind == NodeKind.SECTION}
    for section, parent in parents.items():
        rows = members.get(section, [])
        seen: set[str] = set()
        while parent in parents and parent not in seen:
            seen.add(parent)
            members.setdefault(parent, []).extend(rows)
            parent = parents[parent]
    out: dict[str, np.ndarray] = {}
    for node, rows in members.items():
        if node in index or not rows:
            continue
        mean = vectors[sorted(set(rows))].mean(axis=0)
        out[node] = mean / max(float(np.linalg.norm(mean)), 1e-9)
    return out


class _Builder:
    def __init__(
        self,
        document: Document,
        facts: Sequence[ElementFact],
        chunks: list[ChunkFact],
        window: int,
    ) -> None:
        # The document's pages, sections, edges and names; its elements are read as ``facts``.
        self.doc = document
        self.chunks = sorted(chunks, key=lambda c: c.order)
        self.window = max(0, window)
        self.elements = {e.id: e for e in facts}
        self.indexable = [e for e in facts if e.indexable]
        self.keywords = KeywordModel([strip_placeholders(c.body) for c in self.chunks])
        self.doc_node = GraphNode.make_id(document.id, NodeKind.DOCUMENT, "")
        self.section_node = {
            s.id: GraphNode.make_id(document.id, NodeKind.SECTION, s.id) for s in document.sections
        }
        self.page_node = {
            p.index: GraphNode.make_id(document.id, NodeKind.PAGE, p.index) for p in document.pages
        }
        # Element → the chunk that holds it; an artifact's own chunk wins over the text chunk
        # that only carries its placeholder.
        self.chunk_of: dict[str, str] = {}
        for chunk in self.chunks:
            for element_id in chunk.element_ids:
                if chunk.kind in ARTIFACT_CHUNK_KINDS or element_id not in self.chunk_of:
                    self.chunk_of[element_id] = chunk.id
        self.chunk_section: dict[str, str | None] = {c.id: self._section_of(c) for c in self.chunks}
        self.edges: list[GraphEdge] = []
        self.nodes: list[GraphNode] = []

    # --- nodes -------------------------------------------------------------------------------

    def _section_of(self, chunk: ChunkFact) -> str | None:
        members = [self.elements[e] for e in chunk.element_ids if e in self.elements]
        content = [e for e in members if e.kind not in (ElementKind.HEADING, ElementKind.TITLE)]
        for element in content or members:
            if element.section_id in self.section_node:
                return element.section_id
        return None

    def build(self) -> ContentGraph:
        self._chunk_nodes()
        self._section_nodes()
        self._page_nodes()
        self._document_node()
        self._adjacency()
        self._artifacts()
        self._references()
        self._continuations()
        references, artifacts = self._reference_index()
        return ContentGraph(
            doc_id=self.doc.id,
            nodes=self.nodes,
            edges=_dedupe(self.edges),
            references=references,
            artifacts=artifacts,
        )

    def _chunk_nodes(self) -> None:
        for i, chunk in enumerate(self.chunks):
            body = strip_placeholders(chunk.body)
            summary = _table_summary(body) if chunk.kind == "table" else first_sentence(body)
            section = self.chunk_section[chunk.id]
            self.nodes.append(
                GraphNode(
                    id=chunk.id,
                    kind=NodeKind.CHUNK,
                    title=chunk.section_path[-1] if chunk.section_path else "",
                    summary=summary,
                    keywords=self.keywords.keywords(body),
                    page=chunk.page,
                    last_page=max(chunk.pages or [chunk.page]),
                    parent=self.section_node[section] if section else self.doc_node,
                    order=i,
                    chunk_kind=chunk.kind,
                )
            )

    def _section_nodes(self) -> None:
        children: dict[str | None, list[str]] = {}
        for section in sorted(self.doc.sections, key=lambda s: s.order):
            children.setdefault(section.parent_id, []).append(section.id)
        chunks_in: dict[str, list[ChunkFact]] = {}
        for chunk in self.chunks:
            section_id = self.chunk_section[chunk.id]
            if section_id is not None:
                chunks_in.setdefault(section_id, []).append(chunk)
        titles = {s.id: s.title for s in self.doc.sections}
        for i, section in enumerate(sorted(self.doc.sections, key=lambda s: s.order)):
            own = chunks_in.get(section.id, [])
            pages = [p for c in own for p in (c.pages or [c.page])] or [section.page]
            text = "\n".join(strip_placeholders(c.body) for c in own)
            opening = first_sentence(text) if text.strip() else ""
            subs = [titles[c] for c in children.get(section.id, [])]
            summary = opening
            if subs:
                summary = (summary + " " if summary else "") + "Covers: " + "; ".join(subs[:8])
            node = self.section_node[section.id]
            parent = self.section_node.get(section.parent_id or "", self.doc_node)
            self.nodes.append(
                GraphNode(
                    id=node,
                    kind=NodeKind.SECTION,
                    title=section.title,
                    summary=shorten(summary, 60),
                    keywords=self.keywords.keywords(section.title + "\n" + text),
                    page=min(pages),
                    last_page=max(pages),
                    parent=parent,
                    order=i,
                )
            )
            self.edges.append(GraphEdge(kind=EdgeKind.CONTAINS, source=parent, target=node))
            for chunk in own:
                self.edges.append(GraphEdge(kind=EdgeKind.CONTAINS, source=node, target=chunk.id))
        for chunk in self.chunks:
            if self.chunk_section[chunk.id] is None:
                self.edges.append(
                    GraphEdge(kind=EdgeKind.CONTAINS, source=self.doc_node, target=chunk.id)
                )

    def _page_nodes(self) -> None:
        on_page: dict[int, list[ChunkFact]] = {}
        for chunk in self.chunks:
            for index in chunk.pages or [chunk.page]:
                on_page.setdefault(index, []).append(chunk)
        heads: dict[int, list[str]] = {}
        for element in self.indexable:
            if element.kind in (ElementKind.TITLE, ElementKind.HEADING, ElementKind.CAPTION):
                heads.setdefault(element.page, []).append(" ".join(element.text.split()))
        for page in self.doc.pages:
            chunks = on_page.get(page.index, [])
            lines = heads.get(page.index, [])
            title = lines[0] if lines else ""
            text = "\n".join(strip_placeholders(c.body) for c in chunks)
            parts = [shorten("; ".join(dict.fromkeys(lines)), 40)] if lines else []
            opening = first_sentence(text) if text.strip() else ""
            if page.description:
                parts.append(shorten(page.description, 40))
            elif opening and not any(opening.startswith(line) for line in lines):
                parts.append(opening)
            node = self.page_node[page.index]
            self.nodes.append(
                GraphNode(
                    id=node,
                    kind=NodeKind.PAGE,
                    title=shorten(title, 20),
                    summary=" ".join(parts),
                    keywords=self.keywords.keywords(text + "\n" + "\n".join(lines)),
                    page=page.index,
                    last_page=page.index,
                    parent=self.doc_node,
                    order=page.index,
                )
            )
            self.edges.append(GraphEdge(kind=EdgeKind.CONTAINS, source=self.doc_node, target=node))
            for chunk in chunks:
                self.edges.append(GraphEdge(kind=EdgeKind.CONTAINS, source=node, target=chunk.id))

    def _document_node(self) -> None:
        top = [s.title for s in sorted(self.doc.sections, key=lambda s: s.order) if s.level == 1]
        text = "\n".join(strip_placeholders(c.body) for c in self.chunks[:20])
        summary = first_sentence(text) if text.strip() else ""
        if top:
            summary = (summary + " " if summary else "") + "Sections: " + "; ".join(top[:12])
        # The whole document's words, counted chunk by chunk rather than joined into one text
        # first: for a 1,000-page report that text and its token list were 24 MiB at once.
        counts: Counter[str] = Counter()
        for chunk in self.chunks:
            counts.update(keyword_tokens(strip_placeholders(chunk.body)))
        self.nodes.append(
            GraphNode(
                id=self.doc_node,
                kind=NodeKind.DOCUMENT,
                title=self.doc.title or self.doc.name,
                summary=shorten(summary, 80),
                keywords=self.keywords.top(counts),
                page=0,
                last_page=max(0, self.doc.page_count - 1),
                parent=None,
            )
        )

    # --- edges -------------------------------------------------------------------------------

    def _adjacency(self) -> None:
        for i, chunk in enumerate(self.chunks):
            for d in range(1, self.window + 1):
                if i + d >= len(self.chunks):
                    break
                self.edges.append(
                    GraphEdge(
                        kind=EdgeKind.NEXT,
                        source=chunk.id,
                        target=self.chunks[i + d].id,
                        weight=round(1.0 / d, 3),
                    )
                )

    def _artifacts(self) -> None:
        """Captions and placeholders → the table or figure chunk they stand for."""
        for edge in self.doc.edges:
            if edge.kind != MapEdge.CAPTION_OF or edge.target is None:
                continue
            source, target = self.chunk_of.get(edge.source), self.chunk_of.get(edge.target)
            if source and target and source != target:
                self.edges.append(
                    GraphEdge(kind=EdgeKind.ARTIFACT, source=source, target=target, text=edge.text)
                )
        for chunk in self.chunks:
            if chunk.kind in ARTIFACT_CHUNK_KINDS:
                continue
            for match in PLACEHOLDER_RE.finditer(chunk.body):
                target = self.chunk_of.get(match.group("id"))
                if target and target != chunk.id:
                    self.edges.append(
                        GraphEdge(
                            kind=EdgeKind.ARTIFACT,
                            source=chunk.id,
                            target=target,
                            text=match.group("label")[:80],
                        )
                    )

    def _references(self) -> None:
        for edge in self.doc.edges:
            if edge.kind != MapEdge.REFERS_TO:
                continue
            source = self.chunk_of.get(edge.source)
            if source is None:
                continue
            target: str | None = None
            if edge.target is not None:
                target = self.chunk_of.get(edge.target) or self.section_node.get(edge.target)
            elif edge.target_page is not None:
                target = self.page_node.get(edge.target_page)
            if target and target != source:
                self.edges.append(
                    GraphEdge(kind=EdgeKind.REFERS_TO, source=source, target=target, text=edge.text)
                )

    def _continuations(self) -> None:
        """A table or paragraph that runs over a page break continues in the next chunk."""
        for a, b in zip(self.chunks, self.chunks[1:], strict=False):
            if b.page != max(a.pages or [a.page]) + 1:
                continue
            if a.kind == "table" and b.kind == "table":
                if _columns(a.body) and _columns(a.body) == _columns(b.body):
                    self.edges.append(GraphEdge(kind=EdgeKind.CONTINUES, source=a.id, target=b.id))
            elif a.kind == "text" and b.kind == "text":
                tail = strip_placeholders(a.body).rstrip()
                head = strip_placeholders(b.body).lstrip()
                if (
                    tail
                    and head
                    and not head.startswith("#")
                    and not _SENTENCE_END.search(tail)
                    and (head[0].islower() or head[0] in ",;)")
                ):
                    self.edges.append(GraphEdge(kind=EdgeKind.CONTINUES, source=a.id, target=b.id))

    # --- the reference index -----------------------------------------------------------------

    def _reference_index(self) -> tuple[dict[str, list[Reference]], dict[str, list[Reference]]]:
        refs: dict[str, list[Reference]] = {}

        def add(name: str, node: str, page: int) -> None:
            entry = Reference(node=node, page=page)
            bucket = refs.setdefault(name.lower(), [])
            if entry not in bucket:
                bucket.append(entry)

        bound = {e.source: e.target for e in self.doc.edges if e.kind == MapEdge.CAPTION_OF}
        for element in self.indexable:
            if element.kind != ElementKind.CAPTION:
                continue
            match = CAPTION_RE.match(element.text)
            if not match:
                continue
            kind = caption_target(element.text) or "figure"
            target = self.elements.get(bound.get(element.id) or "")
            holder = target if target is not None else element
            node = self.chunk_of.get(holder.id) or self.page_node.get(holder.page)
            if node:
                add(f"{kind} {match.group('number')}", node, holder.page)
        for section in self.doc.sections:
            node = self.section_node[section.id]
            number = _SECTION_NUMBER.match(section.title + " ")
            if number:
                add(f"section {number.group(1).rstrip('.')}", node, section.page)
            named = _APPENDIX.match(section.title)
            if named:
                add(f"{named.group(1)} {named.group(2)}", node, section.page)

        artifacts: dict[str, list[Reference]] = {"table": [], "figure": [], "chart": []}
        for element in self.indexable:
            if element.kind not in ARTIFACT_KINDS:
                continue
            node = self.chunk_of.get(element.id)
            if node is None:
                continue  # a logo or blank picture: not content
            entry = Reference(node=node, page=element.page)
            if element.kind == ElementKind.TABLE:
                artifacts["table"].append(entry)
                continue
            artifacts["figure"].append(entry)
            if element.chart:
                artifacts["chart"].append(entry)
        return refs, artifacts


def _table_summary(body: str) -> str:
    """A table's caption (the text before it) and its header row."""
    lines = [ln.strip() for ln in body.splitlines() if ln.strip()]
    head = [ln for ln in lines if not ln.startswith("|")]
    rows = [ln for ln in lines if ln.startswith("|")]
    header = ""
    if rows:
        cells = [c.strip() for c in rows[0].strip("|").split("|") if c.strip()]
        header = "Columns: " + ", ".join(cells[:10])
    caption = shorten(" ".join(head), 30) if head else ""
    return " ".join(p for p in (caption, header) if p) or first_sentence(body)


def _columns(body: str) -> int:
    for line in body.splitlines():
        line = line.strip()
        if line.startswith("|") and line.endswith("|"):
            return line.count("|") - 1
    return 0


def _is_chart(element: Element) -> bool:
    if element.kind == ElementKind.CHART:
        return True
    cls = str(element.attrs.get("picture_class") or "")
    description = str(element.attrs.get("description") or "").lower()
    return cls == "chart" or description.startswith(("chart", "bar chart", "line chart", "pie"))


def _dedupe(edges: list[GraphEdge]) -> list[GraphEdge]:
    seen: set[tuple[str, str, str]] = set()
    out = []
    for edge in edges:
        key = (str(edge.kind), edge.source, edge.target)
        if key not in seen:
            seen.add(key)
            out.append(edge)
    return out


def model_summaries(
    graph: ContentGraph, chunk_text: Mapping[str, str], summarizer: Summarizer
) -> ContentGraph:
    """Model-written summaries for the summary tree and the tables and figures (the nodes a
    reader navigates by); running text keeps its extractive summary. ``chunk_text``: each
    chunk's body without placeholders."""
    children: dict[str, list[str]] = {}
    for node in graph.nodes:
        if node.parent:
            children.setdefault(node.parent, []).append(node.id)
    index = graph.node_index()
    # What each page contains, read once: looked up per page, the edges were read once a page.
    pages = {n.id for n in graph.nodes if n.kind == NodeKind.PAGE}
    on_page: dict[str, list[str]] = {}
    for edge in graph.edges:
        if edge.kind == EdgeKind.CONTAINS and edge.source in pages:
            on_page.setdefault(edge.source, []).append(edge.target)
    wanted: list[GraphNode] = [
        n for n in graph.nodes if n.kind != NodeKind.CHUNK or n.chunk_kind in ARTIFACT_CHUNK_KINDS
    ]
    requests = []
    for node in wanted:
        if node.kind == NodeKind.CHUNK:
            content = chunk_text.get(node.id, "")
        else:
            kids = [index[c] for c in children.get(node.id, []) if c in index]
            content = "\n".join(
                f"- {k.title + ': ' if k.title else ''}{k.summary}" for k in kids[:40]
            )
            if node.kind == NodeKind.PAGE:
                content = "\n".join(chunk_text.get(c, "") for c in on_page.get(node.id, []))
        requests.append(
            SummaryRequest(node.id, str(node.kind), node.title, content or node.summary)
        )
    replies = summarizer.summarize(requests)
    updated = dict(index)
    for node, reply in zip(wanted, replies, strict=True):
        if reply is None or not reply.summary:
            continue
        updated[node.id] = with_summary(node, reply, summarizer.name)
    return graph.model_copy(update={"nodes": [updated[n.id] for n in graph.nodes]})
