"""Arrow schemas of the collection tables and conversions between rows and models.

Bump ``STORE_SCHEMA_VERSION`` whenever a table's layout changes; collections written with another
version are refused with a clear error rather than misread, except the versions in
``READABLE_SCHEMA_VERSIONS``, whose tables are a subset of this version's (they are read as they
are and take this version number at their next write).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

import numpy as np
import pyarrow as pa
from pydantic import TypeAdapter

from docsight.document.chunk import Chunk
from docsight.document.model import Asset, BBox, Document, Element, Font, ParsedDocument
from docsight.graph.build import GraphBundle
from docsight.graph.model import (
    ContentGraph,
    GraphEdge,
    GraphNode,
    GraphReferences,
    Reference,
)

#: 2: page labels and text, chunk images, chunker per document; 3: hidden; 4: content graph;
#: 5: page images and crops of PDFs and image files kept as recipes over the stored source file;
#: 6: page-image vectors of the visual channel (a new table, ``page_vectors``)
STORE_SCHEMA_VERSION = 6
#: Rows of one table written at a time when a document is stored (see :func:`structure_tables`).
WRITE_ROWS = 2048
#: A v5 collection is a v6 collection without page-image vectors: nothing in it reads otherwise.
#: (A docsight that reads v5 only refuses v6, which may hold rows it would not delete or check.)
READABLE_SCHEMA_VERSIONS = (5, 6)

_BBOX = pa.list_(pa.float32(), 4)
_IDS = pa.list_(pa.string())

DOCUMENTS = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("name", pa.string()),
        pa.field("source", pa.string()),
        pa.field("media_type", pa.string()),
        pa.field("sha256", pa.string()),
        pa.field("size_bytes", pa.int64()),
        pa.field("title", pa.string()),
        pa.field("pages", pa.int32()),
        pa.field("elements", pa.int32()),
        pa.field("chunks", pa.int32()),
        pa.field("nodes", pa.int32()),
        pa.field("parser", pa.string()),
        pa.field("chunker", pa.string()),
        pa.field("status", pa.string()),
        pa.field("ingested_at", pa.timestamp("us", tz="UTC")),
        pa.field("schema_version", pa.int32()),
        # The document model without its elements (pages, sections, metadata) as JSON.
        pa.field("doc_json", pa.large_string()),
    ]
)

PAGES = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("doc_id", pa.string()),
        pa.field("page", pa.int32()),
        pa.field("width", pa.float32()),
        pa.field("height", pa.float32()),
        pa.field("text_chars", pa.int32()),
        pa.field("image_id", pa.string()),
        pa.field("labels", _IDS),
        # Everything on the page but furniture, for page-level full-text search.
        pa.field("text", pa.large_string()),
    ]
)

ELEMENTS = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("doc_id", pa.string()),
        pa.field("kind", pa.string()),
        pa.field("text", pa.large_string()),
        pa.field("markdown", pa.large_string()),
        pa.field("page", pa.int32()),
        pa.field("bbox", _BBOX),
        pa.field("order", pa.int32()),
        pa.field("section_id", pa.string()),
        pa.field("level", pa.int32()),
        pa.field("font_json", pa.string()),
        pa.field("image_id", pa.string()),
        pa.field("attrs_json", pa.large_string()),
        pa.field("hidden", _IDS),
    ]
)

ASSETS = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("doc_id", pa.string()),
        pa.field("kind", pa.string()),
        pa.field("media_type", pa.string()),
        pa.field("width", pa.int32()),
        pa.field("height", pa.int32()),
        # The image itself, or null when ``render`` makes it from the document's source file.
        pa.field("data", pa.large_binary()),
        # The recipe (JSON) that makes the image from the source file (``index.renders``).
        pa.field("render", pa.string()),
    ]
)


#: One row per document: its content graph (``docsight.graph``) as zlib-compressed JSON.
GRAPHS = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("doc_id", pa.string()),
        pa.field("schema_version", pa.int32()),
        pa.field("graph", pa.large_binary()),
        # The reference index alone ("table 3" → node and page), read without the graph.
        pa.field("refs", pa.large_string()),
    ]
)


def nodes_schema(dim: int) -> pa.Schema:
    """Graph nodes as the ``tree`` and ``graph`` channels search them: the summary tree's
    text (full-text index) and every node's vector (evolved, for chunks)."""
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("doc_id", pa.string()),
            pa.field("kind", pa.string()),
            pa.field("page", pa.int32()),
            pa.field("last_page", pa.int32()),
            pa.field("parent", pa.string()),
            pa.field("text", pa.large_string()),
            pa.field("vector", pa.list_(pa.float32(), dim)),
        ]
    )


