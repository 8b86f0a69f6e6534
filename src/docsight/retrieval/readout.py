"""Budgeted readout (G-Reader): from ranked hits to the passages an answerer reads.

Chunks cut a document into retrievable pieces; an answer needs the pieces around them. Hits are
taken best first, and each brings what the content graph says belongs with it:

* the table or figure its caption or placeholder names, and the text that introduces a table
  (``artifact`` edges);
* the table, figure, section or page it refers to ("see Table 3"), even on another page;
* the rest of a table or paragraph that runs over a page break (``continues``);
* the whole page, when several hits fall on it (the page is the unit of evidence);
* its neighbours in reading order, while the budget lasts.

Everything stays under a token budget (about four characters a token) and comes out in
document order, documents by their best hit, each passage with its page, box and section path.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import Field

from docsight.document.artifacts import PLACEHOLDER_RE, artifact_reading
from docsight.document.chunk import Chunk
from docsight.document.model import ElementKind
from docsight.graph.model import ContentGraph, EdgeKind, NodeKind
from docsight.index.base import Store
from docsight.retrieval.hit import Hit, Location

Via = Literal["hit", "artifact", "reference", "continuation", "page", "neighbour"]
CHARS_PER_TOKEN = 4
_ARTIFACT_CHUNKS = frozenset({"table", "figure", "chart"})


class Passage(Location):
    """One passage of the readout: a chunk, why it was read, and the hit that brought it."""

    text: str
    kind: str = "text"
    #: Rank of the hit this passage came with (1 = the best hit).
    rank: int = Field(default=1, ge=1)
    via: Via = "hit"
    #: The edge text that brought it ("Table 3", "page 12"), for expansions.
    reason: str = ""
    order: int = 0
    image_ids: list[str] = Field(default_factory=list)


@dataclass
class ReadoutPlan:
    """How much to read and which expansions to follow."""

    budget_tokens: int = 3000
    #: Hits on one page that make the whole page worth reading.
    page_hits: int = 1
    #: Reading-order neighbours added on each side of a hit.
    neighbours: int = 1
    follow: frozenset[str] = field(
        default_factory=lambda: frozenset({"artifact", "reference", "continuation", "page"})
    )


def read_out(hits: Sequence[Hit], store: Store, plan: ReadoutPlan | None = None) -> list[Passage]:
    """The passages for ``hits`` (best first), in document order, within the budget."""
    plan = plan or ReadoutPlan()
    reader = _Reader(store, plan)
    return reader.run([h for h in hits if h.chunk_id or h.kind == "page"], hits)


class _Reader:
    def __init__(self, store: Store, plan: ReadoutPlan) -> None:
        self.store = store
        self.plan = plan
        self.budget = plan.budget_tokens * CHARS_PER_TOKEN
        self.used = 0
        self.chosen: dict[str, Passage] = {}
        self.page_only: list[Passage] = []
        self.views: dict[str, _GraphView | None] = {}
        self.chunks: dict[str, Chunk] = {}

    def fetch(self, ids: Sequence[str]) -> None:
        missing = [i for i in dict.fromkeys(ids) if i not in self.chunks]
        if missing:
            self.chunks.update((c.id, c) for c in self.store.get_chunks(missing))

    def take(self, chunk_id: str, rank: int, via: Via, reason: str = "") -> bool:
        """Add a chunk if it is new and fits; ``False`` once the budget is spent."""
        if chunk_id in self.chosen:
            return True
        chunk = self.chunks.get(chunk_id)
        if chunk is None:
            return True
        body = chunk.body
        if self.used + len(body) > self.budget:
            if self.chosen:
                # Too long for what is left: smaller passages may still fit.
                return self.used < self.budget
            # The best hit alone is over the budget (a huge table): read its beginning.
            body = body[: self.budget].rsplit("\n", 1)[0] + "\n…"
        self.used += len(body)
        self.chosen[chunk_id] = Passage(
            doc_id=chunk.doc_id,
            doc_name=chunk.doc_name,
            page=chunk.page,
            bbox=chunk.bbox,
            section_path=chunk.section_path,
            chunk_id=chunk.id,
            element_ids=chunk.element_ids,
            text=body,
            kind=chunk.kind,
            rank=rank,
            via=via,
            reason=reason,
            order=chunk.order,
            image_ids=list(chunk.image_ids),
        )
        return True

    def run(self, hits: Sequence[Hit], all_hits: Sequence[Hit]) -> list[Passage]:
        per_page = Counter((h.doc_id, h.page) for h in hits)
        # One store read for everything the walk below may take: each read costs ~10 ms of
        # query setup whatever its size, and a walk took a read per hit and per neighbour.
        ahead = [h.chunk_id for h in hits if h.chunk_id]
        for hit in hits:
            if hit.chunk_id is not None:
                ahead += [c for c, _, _ in self.structural(hit, per_page, set())]
                ahead += [c for c, _, _ in self.neighbours(hit)] if self.plan.neighbours else []
        self.fetch(ahead)
        doc_rank: dict[str, int] = {}
        for hit in all_hits:
            doc_rank.setdefault(hit.doc_id, hit.rank)
        read_pages: set[tuple[str, int]] = set()
        # First the hits with what belongs to them, then their neighbours while room is left.
        for hit in hits:
            if self.used >= self.budget:
                break
            if hit.chunk_id is None:
                # An image-only page the question names: cited as a whole page.
                self.page_only.append(
                    Passage(**hit.location(), text=hit.text, kind="page", rank=hit.rank)
                )
                continue
            if not self.take(hit.chunk_id, hit.rank, "hit"):
                break
            self.take_all(self.structural(hit, per_page, read_pages), hit.rank)
        if self.plan.neighbours:
            for hit in hits:
                if self.used >= self.budget:
                    break
                if hit.chunk_id is not None:
                    self.take_all(self.neighbours(hit), hit.rank)
        passages = list(self.chosen.values()) + self.page_only
        passages.sort(key=lambda p: (doc_rank.get(p.doc_id, 10**9), p.page, p.order))
        return _inline_artifacts(passages, self.store)

    def take_all(self, wanted: list[tuple[str, Via, str]], rank: int) -> None:
        self.fetch([c for c, _, _ in wanted])
        for chunk_id, via, reason in wanted:
            if not self.take(chunk_id, rank, via, reason):
                break

    def view(self, doc_id: str) -> _GraphView | None:
        if doc_id not in self.views:
            graph = self.store.get_graph(doc_id)
            self.views[doc_id] = _GraphView(graph) if graph is not None else None
        return self.views[doc_id]

    def structural(
        self, hit: Hit, per_page: Counter[tuple[str, int]], read_pages: set[tuple[str, int]]
    ) -> list[tuple[str, Via, str]]:
        view = self.view(hit.doc_id)
        if view is None:
            return []
        follow = self.plan.follow
        wanted: list[tuple[str, Via, str]] = []
        for edge, other in view.links.get(hit.chunk_id or "", []):
            node = view.nodes.get(other)
            if node is None:
                continue
            if edge.kind == EdgeKind.ARTIFACT and "artifact" in follow:
                wanted.append((other, "artifact", edge.text))
            elif edge.kind == EdgeKind.CONTINUES and "continuation" in follow:
                wanted.append((other, "continuation", ""))
            elif (
                edge.kind == EdgeKind.REFERS_TO
                and edge.source == hit.chunk_id
                and "reference" in follow
            ):
                wanted.extend((c, "reference", edge.text) for c in view.first_chunks(other))
        key = (hit.doc_id, hit.page)
        if per_page[key] >= self.plan.page_hits and key not in read_pages and "page" in follow:
            read_pages.add(key)
            wanted.extend((c, "page", "") for c in view.page_chunks.get(hit.page, []))
        return wanted

    def neighbours(self, hit: Hit) -> list[tuple[str, Via, str]]:
        view = self.view(hit.doc_id)
        if view is None or hit.chunk_id not in view.position:
            return []
        i = view.position[hit.chunk_id]
        wanted: list[tuple[str, Via, str]] = []
        for d in range(1, self.plan.neighbours + 1):
            for j in (i - d, i + d):
                if 0 <= j < len(view.chunk_order):
                    wanted.append((view.chunk_order[j], "neighbour", ""))
        return wanted


class _GraphView:
    """A graph indexed for the readout: links per node, chunks per page, reading order."""

    def __init__(self, graph: ContentGraph) -> None:
        self.nodes = graph.node_index()
        self.links = graph.adjacency()
        chunks = sorted((n for n in graph.nodes if n.kind == NodeKind.CHUNK), key=lambda n: n.order)
        self.chunk_order = [n.id for n in chunks]
        self.position = {cid: i for i, cid in enumerate(self.chunk_order)}
        self.contained: dict[str, list[str]] = {}
        for edge in graph.edges:
            if edge.kind == EdgeKind.CONTAINS and edge.target in self.position:
                self.contained.setdefault(edge.source, []).append(edge.target)
        self.page_chunks: dict[int, list[str]] = {}
        for node in graph.nodes:
            if node.kind == NodeKind.PAGE:
                self.page_chunks[node.page] = self.contained.get(node.id, [])

    def first_chunks(self, node_id: str, limit: int = 2) -> list[str]:
        """What a reference means: the chunk itself, or the opening chunks of a section or
        page."""
        if node_id in self.position:
            return [node_id]
        inside = self.contained.get(node_id, [])
        return sorted(inside, key=lambda c: self.position[c])[:limit]


def _inline_artifacts(passages: list[Passage], store: Store) -> list[Passage]:
    """Placeholders become the table or picture they stand for, unless that table or picture
    is a passage of its own (then the placeholder stays a short reference)."""
    shown = {
        element_id
        for p in passages
        if p.kind in (ElementKind.TABLE, ElementKind.FIGURE, ElementKind.CHART)
        for element_id in p.element_ids
    }
    wanted = {
        m.group("id")
        for p in passages
        for m in PLACEHOLDER_RE.finditer(p.text)
        if m.group("id") not in shown
    }
    artifacts = {e.id: e for e in store.get_elements(sorted(wanted))} if wanted else {}

    def expand(text: str) -> str:
        def replace(match: object) -> str:
            label, element_id = match.group("label"), match.group("id")  # type: ignore[attr-defined]
            element = artifacts.get(element_id)
            if element is None:
                return f"[{label}]"
            return f"[{label}]\n{artifact_reading(element, None)}\n"

        return PLACEHOLDER_RE.sub(replace, text).strip()

    out = []
    for p in passages:
        images = list(p.image_ids)
        for m in PLACEHOLDER_RE.finditer(p.text):
            element = artifacts.get(m.group("id"))
            if element is not None and element.image_id:
                images.append(element.image_id)
        out.append(
            p.model_copy(update={"text": expand(p.text), "image_ids": list(dict.fromkeys(images))})
        )
    return out
