#!/usr/bin/env python3
"""What the lookup indexes (BTREE on ``id`` and ``doc_id``) save and cost on a large collection.

    python benchmarks/lookup_indexes.py [--docs 2000 10000] [--chunks-per-doc 50] [--repeat 7]
                                        [--md ...] [--json ...]

For each size a fresh collection gets that many documents. One is written through the store's
``put_document`` (a document of ``--chunks-per-doc`` paragraphs, three to a page, with random
16-dimensional vectors); the rest are copies of its rows under new ids, appended table by
table in batches (writing 10,000 documents one by one would take longer than the measurement).
``optimize`` then builds the text and vector indexes as an ingest's final step does, with the
lookup indexes held back. Each operation below is measured ``--repeat`` times without the
lookup indexes, then again after they are built on every table of ``--min-rows`` rows or more
(the median of each, in milliseconds):

* ``clear``: what ``begin_document`` asks of every table for a new file (whether the document
  has rows already), once per file an ingest stores;
* ``has_document`` and ``documents_by_source``: the per-file lookups of an ingest;
* ``document_chunks`` and ``get_document``: one document's chunks, and its elements;
* ``get_chunks`` and ``get_elements``: 50 rows by id from 50 documents, what an answer's
  context and citations read;
* ``scoped BM25``: a keyword search within one document;
* ``page_index``: one document's pages.

Then the cost: the seconds to build the indexes, their bytes on disk, and the final optimize
after one more document is stored, without and with them (with ``--lancedb``, optimized as
without the ``large`` extra).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests"))

from _machine import load_average, run_record, write_json  # noqa: E402

from fixtures.stored import paragraph_document  # noqa: E402

DIM = 16
BATCH_DOCS = 500
WORDS = (
    "revenue margin growth segment outlook capital dividend liquidity guidance risk customer "
    "supply pricing inventory warranty forecast region market share cost efficiency"
).split()


def _texts(n: int, rng: np.random.Generator) -> list[str]:
    return [" ".join(rng.choice(WORDS, size=60)) + f" paragraph {i}." for i in range(n)]


def _vectors(n: int, rng: np.random.Generator) -> np.ndarray:
    v = rng.normal(size=(n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _doc_id(k: int) -> str:
    return f"{k:032x}"


def _copy_rows(table: Any, template: Any, first: int, count: int, name: str) -> Any:
    """``count`` copies of one document's rows, as documents ``first`` .. ``first+count-1``."""
    import pyarrow as pa

    copies = pa.concat_tables([template] * count)
    per = template.num_rows
    docs = [_doc_id(first + i) for i in range(count) for _ in range(per)]
    if "doc_id" in copies.column_names:
        copies = copies.set_column(
            copies.column_names.index("doc_id"), "doc_id", pa.array(docs, pa.string())
        )
    if "id" in copies.column_names:
        old = template.column("id").to_pylist() * count
        if name in ("documents", "graphs"):
            ids = docs
        else:  # unique per copy: the copy's number in front of the template's id
            ids = [f"{d[-8:]}{o[8:]}" for d, o in zip(docs, old, strict=True)]
        copies = copies.set_column(copies.column_names.index("id"), "id", pa.array(ids))
    if name == "documents":
        for column, values in (
            ("source", [f"/data/copy-{d}.txt" for d in docs]),
            ("name", [f"copy-{d}.txt" for d in docs]),
            ("sha256", [(d * 2)[:64] for d in docs]),
        ):
            copies = copies.set_column(copies.column_names.index(column), column, pa.array(values))
    return copies.cast(table.schema)


