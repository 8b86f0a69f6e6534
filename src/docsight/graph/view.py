"""The content graph as data for people: what ``docsight map`` shows next to the section tree."""

from __future__ import annotations

from collections import Counter
from typing import Any

from docsight.document.model import Document
from docsight.graph.model import ContentGraph, EdgeKind, GraphNode, NodeKind

#: Edges worth listing one by one (adjacency and containment are counted, not listed).
LISTED = (EdgeKind.REFERS_TO, EdgeKind.ARTIFACT, EdgeKind.CONTINUES, EdgeKind.SIMILAR)
_LABEL_CHARS = 70


def _label(node: GraphNode | None) -> str:
    if node is None:
        return "?"
    if node.kind == NodeKind.CHUNK:
        text = node.summary or node.title
        kind = node.chunk_kind or "text"
        return f"{kind} on p. {node.page + 1}: {text[:_LABEL_CHARS]}"
    if node.kind == NodeKind.PAGE:
        return f"page {node.page + 1}"
    return f"{node.kind} {node.title[:_LABEL_CHARS]}"


def graph_map(graph: ContentGraph, document: Document) -> dict[str, Any]:
    """Counts, summaries per section and page, the listed edges and the reference index."""
    index = graph.node_index()
    by_kind: dict[NodeKind, list[GraphNode]] = {}
    for node in graph.nodes:
        by_kind.setdefault(node.kind, []).append(node)
    sections = {
        s.id: index.get(GraphNode.make_id(document.id, NodeKind.SECTION, s.id))
        for s in document.sections
    }

    def summary(node: GraphNode) -> dict[str, Any]:
        return {
            "title": node.title,
            "summary": node.summary,
            "keywords": node.keywords,
            "summary_by": node.summary_by,
        }

    doc_node = next(iter(by_kind.get(NodeKind.DOCUMENT, [])), None)
    links = []
    for edge in graph.edges:
        if edge.kind not in LISTED:
            continue
        source, target = index.get(edge.source), index.get(edge.target)
        links.append(
            {
                "kind": str(edge.kind),
                "from_page": source.page if source else None,
                "to_page": target.page if target else None,
                "from": _label(source),
                "to": _label(target),
                "text": edge.text,
                "weight": edge.weight,
            }
        )
    return {
        "evolution": graph.evolution,
        "rounds": graph.rounds,
        "nodes": dict(Counter(str(n.kind) for n in graph.nodes)),
        "edges": graph.edge_counts(),
        "document": summary(doc_node) if doc_node else None,
        "sections": {sid: summary(node) for sid, node in sections.items() if node is not None},
        "pages": [
            {"page": n.page, **summary(n)}
            for n in sorted(by_kind.get(NodeKind.PAGE, []), key=lambda n: n.page)
        ],
        "links": links,
        "references": {
            name: sorted({r.page for r in refs}) for name, refs in sorted(graph.references.items())
        },
    }
