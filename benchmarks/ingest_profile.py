#!/usr/bin/env python3
"""Where ingestion spends its time, by stage and by model, against the floor of issue 17.

    python benchmarks/ingest_profile.py [--docs DIR] [--limit N] [--json PATH] [--md PATH]

Ingests the PDFs of ``--docs`` (default: the 23 MMLongBench-Doc dev PDFs in ../shared/data) into
a fresh temporary collection with the default settings, then prints and writes:

* per stage — read, parse (of which page OCR, layout, table structure, model loading), describe
  (of which picture OCR), chunk, graph skeleton, embed, graph, store — the wall and CPU seconds
  summed over the files, each stage's share of the CPU and what it saw (pages, pictures, tables,
  chunks, model calls and megapixels). The figures come from ``FileOutcome.timings``: the
  workers measure parsing (process CPU time, one file per worker at a time), the parent
  embedding and storing.
  Stages overlap in time (two workers parse while the parent embeds), so their walls add up to
  more than the elapsed time; CPU seconds are the stable figure on a shared machine;
* pages/s over the whole batch, and the per-file peak resident memory of the workers and of
  this process while it handled each file;
* the floor, timed in the same run after the ingestion: pdfium text extraction of every page
  (``get_textpage().get_text_range()``) plus MiniLM embedding (the project's encoder) of the chunk
  texts read back from the collection, and the ingestion/floor ratio;
* beside it, the floor with OCR: the same plus RapidOCR alone on the images ingestion read by
  OCR (the pages the parser OCR'd, rendered as it renders them, and the pictures picture OCR
  read), and that ratio too: issue 17's floor has no OCR, while its runs read scans by OCR;
* per file: pages without a text layer (read by OCR), model calls, pictures read by OCR;
* the pictures picture OCR read, by size, and how many gave text;
* the machine, the command line, the date, the load before and after and the CPU time other
  processes took during the run (from /proc/stat), so a shared machine shows.

``--limit N`` takes the first N files (sorted by name) for a quick run. Results go to
``benchmarks/results/ingest_profile.{md,json}`` for a full run; a run with ``--limit`` writes
only where ``--json``/``--md`` say.
"""

from __future__ import annotations

import argparse
import datetime
import io
import itertools
import json
import os
import resource
import shlex
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from _machine import busiest, machine, machine_busy_s, own_cpu_s, uptime  # benchmarks/

from docsight import DocSight, Settings
from docsight.ingest.report import FileOutcome, IngestProgress, IngestReport

HERE = Path(__file__).resolve().parent
DEFAULT_DOCS = HERE.parent.parent / "shared" / "data" / "mmlongbench-dev" / "documents"
RESULTS = HERE / "results"
#: Models that run while parsing (page OCR, layout, table structure), and picture OCR.
PARSE_MODELS = (("ocr", "page OCR"), ("layout", "layout"), ("table", "table structure"))
PICTURE_MODEL = ("picture_ocr", "picture OCR")
#: Picture sizes (megapixels) for the picture OCR histogram.
SIZE_BINS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0)


# --- the machine and what else runs on it ---------------------------------------------------------


class LoadSampler:
    """The 1-minute load average every few seconds while the benchmark runs."""

    def __init__(self, every_s: float = 5.0) -> None:
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(every_s,), daemon=True)

    def _run(self, every_s: float) -> None:
        while not self._stop.is_set():
            self.samples.append(os.getloadavg()[0])
            self._stop.wait(every_s)

    def __enter__(self) -> LoadSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


# --- ingestion ------------------------------------------------------------------------------------


def ingest(files: list[Path], collection: Path) -> dict[str, Any]:
    """Ingest ``files`` into a fresh collection; the report and the batch's clocks."""
    events: list[IngestProgress] = []
    ds = DocSight(collection, settings=Settings())
    parent_cpu, children = time.process_time(), resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    report = ds.ingest(files, progress=events.append)
    wall = time.perf_counter() - started
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    optimize = [e.elapsed for e in events if e.stage == "optimize"]
    return {
        "ds": ds,
        "report": report,
        "wall": wall,
        "parent_cpu": time.process_time() - parent_cpu,
        "worker_cpu": (kids.ru_utime + kids.ru_stime) - (children.ru_utime + children.ru_stime),
        # From the "optimize" event to the end of the batch (the final indexing step).
        "optimize_wall": max(0.0, report.seconds - optimize[0]) if optimize else 0.0,
    }


