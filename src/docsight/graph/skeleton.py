"""The skeleton of a document's content graph, built in two passes over its chunks.

The skeleton is the graph before any vector is known: its nodes with extractive summaries and
keywords, its edges and its reference index (:func:`docsight.graph.finish_graph` adds the
rest). A keyword is chosen by its rarity across all of the document's chunks, so no node's
keywords are known before the last chunk is read. Holding every chunk for that made the worker
that finishes a long PDF grow with it.

:class:`SkeletonBuilder` reads the chunks twice instead, from wherever they lie (the worker's
spool, in windows): the first pass keeps the words' document frequencies and, per chunk, only
its id, section and pages; the second makes the nodes. A chunk's node is made and handed on as
the chunk is read. A section's or page's node is made once its last chunk has gone by, so only
the sections and pages open at the moment hold their counts. The edges follow the nodes. Nodes
and edges go to a :class:`SkeletonSink` in batches, so the builder never holds the graph whole
either.

The graph is the same, node for node and edge for edge, as the one built from all the chunks
at once (the summaries, keywords and order: the tests compare them).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from docsight.document.artifacts import ARTIFACT_KINDS, PLACEHOLDER_RE, strip_placeholders
from docsight.document.captions import CAPTION_RE, caption_target
from docsight.document.chunk import Chunk
from docsight.document.model import Document, Element, ElementKind
from docsight.document.model import EdgeKind as MapEdge
from docsight.graph.model import ContentGraph, EdgeKind, GraphEdge, GraphNode, NodeKind, Reference
from docsight.graph.summarize import (
    SUMMARY_WORDS,
    KeywordModel,
    first_sentence,
    keyword_tokens,
    opening_sentence,
    shorten,
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
#: Nodes and edges handed to the sink at a time.
NODE_BATCH = 1024
EDGE_BATCH = 8192
#: The document node's opening is read from this many first chunks.
_DOCUMENT_OPENING_CHUNKS = 20


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


class SkeletonSink(Protocol):
    """Where :class:`SkeletonBuilder` hands the graph's nodes and edges, in the graph's order:
    every node before the first edge. A batch is the sink's to keep."""

    def nodes(self, nodes: list[GraphNode]) -> None: ...

    def edges(self, edges: list[GraphEdge]) -> None: ...


class CollectSink:
    """A sink that keeps everything: the graph whole (:func:`build_skeleton`)."""

    def __init__(self) -> None:
        self.all_nodes: list[GraphNode] = []
        self.all_edges: list[GraphEdge] = []

    def nodes(self, nodes: list[GraphNode]) -> None:
        self.all_nodes.extend(nodes)

    def edges(self, edges: list[GraphEdge]) -> None:
        self.all_edges.extend(edges)


def build_skeleton(
    document: Document,
    chunks: Sequence[Chunk],
    *,
    window: int = 2,
    facts: Sequence[ElementFact] | None = None,
) -> ContentGraph:
    """The content graph of ``document`` over ``chunks`` (in any order) before any vector is
    known: its nodes with extractive summaries, its edges and reference index, whole.
    ``facts`` stand for the document's elements when it has let them go.
    :class:`SkeletonBuilder` builds the same graph from chunks read twice."""
    if facts is None:
        facts = element_facts(document.elements)
    ordered = sorted(chunks, key=lambda c: c.order)
    sink = CollectSink()
    head = SkeletonBuilder(document, facts, window=window).build(lambda: iter(ordered), sink)
    return join_skeleton(head, sink.all_nodes, sink.all_edges)


def join_skeleton(
    head: ContentGraph, nodes: list[GraphNode], edges: list[GraphEdge]
) -> ContentGraph:
    """``head`` (a skeleton without nodes or edges) with its ``nodes`` and ``edges``.

    Batches read back one by one (unpickled each on its own) have each their own copy of the
    node ids the edges name and of the keywords, where a graph pickled whole shares one string
    per value: they are made one object again here, so that the graph costs the ingesting
    process what it did when it came in one piece."""
    if not nodes and not edges:
        return head
    ids: dict[str, str] = {}
    words: dict[str, str] = {}
    for node in nodes:
        ids.setdefault(node.id, node.id)
        keywords = node.keywords
        for k, word in enumerate(keywords):
            keywords[k] = words.setdefault(word, word)
    for edge in edges:
        # The fields are the same strings by value; only which object holds them changes.
        for name in ("source", "target"):
            value = getattr(edge, name)
            same = ids.get(value)
            if same is not None and same is not value:
                object.__setattr__(edge, name, same)
    return head.model_copy(update={"nodes": nodes, "edges": edges})


