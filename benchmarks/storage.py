#!/usr/bin/env python3
"""How large a collection is next to its documents, per table, and what page images cost.

    python benchmarks/storage.py [--docs DIR] [--limit N] [--include-scans]
                                 [--compare OLD_COLLECTION] [--out benchmarks/results/storage.md]
    python benchmarks/storage.py --only legibility    # measure that part again, keep the rest

Ingests the PDFs of a folder (default: the MMLongBench-Doc dev documents in ../shared/data) into
a fresh collection with the default settings and reports:

* bytes per page of every table, of the kept source files, of the model cache and of the rest,
  and the collection's size over its source files' (born-digital PDFs; scans separately with
  ``--include-scans``, since OCR adds a model cache and their sources are images);
* what the same documents took in the store layout before issue 13 (every page render and crop
  as a PNG in the ``assets`` table), computed from the very images the collection serves, and,
  with ``--compare``, measured on an older collection of the same documents;
* table versions left after the ingest, and what ``rm`` frees and how long it takes;
* the time to serve a page image (made from the kept PDF: first request, then cached);
* the alternative of storing compressed renders: bytes per page of WebP and JPEG at several
  qualities, and how legible small print stays, as the character error rate of OCR
  (:mod:`docsight.vision.ocr`) on lines set at 8 pt or less, against the PDF's own text.
"""

from __future__ import annotations

import argparse
import io
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = ROOT.parent / "shared" / "data"
DEFAULT_DOCS = DATA / "mmlongbench-dev" / "documents"
#: Lines at or below this size (points) count as small print.
SMALL_PT = 8.0
FORMATS: list[tuple[str, str, dict[str, Any]]] = [
    ("PNG (stored before; served now)", "PNG", {"compress_level": 1}),
    ("WebP q90", "WEBP", {"quality": 90, "method": 4}),
    ("WebP q75", "WEBP", {"quality": 75, "method": 4}),
    ("WebP q50", "WEBP", {"quality": 50, "method": 4}),
    ("JPEG q90", "JPEG", {"quality": 90}),
    ("JPEG q75", "JPEG", {"quality": 75}),
]


def born_digital(path: Path, min_chars: int = 20, share: float = 0.9) -> bool:
    """Whether most pages have a text layer (the rest are scans that need OCR)."""
    import pypdfium2 as pdfium

    doc = pdfium.PdfDocument(str(path))
    try:
        with_text = sum(
            1 for page in doc if len(page.get_textpage().get_text_range().strip()) >= min_chars
        )
        return with_text >= share * len(doc)
    finally:
        doc.close()


def ingest(files: list[Path], collection: Path) -> tuple[Any, float, Any]:
    from docsight import DocSight

    folder = collection.parent / f"{collection.name}-docs"
    folder.mkdir(parents=True)
    for f in files:
        (folder / f.name).symlink_to(f)
    ds = DocSight(collection)
    started = time.perf_counter()
    report = ds.ingest([folder])
    return ds, time.perf_counter() - started, report


def measure(ds: Any, files: list[Path]) -> dict[str, Any]:
    from docsight.index.sources import disk_sizes

    sizes = disk_sizes(ds.path)
    docs = ds.documents()
    pages = sum(d.pages for d in docs)
    source = sum(f.stat().st_size for f in files)
    versions = {
        t.name.removesuffix(".lance"): len(list((t / "_versions").glob("*.manifest")))
        for t in sorted((ds.path / "tables").glob("*.lance"))
    }
    total = sum(sizes.values())
    return {
        "documents": len(docs),
        "pages": pages,
        "source_bytes": source,
        "sizes": sizes,
        "total_bytes": total,
        "ratio": total / source,
        "ratio_without_cache": (total - sizes.get("cache", 0)) / source,
        "versions": versions,
    }


