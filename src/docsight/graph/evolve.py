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

from array import array
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
    linked = _Links(graph, chunk_ids)
    x = np.asarray(vectors, dtype=np.float32)
    # The rounds mix the rows in place (see _mix_in_place), so one array holds them all: the
    # caller's, when it has no further use for it, or else the normalised copy.
    free = x if (overwrite or x is not vectors) and x.flags.writeable else None
    x = _normalise(x, out=free)
    nearest = np.zeros((n, 0), dtype=np.intp)
    for _ in range(rounds):
        nearest = _nearest(x, neighbours)
        _mix_in_place(x, linked, nearest, neighbours, alpha)
    edges = list(graph.edges)
    for i in range(n):
        related = set(linked.of(i))
        for j in nearest[i].tolist():
            if j in related or (j < i and i in nearest[j]):
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


class _Links:
    """Each row's linked rows (along :data:`CONTENT_EDGES`, both ways, a row once) as one pair
    of sorted arrays: as a set per row they were 7 MiB at 30,000 chunks."""

    def __init__(self, graph: ContentGraph, chunk_ids: Sequence[str]) -> None:
        row = {cid: i for i, cid in enumerate(chunk_ids)}
        ends = array("q")
        for edge in graph.edges:
            if edge.kind in CONTENT_EDGES:
                a, b = row.get(edge.source), row.get(edge.target)
                if a is not None and b is not None:
                    ends.extend((a, b, b, a))
        n = len(chunk_ids)
        pairs = np.asarray(ends, dtype=np.int64).reshape(-1, 2)
        keys = np.unique(pairs[:, 0] * n + pairs[:, 1])
        self.source = keys // n
        self.target = keys % n
        self.starts = np.searchsorted(self.source, np.arange(n + 1))

    def of(self, i: int) -> list[int]:
        return self.target[self.starts[i] : self.starts[i + 1]].tolist()


#: Rows are written back and normalised this many at a time.
_FLUSH = 256


def _mix_in_place(
    x: np.ndarray,
    linked: _Links,
    nearest: np.ndarray,
    neighbours: int,
    alpha: float,
) -> None:
    """One round of mixing, written into ``x`` (normalised rows) and normalised again: each row
    becomes itself plus ``alpha`` times the similarity-weighted mean of its ``neighbours`` most
    similar candidates (its ``linked`` rows and its ``nearest``), all as they were before the
    round.

    The rows are mixed in order, and a mixed row waits in a small ring until no later row can
    read the row's old value: a row's nearest candidates lie within ``lag`` rows of it (about
    1,000 for a long document, see :func:`_nearest`), so a row is written back once the
    mixing is ``lag`` rows past it. A row linked to one further ahead (a reference, a caption,
    a continuation) keeps its old value aside until that row is mixed. So a 5,000-page
    report's 43 MiB of vectors are held once, not in two buffers, with the same result bit
    for bit: every row is computed from the same values in the same operations.
    """
    n, dim = x.shape
    rows = np.arange(n)
    lag = int(np.abs(nearest - rows[:, None]).max()) if nearest.size else 0
    # Old values a later row reads after they are written back: row j for a link from row i
    # beyond the lag, kept until row i is mixed.
    last_reader: dict[int, int] = {}
    far = linked.target + lag < linked.source
    for i, j in zip(linked.source[far].tolist(), linked.target[far].tolist(), strict=True):
        last_reader[j] = max(i, last_reader.get(j, i))
    release: dict[int, list[int]] = {}
    for j, i in last_reader.items():
        release.setdefault(i, []).append(j)
    kept: dict[int, np.ndarray] = {}
    # Mixed rows not yet written back are at most lag + _FLUSH; the ring holds whole flush
    # blocks so that each block is one slice of it.
    ring_rows = min(-(-n // _FLUSH), lag // _FLUSH + 2) * _FLUSH
    ring = np.empty((ring_rows, dim), dtype=x.dtype)
    written = 0  # rows below this are mixed and written back

    def write_back(stop: int) -> None:
        nonlocal written
        while written < stop:
            end = min(stop, written + _FLUSH)
            at = written % ring_rows
            for j in range(written, end):
                if j in last_reader:
                    kept[j] = x[j].copy()
            _normalise(ring[at : at + end - written], out=x[written:end])
            written = end

    for i in range(n):
        # Rows more than lag before this one are read from now on through far links only
        # (their old values are kept): they may be written back, a whole block at a time.
        ready = i - lag
        if ready - written >= _FLUSH:
            write_back(written + (ready - written) // _FLUSH * _FLUSH)
        out = ring[i % ring_rows]
        out[:] = x[i]  # as it is, unless it has candidates with some weight
        candidates = sorted(set(linked.of(i)).union(nearest[i].tolist()))
        if candidates:
            values = x[candidates]
            for r, j in enumerate(candidates):
                if j >= written:
                    break
                values[r] = kept[j]  # written back already: its value before the round
            sims = values @ x[i]
            top = np.argsort(-sims, kind="stable")[:neighbours]
            weights = np.clip(sims[top], 0.0, None)
            if weights.sum() > 0:
                out[:] = x[i] + alpha * (weights[:, None] * values[top]).sum(0) / weights.sum()
        for j in release.pop(i, ()):
            kept.pop(j, None)
    write_back(n)


def _normalise(x: np.ndarray, out: np.ndarray | None = None, block: int = 4096) -> np.ndarray:
    """``x``'s rows scaled to unit length, into ``out`` (which may be ``x``) or a new array.
    A block of rows at a time: the norm squares its input into a temporary as large, which
    for the whole array was a second copy of it. Each row's result is the same either way."""
    if out is None:
        out = np.empty_like(x)
    for start in range(0, len(x), block):
        rows = x[start : start + block]
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        np.divide(rows, np.maximum(norms, 1e-9), out=out[start : start + block])
    return out


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