def embed_wall(timings: dict[str, float]) -> float:
    """A file's embedding seconds: the embedding's own when it ran ahead of the file's turn
    (during the last file's store; the file's ``embed`` clock saw only what was left of it)."""
    return timings.get("embed.ahead", timings.get("embed", 0.0))


def stage_rows(report: IngestReport, run: dict[str, Any]) -> list[dict[str, Any]]:
    """The profile table: one row per stage (``level`` 1 for parts of the stage above)."""
    done = [f for f in report.files if f.status in ("added", "no_text")]
    total: Counter[str] = Counter()
    for f in done:
        total.update(f.timings)

    def wall_cpu(key: str) -> tuple[float, float]:
        return total[key], total[f"{key}.cpu"]

    def model(name: str) -> dict[str, float]:
        k = f"model.{name}"
        return {
            "wall": total[f"{k}.wall"],
            "cpu": total[f"{k}.cpu"],
            "load_wall": total[f"{k}.load"],
            "load_cpu": total[f"{k}.load.cpu"],
            "calls": total[f"{k}.calls"],
            "mpx": total[f"{k}.pixels"] / 1e6,
        }

    pages, chunks = total["count.pages"], total["count.chunks"]
    rows: list[dict[str, Any]] = []

    def row(name: str, wall: float, cpu: float | None, saw: str, level: int = 0) -> None:
        rows.append({"stage": name, "wall": wall, "cpu": cpu, "saw": saw, "level": level})

    row("read (parent: read, hash, sniff)", *wall_cpu("read"), f"{len(report.files)} files")
    row("verify (worker: read, hash, count pages)", *wall_cpu("verify"), f"{pages:.0f} pages")
    row("parse", *wall_cpu("parse"), f"{pages:.0f} pages, {total['count.tables']:.0f} tables")
    in_models = [0.0, 0.0]
    for name, label in PARSE_MODELS:
        m = model(name)
        in_models[0] += m["wall"] + m["load_wall"]
        in_models[1] += m["cpu"] + m["load_cpu"]
        saw = f"{m['calls']:.0f} images, {m['mpx']:.1f} Mpx"
        row(f"{label} model", m["wall"], m["cpu"], saw, level=1)
    loads = [sum(model(n)["load_wall"] for n, _ in PARSE_MODELS)]
    loads.append(sum(model(n)["load_cpu"] for n, _ in PARSE_MODELS))
    row("model loading (page models)", loads[0], loads[1], "once per worker", level=1)
    parse_wall, parse_cpu = wall_cpu("parse")
    row(
        "PDF parsing without models",
        parse_wall - in_models[0],
        parse_cpu - in_models[1],
        "text layer, tables, figures, renders",
        level=1,
    )
    row(
        "describe",
        *wall_cpu("describe"),
        f"{total['count.pictures']:.0f} pictures, {total['count.tables']:.0f} tables",
    )
    pic = model(PICTURE_MODEL[0])
    saw = f"{pic['calls']:.0f} pictures, {pic['mpx']:.1f} Mpx"
    row("picture OCR", pic["wall"], pic["cpu"], saw, level=1)
    row("model loading (picture OCR)", pic["load_wall"], pic["load_cpu"], "", level=1)
    dw, dc = wall_cpu("describe")
    rest_w = dw - pic["wall"] - pic["load_wall"]
    rest_c = dc - pic["cpu"] - pic["load_cpu"]
    row("descriptions", rest_w, rest_c, "classify, describe", level=1)
    row("chunk", *wall_cpu("chunk"), f"{chunks:.0f} chunks")
    row("graph skeleton (worker)", *wall_cpu("graph_build"), "nodes, edges, reference index")
    ahead = total["count.embedded_ahead"]
    row(
        "embed (parent)",
        sum(embed_wall(f.timings) for f in done),
        total["embed.cpu"],
        f"{chunks:.0f} chunks (first load included)"
        + (
            f"; {ahead:.0f} small files embedded ahead, their CPU counted in the graph and "
            "store of the file before"
            if ahead
            else ""
        ),
    )
    if total["embed_pages"]:
        row("embed page images (parent)", *wall_cpu("embed_pages"), "visual channel")
    row("graph (parent)", *wall_cpu("graph"), "evolution, node vectors, model summaries")
    row("store (parent)", *wall_cpu("store"), "rows, vectors, assets")
    row("optimize (batch, parent)", run["optimize_wall"], None, "final indexing (wall only)")
    top_cpu = sum(r["cpu"] for r in rows if r["level"] == 0 and r["cpu"] is not None)
    top_wall = sum(r["wall"] for r in rows if r["level"] == 0)
    for r in rows:
        r["cpu_share"] = r["cpu"] / top_cpu if top_cpu and r["cpu"] is not None else None
        r["wall_share"] = r["wall"] / top_wall if top_wall else None
    return rows