def chunks_schema(dim: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("doc_id", pa.string()),
            pa.field("doc_name", pa.string()),
            pa.field("text", pa.large_string()),
            pa.field("body", pa.large_string()),
            pa.field("kind", pa.string()),
            pa.field("strategy", pa.string()),
            pa.field("section_path", _IDS),
            pa.field("element_ids", _IDS),
            pa.field("pages", pa.list_(pa.int32())),
            pa.field("page", pa.int32()),
            pa.field("bbox", _BBOX),
            pa.field("order", pa.int32()),
            pa.field("n_words", pa.int32()),
            pa.field("image_ids", _IDS),
            pa.field("vector", pa.list_(pa.float32(), dim)),
        ]
    )


def page_vectors_schema(kind: str, dim: int) -> pa.Schema:
    """Page-image vectors (``visual`` channel): one row per page image, keyed ``doc_id:page``.
    ``single``: one vector; ``multi``: a Lance multivector (one vector per image token),
    searched by MaxSim."""
    vector = pa.list_(pa.float32(), dim)
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("doc_id", pa.string()),
            pa.field("page", pa.int32()),
            pa.field("vector", vector if kind == "single" else pa.list_(vector)),
        ]
    )


def page_vector_table(
    doc_id: str, pages: Sequence[int], vectors: Any, kind: str, dim: int
) -> pa.Table:
    """Rows for ``pages`` of a document, built from numpy without a detour through Python lists
    (a late-interaction page is a thousand vectors)."""
    if kind == "single":
        matrix = np.asarray(vectors, dtype=np.float32).reshape(len(pages), dim)
        column: pa.Array = pa.FixedSizeListArray.from_arrays(pa.array(matrix.reshape(-1)), dim)
    else:
        mats = [np.asarray(v, dtype=np.float32).reshape(-1, dim) for v in vectors]
        offsets = np.zeros(len(mats) + 1, dtype=np.int32)
        offsets[1:] = np.cumsum([len(m) for m in mats])
        flat = np.concatenate(mats).reshape(-1) if mats else np.zeros(0, dtype=np.float32)
        inner = pa.FixedSizeListArray.from_arrays(pa.array(flat), dim)
        column = pa.ListArray.from_arrays(pa.array(offsets), inner)
    return pa.table(
        {
            "id": [f"{doc_id}:{p}" for p in pages],
            "doc_id": [doc_id] * len(pages),
            "page": pa.array(list(pages), pa.int32()),
            "vector": column,
        },
        schema=page_vectors_schema(kind, dim),
    )


#: Columns read back for a chunk (everything but the vector).
CHUNK_COLUMNS = [f.name for f in chunks_schema(1) if f.name != "vector"]
DOCUMENT_INFO_COLUMNS = [f.name for f in DOCUMENTS if f.name != "doc_json"]


def _bbox(b: BBox | None) -> list[float] | None:
    return list(b.as_tuple()) if b is not None else None


def _bbox_back(value: Sequence[float] | None) -> BBox | None:
    if value is None:
        return None
    x0, y0, x1, y1 = (min(1.0, max(0.0, float(v))) for v in value)
    return BBox(x0=x0, y0=y0, x1=max(x0, x1), y1=max(y0, y1))


def document_row(
    parsed: ParsedDocument,
    n_chunks: int,
    chunker: str,
    status: str = "done",
    n_nodes: int = 0,
    n_elements: int | None = None,
) -> dict[str, Any]:
    """The documents row; ``n_elements`` when the elements were written and let go already."""
    doc = parsed.document
    return {
        "id": doc.id,
        "name": doc.name,
        "source": doc.source,
        "media_type": doc.media_type,
        "sha256": doc.sha256,
        "size_bytes": doc.size_bytes,
        "title": doc.title,
        "pages": doc.page_count,
        "elements": len(doc.elements) if n_elements is None else n_elements,
        "chunks": n_chunks,
        "nodes": n_nodes,
        "parser": doc.parser,
        "chunker": chunker,
        "status": status,
        "ingested_at": datetime.now(UTC),
        "schema_version": doc.schema_version,
        "doc_json": doc.model_dump_json(exclude={"elements"}),
    }


