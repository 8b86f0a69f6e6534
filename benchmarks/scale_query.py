#!/usr/bin/env python3
"""Query latency of a large collection, and what the vector index costs in recall (issue 19).

    python benchmarks/scale_query.py [--sizes 100000,1000000] [--s3-size 100000]
                                     [--base COLLECTION] [--queries 200]
                                     [--out benchmarks/results/scale_query.md]

No machine here can embed a million chunks in a session (MiniLM does about 25 chunks/s on two
cores), so the large collections are made from a real one: the chunks of ``--base`` (default:
the MMLongBench-Doc dev collection that ``docsight eval`` builds) with their texts and MiniLM
vectors, copied as many times as needed, each copy's vector moved by a little Gaussian noise and
normalised again (so copies are near, not equal, and an index has to tell them apart). They are
written through the store's own ``put_document`` in documents of ``--chunks-per-doc`` chunks,
then ``optimize`` builds the BM25 index and, past ``vector_index_min_rows``, the IVF-PQ index,
as an ingest does. The questions are MMLongBench-Doc's, embedded once with the same encoder.

Measured per size, through the store's query methods (what ``search`` calls per channel):

* dense search (``vector_search``, 50 hits), BM25 (``text_search``, 50 hits) and the two
  together with reciprocal-rank fusion, as p50/p95 latency over the questions (first query of
  each kind not counted: it opens the table and loads the index);
* recall@10 of the indexed dense search against exact search (numpy over every vector);
* time and peak memory of writing the rows and of building the indexes, and bytes on disk.

With ``--s3-size``, the same for a collection of that size on a loopback S3 endpoint (moto in
server mode on 127.0.0.1, needs the dev extra). Give the endpoint of a moto server running as
a process of its own with ``--s3-endpoint`` (``moto_server -H 127.0.0.1 -p 5123`` and
``--s3-endpoint http://127.0.0.1:5123``): a server in this process's threads competes with the
benchmark for its interpreter, and an earlier run that way had not finished after an hour.
``--s3-build local`` writes and indexes the collection on a local disk and uploads its files,
then measures the queries against the uploaded copy: writing 5,000-chunk documents through the
store to moto stalled (lancedb busy for minutes with no request made, after the first
document), and the queries, not the writes, are what this measures on S3.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests"))

from _machine import load_average, machine  # noqa: E402

from fixtures.stored import paragraph_document  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "mmlongbench-dev"
DEFAULT_BASE = ROOT / ".docsight-eval"
NOISE = 0.01  # per dimension: a copy's vector moves by about 0.2 (unit vectors)
HITS = 50


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def base_material(collection: Path) -> tuple[list[str], np.ndarray, str, int]:
    """Texts and vectors of every chunk of a real collection, and its encoder."""
    import lancedb

    from docsight import DocSight

    ds = DocSight(collection)
    fingerprint = ds.store.encoder_fingerprint()
    dim = ds.store.vector_dim()
    table = lancedb.connect(str(collection / "tables")).open_table("chunks")
    rows = table.to_arrow().select(["text", "vector"])
    texts = rows.column("text").to_pylist()
    vectors = np.asarray(rows.column("vector").to_pylist(), dtype=np.float32)
    return texts, vectors, fingerprint or "unknown", int(dim or vectors.shape[1])


def build(
    where: str,
    size: int,
    texts: list[str],
    vectors: np.ndarray,
    fingerprint: str,
    per_doc: int,
    on_progress: Callable[[str], None],
) -> tuple[Any, np.ndarray, dict[str, float]]:
    """A collection of ``size`` chunks at ``where``; returns the store, every vector in row
    order (for exact search) and the build figures."""
    from docsight.index import STORES

    store = STORES.create("lance", where, vector_index_min_rows=50_000)
    store.bind_encoder(fingerprint, vectors.shape[1])
    rng = np.random.default_rng(0)
    written: list[np.ndarray] = []
    started = time.perf_counter()
    for d, start in enumerate(range(0, size, per_doc)):
        n = min(per_doc, size - start)
        pick = np.arange(start, start + n) % len(texts)
        moved = vectors[pick] + rng.normal(scale=NOISE, size=(n, vectors.shape[1]))
        moved = (moved / np.linalg.norm(moved, axis=1, keepdims=True)).astype(np.float32)
        doc_id = f"{d:032x}"
        parsed, chunks = paragraph_document(
            doc_id,
            f"synthetic-{d:05d}.txt",
            [texts[i] for i in pick],
            per_page=10,
            title="Synthetic",
            parser="synthetic/1",
        )
        store.put_document(parsed, chunks, moved, "synthetic/1")
        written.append(moved)
        if d % 20 == 0:
            on_progress(f"  {start + n:,} of {size:,} chunks written")
    write_s = time.perf_counter() - started
    started = time.perf_counter()
    store.optimize()
    index_s = time.perf_counter() - started
    figures = {"write_s": round(write_s, 1), "index_s": round(index_s, 1)}
    return store, np.concatenate(written), figures


def _percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50_ms": round(1000 * ordered[len(ordered) // 2], 1),
        "p95_ms": round(1000 * ordered[int(0.95 * (len(ordered) - 1))], 1),
    }


def measure(
    store: Any,
    every: np.ndarray,
    questions: list[str],
    query_vectors: np.ndarray,
    sweep: bool = True,
) -> dict[str, Any]:
    """Latency of each channel and of both fused, and the index's recall@10 against exact."""
    ids_in_order = _row_ids(store)
    dense_t: list[float] = []
    text_t: list[float] = []
    hybrid_t: list[float] = []
    recalls: list[float] = []
    # The first query of each kind opens the table and loads its index: not a query's cost.
    store.vector_search(query_vectors[0], HITS)
    store.text_search(questions[0], HITS)
    for question, vector in zip(questions, query_vectors, strict=True):
        t = time.perf_counter()
        dense = store.vector_search(vector, HITS)
        dense_t.append(time.perf_counter() - t)
        t = time.perf_counter()
        store.text_search(question, HITS)
        text_t.append(time.perf_counter() - t)
        t = time.perf_counter()
        both = (store.vector_search(vector, HITS), store.text_search(question, HITS))
        fused: dict[str, float] = {}
        for hits in both:
            for rank, hit in enumerate(hits):
                fused[hit.chunk_id] = fused.get(hit.chunk_id, 0.0) + 1.0 / (60 + rank)
        sorted(fused, key=fused.__getitem__, reverse=True)[:10]  # the fused top ten
        hybrid_t.append(time.perf_counter() - t)
        exact = np.argsort(-(every @ vector))[:10]
        truth = {ids_in_order[i] for i in exact}
        recalls.append(len(truth & {h.chunk_id for h in dense[:10]}) / 10)
    swept = (
        _nprobes_sweep(store, every, ids_in_order, query_vectors)
        if sweep and _indices_ivf(store)
        else []
    )
    return {
        "nprobes_sweep": swept,
        "dense": _percentiles(dense_t),
        "bm25": _percentiles(text_t),
        "hybrid": _percentiles(hybrid_t),
        "recall_at_10": round(statistics.fmean(recalls), 4),
        "indexes": [f"{i.index_type} on {','.join(i.columns)}" for i in _indices(store)],
    }


