"""The content graph of one document (G-Reader) with its summary tree (DMAP).

Nodes are the document itself, its sections, its pages and its chunks — the retrievable units:
paragraph runs, tables and figures. Every node carries a short summary and keywords. The
structural nodes form the summary tree (document → sections → pages); chunks hang off the
section and the page they belong to. Edges say how the parts relate:

* ``next``: reading-order adjacency between chunks (a sliding window);
* ``contains``: document → top-level sections, section → subsections and chunks, page → chunks;
* ``artifact``: a text chunk whose caption or placeholder names a table or figure → that
  table's or figure's chunk;
* ``refers_to``: a chunk that mentions "Table 3", "Figure 2", "Section 4.1" or "page 12" →
  what it names (a chunk, a section node or a page node);
* ``continues``: a table or paragraph cut by a page break → its continuation on the next page;
* ``similar``: added by evolution between chunks whose evolved content is close.

The graph is derived from the stored document and chunks, so it is rebuilt, never migrated:
``GRAPH_SCHEMA_VERSION`` names the layout, and the store refuses graphs of another version.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.dataclasses import dataclass

from docsight.document.ids import content_id

GRAPH_SCHEMA_VERSION = 1


class NodeKind(StrEnum):
    DOCUMENT = "document"
    SECTION = "section"
    PAGE = "page"
    CHUNK = "chunk"


#: The summary tree: structural nodes, searched by the ``tree`` channel.
TREE_KINDS = frozenset({NodeKind.DOCUMENT, NodeKind.SECTION, NodeKind.PAGE})


class EdgeKind(StrEnum):
    NEXT = "next"
    CONTAINS = "contains"
    ARTIFACT = "artifact"
    REFERS_TO = "refers_to"
    CONTINUES = "continues"
    SIMILAR = "similar"


@dataclass(frozen=True, slots=True)
class GraphNode:
    """One node. Chunk nodes share the chunk's id; other ids are content hashes. A validated
    dataclass, as :class:`GraphEdge` is and for the same reason (a long document has thousands);
    ``dataclasses.replace`` makes a changed copy."""

    id: str
    kind: NodeKind
    #: Section title, first heading of a page, document title; empty for most chunks.
    title: str = ""
    summary: str = ""
    keywords: list[str] = Field(default_factory=list)
    #: First page (0-based) and the last page the node spans.
    page: int = Field(default=0, ge=0)
    last_page: int = Field(default=0, ge=0)
    #: The parent in the summary tree: a section or the document (pages: the document).
    parent: str | None = None
    #: Position among nodes of the same kind, in reading order.
    order: int = Field(default=0, ge=0)
    #: For chunk nodes, the chunk's kind (``text``, ``table``, ``figure``, ``page``, ...).
    chunk_kind: str | None = None
    #: ``extractive`` or the model that wrote the summary.
    summary_by: str = "extractive"

    @staticmethod
    def make_id(doc_id: str, kind: NodeKind | str, key: object) -> str:
        return content_id("node", doc_id, str(kind), key)


@dataclass(frozen=True, slots=True)
class GraphEdge:
    """One edge. A validated dataclass with slots rather than a model: a long document's graph
    has tens of thousands of edges (41,346 for a 1,000-page report), and as models they took
    five times the memory, eight times once read back from the stored JSON. Validation, the
    stored JSON and equality are the same."""

    kind: EdgeKind
    source: str
    target: str
    weight: float = 1.0
    #: The words that establish the edge ("Table 3", "page 12"), when there are any.
    text: str = ""


class Reference(BaseModel):
    """Where a name such as "table 3" or "appendix b" points: a node and its page."""

    model_config = ConfigDict(frozen=True)

    node: str
    page: int = Field(ge=0)


class GraphReferences(BaseModel):
    """A document's reference index, readable without its whole graph (the locator's input)."""

    doc_id: str
    references: dict[str, list[Reference]] = Field(default_factory=dict)
    artifacts: dict[str, list[Reference]] = Field(default_factory=dict)


Evolution = Literal["none", "lite", "model"]


class ContentGraph(BaseModel):
    schema_version: int = GRAPH_SCHEMA_VERSION
    doc_id: str
    nodes: list[GraphNode] = Field(default_factory=list)
    edges: list[GraphEdge] = Field(default_factory=list)
    #: Normalised names ("table 3", "figure 2b", "section 4.1", "appendix b") → what they name.
    references: dict[str, list[Reference]] = Field(default_factory=dict)
    #: Tables, figures and charts in reading order, for "the first chart", "the last table".
    artifacts: dict[str, list[Reference]] = Field(default_factory=dict)
    evolution: Evolution = "none"
    rounds: int = 0

    def node_index(self) -> dict[str, GraphNode]:
        return {n.id: n for n in self.nodes}

    def adjacency(self) -> dict[str, list[tuple[GraphEdge, str]]]:
        """Node id → (edge, other end) for every edge touching it, both directions."""
        out: dict[str, list[tuple[GraphEdge, str]]] = {}
        for edge in self.edges:
            out.setdefault(edge.source, []).append((edge, edge.target))
            out.setdefault(edge.target, []).append((edge, edge.source))
        return out

    def edge_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for edge in self.edges:
            counts[str(edge.kind)] = counts.get(str(edge.kind), 0) + 1
        return counts