class _Opening:
    """The first sentence of texts joined by line breaks (``summarize.first_sentence``), read
    one text at a time: the lines are the same, and so are the words of the fallback."""

    __slots__ = ("sentence", "text", "words")

    def __init__(self) -> None:
        self.sentence: str | None = None
        self.words: list[str] = []
        self.text = False

    def feed(self, body: str) -> None:
        if not self.text and body.strip():
            self.text = True
        if self.sentence is not None:
            return
        self.sentence = opening_sentence(body)
        if self.sentence is not None:
            self.words = []
            return
        if len(self.words) <= SUMMARY_WORDS:
            self.words.extend(body.split()[: SUMMARY_WORDS + 1 - len(self.words)])

    def result(self) -> str:
        """``first_sentence`` of the joined texts, or "" when they are blank."""
        if not self.text:
            return ""
        if self.sentence is not None:
            return self.sentence
        return shorten(" ".join(self.words))


class _Part:
    """A section or page being read: its opening and word counts, and how many of its
    chunks are still to come."""

    __slots__ = ("counts", "left", "opening")

    def __init__(self, left: int) -> None:
        self.left = left
        self.opening = _Opening()
        self.counts: Counter[str] = Counter()

    def feed(self, body: str, counts: Counter[str]) -> bool:
        """One of its chunks; whether it was the last."""
        self.opening.feed(body)
        self.counts.update(counts)
        self.left -= 1
        return self.left == 0