def page_text(doc: Document) -> list[str]:
    """The indexable text of each page, in reading order."""
    return _page_texts(doc.elements, 0, doc.page_count)


def _page_texts(elements: Sequence[Element], start: int, stop: int) -> list[str]:
    """The indexable text of pages ``[start, stop)`` from ``elements`` (in reading order)."""
    texts: list[list[str]] = [[] for _ in range(start, stop)]
    for element in elements:
        if element.is_furniture or element.hidden or not element.text:
            continue
        if start <= element.page < stop:
            texts[element.page - start].append(element.text)
    return ["\n".join(parts) for parts in texts]


def page_rows(
    doc: Document,
    start: int = 0,
    stop: int | None = None,
    elements: Sequence[Element] | None = None,
) -> list[dict[str, Any]]:
    """Rows of the document's pages (or of pages ``[start, stop)``, their text from
    ``elements``: a window of a document whose elements are not all at hand)."""
    stop = doc.page_count if stop is None else stop
    source = doc.elements if elements is None else elements
    return [
        {
            "id": f"{doc.id}:{p.index}",
            "doc_id": doc.id,
            "page": p.index,
            "width": p.width,
            "height": p.height,
            "text_chars": p.text_chars,
            "image_id": p.image_id,
            "labels": p.labels,
            "text": text,
        }
        for p, text in zip(doc.pages[start:stop], _page_texts(source, start, stop), strict=True)
    ]


def element_rows(doc: Document, elements: Sequence[Element] | None = None) -> list[dict[str, Any]]:
    """Rows of the document's elements (or of ``elements`` of it)."""
    return [
        {
            "id": e.id,
            "doc_id": doc.id,
            "kind": str(e.kind),
            "text": e.text,
            "markdown": e.markdown,
            "page": e.page,
            "bbox": _bbox(e.bbox),
            "order": e.order,
            "section_id": e.section_id,
            "level": e.level,
            "font_json": e.font.model_dump_json() if e.font else None,
            "image_id": e.image_id,
            "attrs_json": json.dumps(e.attrs, ensure_ascii=False, default=str),
            "hidden": [str(h) for h in e.hidden],
        }
        for e in (doc.elements if elements is None else elements)
    ]


@lru_cache(maxsize=256)
def _font(font_json: str) -> Font:
    """One (frozen) font object per distinct font, shared by the elements read back."""
    return Font.model_validate_json(font_json)


def element_from_row(row: dict[str, Any]) -> Element:
    return Element(
        id=row["id"],
        kind=row["kind"],
        text=row["text"] or "",
        markdown=row["markdown"],
        page=row["page"],
        bbox=_bbox_back(row["bbox"]),
        order=row["order"],
        section_id=row["section_id"],
        level=row["level"],
        font=_font(row["font_json"]) if row["font_json"] else None,
        image_id=row["image_id"],
        attrs=json.loads(row["attrs_json"] or "{}"),
        hidden=row.get("hidden") or [],
    )


def asset_rows(assets: Sequence[Asset], *, from_source: bool = False) -> list[dict[str, Any]]:
    """Rows of the assets; with ``from_source`` (the document's file is kept), an asset with a
    render recipe keeps the recipe and no pixels."""
    return [
        {
            "id": a.id,
            "doc_id": a.doc_id,
            "kind": a.kind,
            "media_type": a.media_type,
            "width": a.width,
            "height": a.height,
            "data": None if from_source and a.render else a.data,
            "render": json.dumps(a.render) if a.render else None,
        }
        for a in assets
    ]


def asset_from_row(row: dict[str, Any]) -> Asset:
    """The asset; its ``data`` is empty when the row keeps a recipe instead of pixels."""
    return Asset(
        id=row["id"],
        doc_id=row["doc_id"],
        kind=row["kind"],
        media_type=row["media_type"],
        data=row["data"] or b"",
        width=row["width"] or 0,
        height=row["height"] or 0,
        render=json.loads(row["render"]) if row.get("render") else None,
    )


