"""The structured-semantic channel (DMAP): score the summary tree top-down.

Each document's summary tree has a document node, section nodes and page nodes, each with a
title, a summary and keywords (``docsight.graph``) and a vector (the mean of its chunks, or the
embedding of a model-written summary). The channel matches the question against every level —
full text over titles, summaries and keywords, and cosine over the vectors — and reads the tree
top-down: a page scores by its own rank, the rank of the best section that spans it and, across
a corpus, the rank of its document. So a page in the section about "Consolidated Balance Sheets"
rises for a question about the balance sheet even when its own words are all numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

from docsight.encoders.base import Encoder
from docsight.index.base import ChannelHit, NodeHit, Store
from docsight.retrieval.fusion import rrf_scores

_TREE = ("document", "section", "page")
#: Nodes fetched per level and search method.
_PER_LEVEL = 50
_RRF_K = 20


class TreeRetriever:
    """Pages ranked by the summary tree: the page's own node, its sections, its document."""

    name = "tree"
    level: Literal["chunk", "page"] = "page"
    scoped = False

    def __init__(
        self,
        store: Store,
        encoder: Callable[[], Encoder],
        *,
        section_weight: float = 1.0,
        document_weight: float = 1.0,
    ) -> None:
        self.store = store
        self._encoder = encoder
        self.section_weight = section_weight
        self.document_weight = document_weight

    def _level(
        self, query: str, vector: object, kind: str, doc_ids: Sequence[str] | None, limit: int
    ) -> tuple[dict[str, float], dict[str, NodeHit]]:
        text = self.store.node_text_search(query, limit, doc_ids, [kind])
        dense = self.store.node_vector_search(vector, limit, doc_ids, [kind])  # type: ignore[arg-type]
        nodes = {h.node_id: h for h in (*text, *dense)}
        scores = rrf_scores(
            {"text": [h.node_id for h in text], "dense": [h.node_id for h in dense]}, k=_RRF_K
        )
        return scores, nodes

    def retrieve(
        self, query: str, limit: int, doc_ids: Sequence[str] | None = None
    ) -> list[ChannelHit]:
        if not query.strip():
            return []
        vector = self._encoder().encode_queries([query])[0]
        scope = list(doc_ids) if doc_ids else None
        doc_score: dict[str, float] = {}
        if scope is None or len(scope) > 1:
            scores, nodes = self._level(query, vector, "document", scope, _PER_LEVEL)
            doc_score = {nodes[n].doc_id: s for n, s in scores.items()}
            if scope is None:
                # Top-down: sections and pages are looked for in the best documents only.
                scope = sorted(doc_score, key=lambda d: -doc_score[d])[:_PER_LEVEL] or None
        section_scores, sections = self._level(query, vector, "section", scope, _PER_LEVEL)
        page_scores, pages = self._level(query, vector, "page", scope, max(limit, _PER_LEVEL))

        # Each page takes the score of the best section that spans it.
        best_section: dict[tuple[str, int], float] = {}
        for node_id, score in section_scores.items():
            node = sections[node_id]
            for page in range(node.page, node.last_page + 1):
                key = (node.doc_id, page)
                best_section[key] = max(best_section.get(key, 0.0), score)
        combined: dict[tuple[str, int], float] = {}
        for node_id, score in page_scores.items():
            node = pages[node_id]
            combined[(node.doc_id, node.page)] = score
        for key, score in best_section.items():
            combined[key] = combined.get(key, 0.0) + self.section_weight * score
        if doc_score:
            for key in combined:
                combined[key] += self.document_weight * doc_score.get(key[0], 0.0)
        ranked = sorted(combined.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
        return [ChannelHit(None, d, p, s) for (d, p), s in ranked]