def build(path: Path, docs: int, per_doc: int) -> tuple[Any, dict[str, Any]]:
    from docsight.graph import make_graph
    from docsight.index.lance import CHILD_TABLES, LanceStore
    from docsight.settings import GraphSettings

    rng = np.random.default_rng(0)
    store = LanceStore(path, vector_index_min_rows=50_000)
    store.bind_encoder("bench", DIM)
    parsed, chunks = paragraph_document(
        _doc_id(0), "template.txt", _texts(per_doc, rng), per_page=3, title="Results"
    )
    vectors = _vectors(per_doc, rng)
    graph = make_graph(parsed.document, chunks, vectors, GraphSettings())
    store.put_document(parsed, chunks, vectors, "bench/1", graph)
    started = time.perf_counter()
    templates = {}
    for name in ("documents", *CHILD_TABLES):
        table = store._table(name)
        if table is not None and table.count_rows():
            templates[name] = table.search().limit(None).to_arrow()
    for first in range(1, docs, BATCH_DOCS):
        count = min(BATCH_DOCS, docs - first)
        # Children first, the documents rows last: as a commit does.
        for name in (*CHILD_TABLES, "documents"):
            if name in templates:
                rows = _copy_rows(store._table(name), templates[name], first, count, name)
                with store._lock:
                    store._append(name, rows, store._table(name).schema)
    write_s = time.perf_counter() - started
    with _lookup_indexes_held_back():  # built later, timed apart
        started = time.perf_counter()
        store.optimize()
        index_s = time.perf_counter() - started
    rows = {n: int(store._table(n).count_rows()) for n in templates}
    return store, {"write_s": round(write_s, 1), "index_s": round(index_s, 1), "rows": rows}