class SkeletonBuilder:
    """Builds one document's skeleton from its chunks, read twice (see the module's text).

    ``document`` is the document without its elements or with them; ``facts`` are its
    elements' facts. :meth:`build` takes a function that gives the chunks in reading order
    (ascending ``order``), called once per pass, and gives the same chunks both times."""

    def __init__(self, document: Document, facts: Sequence[ElementFact], *, window: int) -> None:
        self.doc = document
        self.window = max(0, window)
        self.elements = {e.id: e for e in facts}
        self.indexable = [e for e in facts if e.indexable]
        self.doc_node = GraphNode.make_id(document.id, NodeKind.DOCUMENT, "")
        self.section_node = {
            s.id: GraphNode.make_id(document.id, NodeKind.SECTION, s.id) for s in document.sections
        }
        self.page_node = {
            p.index: GraphNode.make_id(document.id, NodeKind.PAGE, p.index) for p in document.pages
        }
        self.sections = sorted(document.sections, key=lambda s: s.order)
        # Where each section and page is among the structure nodes (a list of one, unless the
        # document names one twice: each gets its node, as the map lists them), and what their
        # summaries name: the subsections' titles, each page's headings and captions.
        self.section_at: dict[str, list[int]] = {}
        for i, section in enumerate(self.sections):
            self.section_at.setdefault(section.id, []).append(i)
        self.page_at: dict[int, list[int]] = {}
        for i, page in enumerate(document.pages):
            self.page_at.setdefault(page.index, []).append(i)
        self.children: dict[str | None, list[str]] = {}
        for section in self.sections:
            self.children.setdefault(section.parent_id, []).append(section.id)
        self.titles = {s.id: s.title for s in document.sections}
        self.heads: dict[int, list[str]] = {}
        for element in self.indexable:
            if element.kind in _NAMED_KINDS:
                self.heads.setdefault(element.page, []).append(" ".join(element.text.split()))
        # Section and page nodes as they are made, by (0 for sections, 1 for pages; position).
        self.structure: dict[tuple[int, int], GraphNode] = {}
        self.keywords = KeywordModel([])
        self.doc_counts: Counter[str] = Counter()
        # Per chunk, in reading order: its id and section; and what the edges need.
        self.ids: list[str] = []
        self.chunk_section: dict[str, str | None] = {}
        self.chunk_of: dict[str, str] = {}
        self.own: dict[str, list[str]] = {}  # section → its chunks
        self.own_pages: dict[str, tuple[int, int]] = {}  # section → first and last page
        self.on_page: dict[int, list[str]] = {}  # page → its chunks
        self.placeholders: list[GraphEdge] = []
        self.continuations: list[GraphEdge] = []

    # --- the passes ----------------------------------------------------------------------------

    def build(self, chunks: Callable[[], Iterable[Chunk]], sink: SkeletonSink) -> ContentGraph:
        """Read the chunks twice, hand the nodes and edges to ``sink``; the skeleton's head:
        the graph without nodes or edges, with its reference index (:func:`join_skeleton`)."""
        last = -1
        for chunk in chunks():
            if chunk.order < last:
                raise ValueError(f"the chunks of {self.doc.id} are not in reading order")
            last = chunk.order
            self._first(chunk)
        self._second(chunks(), sink)
        self._edges(sink)
        references, artifacts = self._reference_index()
        return ContentGraph(doc_id=self.doc.id, references=references, artifacts=artifacts)

    def _first(self, chunk: Chunk) -> None:
        """What needs every chunk before any node: rarity, where each element went, each
        section's and page's chunks."""
        self.ids.append(chunk.id)
        tokens = keyword_tokens(strip_placeholders(chunk.body))
        self.keywords.add(tokens)
        self.doc_counts.update(tokens)
        for element_id in chunk.element_ids:
            # An artifact's own chunk wins over the text chunk that only carries its placeholder.
            if chunk.kind in ARTIFACT_CHUNK_KINDS or element_id not in self.chunk_of:
                self.chunk_of[element_id] = chunk.id
        section = self._section_of(chunk)
        self.chunk_section[chunk.id] = section
        pages = chunk.pages or [chunk.page]
        if section is not None:
            self.own.setdefault(section, []).append(chunk.id)
            low, high = self.own_pages.get(section, (min(pages), max(pages)))
            self.own_pages[section] = (min(low, *pages), max(high, *pages))
        for index in pages:
            self.on_page.setdefault(index, []).append(chunk.id)

    def _section_of(self, chunk: Chunk) -> str | None:
        members = [self.elements[e] for e in chunk.element_ids if e in self.elements]
        content = [e for e in members if e.kind not in (ElementKind.HEADING, ElementKind.TITLE)]
        for element in content or members:
            if element.section_id in self.section_node:
                return element.section_id
        return None

    def _second(self, chunks: Iterable[Chunk], sink: SkeletonSink) -> None:
        """The nodes: each chunk's as it is read, a section's or page's after its last chunk."""
        sections = {s: _Part(len(ids)) for s, ids in self.own.items()}
        pages = {index: _Part(len(ids)) for index, ids in self.on_page.items()}
        opening = _Opening()
        batch: list[GraphNode] = []
        previous: tuple[Chunk, str] | None = None
        read = 0
        for chunk in chunks:
            i, read = read, read + 1
            if i >= len(self.ids) or chunk.id != self.ids[i]:
                raise ValueError(f"the chunks of {self.doc.id} changed between the passes")
            body = strip_placeholders(chunk.body)
            counts = Counter(keyword_tokens(body))
            batch.append(self._chunk_node(i, chunk, body, counts))
            if len(batch) >= NODE_BATCH:
                sink.nodes(batch)
                batch = []
            if i < _DOCUMENT_OPENING_CHUNKS:
                opening.feed(body)
            section_id = self.chunk_section[chunk.id]
            if section_id is not None and sections[section_id].feed(body, counts):
                self._section_nodes(section_id, sections.pop(section_id))
            for index in chunk.pages or [chunk.page]:
                part = pages.get(index)
                if part is not None and part.feed(body, counts):
                    self._page_nodes(index, pages.pop(index))
            self._placeholders(chunk)
            if previous is not None:
                self._continuation(*previous, chunk, body)
            previous = (chunk, body)
        if read != len(self.ids):
            raise ValueError(f"the chunks of {self.doc.id} changed between the passes")
        for section in self.sections:  # sections without chunks of their own
            if (0, self.section_at[section.id][0]) not in self.structure:
                self._section_nodes(section.id, _Part(0))
        for page in self.doc.pages:  # pages without chunks
            if (1, self.page_at[page.index][0]) not in self.structure:
                self._page_nodes(page.index, _Part(0))
        batch.extend(self.structure.pop(key) for key in sorted(self.structure))
        batch.append(self._document_node(opening))
        for start in range(0, len(batch), NODE_BATCH):
            sink.nodes(batch[start : start + NODE_BATCH])

    # --- nodes ---------------------------------------------------------------------------------

    def _chunk_node(self, i: int, chunk: Chunk, body: str, counts: Counter[str]) -> GraphNode:
        summary = _table_summary(body) if chunk.kind == "table" else first_sentence(body)
        section = self.chunk_section[chunk.id]
        return GraphNode(
            id=chunk.id,
            kind=NodeKind.CHUNK,
            title=chunk.section_path[-1] if chunk.section_path else "",
            summary=summary,
            keywords=self.keywords.top(counts),
            page=chunk.page,
            last_page=max(chunk.pages or [chunk.page]),
            parent=self.section_node[section] if section else self.doc_node,
            order=i,
            chunk_kind=chunk.kind,
        )

    def _section_nodes(self, section_id: str, part: _Part) -> None:
        """The node of section ``section_id`` (its chunks all read), kept until the edges."""
        opening = part.opening.result()
        low, high = self.own_pages.get(section_id, (-1, -1))
        for i in self.section_at.get(section_id, []):
            section = self.sections[i]
            subs = [self.titles[c] for c in self.children.get(section.id, [])]
            summary = opening
            if subs:
                summary = (summary + " " if summary else "") + "Covers: " + "; ".join(subs[:8])
            counts = Counter(keyword_tokens(section.title))
            counts.update(part.counts)
            self.structure[(0, i)] = GraphNode(
                id=self.section_node[section.id],
                kind=NodeKind.SECTION,
                title=section.title,
                summary=shorten(summary, 60),
                keywords=self.keywords.top(counts),
                page=section.page if low < 0 else low,
                last_page=section.page if high < 0 else high,
                parent=self.section_node.get(section.parent_id or "", self.doc_node),
                order=i,
            )

    def _page_nodes(self, index: int, part: _Part) -> None:
        """The node of page ``index`` (its chunks all read), kept until the edges."""
        opening = part.opening.result()
        lines = self.heads.get(index, [])
        title = lines[0] if lines else ""
        counts = part.counts
        for line in lines:
            counts.update(keyword_tokens(line))
        keywords = self.keywords.top(counts)
        for i in self.page_at.get(index, []):
            page = self.doc.pages[i]
            parts = [shorten("; ".join(dict.fromkeys(lines)), 40)] if lines else []
            if page.description:
                parts.append(shorten(page.description, 40))
            elif opening and not any(opening.startswith(line) for line in lines):
                parts.append(opening)
            self.structure[(1, i)] = GraphNode(
                id=self.page_node[index],
                kind=NodeKind.PAGE,
                title=shorten(title, 20),
                summary=" ".join(parts),
                keywords=list(keywords),
                page=index,
                last_page=index,
                parent=self.doc_node,
                order=index,
            )

    def _document_node(self, opening: _Opening) -> GraphNode:
        top = [s.title for s in self.sections if s.level == 1]
        summary = opening.result()
        if top:
            summary = (summary + " " if summary else "") + "Sections: " + "; ".join(top[:12])
        return GraphNode(
            id=self.doc_node,
            kind=NodeKind.DOCUMENT,
            title=self.doc.title or self.doc.name,
            summary=shorten(summary, 80),
            keywords=self.keywords.top(self.doc_counts),
            page=0,
            last_page=max(0, self.doc.page_count - 1),
            parent=None,
        )

    # --- edges ---------------------------------------------------------------------------------

    def _placeholders(self, chunk: Chunk) -> None:
        """A text chunk's placeholders → the table or figure chunk they stand for."""
        if chunk.kind in ARTIFACT_CHUNK_KINDS:
            return
        for match in PLACEHOLDER_RE.finditer(chunk.body):
            target = self.chunk_of.get(match.group("id"))
            if target and target != chunk.id:
                self.placeholders.append(
                    GraphEdge(
                        kind=EdgeKind.ARTIFACT,
                        source=chunk.id,
                        target=target,
                        text=match.group("label")[:80],
                    )
                )

    def _continuation(self, a: Chunk, a_body: str, b: Chunk, b_body: str) -> None:
        """A table or paragraph that runs over a page break continues in the next chunk."""
        if b.page != max(a.pages or [a.page]) + 1:
            return
        if a.kind == "table" and b.kind == "table":
            if _columns(a.body) and _columns(a.body) == _columns(b.body):
                self.continuations.append(
                    GraphEdge(kind=EdgeKind.CONTINUES, source=a.id, target=b.id)
                )
        elif a.kind == "text" and b.kind == "text":
            tail = a_body.rstrip()
            head = b_body.lstrip()
            if (
                tail
                and head
                and not head.startswith("#")
                and not _SENTENCE_END.search(tail)
                and (head[0].islower() or head[0] in ",;)")
            ):
                self.continuations.append(
                    GraphEdge(kind=EdgeKind.CONTINUES, source=a.id, target=b.id)
                )

    def _edges(self, sink: SkeletonSink) -> None:
        """Every edge, in the graph's order, each (kind, source, target) once."""
        batch: list[GraphEdge] = []
        # With distinct chunk ids, sections and pages, only these kinds can repeat an edge
        # (a caption and a placeholder naming the same table): the others need no record of
        # what was seen, which for a long document is most of its edges.
        distinct = (
            len(set(self.ids)) == len(self.ids)
            and len(self.section_node) == len(self.doc.sections)
            and len(self.page_node) == len(self.doc.pages)
        )
        repeatable = (
            frozenset({EdgeKind.ARTIFACT, EdgeKind.REFERS_TO}) if distinct else frozenset(EdgeKind)
        )
        seen: set[tuple[EdgeKind, str, str]] = set()
        for edge in self._each_edge():
            if edge.kind in repeatable:
                key = (edge.kind, edge.source, edge.target)
                if key in seen:
                    continue
                seen.add(key)
            batch.append(edge)
            if len(batch) >= EDGE_BATCH:
                sink.edges(batch)
                batch = []
        if batch:
            sink.edges(batch)

    def _each_edge(self) -> Iterable[GraphEdge]:
        contains = EdgeKind.CONTAINS
        for section in self.sections:
            node = self.section_node[section.id]
            parent = self.section_node.get(section.parent_id or "", self.doc_node)
            yield GraphEdge(kind=contains, source=parent, target=node)
            for chunk_id in self.own.get(section.id, []):
                yield GraphEdge(kind=contains, source=node, target=chunk_id)
        for chunk_id in self.ids:
            if self.chunk_section[chunk_id] is None:
                yield GraphEdge(kind=contains, source=self.doc_node, target=chunk_id)
        for page in self.doc.pages:
            node = self.page_node[page.index]
            yield GraphEdge(kind=contains, source=self.doc_node, target=node)
            # A chunk that names a page twice is contained once.
            for chunk_id in dict.fromkeys(self.on_page.get(page.index, [])):
                yield GraphEdge(kind=contains, source=node, target=chunk_id)
        ids = self.ids
        for i, chunk_id in enumerate(ids):
            for d in range(1, self.window + 1):
                if i + d >= len(ids):
                    break
                yield GraphEdge(
                    kind=EdgeKind.NEXT, source=chunk_id, target=ids[i + d], weight=round(1.0 / d, 3)
                )
        for edge in self.doc.edges:  # captions → the table or figure they name
            if edge.kind != MapEdge.CAPTION_OF or edge.target is None:
                continue
            source, bound = self.chunk_of.get(edge.source), self.chunk_of.get(edge.target)
            if source and bound and source != bound:
                yield GraphEdge(kind=EdgeKind.ARTIFACT, source=source, target=bound, text=edge.text)
        yield from self.placeholders
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
                yield GraphEdge(
                    kind=EdgeKind.REFERS_TO, source=source, target=target, text=edge.text
                )
        yield from self.continuations

    # --- the reference index -------------------------------------------------------------------

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