def png_layout(ds: Any) -> dict[str, int]:
    """Bytes the page renders and crops took as PNGs in the ``assets`` table before."""
    table = ds.store._table("assets")
    ids = table.search().select(["id", "kind"]).limit(None).to_arrow().to_pylist()
    out = {"page": 0, "crop": 0, "count": len(ids)}
    for row in ids:
        asset = ds.store.get_asset(row["id"])
        out[row["kind"]] += len(asset.data) if asset is not None else 0
    return out


def time_page_images(collection: Path, sample: list[tuple[str, int]]) -> dict[str, float]:
    """Seconds to make a page image from the kept PDF (``get_asset``: the row, the file, the
    render, the PNG), first and cached, and for a whole ``page_image`` call (which also reads
    the document's map to find the page)."""
    from docsight import DocSight

    ds = DocSight(collection)
    by_name = {d.name: d.id for d in ds.documents()}
    first, again, calls = [], [], []
    for name, page in sample:
        image_id = ds.store.get_document(by_name[name]).pages[page].image_id
        started = time.perf_counter()
        ds.store.get_asset(image_id)
        first.append(time.perf_counter() - started)
        started = time.perf_counter()
        ds.store.get_asset(image_id)
        again.append(time.perf_counter() - started)
        started = time.perf_counter()
        ds.page_image(name, page)
        calls.append(time.perf_counter() - started)
    process_first = first[0]
    first.sort()
    return {
        "pages": len(sample),
        "first_median_ms": 1000 * statistics.median(first),
        "first_p95_ms": 1000 * first[int(0.95 * (len(first) - 1))],
        "process_first_ms": 1000 * process_first,
        "cached_median_ms": 1000 * statistics.median(again),
        "page_image_cached_median_ms": 1000 * statistics.median(calls),
    }


def measure_rm(ds: Any) -> dict[str, Any]:
    from docsight.index.sources import disk_sizes

    docs = sorted(ds.documents(), key=lambda d: -d.size_bytes)
    victim = docs[len(docs) // 2]
    before = sum(disk_sizes(ds.path).values())
    started = time.perf_counter()
    ds.remove(victim.id)
    seconds = time.perf_counter() - started
    after = sum(disk_sizes(ds.path).values())
    return {
        "name": victim.name,
        "pages": victim.pages,
        "source_bytes": victim.size_bytes,
        "freed_bytes": before - after,
        "seconds": seconds,
    }


# --- legibility of compressed renders ----------------------------------------------------------


def _normal(text: str) -> str:
    return " ".join(text.lower().split())


def cer(reference: str, hypothesis: str) -> float:
    """Character error rate: edit distance over the reference's length."""
    a, b = _normal(reference), _normal(hypothesis)
    if not a:
        return 0.0
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i]
        for j, cb in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1] / len(a)


def small_print(path: Path, page: int) -> list[tuple[str, tuple[float, float, float, float]]]:
    """Lines of the text layer set at ``SMALL_PT`` or less: (text, box in points)."""
    import pdfplumber
    import pypdfium2 as pdfium

    with pdfplumber.open(path) as pdf:
        words = pdf.pages[page].extract_words(extra_attrs=["size"], keep_blank_chars=False)
    # Renders show the crop box; pdfplumber measures from the top left of the media box.
    doc = pdfium.PdfDocument(str(path))
    try:
        crop, media = doc[page].get_cropbox(), doc[page].get_mediabox()
        if doc[page].get_rotation():
            return []  # a rotated page's text boxes would need turning too: not worth it here
    finally:
        doc.close()
    ox, oy = crop[0] - media[0], media[3] - crop[3]
    lines: dict[int, list[dict[str, Any]]] = {}
    for w in words:
        if w["size"] <= SMALL_PT and w["text"].strip():
            lines.setdefault(round(w["top"]), []).append(w)
    out = []
    for ws in lines.values():
        ws.sort(key=lambda w: w["x0"])
        text = " ".join(w["text"] for w in ws)
        if sum(c.isalnum() for c in text) >= 12:
            box = (
                min(w["x0"] for w in ws) - ox,
                min(w["top"] for w in ws) - oy,
                max(w["x1"] for w in ws) - ox,
                max(w["bottom"] for w in ws) - oy,
            )
            out.append((text, box))
    return out