def operations(store: Any, docs: int, per_doc: int) -> dict[str, Callable[[], Any]]:
    mid = _doc_id(docs // 2)
    spread = [_doc_id(k) for k in np.linspace(1, docs - 1, 50).astype(int)]
    template_chunks = store.document_chunks(_doc_id(0))
    suffix = template_chunks[per_doc // 2].id[8:]
    chunk_ids = [f"{d[-8:]}{suffix}" for d in spread]
    element_ids = chunk_ids  # paragraph documents: a chunk's id is its element's
    fresh = iter(range(10**9))

    def clear() -> None:
        with store._lock:
            store._clear(f"{10**12 + next(fresh):032x}")

    return {
        "clear": clear,
        "has_document": lambda: store.has_document(mid),
        "documents_by_source": lambda: store.documents_by_source(f"/data/copy-{mid}.txt"),
        "document_chunks": lambda: store.document_chunks(mid),
        "get_document": lambda: store.get_document(mid),
        "get_chunks": lambda: store.get_chunks(chunk_ids),
        "get_elements": lambda: store.get_elements(element_ids),
        "scoped_bm25": lambda: store.text_search("warranty forecast margin", 50, [mid]),
        "page_index": lambda: store.page_index([mid]),
    }


def _check(results: dict[str, Any], per_doc: int) -> None:
    """The reads must find what they ask for, or the timings mean nothing."""
    assert results["has_document"] is not None
    assert len(results["documents_by_source"]) == 1
    assert len(results["document_chunks"]) == per_doc
    assert len(results["get_chunks"]) == 50 and len(results["get_elements"]) == 50
    assert results["scoped_bm25"] and results["page_index"]


def measure(ops: dict[str, Callable[[], Any]], repeat: int, per_doc: int) -> dict[str, float]:
    results = {name: op() for name, op in ops.items()}  # warm: tables opened, caches filled
    _check(results, per_doc)
    times: dict[str, list[float]] = {name: [] for name in ops}
    for _ in range(repeat):
        for name, op in ops.items():
            started = time.perf_counter()
            op()
            times[name].append(time.perf_counter() - started)
    return {name: round(1000 * statistics.median(v), 2) for name, v in times.items()}


def _index_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.glob("tables/*.lance/_indices/**/*") if f.is_file())


def store_one(store: Any, number: int, per_doc: int) -> None:
    """Store one more document (``number`` makes its id and text), as an ingest would."""
    rng = np.random.default_rng(number)
    parsed, chunks = paragraph_document(
        _doc_id(10**9 + number), f"new-{number}.txt", _texts(per_doc, rng), per_page=3
    )
    store.put_document(parsed, chunks, _vectors(per_doc, rng), "bench/1")


def _final_optimize_s(store: Any, k: int, per_doc: int) -> float:
    store_one(store, k, per_doc)
    started = time.perf_counter()
    store.optimize()
    return time.perf_counter() - started


@contextmanager
def _lookup_indexes_held_back() -> Iterator[None]:
    """Optimizes that build no lookup index, whatever the tables' sizes."""
    from docsight.index import lookup

    held = lookup.MIN_ROWS
    lookup.MIN_ROWS = 1 << 62
    try:
        yield
    finally:
        lookup.MIN_ROWS = held


@contextmanager
def optimized_by(lancedb: bool) -> Iterator[None]:
    """With ``lancedb``, optimize as without the ``large`` extra (lancedb's own optimize)."""
    from docsight.index import compaction

    bounded = compaction.bounded_compaction
    if lancedb:
        compaction.bounded_compaction = lambda: False  # type: ignore[assignment]
    try:
        yield
    finally:
        compaction.bounded_compaction = bounded


def one_size(
    docs: int, per_doc: int, repeat: int, rounds: int, min_rows: int, lancedb: bool = False
) -> dict[str, Any]:
    from docsight.index import lookup

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "collection"
        store, built = build(path, docs, per_doc)
        print(f"  built {docs:,} documents: {built}", file=sys.stderr, flush=True)
        ops = operations(store, docs, per_doc)
        with _lookup_indexes_held_back():
            before = measure(ops, repeat, per_doc)
            with optimized_by(lancedb):
                optimize_before = [_final_optimize_s(store, k, per_doc) for k in range(rounds)]
        bytes_before = _index_bytes(path)
        started = time.perf_counter()
        with store._lock:
            made = lookup.ensure_lookup_indexes(store, min_rows=min_rows)
        build_s = time.perf_counter() - started
        bytes_after = _index_bytes(path)
        after = measure(ops, repeat, per_doc)
        # The later optimizes fold rows into every index built, whatever its table's size.
        with optimized_by(lancedb):
            optimize_after = [_final_optimize_s(store, rounds + k, per_doc) for k in range(rounds)]
    return {
        "docs": docs,
        "chunks_per_doc": per_doc,
        **built,
        "lookup_indexes": made,
        "lookup_build_s": round(build_s, 2),
        "lookup_index_mib": round((bytes_after - bytes_before) / 2**20, 1),
        "without_ms": before,
        "with_ms": after,
        "final_optimize_by": "lancedb" if lancedb else "bounded",
        "final_optimize_without_s": [round(s, 2) for s in optimize_before],
        "final_optimize_with_s": [round(s, 2) for s in optimize_after],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, nargs="+", default=[2_000, 10_000])
    parser.add_argument("--chunks-per-doc", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=3, help="final optimizes per setting")
    parser.add_argument(
        "--lancedb",
        action="store_true",
        help="the final optimizes as without the large extra (lancedb's own optimize)",
    )
    parser.add_argument(
        "--min-rows",
        type=int,
        default=50_000,
        help="tables from this many rows get the indexes (below docsight's own threshold, so "
        "that the smaller sizes show what an index does there too)",
    )
    parser.add_argument("--md", type=Path, default=HERE / "results" / "lookup_indexes.md")
    parser.add_argument("--json", type=Path, default=HERE / "results" / "lookup_indexes.json")
    args = parser.parse_args()
    load_before = load_average()
    runs = []
    for docs in args.docs:
        run = one_size(
            docs, args.chunks_per_doc, args.repeat, args.rounds, args.min_rows, args.lancedb
        )
        runs.append(run)
        print(json.dumps(run), flush=True)
    command = (
        "python benchmarks/lookup_indexes.py --docs "
        + " ".join(map(str, args.docs))
        + f" --chunks-per-doc {args.chunks_per_doc} --repeat {args.repeat} --rounds {args.rounds}"
        + f" --min-rows {args.min_rows}"
        + (" --lancedb" if args.lancedb else "")
    )
    result = run_record(command, load_before, onnxruntime=False) | {"runs": runs}
    write_json(args.json, result)
    lines = [
        "# Lookup indexes on a large collection",
        "",
        f"    {result['command']}",
        "",
        f"{result['date']}; {result['machine'].get('cpu', '')}; load before {load_before}, "
        f"after {result['load_after']}. Milliseconds, median of {args.repeat} rounds.",
        "",
    ]
    for run in runs:
        rows = ", ".join(f"{n} {c:,}" for n, c in run["rows"].items())
        lines += [
            f"## {run['docs']:,} documents ({rows} rows)",
            "",
            "| operation | without | with lookup indexes |",
            "| --- | ---: | ---: |",
        ]
        for name, ms in run["without_ms"].items():
            lines.append(f"| {name} | {ms} | {run['with_ms'][name]} |")
        lines += [
            "",
            f"- built in {run['lookup_build_s']} s, {run['lookup_index_mib']} MiB on disk",
            f"- final optimize ({run['final_optimize_by']}) after one more document, s: "
            f"without {run['final_optimize_without_s']}, with {run['final_optimize_with_s']}",
            "",
        ]
    args.md.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
