"""Graph evolution (G-Reader): nodes absorb context from their neighbours over T rounds.

* **Lite** (offline, no model): each chunk's vector is mixed with those of its most similar
  candidates, where the candidates are its graph neighbours (adjacency, captions, references,
  continuations) and its nearest chunks in the document. After the last round the nearest
  chunks that are not yet neighbours become ``similar`` edges. G-Reader's rule-based variant
  does the same: similarity-weighted averaging, edges updated to the chosen neighbours.
* **Model**: the summaries of the summary tree and of tables and figures are rewritten by a
  chat model from their neighbours' summaries, once per round (the model client caches each
  request, so re-ingesting costs nothing).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from docsight.graph.model import ContentGraph, EdgeKind, GraphEdge, NodeKind
from docsight.graph.summarize import NodeSummary, Summarizer, SummaryRequest, with_summary

#: Edges along which chunk content flows during evolution (containment is structure, not
#: content: a section's chunks are already close in reading order).
CONTENT_EDGES = frozenset(
    {EdgeKind.NEXT, EdgeKind.ARTIFACT, EdgeKind.REFERS_TO, EdgeKind.CONTINUES}
)
#: Beyond this many chunks, semantic candidates are looked for within this reading-order
#: distance only, so a 10,000-chunk filing does not cost a 10,000² similarity matrix per round.
_LOCAL_REACH = 500


def evolve_lite(
    graph: ContentGraph,
    chunk_ids: Sequence[str],
    vectors: np.ndarray,
    *,
    rounds: int = 3,
    neighbours: int = 4,
    alpha: float = 0.5,
    min_similarity: float = 0.5,
    overwrite: bool = False,
) -> tuple[ContentGraph, np.ndarray]:
    """Evolved chunk vectors (rows of ``vectors``, in ``chunk_ids`` order) and the graph with
    ``similar`` edges added. With ``overwrite`` the rounds may write into ``vectors`` (the
    caller has no further use for them): one copy of them fewer at the peak."""
    n = len(chunk_ids)
    if n < 2 or rounds <= 0:
        return graph.model_copy(update={"evolution": "lite", "rounds": 0}), vectors
    row = {cid: i for i, cid in enumerate(chunk_ids)}
    linked: list[set[int]] = [set() for _ in range(n)]
    for edge in graph.edges:
        if edge.kind in CONTENT_EDGES and edge.source in row and edge.target in row:
            a, b = row[edge.source], row[edge.target]
            linked[a].add(b)
            linked[b].add(a)
    x = np.asarray(vectors, dtype=np.float32)
    # With ``overwrite``, the caller's array is a buffer for free (the caller holds it anyway):
    # the rounds normalise into it, then mix into it every other round, so that a 5,000-page
    # report's 43 MiB of vectors are there twice at the peak rather than three times. A fresh
    # buffer is made only after the round's search, whose working arrays are gone by then.
    free = x if (overwrite or x is not vectors) and x.flags.writeable else None
    x = _normalise(x, out=free)
    nearest = np.zeros((n, 0), dtype=np.intp)
    for _ in range(rounds):
        nearest = _nearest(x, neighbours)
        if free is None or free is x:
            mixed = x.copy()
        else:
            mixed = free
            np.copyto(mixed, x)
        for i in range(n):
            candidates = sorted(linked[i].union(nearest[i].tolist()))
            if not candidates:
                continue
            sims = x[candidates] @ x[i]
            top = np.argsort(-sims, kind="stable")[:neighbours]
            weights = np.clip(sims[top], 0.0, None)
            if weights.sum() <= 0:
                continue
            chosen = np.asarray(candidates)[top]
            mixed[i] = x[i] + alpha * (weights[:, None] * x[chosen]).sum(0) / weights.sum()
        x = _normalise(mixed, out=mixed)
    edges = list(graph.edges)
    for i in range(n):
        for j in nearest[i].tolist():
            if j in linked[i] or (j < i and i in nearest[j]):
                continue  # already related, or the same pair seen from the other side
            sim = float(x[i] @ x[j])
            if sim >= min_similarity:
                edges.append(
                    GraphEdge(
                        kind=EdgeKind.SIMILAR,
                        source=chunk_ids[i],
                        target=chunk_ids[j],
                        weight=round(sim, 3),
                    )
                )
    evolved = graph.model_copy(update={"edges": edges, "evolution": "lite", "rounds": rounds})
    return evolved, x


def _normalise(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, np.maximum(norms, 1e-9), out=out)


def _nearest(x: np.ndarray, k: int, block: int = 512) -> np.ndarray:
    """For each row, the ``k`` most similar other rows, most similar first (within
    ``_LOCAL_REACH`` for long documents): one row of indices per row of ``x``, as an array
    (as lists of ints they were 6 MiB at 30,000 chunks)."""
    n = len(x)
    # Every row has as many candidates: all other rows, or a reach on each side of at least
    # _LOCAL_REACH rows when there are more than 2 * _LOCAL_REACH.
    take = max(0, min(k, n - 1))
    out = np.zeros((n, take), dtype=np.intp)
    if take == 0:
        return out
    for start in range(0, n, block):
        stop = min(n, start + block)
        lo = 0 if n <= 2 * _LOCAL_REACH else max(0, start - _LOCAL_REACH)
        hi = n if n <= 2 * _LOCAL_REACH else min(n, stop + _LOCAL_REACH)
        sims = x[start:stop] @ x[lo:hi].T
        for r in range(stop - start):
            sims[r, start + r - lo] = -np.inf  # not its own neighbour
        idx = np.argpartition(-sims, take - 1, axis=1)[:, :take]
        for r in range(stop - start):
            out[start + r] = lo + idx[r][np.argsort(-sims[r, idx[r]], kind="stable")]
    return out


_EVOLVE_PROMPT_KIND = {
    NodeKind.DOCUMENT: "the whole document",
    NodeKind.SECTION: "a section",
    NodeKind.PAGE: "a page",
    NodeKind.CHUNK: "a table or figure",
}


def evolve_model(
    graph: ContentGraph, summarizer: Summarizer, *, rounds: int = 3, neighbours: int = 8
) -> ContentGraph:
    """Rewrite the summaries of the summary tree and of tables and figures from their
    neighbours' summaries, ``rounds`` times."""
    index = graph.node_index()
    related: dict[str, list[str]] = {}
    for edge in graph.edges:
        if edge.kind == EdgeKind.NEXT:
            continue  # adjacency says little about a section or a table
        related.setdefault(edge.source, []).append(edge.target)
        related.setdefault(edge.target, []).append(edge.source)
    wanted = [
        n.id
        for n in graph.nodes
        if n.kind != NodeKind.CHUNK or n.chunk_kind in ("table", "figure", "chart")
    ]
    done = 0
    for _ in range(rounds):
        requests = []
        for node_id in wanted:
            node = index[node_id]
            around = [index[o] for o in related.get(node_id, []) if o in index][:neighbours]
            context = "\n".join(
                f"- ({o.kind}) {o.title + ': ' if o.title else ''}{o.summary}" for o in around
            )
            content = (
                f"Current summary: {node.summary}\nKeywords: {', '.join(node.keywords)}\n"
                f"Related parts:\n{context}"
            )
            requests.append(
                SummaryRequest(node_id, _EVOLVE_PROMPT_KIND[node.kind], node.title, content)
            )
        replies: list[NodeSummary | None] = summarizer.summarize(requests)
        for node_id, reply in zip(wanted, replies, strict=True):
            if reply is not None and reply.summary:
                index[node_id] = with_summary(index[node_id], reply, summarizer.name)
        done += 1
    return graph.model_copy(
        update={
            "nodes": [index[n.id] for n in graph.nodes],
            "evolution": "model",
            "rounds": done,
        }
    )