def legibility(files: list[Path], pages: int, seed: int = 13) -> dict[str, Any]:
    """Bytes per page and small-print OCR error of each stored form of a page render."""
    import pypdfium2 as pdfium
    from PIL import Image

    from docsight.vision.ocr import OcrEngine

    engine = OcrEngine()
    rng = random.Random(seed)
    candidates: list[tuple[Path, int]] = []
    for path in files:
        doc = pdfium.PdfDocument(str(path))
        candidates += [(path, i) for i in range(len(doc))]
        doc.close()
    rng.shuffle(candidates)
    results: dict[str, dict[str, list[float]]] = {
        name: {"bytes": [], "cer": []} for name, _, _ in FORMATS
    }
    results["render at 150 dpi (on demand)"] = {"bytes": [], "cer": []}
    used_pages = lines_read = 0
    for path, index in candidates:
        if used_pages >= pages:
            break
        lines = small_print(path, index)[:8]
        if not lines:
            continue
        used_pages += 1
        doc = pdfium.PdfDocument(str(path))
        try:
            renders = {
                96: doc[index].render(scale=96 / 72).to_pil().convert("RGB"),
                150: doc[index].render(scale=150 / 72).to_pil().convert("RGB"),
            }
        finally:
            doc.close()
        variants: list[tuple[str, Any, int, float]] = []
        for name, fmt, options in FORMATS:
            buffer = io.BytesIO()
            renders[96].save(buffer, format=fmt, **options)
            decoded = Image.open(io.BytesIO(buffer.getvalue())).convert("RGB")
            variants.append((name, decoded, buffer.tell(), 96 / 72))
        buffer = io.BytesIO()
        renders[150].save(buffer, format="PNG", compress_level=1)
        variants.append(("render at 150 dpi (on demand)", renders[150], buffer.tell(), 150 / 72))
        for name, image, size, scale in variants:
            results[name]["bytes"].append(size)
            for text, (x0, top, x1, bottom) in lines:
                pad = 3 * scale
                crop = image.crop(
                    (
                        max(0, int(x0 * scale - pad)),
                        max(0, int(top * scale - pad)),
                        int(x1 * scale + pad),
                        int(bottom * scale + pad),
                    )
                )
                read = " ".join(line.text for line in engine.recognize(crop))
                results[name]["cer"].append(cer(text, read))
        lines_read += len(lines)
    return {
        "pages": used_pages,
        "lines": lines_read,
        "formats": {
            name: {
                "kb_per_page": statistics.mean(r["bytes"]) / 1024 if r["bytes"] else 0.0,
                "cer": statistics.mean(r["cer"]) if r["cer"] else 0.0,
            }
            for name, r in results.items()
        },
    }


# --- the report --------------------------------------------------------------------------------


def _kb(n: float) -> str:
    return f"{n / 1024:,.1f}"


def _mb(n: float) -> str:
    return f"{n / 2**20:,.1f}"


