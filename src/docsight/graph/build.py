"""Building a document's content graph from its map and its chunks.

Everything here is derived: the document model gives sections, captions and references
(``document.relations``), the chunker gives the retrievable units, the encoder's chunk vectors
give evolution its starting point. Building costs no model call unless a summarizer is given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from docsight.document.artifacts import strip_placeholders
from docsight.document.chunk import Chunk
from docsight.document.model import Document
from docsight.graph.model import ContentGraph, EdgeKind, GraphNode, NodeKind
from docsight.graph.skeleton import (
    ARTIFACT_CHUNK_KINDS,
    ElementFact,
    build_skeleton,
    element_facts,
)
from docsight.graph.summarize import Summarizer, SummaryRequest, with_summary

__all__ = [
    "ARTIFACT_CHUNK_KINDS",
    "ElementFact",
    "GraphBundle",
    "build_graph",
    "build_skeleton",
    "bundle_of",
    "chunk_order",
    "element_facts",
    "in_graph_order",
    "model_summaries",
    "rows_in_order",
    "search_text",
    "structure_vectors",
]


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