def per_file(report: IngestReport, ds: DocSight, ocr_min_chars: int) -> list[dict[str, Any]]:
    """One row per file: what it held, which models ran on it, its seconds and memory."""
    out = []
    for f in report.files:
        t = f.timings
        textless = None
        if f.doc_id and f.status in ("added", "no_text"):
            doc = ds.store.get_document(f.doc_id)
            textless = sum(1 for p in doc.pages if p.text_chars < ocr_min_chars)
        out.append(
            {
                "file": f.name,
                "status": f.status,
                "pages": f.pages,
                "textless_pages": textless,
                "ocr_calls": t.get("model.ocr.calls", 0),
                "layout_calls": t.get("model.layout.calls", 0),
                "table_calls": t.get("model.table.calls", 0),
                "tables": t.get("count.tables", 0),
                "pictures": t.get("count.pictures", 0),
                "pictures_ocr": t.get("count.pictures_ocr", 0),
                "picture_ocr_s": t.get("model.picture_ocr.wall", 0.0),
                "parse_s": t.get("parse", 0.0),
                "parse_cpu": t.get("parse.cpu", 0.0),
                "describe_s": t.get("describe", 0.0),
                "chunks": f.chunks,
                "embed_s": embed_wall(t),
                "peak_mb": f.peak_memory_mb,
                "parent_peak_mb": f.process_peak_memory_mb,
                "seconds": f.seconds,
                # Every key of FileOutcome.timings, for what the columns above leave out.
                "timings": dict(t),
            }
        )
    return out


def ocr_pictures(
    report: IngestReport, ds: DocSight, settings: Settings
) -> list[tuple[bytes, int, bool]]:
    """The pictures picture OCR read, reconstructed from the stored documents: figures with a
    crop on pages that have a text layer (scanned pages are read whole), covering at least
    ``ocr_picture_min_area`` of the page, at least 64 px a side, and either read (``ocr``) or
    still without text. Each as (crop bytes, pixels, whether OCR found text); the count is
    checked against ``count.pictures_ocr``, which is exact."""
    from PIL import Image

    parse = settings.parse
    out: list[tuple[bytes, int, bool]] = []
    for f in report.files:
        if not f.doc_id or f.status not in ("added", "no_text"):
            continue
        doc = ds.store.get_document(f.doc_id)
        textless = {p.index for p in doc.pages if p.text_chars < parse.ocr_min_chars}
        for e in doc.elements:
            if e.kind != "figure" or not e.image_id or e.page in textless:
                continue
            if (e.bbox.area if e.bbox is not None else 1.0) < parse.ocr_picture_min_area:
                continue
            read = bool(e.attrs.get("ocr"))
            if not read and e.text.strip():
                continue  # had text of its own: not read
            asset = ds.store.get_asset(e.image_id)
            if asset is None or not asset.data:
                continue
            with Image.open(io.BytesIO(asset.data)) as image:
                w, h = image.size
            if min(w, h) < 64:
                continue
            out.append((asset.data, w * h, read))
    return out


def picture_sizes(pictures: list[tuple[bytes, int, bool]]) -> dict[str, Any]:
    """The sizes of the pictures picture OCR read and whether it found text, by size bin."""
    sizes = [(px, read) for _, px, read in pictures]
    bins: dict[str, dict[str, int]] = {}
    edges = (0.0, *SIZE_BINS, float("inf"))
    for lo, hi in itertools.pairwise(edges):
        name = f"{lo:g}–{hi:g} Mpx" if hi != float("inf") else f"≥ {lo:g} Mpx"
        inside = [read for px, read in sizes if lo <= px / 1e6 < hi]
        bins[name] = {"pictures": len(inside), "with_text": sum(inside)}
    mpx = sorted(px / 1e6 for px, _ in sizes)
    return {
        "found": len(sizes),
        "with_text": sum(read for _, read in sizes),
        "median_mpx": statistics.median(mpx) if mpx else 0.0,
        "max_mpx": mpx[-1] if mpx else 0.0,
        "bins": bins,
    }


# --- the floor ------------------------------------------------------------------------------------