def chunk_table(chunks: Sequence[Chunk], vectors: np.ndarray, dim: int) -> pa.Table:
    if len(chunks) != len(vectors):
        raise ValueError(f"{len(chunks)} chunks but {len(vectors)} vectors")
    rows = [
        {
            "id": c.id,
            "doc_id": c.doc_id,
            "doc_name": c.doc_name,
            "text": c.text,
            "body": c.body,
            "kind": c.kind,
            "strategy": c.strategy,
            "section_path": c.section_path,
            "element_ids": c.element_ids,
            "pages": c.pages,
            "page": c.page,
            "bbox": _bbox(c.bbox),
            "order": c.order,
            "n_words": c.n_words,
            "image_ids": c.image_ids,
        }
        for c in chunks
    ]
    return _with_vectors(rows, vectors, chunks_schema(dim))


def _with_vectors(rows: list[dict[str, Any]], vectors: Any, schema: pa.Schema) -> pa.Table:
    """The rows with the vectors as their last column, ``vector``. The vectors go to Arrow from
    one float32 array: as Python lists they took 32 bytes a number (a long document's chunks
    and nodes, over 100 MiB at 1,000 pages), for the same stored values."""
    field = schema.field("vector")
    dim = field.type.list_size
    flat = np.ascontiguousarray(np.asarray(vectors, dtype=np.float32).reshape(-1))
    if flat.size != len(rows) * dim:
        raise ValueError(f"{len(rows)} rows but {flat.size / dim:g} vectors of {dim}")
    column = pa.FixedSizeListArray.from_arrays(pa.array(flat, type=pa.float32()), dim)
    table = pa.Table.from_pylist(rows, schema=schema.remove(schema.get_field_index("vector")))
    return table.append_column(field, column)


def structure_tables(
    doc: Document, rows: int | None = None
) -> Iterator[tuple[str, pa.Table, pa.Schema]]:
    """A document's pages and elements as ``(table name, rows, schema)``, at most ``rows`` rows
    at a time (:func:`chunk_tables` and :func:`node_tables` do the same for its chunks and its
    graph's nodes).

    Built one batch at a time as they are written, so storing a long document never holds all
    its rows as Python dicts and Arrow copies at once."""
    yield from window_tables(doc, 0, doc.page_count, doc.elements, rows)


def window_tables(
    doc: Document, start: int, stop: int, elements: Sequence[Element], rows: int | None = None
) -> Iterator[tuple[str, pa.Table, pa.Schema]]:
    """Pages ``[start, stop)`` of ``doc`` and ``elements``, theirs (see
    :func:`structure_tables`): a document written window by window, as an ingest receives it
    (``ingest.windows``)."""
    rows = rows or WRITE_ROWS
    pages = page_rows(doc, start, stop, elements)
    for k in range(0, len(pages), rows):
        yield "pages", pa.Table.from_pylist(pages[k : k + rows], schema=PAGES), PAGES
    del pages
    for k in range(0, len(elements), rows):
        batch = element_rows(doc, elements[k : k + rows])
        yield "elements", pa.Table.from_pylist(batch, schema=ELEMENTS), ELEMENTS


def chunk_tables(
    chunks: Sequence[Chunk], vectors: np.ndarray, dim: int, rows: int | None = None
) -> Iterator[tuple[str, pa.Table, pa.Schema]]:
    """Chunks with their vectors, ``rows`` at a time (see :func:`structure_tables`)."""
    rows = rows or WRITE_ROWS
    schema = chunks_schema(dim)
    for k in range(0, len(chunks), rows):
        yield "chunks", chunk_table(chunks[k : k + rows], vectors[k : k + rows], dim), schema


def node_tables(
    graph: GraphBundle, doc_id: str, dim: int, rows: int | None = None
) -> Iterator[tuple[str, pa.Table, pa.Schema]]:
    """The graph's searchable nodes, ``rows`` at a time (see :func:`structure_tables`)."""
    rows = rows or WRITE_ROWS
    nodes = [n for n in graph.graph.nodes if graph.vectors.get(n.id) is not None]
    schema = nodes_schema(dim)
    for k in range(0, len(nodes), rows):
        yield "nodes", node_table(graph, doc_id, dim, nodes[k : k + rows]), schema


