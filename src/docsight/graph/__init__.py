"""The content graph and summary tree of each document (G-Reader, DMAP).

:func:`make_graph` builds a document's graph at ingestion from its map and chunks, writes the
summaries (extractive, or by a chat model) and evolves it; the store keeps it beside the
document, and retrieval navigates it: the ``tree`` channel scores the summary tree, the
locator resolves "Table 3" and "Appendix B" through its reference index, and the readout
expands hits along its edges.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from docsight.document.chunk import Chunk
from docsight.document.model import Document
from docsight.graph.build import GraphBundle, build_graph, rows_in_order, search_text
from docsight.graph.model import (
    GRAPH_SCHEMA_VERSION,
    TREE_KINDS,
    ContentGraph,
    EdgeKind,
    GraphEdge,
    GraphNode,
    NodeKind,
    Reference,
)
from docsight.graph.summarize import ModelSummarizer, Summarizer
from docsight.settings import GraphSettings

__all__ = [
    "GRAPH_SCHEMA_VERSION",
    "TREE_KINDS",
    "ContentGraph",
    "EdgeKind",
    "GraphBundle",
    "GraphEdge",
    "GraphNode",
    "NodeKind",
    "Reference",
    "make_graph",
]


def make_graph(
    document: Document,
    chunks: Sequence[Chunk],
    vectors: np.ndarray,
    settings: GraphSettings,
    *,
    chat: object | None = None,
    embed: Callable[[list[str]], np.ndarray] | None = None,
) -> GraphBundle:
    """Build, summarise and evolve the graph of ``document`` as ``settings`` say.

    ``chat`` is the configured chat model (``None`` offline); ``embed`` embeds texts with the
    collection's encoder, used for model-written summaries of the summary tree.
    """
    from docsight.graph.evolve import evolve_lite, evolve_model

    use_model = chat is not None and settings.summaries in ("auto", "model")
    summarizer: Summarizer | None = (
        ModelSummarizer(chat, max_calls=settings.max_model_calls) if use_model else None
    )
    bundle = build_graph(document, chunks, vectors, window=settings.window, summarizer=summarizer)
    graph = bundle.graph
    mode = settings.evolution
    if mode == "auto":
        mode = "model" if summarizer is not None else "lite"
    chunk_ids = [c.id for c in sorted(chunks, key=lambda c: c.order)]
    if mode in ("lite", "model") and len(chunk_ids) > 1:
        order = {c.id: i for i, c in enumerate(chunks)}
        start = rows_in_order(np.asarray(vectors), [order[c] for c in chunk_ids])
        graph, evolved = evolve_lite(
            graph,
            chunk_ids,
            start,
            rounds=settings.rounds,
            neighbours=settings.neighbours,
            alpha=settings.alpha,
            min_similarity=settings.min_similarity,
        )
        for cid, vector in zip(chunk_ids, evolved, strict=True):
            bundle.vectors[cid] = vector
    if mode == "model" and summarizer is not None:
        graph = evolve_model(graph, summarizer, rounds=settings.rounds)
    bundle.graph = graph
    bundle.texts = {n.id: search_text(n) for n in graph.nodes}
    if embed is not None:
        # Model-written summaries say what a section or page is about better than the mean of
        # its chunks: their embedding joins the node's vector.
        written = [n for n in graph.nodes if n.kind in TREE_KINDS and n.summary_by != "extractive"]
        if written:
            vectors_written = embed([bundle.texts[n.id] for n in written])
            for node, vector in zip(written, vectors_written, strict=True):
                base = bundle.vectors.get(node.id)
                mixed = vector if base is None else base + vector
                bundle.vectors[node.id] = mixed / max(float(np.linalg.norm(mixed)), 1e-9)
    return bundle