def pdfium_floor(files: list[Path]) -> dict[str, float]:
    """pdfium's text extraction of every page: the least any PDF text pipeline does."""
    import pypdfium2 as pdfium

    pages = chars = 0
    wall, cpu = time.perf_counter(), time.process_time()
    for path in files:
        doc = pdfium.PdfDocument(path)
        try:
            for page in doc:
                textpage = page.get_textpage()
                chars += len(textpage.get_text_range())
                textpage.close()
                page.close()
                pages += 1
        finally:
            doc.close()
    return {
        "pages": pages,
        "chars": chars,
        "wall": time.perf_counter() - wall,
        "cpu": time.process_time() - cpu,
    }


def embed_floor(texts: list[str]) -> dict[str, float]:
    """MiniLM (the project's encoder, default settings) on the chunk texts, after a warm-up."""
    from docsight.encoders import create_encoder

    encoder = create_encoder(Settings().embed)
    wall, cpu = time.perf_counter(), time.process_time()
    encoder.encode_documents(["warm up the session"])
    load = time.perf_counter() - wall, time.process_time() - cpu
    wall, cpu = time.perf_counter(), time.process_time()
    chunks = len(encoder.encode_documents(texts)) if texts else 0
    return {
        "chunks": chunks,
        "load_wall": load[0],
        "load_cpu": load[1],
        "wall": time.perf_counter() - wall,
        "cpu": time.process_time() - cpu,
    }


def ocr_floor(
    report: IngestReport,
    ds: DocSight,
    pictures: list[tuple[bytes, int, bool]],
    settings: Settings,
) -> dict[str, Any] | None:
    """RapidOCR alone on the images ingestion reads by OCR: the pages without a text layer that
    the PDF parser sends to OCR, rendered at the scale it chooses and reduced as it reduces them,
    and the pictures picture OCR read. One RapidOCR instance with docsight's detection and
    recognition settings, onnxruntime at its default threads (one per core, as MiniLM in the
    floor), no cache, no layout model, nothing done with the lines. ``None`` without the
    ``ocr`` extra (then ingestion reads nothing by OCR either)."""
    from docsight.vision import ocr_available

    if not ocr_available():
        return None
    import numpy as np
    import pypdfium2 as pdfium
    import rapidocr
    from PIL import Image

    from docsight.parsers.pdf.page import Page
    from docsight.parsers.pdf.scan import ocr_scale, wants_ocr
    from docsight.parsers.raster.page import is_blank, working_image
    from docsight.vision.ocr import OcrEngine

    params = {k: v for k, v in OcrEngine().rapidocr_params().items() if "onnxruntime" not in k}
    wall, cpu = time.perf_counter(), time.process_time()
    engine = rapidocr.RapidOCR(params=params)
    engine(np.full((64, 256, 3), 255, dtype=np.uint8))  # load and warm up, not counted
    load = time.perf_counter() - wall, time.process_time() - cpu

    def clocked() -> dict[str, float]:
        return {"images": 0, "mpx": 0.0, "lines": 0, "wall": 0.0, "cpu": 0.0}

    def read(rgb: np.ndarray, into: dict[str, float]) -> None:
        """RapidOCR on one image; only the call is timed (rendering and decoding are not)."""
        bgr = np.ascontiguousarray(rgb[:, :, ::-1])  # RapidOCR reads arrays as OpenCV: BGR
        w, c = time.perf_counter(), time.process_time()
        result = engine(bgr)
        into["wall"] += time.perf_counter() - w
        into["cpu"] += time.process_time() - c
        into["images"] += 1
        into["mpx"] += rgb.shape[0] * rgb.shape[1] / 1e6
        into["lines"] += len(getattr(result, "txts", None) or ())

    on_pages, on_pictures = clocked(), clocked()
    for f in report.files:
        if not f.doc_id or f.status not in ("added", "no_text"):
            continue
        # The parser's own count of visible characters decides, as it did while ingesting.
        stored = ds.store.get_document(f.doc_id).pages
        doc = pdfium.PdfDocument(f.path)
        try:
            for info in stored:
                if not wants_ocr(settings.parse, info.text_chars):
                    continue
                pdf_page = doc[info.index]
                page = Page(index=info.index, width=info.width, height=info.height)
                scale = ocr_scale(pdf_page, page, settings.parse)
                if scale is not None:
                    work, _ = working_image(pdf_page.render(scale=scale).to_pil().convert("RGB"))
                    if not is_blank(work):
                        read(work, on_pages)
                pdf_page.close()
        finally:
            doc.close()
    for data, _, _ in pictures:
        with Image.open(io.BytesIO(data)) as image:
            read(np.asarray(image.convert("RGB")), on_pictures)
    return {
        "pages": on_pages,
        "pictures": on_pictures,
        "load_wall": load[0],
        "load_cpu": load[1],
        "wall": on_pages["wall"] + on_pictures["wall"],
        "cpu": on_pages["cpu"] + on_pictures["cpu"],
    }