NPROBES = (20, 50, 100, 200, 400)


def _nprobes_sweep(
    store: Any, every: np.ndarray, ids_in_order: list[str], query_vectors: np.ndarray
) -> list[dict[str, Any]]:
    """Dense latency and recall@10 for other numbers of IVF partitions probed (the store
    probes 20, with a refine of 5): what a larger collection needs."""
    table = store._table("chunks")
    out = []
    for nprobes in NPROBES:
        times, recalls = [], []
        for vector in query_vectors:
            t = time.perf_counter()
            rows = (
                table.search(vector, vector_column_name="vector")
                .distance_type("cosine")
                .nprobes(nprobes)
                .refine_factor(5)
                .select(["id"])
                .limit(HITS)  # as the store asks: the refine re-ranks HITS x 5 candidates
                .to_arrow()
            )
            times.append(time.perf_counter() - t)
            truth = {ids_in_order[i] for i in np.argsort(-(every @ vector))[:10]}
            recalls.append(len(truth & set(rows.column("id").to_pylist()[:10])) / 10)
        out.append(
            {"nprobes": nprobes, **_percentiles(times), "recall_at_10": statistics.fmean(recalls)}
        )
    return out


def _indices_ivf(store: Any) -> bool:
    return any(i.index_type.upper().startswith("IVF") for i in _indices(store))


def _row_ids(store: Any) -> list[str]:
    """Chunk ids in the order their vectors were written (ids sort as documents and orders)."""
    table = store._table("chunks")
    return sorted(table.to_arrow().column("id").to_pylist())


