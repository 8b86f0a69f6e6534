"""The content graph and summary tree of each document (G-Reader, DMAP).

:func:`make_graph` builds a document's graph at ingestion from its map and chunks, writes the
summaries (extractive, or by a chat model) and evolves it; the store keeps it beside the
document, and retrieval navigates it: the ``tree`` channel scores the summary tree, the
locator resolves "Table 3" and "Appendix B" through its reference index, and the readout
expands hits along its edges.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from docsight.document.artifacts import strip_placeholders
from docsight.document.chunk import Chunk
from docsight.document.model import Document
from docsight.graph.build import (
    GraphBundle,
    build_graph,
    build_skeleton,
    bundle_of,
    in_graph_order,
    model_summaries,
    search_text,
)
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
    "build_graph",
    "build_skeleton",
    "finish_graph",
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
    skeleton = build_skeleton(document, chunks, window=settings.window)
    texts = {c.id: strip_placeholders(c.body) for c in chunks} if chat is not None else None
    return finish_graph(
        skeleton, [c.id for c in chunks], vectors, settings, chat=chat, embed=embed, texts=texts
    )


def finish_graph(
    skeleton: ContentGraph,
    chunk_ids: Sequence[str],
    vectors: np.ndarray,
    settings: GraphSettings,
    *,
    chat: object | None = None,
    embed: Callable[[list[str]], np.ndarray] | None = None,
    texts: Mapping[str, str] | None = None,
    overwrite: bool = False,
) -> GraphBundle:
    """Summarise and evolve a graph from :func:`build_skeleton` as ``settings`` say, given the
    vectors of its chunks (``vectors[i]`` is chunk ``chunk_ids[i]``'s). With ``overwrite``,
    evolution may write into ``vectors``: the caller has no further use for them.

    Only model-written summaries read the chunks' content: with ``chat``, ``texts`` gives each
    chunk's body without placeholders (a chunk missing from it is summarised from its extractive
    summary). Everything else needs the ids and vectors alone, so a long document's chunks need
    not be held for it.
    """
    from docsight.graph.evolve import evolve_lite, evolve_model

    use_model = chat is not None and settings.summaries in ("auto", "model")
    summarizer: Summarizer | None = (
        ModelSummarizer(chat, max_calls=settings.max_model_calls) if use_model else None
    )
    graph = skeleton
    if summarizer is not None:
        graph = model_summaries(graph, texts or {}, summarizer)
    # Reordered once (a long document's vectors are megabytes): the node vectors and evolution
    # both read them in the graph's order.
    given = np.asarray(vectors)
    rows = in_graph_order(graph, chunk_ids, given)
    bundle = bundle_of(graph, rows)
    mode = settings.evolution
    if mode == "auto":
        mode = "model" if summarizer is not None else "lite"
    ordered = [n.id for n in graph.nodes if n.kind == NodeKind.CHUNK]
    if mode in ("lite", "model") and len(ordered) > 1:
        graph, evolved = evolve_lite(
            graph,
            ordered,
            rows,
            rounds=settings.rounds,
            neighbours=settings.neighbours,
            alpha=settings.alpha,
            min_similarity=settings.min_similarity,
            # The chunk nodes' vectors are replaced below and the structure nodes' are
            # computed already: the rows are used up unless they are the caller's own.
            overwrite=overwrite or rows is not given,
        )
        for cid, vector in zip(ordered, evolved, strict=True):
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