def chunk_from_row(row: dict[str, Any]) -> Chunk:
    # Columns are named after Chunk's fields; only the box and absent lists need converting.
    values = {k: v for k, v in row.items() if k in Chunk.model_fields and v is not None}
    return Chunk.model_validate({**values, "bbox": _bbox_back(row.get("bbox"))})


@lru_cache(maxsize=1)
def _graph_lists() -> tuple[TypeAdapter[list[GraphNode]], TypeAdapter[list[GraphEdge]]]:
    return TypeAdapter(list[GraphNode]), TypeAdapter(list[GraphEdge])


def graph_blob(graph: ContentGraph, items: int | None = None) -> bytes:
    """The graph's JSON (``model_dump_json(exclude_defaults=True)`` with its keys in another
    order), compressed as it is written, ``items`` nodes or edges at a time: the JSON of a
    1,000-page report's graph was held whole twice over (text and bytes), about 14 MiB of the
    store step's peak."""
    items = items or WRITE_ROWS
    nodes, edges = _graph_lists()
    zipper = zlib.compressobj(6)
    out = [zipper.compress(b"{")]
    parts: tuple[tuple[str, Sequence[Any], TypeAdapter[Any]], ...] = (
        ("nodes", graph.nodes, nodes),
        ("edges", graph.edges, edges),
    )
    for name, values, adapter in parts:
        if not values:  # as exclude_defaults leaves an empty list out
            continue
        out.append(zipper.compress(f'"{name}":['.encode()))
        for k in range(0, len(values), items):
            piece = adapter.dump_json(values[k : k + items], exclude_defaults=True)
            out.append(zipper.compress(b"," + piece[1:-1] if k else piece[1:-1]))
        out.append(zipper.compress(b"],"))
    # The rest, without its opening brace; never empty, as doc_id has no default.
    rest = graph.model_dump_json(exclude_defaults=True, exclude={"nodes", "edges"})
    out.append(zipper.compress(rest[1:].encode()))
    out.append(zipper.flush())
    return b"".join(out)


def graph_table(graph: ContentGraph) -> pa.Table:
    """The graphs table's row of ``graph``."""
    return pa.Table.from_pylist([graph_row(graph)], schema=GRAPHS)


def graph_row(graph: ContentGraph) -> dict[str, Any]:
    data = graph_blob(graph)
    return {
        "id": graph.doc_id,
        "doc_id": graph.doc_id,
        "schema_version": graph.schema_version,
        "graph": data,
        "refs": json.dumps(
            {
                "references": {k: [r.model_dump() for r in v] for k, v in graph.references.items()},
                "artifacts": {k: [r.model_dump() for r in v] for k, v in graph.artifacts.items()},
            }
        ),
    }


def graph_from_row(row: dict[str, Any]) -> ContentGraph:
    return ContentGraph.model_validate_json(zlib.decompress(row["graph"]))


def refs_from_row(row: dict[str, Any]) -> GraphReferences:
    data = json.loads(row["refs"] or "{}")
    return GraphReferences(
        doc_id=row["doc_id"],
        references={
            k: [Reference.model_validate(r) for r in v]
            for k, v in data.get("references", {}).items()
        },
        artifacts={
            k: [Reference.model_validate(r) for r in v]
            for k, v in data.get("artifacts", {}).items()
        },
    )


def node_table(
    bundle: GraphBundle, doc_id: str, dim: int, nodes: Sequence[Any] | None = None
) -> pa.Table:
    """The searchable rows of a graph (or of ``nodes`` of it): nodes that have a vector (all
    but empty ones)."""
    rows, vectors = [], []
    for node in bundle.graph.nodes if nodes is None else nodes:
        vector = bundle.vectors.get(node.id)
        if vector is None:
            continue
        rows.append(
            {
                "id": node.id,
                "doc_id": doc_id,
                "kind": str(node.kind),
                "page": node.page,
                "last_page": node.last_page,
                "parent": node.parent,
                "text": bundle.texts.get(node.id, ""),
            }
        )
        vectors.append(np.asarray(vector, dtype=np.float32))
    stacked = np.stack(vectors) if vectors else np.zeros((0, dim), dtype=np.float32)
    return _with_vectors(rows, stacked, nodes_schema(dim))