def _indices(store: Any) -> list[Any]:
    return list(store._table("chunks").list_indices())


def _questions(limit: int) -> list[str]:
    samples = json.loads((DATA / "samples.json").read_text())
    seen = list(dict.fromkeys(" ".join(s["question"].split()) for s in samples))
    return seen[:limit]


def _dir_mib(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


def _s3_endpoint(url: str | None = None) -> tuple[Any, str]:
    """The loopback endpoint: ``url`` (a server of its own), or a moto server started in this
    process's threads."""
    import logging

    import boto3

    server = None
    if url is None:
        from moto.server import ThreadedMotoServer

        logging.getLogger("werkzeug").setLevel(logging.CRITICAL)
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        host, port = server.get_host_and_port()
        url = f"http://{host}:{port}"
    os.environ.update(
        AWS_ENDPOINT_URL=url,
        AWS_ACCESS_KEY_ID="bench",
        AWS_SECRET_ACCESS_KEY="bench",
        AWS_REGION="us-east-1",
        AWS_ALLOW_HTTP="true",
    )
    boto3.client("s3", endpoint_url=url, region_name="us-east-1").create_bucket(Bucket="bench")
    return server, url


def _upload(folder: Path, bucket: str, prefix: str, url: str) -> None:
    """Every file of a local collection to ``s3://bucket/prefix`` (Lance's paths are relative)."""
    import boto3

    client = boto3.client("s3", endpoint_url=url, region_name="us-east-1")
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            client.upload_file(str(path), bucket, f"{prefix}/{path.relative_to(folder)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--s3-size", type=int, default=100_000, help="0: no S3 run")
    parser.add_argument(
        "--s3-build",
        choices=("remote", "local"),
        default="remote",
        help="write the S3 collection through the store (remote), or on a local disk and "
        "upload its files (local)",
    )
    parser.add_argument(
        "--s3-endpoint",
        help="a running loopback S3 server (moto_server -H 127.0.0.1 -p PORT) to use instead of "
        "one in this process",
    )
    parser.add_argument("--base", type=Path, help="a collection to take chunks and vectors from")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--s3-queries",
        type=int,
        help="questions for the S3 run (default: --queries); a dense query against moto takes "
        "seconds, not milliseconds",
    )
    parser.add_argument(
        "--no-sweep", action="store_true", help="skip the nprobes sweep (a pass per NPROBES value)"
    )
    parser.add_argument("--chunks-per-doc", type=int, default=5_000)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "scale_query.md")
    parser.add_argument(
        "--merge",
        action="store_true",
        help="keep the runs of the existing results that this run does not measure again",
    )
    args = parser.parse_args()

    base = args.base or next(DEFAULT_BASE.glob("documents-*"), None)
    if base is None:
        parser.error("no base collection: run `docsight eval qa` once, or pass --base")
    facts = {**machine(onnxruntime=False), "load_before": load_average()}
    texts, vectors, fingerprint, dim = base_material(base)
    print(f"base: {len(texts):,} chunks of {base.name}, {dim} dimensions", flush=True)

    from docsight import DocSight

    encoder = DocSight(base).encoder()
    questions = _questions(args.queries)
    query_vectors = encoder.encode_queries(questions)
    runs: list[dict[str, Any]] = []
    targets = [("local", int(s)) for s in args.sizes.split(",") if s]
    if args.s3_size:
        targets.append(("s3", args.s3_size))
    server = None
    with tempfile.TemporaryDirectory(prefix="docsight-scale-") as tmp:
        for kind, size in targets:
            print(f"{kind}, {size:,} chunks", flush=True)
            upload = False
            if kind == "s3":
                server, url = _s3_endpoint(args.s3_endpoint)
                where = f"s3://bench/scale-{size}"
                upload = args.s3_build == "local"
            else:
                where = str(Path(tmp) / f"local-{size}")
            before = _peak_mib()
            store, every, figures = build(
                str(Path(tmp) / f"for-s3-{size}") if upload else where,
                size,
                texts,
                vectors,
                fingerprint,
                args.chunks_per_doc,
                print,
            )
            if upload:
                del store
                started = time.perf_counter()
                _upload(Path(tmp) / f"for-s3-{size}", "bench", f"scale-{size}", url)
                figures["upload_s"] = round(time.perf_counter() - started, 1)
                from docsight.index import STORES

                store = STORES.create("lance", where, vector_index_min_rows=50_000)
            figures["peak_rss_mib"] = round(max(_peak_mib(), before), 0)
            if kind == "local":
                figures["disk_mib"] = round(_dir_mib(Path(where)), 1)
            n = args.s3_queries if kind == "s3" and args.s3_queries else len(questions)
            result = measure(
                store, every, questions[:n], query_vectors[:n], sweep=not args.no_sweep
            )
            result["queries"] = n
            run = {"where": kind, "chunks": size, **figures, **result}
            print(json.dumps(run), flush=True)
            runs.append(run)
            del store, every
    if server is not None:
        server.stop()
    facts["load_after"] = load_average()
    previous = args.out.with_suffix(".json")
    if args.merge and previous.exists():
        measured = {(r["where"], r["chunks"]) for r in runs}
        kept = json.loads(previous.read_text())
        for run in kept["runs"]:
            if (run["where"], run["chunks"]) not in measured:
                runs.append({**run, "measured_by": kept["command"], "load": kept["machine"]})
    report = {
        "command": "python benchmarks/scale_query.py " + " ".join(sys.argv[1:]),
        "machine": facts,
        "base": {"collection": base.name, "chunks": len(texts), "dim": dim},
        "queries": len(questions),
        "noise_per_dim": NOISE,
        "runs": runs,
    }
    args.out.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
    args.out.write_text(markdown(report))
    print(f"wrote {args.out}")


