#!/usr/bin/env python3
"""What an ingest's per-file lookups cost as the documents table grows (issue 17).

    python benchmarks/document_lookup.py [--docs 1000 10000 100000] [--md ...] [--json ...]

An ingest asks the store about every file: before parsing, whether its bytes are stored already
(``has_document``), and after storing it, which versions of its source are stored
(``documents_by_source``). Each store write makes a new version of the documents table, so
whatever the store derived from the previous version is stale at the next file.

``has_document`` must hide a version replaced by a newer one of the same file (a replacement
cut short). It used to work that out from every committed row (``committed_ids``, a scan of
the whole table, cached per table version, so paid once or twice a file); it now asks the
versions of the one source. For each size, a fresh collection gets that many documents rows
(written straight to the table in batches, then compacted, as an ingest's final optimize
leaves it), and each measurement is taken after one more row was written (the state every
file of an ingest finds), as the median of ``--repeat`` rounds:

* ``has_document``: the lookup as it is now;
* ``full scan``: ``committed_ids`` after a write, what each lookup paid before on top;
* ``documents_by_source``: the versions of one source.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(HERE))

from _machine import load_average, run_record, write_json  # noqa: E402

BATCH = 20_000


def _row(i: int, when: datetime) -> dict[str, Any]:
    return {
        "id": f"{i:032x}",
        "name": f"file-{i}.pdf",
        "source": f"/data/reports/file-{i}.pdf",
        "media_type": "application/pdf",
        "sha256": f"{i:064x}",
        "size_bytes": 100_000,
        "title": f"Report {i}",
        "pages": 20,
        "elements": 400,
        "chunks": 60,
        "nodes": 90,
        "parser": "pdf/10",
        "chunker": "element/3",
        "status": "done",
        "ingested_at": when,
        "schema_version": 1,
        # A document's JSON without its elements: a few kilobytes in real collections.
        "doc_json": "{" + " " * 3_000 + "}",
    }


def one_size(docs: int, repeat: int) -> dict[str, Any]:
    import pyarrow as pa

    from docsight.index import schema as S
    from docsight.index.lance import LanceStore

    with tempfile.TemporaryDirectory() as tmp:
        store = LanceStore(Path(tmp) / "collection")
        store.bind_encoder("bench", 8)
        when = datetime.now(UTC)
        for start in range(0, docs, BATCH):
            rows = [_row(i, when) for i in range(start, min(docs, start + BATCH))]
            store._append("documents", pa.Table.from_pylist(rows, schema=S.DOCUMENTS), S.DOCUMENTS)
        store.optimize()
        times: dict[str, list[float]] = {"has_document": [], "full_scan": [], "by_source": []}
        extra = docs
        for _ in range(repeat):
            for name in times:
                # One more stored file: a new table version, as every file of an ingest finds.
                row = _row(extra, datetime.now(UTC))
                extra += 1
                store._append("documents", [row], S.DOCUMENTS)
                started = time.perf_counter()
                if name == "has_document":
                    found = store.has_document(f"{docs // 2:032x}")
                    assert found is not None
                elif name == "full_scan":
                    assert f"{docs // 2:032x}" in store.committed_ids()
                else:
                    source = f"/data/reports/file-{docs // 2}.pdf"
                    assert len(store.documents_by_source(source)) == 1
                times[name].append(time.perf_counter() - started)
    return {"docs": docs} | {
        f"{name}_ms": round(1000 * statistics.median(values), 2) for name, values in times.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--md", type=Path, default=HERE / "results" / "document_lookup.md")
    parser.add_argument("--json", type=Path, default=HERE / "results" / "document_lookup.json")
    args = parser.parse_args()
    load_before = load_average()
    runs = []
    for docs in args.docs:
        run = one_size(docs, args.repeat)
        runs.append(run)
        print(json.dumps(run), flush=True)
    command = (
        "python benchmarks/document_lookup.py --docs "
        + " ".join(map(str, args.docs))
        + f" --repeat {args.repeat}"
    )
    result = run_record(command, load_before, onnxruntime=False) | {"runs": runs}
    write_json(args.json, result)
    lines = [
        "# Per-file lookups against the size of the documents table (issue 17)",
        "",
        f"    {result['command']}",
        "",
        f"{result['date']}; {result['machine'].get('cpu', '')}; load before {load_before}, "
        f"after {result['load_after']}. Milliseconds, median of {args.repeat} rounds, each "
        "after one more row was written.",
        "",
        "| documents | has_document | full scan (before: on top of each lookup) "
        "| documents_by_source |",
        "| ---: | ---: | ---: | ---: |",
    ]
    for run in runs:
        lines.append(
            f"| {run['docs']:,} | {run['has_document_ms']} | {run['full_scan_ms']} | "
            f"{run['by_source_ms']} |"
        )
    args.md.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