def report(result: dict[str, Any]) -> str:
    m = result["born_digital"]
    pages = m["pages"]
    lines = [
        "# Collection size and page images (`benchmarks/storage.py`)",
        "",
        f"Run {result['date']} on {result['machine']}; {m['documents']} born-digital PDFs "
        f"({m['pages']} pages, {_mb(m['source_bytes'])} MiB) from `{result['docs']}`, "
        f"ingested in {result['ingest_seconds']:.0f} s with the default settings.",
        "",
        "## Bytes per page",
        "",
        "| part | MiB | KiB per page |",
        "| --- | ---: | ---: |",
    ]
    for part, size in sorted(m["sizes"].items(), key=lambda kv: -kv[1]):
        lines.append(f"| {part} | {_mb(size)} | {_kb(size / pages)} |")
    lines += [
        f"| **collection** | **{_mb(m['total_bytes'])}** | **{_kb(m['total_bytes'] / pages)}** |",
        f"| source PDFs | {_mb(m['source_bytes'])} | {_kb(m['source_bytes'] / pages)} |",
        "",
        f"The collection is **{m['ratio']:.2f}×** its source files "
        f"({m['ratio_without_cache']:.2f}× without the model cache). Table versions after the "
        f"ingest: {', '.join(f'{k} {v}' for k, v in m['versions'].items())}.",
        "",
    ]
    old = result["png_layout"]
    old_assets = old["page"] + old["crop"]
    old_total = m["total_bytes"] - m["sizes"].get("sources", 0) + old_assets
    lines += [
        "## Before: page renders and crops stored as PNGs",
        "",
        f"The {old['count']} page renders and crops these documents have, as the PNGs the "
        f"store kept before, weigh {_mb(old_assets)} MiB ({_kb(old['page'] / pages)} KiB of "
        f"page render and {_kb(old['crop'] / pages)} KiB of crops per page). With them in "
        f"place of the kept PDFs the collection would be {_mb(old_total)} MiB, "
        f"**{old_total / m['source_bytes']:.1f}×** its sources (and more before every table "
        "kept only its newest version).",
    ]
    if result.get("compare"):
        c = result["compare"]
        lines += [
            "",
            f"Measured: the collection at `{c['path']}` (store schema v{c['schema']}, "
            f"{c['documents']} documents, {c['pages']} pages, {_mb(c['source_bytes'])} MiB of "
            f"sources) takes {_mb(c['total_bytes'])} MiB, {c['ratio']:.1f}× its sources; "
            f"its `assets` table alone {_mb(c['sizes'].get('tables/assets', 0))} MiB.",
        ]
    if result.get("scans"):
        s = result["scans"]
        lines += [
            "",
            "## Scanned PDFs (OCR)",
            "",
            f"{s['documents']} scanned PDFs ({s['pages']} pages, {_mb(s['source_bytes'])} MiB): "
            f"collection {_mb(s['total_bytes'])} MiB, {s['ratio']:.2f}× (model cache "
            f"{_mb(s['sizes'].get('cache', 0))} MiB; "
            f"{s['ratio_without_cache']:.2f}× without it).",
        ]
    rm = result["rm"]
    t = result["page_images"]
    lines += [
        "",
        "## rm and page images",
        "",
        f"`rm` of {rm['name']} ({rm['pages']} pages, {_mb(rm['source_bytes'])} MiB) took "
        f"{rm['seconds']:.1f} s and freed {_mb(rm['freed_bytes'])} MiB at once (its kept PDF, "
        "its rows, the old table versions).",
        "",
        f"A page image made from the kept PDF ({t['pages']} pages at random): "
        f"{t['first_median_ms']:.0f} ms at the median, {t['first_p95_ms']:.0f} ms at p95 (the "
        f"first in a process {t['process_first_ms']:.0f} ms), {t['cached_median_ms']:.2f} ms "
        f"once cached; a whole `DocSight.page_image` call, which also reads the document's "
        f"map, {t['page_image_cached_median_ms']:.0f} ms with the image cached. The pixels are "
        "those ingestion saw (the tests compare them).",
    ]
    g = result["legibility"]
    lines += [
        "",
        "## Storing compressed renders instead",
        "",
        f"96 dpi renders of {g['pages']} pages with small print, and OCR of their "
        f"{g['lines']} lines set at {SMALL_PT:g} pt or less, against the PDF's own text "
        "(character error rate; lower is better):",
        "",
        "| page image | KiB per page | small-print CER |",
        "| --- | ---: | ---: |",
    ]
    for name, f in g["formats"].items():
        lines.append(f"| {name} | {f['kb_per_page']:.0f} | {f['cer']:.3f} |")
    smallest = min(g["formats"].items(), key=lambda kv: kv[1]["kb_per_page"])
    png = next(iter(g["formats"].values()))
    source_kb = m["source_bytes"] / pages / 1024
    lines += [
        "",
        f"The smallest stored form, {smallest[0]}, takes {smallest[1]['kb_per_page']:.0f} KiB "
        f"a page (small-print CER {smallest[1]['cer']:.3f}, against {png['cer']:.3f} for the "
        f"PNG), while these PDFs take {source_kb:.0f} KiB a page whole. Kept renders, even "
        "compressed, would cost more than the sources and still fix the resolution; the "
        "collection keeps the PDF and renders from it, pixel for pixel, at any resolution.",
        "",
    ]
    return "\n".join(lines)