def chunk_texts(report: IngestReport, ds: DocSight) -> list[str]:
    texts: list[str] = []
    for f in report.files:
        if f.doc_id and f.status == "added":
            texts.extend(c.text for c in ds.store.document_chunks(f.doc_id))
    return texts


# --- output ---------------------------------------------------------------------------------------


def _num(value: float | None, digits: int = 1) -> str:
    if value is None:
        return "–"
    return f"{value:,.{digits}f}"


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f} %"


def markdown(result: dict[str, Any]) -> str:
    s = result["summary"]
    floor = result["floor"]
    env = result["environment"]
    lines = [
        "# Ingestion profile (issue 17)",
        "",
        f"`{result['command']}`",
        "",
        f"- date: {result['date']}; commit {env['machine']['commit']}"
        + (" (with uncommitted changes)" if env["machine"]["dirty"] else ""),
        f"- machine: {env['machine']['cpu']}, {env['machine']['cores']} cores, "
        f"{env['machine']['memory_gb']} GB; Python {env['machine']['python']}, "
        f"onnxruntime {env['machine']['onnxruntime']}",
        f"- settings: defaults (`ocr` extra installed: {env['ocr_extra']}); "
        f"{env['workers']} worker processes; onnxruntime threads: "
        f"{env['ort_threads']}; a PDF of more than {env.get('pages_per_part', 0)} pages has its "
        "pages spread over the workers (ingest.pages_per_part; 0: off)",
        f"- load before: `{env['uptime_before']}`",
        f"- load after: `{env['uptime_after']}`",
        f"- 1-min load during the run: mean {_num(env['load_mean'], 2)}, "
        f"max {_num(env['load_max'], 2)}; CPU used by other processes during the run: "
        f"{_num(env['others_cpu_s'])} s ({_pct(env['others_cpu_share'])} of the machine's "
        f"{env['machine']['cores']} × {_num(s['elapsed_s'])} s)",
        f"- {env['shared_note']}",
        "",
        f"**{s['files']} files, {s['pages']} pages, {s['chunks']} chunks in "
        f"{_num(s['elapsed_s'])} s = {_num(s['pages_per_s'], 2)} pages/s.** "
        f"CPU: {_num(s['cpu_total_s'])} s "
        f"(workers {_num(s['worker_cpu_s'])} s, parent {_num(s['parent_cpu_s'])} s); "
        f"{_num(s['stage_cpu_s'])} s of it is in the stages below.",
        f"Peak resident memory per file (workers): max {_num(s['peak_mb_max'], 0)} MiB, "
        f"median {_num(s['peak_mb_median'], 0)} MiB; this process while it handled a file: "
        f"max {_num(s['parent_peak_mb_max'], 0)} MiB.",
        "",
        "| stage | wall s | CPU s | CPU share | wall share | saw |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in result["stages"]:
        name = f"  ↳ {r['stage']}" if r["level"] else f"**{r['stage']}**"
        share_w = "" if r["level"] else _pct(r["wall_share"])
        lines.append(
            f"| {name} | {_num(r['wall'])} | {_num(r['cpu'])} | {_pct(r['cpu_share'])} "
            f"| {share_w} | {r['saw']} |"
        )
    lines += [
        "",
        "Wall seconds are summed over files; stages of different files overlap (two workers "
        "parse while the parent embeds and stores), so the wall column adds up to more than the "
        "elapsed time; a file whose pages were spread over the workers counts the seconds of "
        "each worker that read its pages. CPU seconds are process CPU time (all threads, "
        "onnxruntime's included) measured around each stage or model call. Shares are of the "
        "stages' total.",
        "",
        "## Floor (same run, after the ingestion)",
        "",
        "| part | wall s | CPU s | saw |",
        "| --- | ---: | ---: | --- |",
        f"| pdfium text extraction | {_num(floor['pdfium']['wall'], 2)} "
        f"| {_num(floor['pdfium']['cpu'], 2)} | {floor['pdfium']['pages']} pages, "
        f"{floor['pdfium']['chars']:,} characters |",
        f"| MiniLM embedding | {_num(floor['embed']['wall'], 2)} "
        f"| {_num(floor['embed']['cpu'], 2)} | {floor['embed']['chunks']} chunks "
        f"({_num(floor['embed_chunks_per_s'])} chunks/s; "
        f"load {_num(floor['embed']['load_wall'], 2)} s not counted) |",
        f"| **floor** | {_num(floor['wall'], 2)} | {_num(floor['cpu'], 2)} | |",
        "",
        f"**Ingestion/floor: {_num(floor['ratio_wall'], 2)}× in wall time** "
        f"({_num(s['elapsed_s'])} s / {_num(floor['wall'])} s); "
        f"{_num(floor['ratio_cpu'], 2)}× in CPU time. Target: ≤ 1.5×. "
        f"Embedding in the pipeline: {_num(s['embed_chunks_per_s'])} chunks/s "
        f"against {_num(floor['embed_chunks_per_s'])} chunks/s in the floor.",
        "",
        *_ocr_floor_lines(s, floor),
        "## Per file",
        "",
        "| file | pages | no text layer | OCR / layout / table calls | tables | pictures "
        "(OCR'd) | picture OCR s | parse s | parse CPU s | describe s | chunks | embed s "
        "| peak MiB | parent peak MiB |",
        "| --- " + "| ---: " * 13 + "|",
    ]
    for f in result["files"]:
        calls = f"{f['ocr_calls']:.0f} / {f['layout_calls']:.0f} / {f['table_calls']:.0f}"
        lines.append(
            f"| {f['file'][:40]} | {f['pages']} | {f['textless_pages']} | {calls} "
            f"| {f['tables']:.0f} | {f['pictures']:.0f} ({f['pictures_ocr']:.0f}) "
            f"| {_num(f['picture_ocr_s'])} | {_num(f['parse_s'])} | {_num(f['parse_cpu'])} "
            f"| {_num(f['describe_s'])} | {f['chunks']} | {_num(f['embed_s'])} "
            f"| {_num(f['peak_mb'], 0)} | {_num(f['parent_peak_mb'], 0)} |"
        )
    pics = result["pictures"]
    lines += [
        "",
        "## Pictures read by picture OCR",
        "",
        f"{pics['found']} pictures found in the stored documents by the selection rule "
        f"(`count.pictures_ocr` says {s['pictures_ocr']}); {pics['with_text']} gave confident "
        f"text. Median {_num(pics['median_mpx'], 2)} Mpx, largest {_num(pics['max_mpx'], 2)} Mpx.",
        "",
        "| size | pictures | with text |",
        "| --- | ---: | ---: |",
    ]
    for name, b in pics["bins"].items():
        lines.append(f"| {name} | {b['pictures']} | {b['with_text']} |")
    return "\n".join(lines) + "\n"


def _ocr_floor_lines(s: dict[str, Any], floor: dict[str, Any]) -> list[str]:
    """The floor with OCR: the same models on the same images, without docsight around them."""
    ocr, both = floor.get("ocr"), floor.get("with_ocr")
    if not ocr or not both:
        return ["Without the `ocr` extra nothing is read by OCR: the floor above is the whole.", ""]
    pages, pics = ocr["pages"], ocr["pictures"]
    return [
        "### Floor with OCR: the same models on the same images",
        "",
        "The floor above does no OCR, while ingestion reads scanned pages and pictures by OCR. "
        "Here RapidOCR alone (docsight's detection and recognition settings, onnxruntime at "
        "its default threads, no cache, no layout model) reads the images ingestion sent to "
        "OCR: the pages the parser read by OCR, rendered and reduced as it does, and the "
        "pictures listed below. Loading "
        f"({_num(ocr['load_wall'], 2)} s) is not counted.",
        "",
        "| part | wall s | CPU s | saw |",
        "| --- | ---: | ---: | --- |",
        f"| floor above | {_num(floor['wall'], 2)} | {_num(floor['cpu'], 2)} | |",
        f"| RapidOCR, pages | {_num(pages['wall'], 2)} | {_num(pages['cpu'], 2)} "
        f"| {pages['images']} pages, {_num(pages['mpx'])} Mpx, {pages['lines']:,} lines |",
        f"| RapidOCR, pictures | {_num(pics['wall'], 2)} | {_num(pics['cpu'], 2)} "
        f"| {pics['images']} pictures, {_num(pics['mpx'])} Mpx, {pics['lines']:,} lines |",
        f"| **floor with OCR** | {_num(both['wall'], 2)} | {_num(both['cpu'], 2)} | |",
        "",
        f"**Ingestion/floor with OCR: {_num(both['ratio_wall'], 2)}× in wall time** "
        f"({_num(s['elapsed_s'])} s / {_num(both['wall'])} s); "
        f"{_num(both['ratio_cpu'], 2)}× in CPU time.",
        "",
    ]


def print_table(result: dict[str, Any]) -> None:
    s, floor = result["summary"], result["floor"]
    out = sys.stdout
    out.write(f"\n{'stage':<46} {'wall s':>9} {'CPU s':>9} {'CPU %':>7}  saw\n")
    for r in result["stages"]:
        name = ("  " * r["level"]) + r["stage"]
        share = "" if r["cpu_share"] is None else f"{100 * r['cpu_share']:.1f}"
        out.write(f"{name:<46} {_num(r['wall']):>9} {_num(r['cpu']):>9} {share:>7}  {r['saw']}\n")
    out.write(
        f"\n{s['pages']} pages in {s['elapsed_s']:.1f} s = {s['pages_per_s']:.2f} pages/s; "
        f"CPU {s['cpu_total_s']:.1f} s; peak MiB max {_num(s['peak_mb_max'], 0)}, "
        f"median {_num(s['peak_mb_median'], 0)}\n"
        f"floor: pdfium {floor['pdfium']['wall']:.2f} s + MiniLM {floor['embed']['wall']:.2f} s "
        f"= {floor['wall']:.2f} s; ingestion/floor {floor['ratio_wall']:.2f}× wall, "
        f"{floor['ratio_cpu']:.2f}× CPU\n"
    )
    ocr, both = floor.get("ocr"), floor.get("with_ocr")
    if ocr and both:
        out.write(
            f"floor with OCR: + RapidOCR {ocr['pages']['wall']:.2f} s on "
            f"{ocr['pages']['images']} pages and {ocr['pictures']['wall']:.2f} s on "
            f"{ocr['pictures']['images']} pictures = {both['wall']:.2f} s; ingestion/floor "
            f"{both['ratio_wall']:.2f}× wall, {both['ratio_cpu']:.2f}× CPU\n"
        )


# --- main -----------------------------------------------------------------------------------------


def _threads(n: int) -> str:
    return "onnxruntime's default (one per core)" if n == 0 else f"{n} thread(s)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=Path, default=DEFAULT_DOCS)
    parser.add_argument("--limit", type=int, default=0, help="first N files only (0: all)")
    parser.add_argument("--json", type=Path, default=None, help="where to write the JSON")
    parser.add_argument("--md", type=Path, default=None, help="where to write the Markdown")
    args = parser.parse_args(argv)
    files = sorted(p for p in args.docs.iterdir() if p.suffix.lower() == ".pdf")
    if args.limit:
        files = files[: args.limit]
    if not files:
        parser.error(f"no PDF in {args.docs}")
    json_path, md_path = args.json, args.md
    if not args.limit:
        json_path = json_path or RESULTS / "ingest_profile.json"
        md_path = md_path or (json_path.with_suffix(".md"))
    settings = Settings()
    from docsight.vision import ocr_available

    environment: dict[str, Any] = {
        "machine": machine(),
        "ocr_extra": ocr_available(),
        "workers": settings.ingest.worker_count(),
        "ort_threads": (
            f"OCR/layout/table sessions at {_threads(settings.ingest.model_thread_count())} in "
            f"each worker (ingest.model_threads {settings.ingest.model_threads}); MiniLM intra-op "
            f"{settings.embed.threads or os.cpu_count()}"
        ),
        "pages_per_part": settings.ingest.pages_per_part,
        "uptime_before": uptime(),
        "busiest_before": busiest(),
    }
    sys.stdout.write(f"{len(files)} files; load before: {environment['uptime_before']}\n")
    busy0, own0 = machine_busy_s(), own_cpu_s()
    with tempfile.TemporaryDirectory(prefix="ingest-profile-") as tmp, LoadSampler() as load:
        run = ingest(files, Path(tmp) / "collection")
        report: IngestReport = run["report"]
        busy1, own1 = machine_busy_s(), own_cpu_s()
        ds: DocSight = run["ds"]
        stages = stage_rows(report, run)
        files_rows = per_file(report, ds, settings.parse.ocr_min_chars)
        texts = chunk_texts(report, ds)
        read_pictures = ocr_pictures(report, ds, settings)
        pictures = picture_sizes(read_pictures)
        floor_pdf = pdfium_floor(files)
        floor_embed = embed_floor(texts)
        floor_ocr = ocr_floor(report, ds, read_pictures, settings)
        del read_pictures
    environment["uptime_after"] = uptime()
    environment["busiest_after"] = busiest()
    environment["load_mean"] = statistics.fmean(load.samples) if load.samples else None
    environment["load_max"] = max(load.samples) if load.samples else None
    others = max(0.0, (busy1 - busy0) - (own1 - own0))
    environment["others_cpu_s"] = others
    capacity = (os.cpu_count() or 1) * run["wall"]
    environment["others_cpu_share"] = others / capacity if capacity else None
    environment["shared_note"] = (
        "the machine was shared: other processes used "
        f"{100 * others / capacity:.0f} % of its CPU during the ingestion; the wall times and "
        "pages/s are pessimistic, the CPU seconds hold"
        if capacity and others / capacity > 0.1
        else "the machine was otherwise quiet during the ingestion (other processes < 10 % CPU)"
    )

    done: list[FileOutcome] = [f for f in report.files if f.status in ("added", "no_text")]
    peaks = [f.peak_memory_mb for f in done if f.peak_memory_mb is not None]
    parent_peaks = [f.process_peak_memory_mb for f in done if f.process_peak_memory_mb is not None]
    pages = sum(f.pages for f in done)
    chunks = sum(f.chunks for f in done)
    embed_s = sum(embed_wall(f.timings) for f in done)
    cpu_total = run["parent_cpu"] + run["worker_cpu"]
    floor_wall = floor_pdf["wall"] + floor_embed["wall"]
    floor_cpu = floor_pdf["cpu"] + floor_embed["cpu"]
    # The same work as ingestion's models: the floor above plus RapidOCR alone on the images
    # ingestion read by OCR (issue 17's floor has no OCR, though its runs include scans).
    same_wall = floor_wall + (floor_ocr["wall"] if floor_ocr else 0.0)
    same_cpu = floor_cpu + (floor_ocr["cpu"] if floor_ocr else 0.0)
    result: dict[str, Any] = {
        "command": shlex.join(["python", *sys.argv]),
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "environment": environment,
        "summary": {
            "files": len(report.files),
            "counts": report.counts(),
            "pages": pages,
            "chunks": chunks,
            "pictures_ocr": sum(f.timings.get("count.pictures_ocr", 0) for f in done),
            "elapsed_s": run["wall"],
            "pages_per_s": pages / run["wall"] if run["wall"] else 0.0,
            "parent_cpu_s": run["parent_cpu"],
            "worker_cpu_s": run["worker_cpu"],
            "cpu_total_s": cpu_total,
            "stage_cpu_s": sum(
                r["cpu"] for r in stages if r["level"] == 0 and r["cpu"] is not None
            ),
            "embed_chunks_per_s": chunks / embed_s if embed_s else 0.0,
            "peak_mb_max": max(peaks) if peaks else None,
            "peak_mb_median": statistics.median(peaks) if peaks else None,
            "parent_peak_mb_max": max(parent_peaks) if parent_peaks else None,
        },
        "stages": stages,
        "floor": {
            "pdfium": floor_pdf,
            "embed": floor_embed,
            "wall": floor_wall,
            "cpu": floor_cpu,
            "ratio_wall": run["wall"] / floor_wall if floor_wall else None,
            "ratio_cpu": cpu_total / floor_cpu if floor_cpu else None,
            "embed_chunks_per_s": (
                floor_embed["chunks"] / floor_embed["wall"] if floor_embed["wall"] else 0.0
            ),
            "ocr": floor_ocr,
            "with_ocr": {
                "wall": same_wall,
                "cpu": same_cpu,
                "ratio_wall": run["wall"] / same_wall if same_wall else None,
                "ratio_cpu": cpu_total / same_cpu if same_cpu else None,
            },
        },
        "files": files_rows,
        "pictures": pictures,
        "failed": [
            {"file": f.name, "error": f.error_code, "reason": f.reason}
            for f in report.files
            if f.status == "failed"
        ],
    }
    print_table(result)
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(result, indent=1, default=str) + "\n")
        sys.stdout.write(f"wrote {json_path}\n")
    if md_path is not None:
        md_path.parent.mkdir(parents=True, exist_ok=True)
        md_path.write_text(markdown(result))
        sys.stdout.write(f"wrote {md_path}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
