"""The content-graph methods of :class:`~docsight.index.lance.LanceStore`.

A document's graph is one compressed row of the ``graphs`` table, with its reference index
(figures, tables, sections by label) in a separate column so that locating by reference never
decompresses a graph; its nodes (sections and summaries) are rows of ``nodes``, searched by
BM25 and by vector like chunks. Kept apart from the store's row writing and reading, which is
long enough on its own.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from docsight.errors import StoreError
from docsight.graph.model import GRAPH_SCHEMA_VERSION, ContentGraph, GraphReferences
from docsight.index import schema as S
from docsight.index.base import NodeHit
from docsight.index.where import batches, has_text_index, in_filter, quote

#: Content graphs kept in memory per store, by document id (they never change once committed).
GRAPH_CACHE = 64
_NODE_COLUMNS = ["id", "doc_id", "kind", "page", "last_page", "parent"]


class GraphMethods:
    """Mixed into the store, which provides ``_table``, ``committed_ids`` and ``_graphs``."""

    _graphs: dict[str, ContentGraph]

    def _table(self, name: str) -> Any | None:  # provided by the store
        raise NotImplementedError

    def committed_ids(self) -> frozenset[str]:  # provided by the store
        raise NotImplementedError

    def get_graph(self, doc_id: str) -> ContentGraph | None:
        """The content graph of a committed document (``None`` for documents stored without
        one). Graphs never change under a document id, so they are kept in memory."""
        if doc_id not in self.committed_ids():
            self._graphs.pop(doc_id, None)
            return None
        cached = self._graphs.get(doc_id)
        if cached is not None:
            return cached
        table = self._table("graphs")
        if table is None:
            return None
        rows = table.search().where(f"id = {quote(doc_id)}").limit(1).to_arrow().to_pylist()
        if not rows or rows[0]["schema_version"] != GRAPH_SCHEMA_VERSION:
            return None
        try:
            graph = S.graph_from_row(rows[0])
        except (ValueError, zlib.error) as exc:
            raise StoreError(f"the content graph of document {doc_id} is damaged ({exc})") from exc
        if len(self._graphs) >= GRAPH_CACHE:
            self._graphs.pop(next(iter(self._graphs)))
        self._graphs[doc_id] = graph
        return graph

    def graph_references(self, doc_ids: Sequence[str]) -> list[GraphReferences]:
        """The reference indexes of committed documents (no graph is decompressed)."""
        table = self._table("graphs")
        committed = self.committed_ids()
        wanted = [d for d in dict.fromkeys(doc_ids) if d in committed]
        if table is None or not wanted:
            return []
        out: list[GraphReferences] = []
        for batch in batches(wanted):
            rows = (
                table.search()
                .where(in_filter("id", batch))
                .select(["doc_id", "schema_version", "refs"])
                .limit(None)
                .to_arrow()
                .to_pylist()
            )
            out.extend(
                S.refs_from_row(r) for r in rows if r["schema_version"] == GRAPH_SCHEMA_VERSION
            )
        return out

    def _node_where(self, doc_ids: Sequence[str] | None, kinds: Sequence[str]) -> str | None:
        clauses = []
        if doc_ids:
            clauses.append(in_filter("doc_id", doc_ids))
        if kinds:
            clauses.append(in_filter("kind", kinds))
        return " AND ".join(clauses) or None

    def _node_hits(self, rows: pa.Table, scores: Sequence[float]) -> list[NodeHit]:
        committed = self.committed_ids()
        return [
            NodeHit(i, d, k, p, lp, parent, float(s))
            for i, d, k, p, lp, parent, s in zip(
                rows.column("id").to_pylist(),
                rows.column("doc_id").to_pylist(),
                rows.column("kind").to_pylist(),
                rows.column("page").to_pylist(),
                rows.column("last_page").to_pylist(),
                rows.column("parent").to_pylist(),
                scores,
                strict=True,
            )
            if d in committed
        ]

    def node_text_search(
        self,
        query: str,
        limit: int,
        doc_ids: Sequence[str] | None = None,
        kinds: Sequence[str] = (),
    ) -> list[NodeHit]:
        table = self._table("nodes")
        if table is None or not query.strip() or doc_ids == [] or not has_text_index(table):
            return []
        search = table.search(query, query_type="fts", fts_columns="text")
        where = self._node_where(doc_ids, kinds)
        if where:
            search = search.where(where, prefilter=True)
        rows = search.select([*_NODE_COLUMNS, "_score"]).limit(limit).to_arrow()
        return self._node_hits(rows, rows.column("_score").to_pylist())

    def node_vector_search(
        self,
        vector: np.ndarray,
        limit: int,
        doc_ids: Sequence[str] | None = None,
        kinds: Sequence[str] = (),
    ) -> list[NodeHit]:
        table = self._table("nodes")
        if table is None or doc_ids == []:
            return []
        search = table.search(
            np.asarray(vector, dtype=np.float32), vector_column_name="vector"
        ).distance_type("cosine")
        where = self._node_where(doc_ids, kinds)
        if where:
            search = search.where(where, prefilter=True)
        rows = search.select([*_NODE_COLUMNS, "_distance"]).limit(limit).to_arrow()
        return self._node_hits(rows, [1.0 - d for d in rows.column("_distance").to_pylist()])