def compare(path: Path, docs: Path) -> dict[str, Any]:
    import lancedb

    from docsight.index.sources import disk_sizes

    manifest = json.loads((path / "collection.json").read_text())
    db = lancedb.connect(path / "tables")
    rows = db.open_table("documents").to_arrow().select(["name", "pages", "size_bytes"])
    data = rows.to_pylist()
    sizes = disk_sizes(path)
    total = sum(sizes.values())
    source = sum(r["size_bytes"] for r in data)
    return {
        "path": str(path),
        "schema": manifest.get("schema_version"),
        "documents": len(data),
        "pages": sum(r["pages"] for r in data),
        "source_bytes": source,
        "sizes": sizes,
        "total_bytes": total,
        "ratio": total / source if source else 0.0,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=Path, default=DEFAULT_DOCS)
    parser.add_argument("--limit", type=int, default=0, help="only the first N born-digital PDFs")
    parser.add_argument("--include-scans", action="store_true")
    parser.add_argument("--compare", type=Path, help="an older collection of the same documents")
    parser.add_argument("--legibility-pages", type=int, default=24)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "storage.md")
    parser.add_argument(
        "--only",
        choices=["legibility"],
        help="measure only this part again; the rest comes from the JSON of the last run",
    )
    args = parser.parse_args()
    files = sorted(args.docs.glob("*.pdf"))
    if not files:
        print(f"no PDFs in {args.docs} (is ../shared/data present?)", file=sys.stderr)
        return 1
    digital = [f for f in files if born_digital(f)]
    scans = [f for f in files if f not in digital]
    if args.limit:
        digital = digital[: args.limit]
    if args.only:
        previous = json.loads(args.out.with_suffix(".json").read_text())
        digital = [f for f in digital if f.name in previous["files"]]
        previous["legibility"] = legibility(digital, args.legibility_pages)
        args.out.write_text(report(previous))
        args.out.with_suffix(".json").write_text(json.dumps(previous, indent=2, default=str))
        print(report(previous))
        return 0
    import platform

    result: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()}, {__import__('os').cpu_count()} cores",
        "docs": str(args.docs),
        "files": [f.name for f in digital],
    }
    work = Path(tempfile.mkdtemp(prefix="docsight-storage-"))
    try:
        ds, seconds, ingest_report = ingest(digital, work / "digital")
        print(f"ingested {len(digital)} PDFs in {seconds:.0f} s", file=sys.stderr)
        result["ingest_seconds"] = seconds
        result["failed"] = [f.name for f in ingest_report.failed]
        result["born_digital"] = measure(ds, digital)
        result["png_layout"] = png_layout(ds)
        rng = random.Random(7)
        sample = [(d.name, rng.randrange(d.pages)) for d in ds.documents() for _ in range(2)]
        result["page_images"] = time_page_images(ds.path, sample)
        result["legibility"] = legibility(digital, args.legibility_pages)
        result["rm"] = measure_rm(ds)
        if args.include_scans and scans:
            ds_scans, _, _ = ingest(scans, work / "scans")
            result["scans"] = measure(ds_scans, scans)
        if args.compare:
            result["compare"] = compare(args.compare, args.docs)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report(result))
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=2, default=str))
    print(report(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