def markdown(report: dict[str, Any]) -> str:
    m = report["machine"]
    lines = [
        "# Query latency at scale (`benchmarks/scale_query.py`)",
        "",
        f"`{report['command']}`",
        "",
        f"- machine: {m.get('cpu', '?')}, {m.get('cores', '?')} cores; load before: "
        f"{m.get('load_before', '?')}; load after: {m.get('load_after', '?')}; "
        f"commit {m.get('commit')}",
        f"- rows: copies of the {report['base']['chunks']:,} chunks of "
        f"`{report['base']['collection']}`"
        f" (texts and MiniLM vectors, each copy's vector moved by N(0, {report['noise_per_dim']})"
        " per dimension and normalised), written by `put_document`, indexed by `optimize`",
        f"- {report['queries']} MMLongBench-Doc dev questions; {HITS} hits per channel; "
        "hybrid = both channels and reciprocal-rank fusion",
        "",
        "| where | chunks | write s | index s | disk MiB | peak RSS MiB | dense p50/p95 ms | "
        "BM25 p50/p95 ms | hybrid p50/p95 ms | recall@10 vs exact | indexes |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- | --- | --- | ---: | --- |",
    ]
    for r in report["runs"]:
        lines.append(
            f"| {r['where']} | {r['chunks']:,} | {r['write_s']} | {r['index_s']} | "
            f"{r.get('disk_mib', '–')} | {r['peak_rss_mib']:.0f} | "
            f"{r['dense']['p50_ms']} / {r['dense']['p95_ms']} | "
            f"{r['bm25']['p50_ms']} / {r['bm25']['p95_ms']} | "
            f"{r['hybrid']['p50_ms']} / {r['hybrid']['p95_ms']} | {r['recall_at_10']} | "
            f"{'; '.join(r['indexes'])} |"
        )
    for r in report["runs"]:
        if "upload_s" in r:
            lines.append(
                f"\n{r['where']}, {r['chunks']:,} chunks: written and indexed on a local disk "
                f"(the write and index seconds above), then its files uploaded in "
                f"{r['upload_s']} s; {r.get('queries', report['queries'])} questions ran "
                "against the uploaded copy."
            )
    swept = [r for r in report["runs"] if r.get("nprobes_sweep")]
    if swept:
        lines += [
            "",
            "Dense search with other numbers of IVF partitions probed (refine factor 5, the "
            "store's 50 hits, the first 10 compared):",
            "",
            "| where | chunks | nprobes | p50 ms | p95 ms | recall@10 vs exact |",
            "| --- | ---: | ---: | ---: | ---: | ---: |",
        ]
        for r in swept:
            for p in r["nprobes_sweep"]:
                lines.append(
                    f"| {r['where']} | {r['chunks']:,} | {p['nprobes']} | {p['p50_ms']} | "
                    f"{p['p95_ms']} | {p['recall_at_10']:.3f} |"
                )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
