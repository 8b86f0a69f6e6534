#!/usr/bin/env python3
"""OCR settings against truth: where RapidOCR's time goes, what cheaper settings cost in quality.

    python benchmarks/ocr_settings.py collect --work /tmp/ocrset [--data ../shared/data]
    python benchmarks/ocr_settings.py measure --work /tmp/ocrset [--configs a,b] [--shard 0/2]
    python benchmarks/ocr_settings.py report --work /tmp/ocrset [--md P] [--tolerance 0.005]

``collect`` picks the images, ``measure`` runs every configuration on every image (append-only
JSON lines in the work folder, so shards can run side by side and be resumed), ``report`` turns
the runs into tables and chooses a setting by leave-documents-out cross-validation.

Images:

* ``page``: born-digital pages of the MMLongBench-Doc dev PDFs, rendered as the PDF parser renders
  a page for OCR (``ocr_dpi``, at most :data:`~docsight.vision.ocr.MAX_SIDE` px). Truth is the
  page's pdfium text layer;
* ``scan``: the generated scans of ``tests/fixtures/scangen.py`` (known text);
* ``deck``: pages of the three scanned slide decks (no text layer: no truth; what the current
  setting reads stands in as the reference, reported as agreement, not accuracy);
* ``picture``: the pictures picture OCR reads in the dev PDFs, found by the pipeline's own rule
  (:func:`docsight.ingest.picture_text.read_picture_text`); no truth either.

Measures per image: process CPU seconds of the whole call and of its parts (the detection and
recognition ONNX sessions, the rest of detection and recognition: resizing, normalising, box
post-processing and CTC decoding), the detection input size, the number of line crops and their
total width at the recogniser's 48 px height (also as padded in batches). Quality: word recall
(share of the reference's words, lower-cased ``\\w+`` tokens of two or more characters, counted
with multiplicity, that the OCR text has: what retrieval needs) and a bag CER (edit distance
between the words sorted alphabetically, over the reference length: the usual CER without the
reading-order differences between a text layer and OCR lines). Sessions run with one
onnxruntime thread, as in the ingestion workers.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
import time
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402
from _machine import load_average, machine  # noqa: E402

DECKS = (
    "amb-siteaudits-ds15-150204174043-conversion-gate01_95.pdf",
    "avalaunchpresentationsthatkickasteriskv3copy-150318114804-conversion-gate01_95.pdf",
    "bigdatatrends-120723191058-phpapp02_95.pdf",
)
#: Born-digital pages per dev PDF, and the text layer a page needs to be a fair test.
PAGES_PER_DOC = 2
MIN_TRUTH_CHARS = 300
#: Scanned deck pages per deck.
DECK_PAGES = 3


@dataclass(frozen=True)
class Config:
    """One OCR setting: the detection side limit and how it applies, the recogniser's minimum
    input width (RapidOCR pads every line crop to at least ``rec_width`` px at 48 px height,
    ``Rec.rec_img_shape``) and its batch size."""

    name: str
    det_side: int = 1600
    limit_type: str = "max"
    rec_width: int = 320
    rec_batch: int = 6

    def same_run(self, width: int, height: int) -> tuple[Any, ...]:
        """Configurations with equal keys compute the same thing on a ``width × height`` image
        (a side limit above the image's longest side leaves detection at the image's size)."""
        native = self.limit_type == "max" and max(width, height) <= self.det_side
        return (
            "native" if native else (self.det_side, self.limit_type),
            self.rec_width,
            self.rec_batch,
        )


def current(name: str, **changes: Any) -> Config:
    """docsight's OCR setting as it is now (:mod:`docsight.vision.ocr`), with ``changes``."""
    from docsight.vision import ocr

    fields = {"det_side": ocr.DET_SIDE, "rec_width": ocr.REC_WIDTH, "rec_batch": ocr.REC_BATCH}
    return Config(name, **{**fields, **changes})


#: ``base`` is always the current setting; the others are candidates against it. The first
#: rounds' base (1,600 px, 320 px, batches of 6) is ``v1600-w320``.
CONFIGS = {
    c.name: c
    for c in (
        current("base"),
        Config("v1600-w320"),
        # Recognition batches: RapidOCR pads each batch to its widest crop.
        current("b1", rec_batch=1),
        current("b2", rec_batch=2),
        current("b3", rec_batch=3),
        # Narrowest recogniser input, at the current batch.
        current("w96", rec_width=96),
        current("w64", rec_width=64),
        Config("det1280", det_side=1280),
        Config("det1024", det_side=1024),
        Config("det736", det_side=736),
        Config("w128", rec_width=128),
        Config("det1280-w128", det_side=1280, rec_width=128),
        Config("det1024-w128", det_side=1024, rec_width=128),
        Config("det736-w128", det_side=736, rec_width=128),
    )
}


@dataclass
class Item:
    """One image to read: ``key`` is unique, ``doc`` groups items for cross-validation."""

    kind: str
    doc: str
    key: str
    source: str
    page: int = 0
    truth: str | None = None


# --- collecting images ---------------------------------------------------------------------------


def collect(data: Path, work: Path) -> list[Item]:
    """Choose the images and write ``items.json`` (pictures as PNG files) into ``work``."""
    import pypdfium2 as pdfium

    work.mkdir(parents=True, exist_ok=True)
    docs = data / "mmlongbench-dev" / "documents"
    items: list[Item] = []
    for path in sorted(docs.glob("*.pdf")):
        pdf = pdfium.PdfDocument(str(path))
        if path.name in DECKS:
            for k in (int(len(pdf) * (j + 0.5) / DECK_PAGES) for j in range(DECK_PAGES)):
                items.append(Item("deck", path.name, f"{path.stem}#p{k}", str(path), k))
            pdf.close()
            continue
        texts = []
        for k in range(len(pdf)):
            textpage = pdf[k].get_textpage()
            texts.append(textpage.get_text_range())
            textpage.close()
        pdf.close()
        usable = [k for k, t in enumerate(texts) if len(" ".join(t.split())) >= MIN_TRUTH_CHARS]
        if not usable:
            continue
        step = len(usable) / PAGES_PER_DOC
        chosen = sorted({usable[int(step * (j + 0.5))] for j in range(PAGES_PER_DOC)})
        for k in chosen:
            items.append(Item("page", path.name, f"{path.stem}#p{k}", str(path), k, texts[k]))
    from fixtures import scangen

    scans = scangen.make_scans(work / "scangen")
    for k, truth in enumerate(scangen.page_texts()):
        items.append(Item("scan", "scangen", f"scangen#p{k}", str(scans.image_pdf), k, truth))
    items.extend(collect_pictures(docs, work / "pictures"))
    (work / "items.json").write_text(json.dumps([asdict(i) for i in items], indent=1))
    return items


def collect_pictures(docs: Path, out: Path) -> list[Item]:
    """The pictures picture OCR would read in each dev PDF, saved as PNG.

    The PDFs are parsed without page OCR; the ingestion's selection rule runs with an OCR
    engine whose ``recognize`` only keeps the image it is given.
    """
    import hashlib

    from docsight.ingest import picture_text
    from docsight.parsers import parser_for
    from docsight.parsers.base import ParseContext, SourceFile
    from docsight.settings import ParseSettings
    from docsight.vision import ocr as ocr_module

    out.mkdir(parents=True, exist_ok=True)
    seen: list[Any] = []
    original = ocr_module.OcrEngine.recognize

    def keep(self: Any, image: Any, cache: Any = None, *, digest: str | None = None) -> list[Any]:
        seen.append(image)
        return []

    manifest = out / "manifest.jsonl"
    if not manifest.exists():  # parsing takes minutes: an earlier collection is reused
        ocr_module.OcrEngine.recognize = keep  # type: ignore[method-assign]
        rows: list[str] = []
        try:
            for path in sorted(docs.glob("*.pdf")):
                if path.name in DECKS:
                    continue
                data = path.read_bytes()
                sha = hashlib.sha256(data).hexdigest()
                source = SourceFile(path, data, sha, "application/pdf")
                parser = parser_for("application/pdf", path)
                parsed = parser.parse(source, ParseSettings(ocr="never"), ParseContext())
                seen.clear()
                picture_text.read_picture_text(parsed, ParseContext(), ParseSettings())
                for k, image in enumerate(seen):
                    name = f"{path.stem[:40]}-{k:02d}.png"
                    image.save(out / name)
                    row = {"doc": path.name, "file": name, "w": image.width, "h": image.height}
                    rows.append(json.dumps(row) + "\n")
        finally:
            ocr_module.OcrEngine.recognize = original  # type: ignore[method-assign]
        manifest.write_text("".join(rows))
    items: list[Item] = []
    for line in manifest.read_text().splitlines():
        row = json.loads(line)
        key = f"{Path(row['doc']).stem}#i{Path(row['file']).stem.rsplit('-', 1)[1]}"
        items.append(Item("picture", row["doc"], key, str(out / row["file"])))
    return items


def load_items(work: Path) -> list[Item]:
    return [Item(**row) for row in json.loads((work / "items.json").read_text())]


def image_of(item: Item, dpi: int = 200) -> np.ndarray:
    """The RGB array OCR reads for ``item``, as the pipeline makes it."""
    from PIL import Image

    from docsight.parsers.raster.page import working_image

    if item.kind == "picture":
        with Image.open(item.source) as image:
            return np.asarray(image.convert("RGB"))
    import pypdfium2 as pdfium

    from docsight.parsers.pdf.page import Page
    from docsight.parsers.pdf.scan import ocr_scale
    from docsight.settings import ParseSettings
    from docsight.vision.ocr import MAX_SIDE

    pdf = pdfium.PdfDocument(item.source)
    try:
        page = pdf[item.page]
        w, h = page.get_size()
        settings = ParseSettings(ocr="always", ocr_dpi=dpi)
        scale = ocr_scale(page, Page(item.page, w, h), settings)
        scale = scale or min(dpi / 72, MAX_SIDE / max(w, h))
        rendered = page.render(scale=scale).to_pil().convert("RGB")
    finally:
        pdf.close()
    return working_image(rendered)[0]


# --- running RapidOCR with a stopwatch on its parts ----------------------------------------------


@dataclass
class Stopwatch:
    """CPU seconds accumulated by named parts."""

    cpu: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    facts: dict[str, Any] = field(default_factory=dict)

    def wrap(
        self, name: str, fn: Callable[..., Any], note: Callable[..., None] | None = None
    ) -> Any:
        def timed(*args: Any, **kwargs: Any) -> Any:
            if note is not None:
                note(*args)
            t = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.cpu[name] += time.process_time() - t

        return timed


class _Proxy:
    """Stands in for a RapidOCR part: calls go through the stopwatch, attributes to the part."""

    def __init__(self, inner: Any, call: Callable[..., Any]) -> None:
        self._inner, self._call = inner, call

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._call(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def make_engine(config: Config) -> Any:
    """A RapidOCR instance with the wrapper's settings and ``config``'s, one thread."""
    import rapidocr

    from docsight.vision.ocr import MAX_SIDE, MIN_SCORE

    params = {
        "Global.use_cls": False,
        "Global.max_side_len": MAX_SIDE,
        "Global.text_score": MIN_SCORE,
        "Global.log_level": "error",
        "Det.limit_type": config.limit_type,
        "Det.limit_side_len": config.det_side,
        "Rec.rec_batch_num": config.rec_batch,
        "Rec.rec_img_shape": [3, 48, config.rec_width],
        "EngineConfig.onnxruntime.intra_op_num_threads": 1,
        "EngineConfig.onnxruntime.inter_op_num_threads": 1,
    }
    model = rapidocr.RapidOCR(params=params)
    warm = np.full((64, 256, 3), 255, dtype=np.uint8)
    warm[20:40, 20:200] = 0
    model._load_det_model()
    model._load_rec_model()
    model(warm)
    return model


def timed_run(model: Any, rgb: np.ndarray, config: Config) -> dict[str, Any]:
    """OCR ``rgb`` once with every part timed; the lines as the wrapper keeps them."""
    watch = Stopwatch()
    det, rec = model.text_det, model.text_rec
    det_session, rec_session = det.session, rec.session

    def note_det(x: np.ndarray) -> None:
        watch.facts["det_input"] = [int(x.shape[2]), int(x.shape[3])]

    def note_rec(args: Any) -> None:
        crops = [args.img] if isinstance(args.img, np.ndarray) else list(args.img)
        widths = sorted(48.0 * c.shape[1] / max(1, c.shape[0]) for c in crops)
        padded = 0.0
        for start in range(0, len(widths), config.rec_batch):
            part = widths[start : start + config.rec_batch]
            padded += max(float(config.rec_width), part[-1]) * len(part)
        watch.facts.update(crops=len(crops), crop_width=sum(widths), padded_width=padded)

    det.session = _Proxy(det_session, watch.wrap("det_model", det_session, note_det))
    rec.session = _Proxy(rec_session, watch.wrap("rec_model", rec_session))
    model.text_det = _Proxy(det, watch.wrap("det", det.__call__))
    model.text_rec = _Proxy(rec, watch.wrap("rec", rec.__call__, note_rec))
    try:
        t = time.process_time()
        wall = time.perf_counter()
        result = model(np.ascontiguousarray(rgb[:, :, ::-1]))
        cpu = time.process_time() - t
        wall = time.perf_counter() - wall
    finally:
        det.session, rec.session = det_session, rec_session
        model.text_det, model.text_rec = det, rec
    texts = [" ".join(str(t).split()) for t in (getattr(result, "txts", None) or ())]
    texts = [t for t in texts if t]
    return {
        "cpu": cpu,
        "wall": wall,
        "det_model": watch.cpu["det_model"],
        "det_other": watch.cpu["det"] - watch.cpu["det_model"],
        "rec_model": watch.cpu["rec_model"],
        "rec_other": watch.cpu["rec"] - watch.cpu["rec_model"],
        "other": cpu - watch.cpu["det"] - watch.cpu["rec"],
        "lines": len(texts),
        "text": "\n".join(texts),
        **watch.facts,
    }


def measure(work: Path, names: list[str], shard: tuple[int, int]) -> None:
    """Run the configurations on this shard's items, every configuration on one item before
    the next item (so a change in the machine's load falls on all of them alike); results
    append to ``runs.jsonl``. A configuration that computes what another already did on an
    image (see :meth:`Config.same_run`) gets a copy of its row, marked ``copied_from``."""
    import hashlib

    items = [i for n, i in enumerate(load_items(work)) if n % shard[1] == shard[0]]
    # Scans first (the images the speed target is about), then pages, then pictures; within a
    # kind in an order unrelated to the document, so a run stopped early is a fair sample.
    order = {"scan": 0, "deck": 1, "page": 2, "picture": 3}
    items.sort(key=lambda i: (order[i.kind], hashlib.sha256(i.key.encode()).hexdigest()))
    runs = work / "runs.jsonl"
    earlier = read_runs(work)
    done = {(r["config"], r["key"]) for r in earlier}
    configs = [CONFIGS[name] for name in names]
    models = {c.name: make_engine(c) for c in configs}
    for item in items:
        if all((c.name, item.key) in done for c in configs):
            continue
        rgb = image_of(item)
        h, w = rgb.shape[:2]
        by_run: dict[tuple[Any, ...], dict[str, Any]] = {}
        for r in earlier:  # runs of an earlier pass count too
            if r["key"] == item.key and "copied_from" not in r and r["config"] in CONFIGS:
                by_run.setdefault(CONFIGS[r["config"]].same_run(w, h), r)
        for config in configs:
            if (config.name, item.key) in done:
                continue
            same = by_run.get(config.same_run(w, h))
            if same is not None:
                row = {**same, "copied_from": same["config"]}
            else:
                row = timed_run(models[config.name], rgb, config)
                row.update(key=item.key, kind=item.kind, doc=item.doc, size=[w, h])
                row.update(load=load_average())
                by_run[config.same_run(w, h)] = {**row, "config": config.name}
            row["config"] = config.name
            with runs.open("a") as out:
                out.write(json.dumps(row) + "\n")


def read_runs(work: Path) -> list[dict[str, Any]]:
    path = work / "runs.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# --- quality --------------------------------------------------------------------------------------


def words(text: str) -> list[str]:
    """Lower-cased word tokens of two or more characters (NFKC: ligatures become letters)."""
    norm = unicodedata.normalize("NFKC", text).lower()
    return [w for w in re.findall(r"\w+", norm) if len(w) >= 2]


def word_recall(reference: str, hypothesis: str) -> tuple[int, int]:
    """(reference words found in the hypothesis, counted with multiplicity; reference words)."""
    ref, hyp = Counter(words(reference)), Counter(words(hypothesis))
    return sum(min(n, hyp[w]) for w, n in ref.items()), sum(ref.values())


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance, one numpy pass per character of ``a``."""
    if not a or not b:
        return max(len(a), len(b))
    bb = np.frombuffer(b.encode("utf-32-le"), dtype=np.uint32)
    idx = np.arange(len(b) + 1, dtype=np.int64)
    prev = idx.copy()
    for i, ch in enumerate(np.frombuffer(a.encode("utf-32-le"), dtype=np.uint32), 1):
        cur = np.empty_like(prev)
        cur[0] = i
        cur[1:] = np.minimum(prev[1:] + 1, prev[:-1] + (bb != ch))
        # insertions: cur[j] = min_k<=j (cur[k] + j - k)
        cur = np.minimum.accumulate(cur - idx) + idx
        prev = cur
    return int(prev[-1])


def bag_errors(reference: str, hypothesis: str) -> tuple[int, int]:
    """(edit distance between the alphabetically sorted words, reference length)."""
    ref = " ".join(sorted(unicodedata.normalize("NFKC", reference).lower().split()))
    hyp = " ".join(sorted(unicodedata.normalize("NFKC", hypothesis).lower().split()))
    return edit_distance(ref, hyp), len(ref)


# --- report ---------------------------------------------------------------------------------------

TRUTH_KINDS = ("page", "scan")
KINDS = ("page", "scan", "deck", "picture")
PARTS = ("det_model", "det_other", "rec_model", "rec_other", "other")


@dataclass
class Scored:
    """One run with its quality counts: against the truth for pages and scans, against the
    base configuration's text for decks and pictures (agreement)."""

    config: str
    key: str
    kind: str
    doc: str
    cpu: float
    found: int
    words: int
    errors: int
    chars: int


def score_runs(items: list[Item], runs: list[dict[str, Any]]) -> list[Scored]:
    truth = {i.key: i.truth for i in items}
    base = {r["key"]: r["text"] for r in runs if r["config"] == "base"}
    out = []
    for r in runs:
        ref = truth.get(r["key"]) if r["kind"] in TRUTH_KINDS else base.get(r["key"])
        if ref is None:
            continue
        found, n = word_recall(ref, r["text"])
        errors, chars = bag_errors(ref, r["text"])
        out.append(
            Scored(r["config"], r["key"], r["kind"], r["doc"], r["cpu"], found, n, errors, chars)
        )
    return out


def complete(scored: list[Scored], configs: list[str]) -> list[Scored]:
    """Only the images every configuration has read (a stopped run leaves some unread)."""
    have: dict[str, set[str]] = defaultdict(set)
    for s in scored:
        have[s.key].add(s.config)
    keys = {k for k, c in have.items() if set(configs) <= c}
    return [s for s in scored if s.key in keys and s.config in configs]


def pooled(rows: list[Scored]) -> dict[str, float]:
    words_ = sum(r.words for r in rows)
    chars = sum(r.chars for r in rows)
    return {
        "recall": sum(r.found for r in rows) / words_ if words_ else math.nan,
        "cer": sum(r.errors for r in rows) / chars if chars else math.nan,
        "cpu": statistics.fmean(r.cpu for r in rows) if rows else math.nan,
        "n": len(rows),
    }


def choose(rows: list[Scored], configs: list[str], tolerance: float) -> str:
    """The configuration with the least CPU over ``rows`` whose word recall and bag CER on the
    truth images of ``rows`` are within ``tolerance`` (absolute) of the base configuration's."""
    truth = [r for r in rows if r.kind in TRUTH_KINDS]
    ref = pooled([r for r in truth if r.config == "base"])
    ok = []
    for name in configs:
        q = pooled([r for r in truth if r.config == name])
        if q["recall"] >= ref["recall"] - tolerance and q["cer"] <= ref["cer"] + tolerance:
            ok.append((sum(r.cpu for r in rows if r.config == name), name))
    return min(ok)[1] if ok else "base"


def cross_validate(
    scored: list[Scored], configs: list[str], tolerance: float
) -> tuple[dict[str, int], list[Scored], list[Scored]]:
    """Leave one document out: choose on the others, keep the held-out document's runs of the
    chosen configuration and of the base one. Returns how often each was chosen, and the
    held-out runs (chosen, base)."""
    chosen: Counter[str] = Counter()
    held_chosen: list[Scored] = []
    held_base: list[Scored] = []
    for doc in sorted({s.doc for s in scored}):
        train = [s for s in scored if s.doc != doc]
        name = choose(train, configs, tolerance)
        chosen[name] += 1
        held_chosen += [s for s in scored if s.doc == doc and s.config == name]
        held_base += [s for s in scored if s.doc == doc and s.config == "base"]
    return dict(chosen), held_chosen, held_base


def fmt(v: float, digits: int = 3) -> str:
    return "–" if v != v else f"{v:.{digits}f}"


def report(
    work: Path, tolerance: float, facts: dict[str, Any], candidates: list[str] | None = None
) -> str:
    items = load_items(work)
    runs = read_runs(work)
    present = [c for c in CONFIGS if any(r["config"] == c for r in runs)]
    configs = [c for c in present if candidates is None or c in candidates]
    all_scored = score_runs(items, runs)
    scored = complete(all_scored, configs)
    keys = {s.key for s in scored}
    runs = [r for r in runs if r["key"] in keys]
    loads = sorted(float(r["load"].split()[0]) for r in runs if "copied_from" not in r)
    counts = Counter(r["kind"] for r in runs if r["config"] == "base")
    out = ["# OCR settings against truth (issue 17)", ""]
    out.append(
        f"`python benchmarks/ocr_settings.py report --work {work} --md "
        "benchmarks/results/ocr_settings.md` after `collect` and `measure` (same "
        f"folder), {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. Machine: "
        f"{facts.get('cores')} cores ({facts.get('cpu')}), Python {facts.get('python')}, "
        f"onnxruntime {facts.get('onnxruntime')}, commit {facts.get('commit')}"
        f"{' (with uncommitted changes)' if facts.get('dirty') else ''}. One onnxruntime "
        "thread per session, as in the ingestion workers. 1-minute load while measuring: "
        f"median {fmt(statistics.median(loads), 2) if loads else '–'}, max "
        f"{fmt(max(loads), 2) if loads else '–'} (CPU seconds are the measure; the "
        "configurations run one after another on each image, so load changes fall on all)."
    )
    out.append("")
    out.append(
        "Images read by every configuration: "
        + ", ".join(f"{counts[k]} {k}{'s' if counts[k] != 1 else ''}" for k in KINDS)
        + "."
    )
    out += ["", "## Where the time goes (current setting)", ""]
    out.append(
        "| images | n | CPU s/image | detection model | detection rest | recognition "
        "model | recognition rest | other | lines | crop width px @48 | padded width "
        "| detection input Mpx |"
    )
    out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for kind in KINDS:
        rs = [r for r in runs if r["config"] == "base" and r["kind"] == kind]
        if not rs:
            continue
        cpu = sum(r["cpu"] for r in rs)
        shares = [f"{100 * sum(r[p] for r in rs) / cpu:.0f} %" for p in PARTS]
        det = (
            statistics.fmean(
                r.get("det_input", [0, 0])[0] * r.get("det_input", [0, 0])[1] for r in rs
            )
            / 1e6
        )
        out.append(
            f"| {kind} | {len(rs)} | {cpu / len(rs):.2f} | "
            + " | ".join(shares)
            + f" | {statistics.fmean(r['lines'] for r in rs):.0f} | "
            f"{statistics.fmean(r.get('crop_width', 0) for r in rs):,.0f} | "
            f"{statistics.fmean(r.get('padded_width', 0) for r in rs):,.0f} | {det:.2f} |"
        )
    out += ["", "## Quality and cost of each setting", ""]
    out.append(
        "Pages and scans against their truth; decks and pictures against what the current "
        "setting reads (agreement, not accuracy). Recall: word recall; CER: bag CER."
    )
    out.append("")
    out.append(
        "| setting | " + " | ".join(f"{k} CPU s | {k} recall | {k} CER" for k in KINDS) + " |"
    )
    out.append("|---|" + "---:|" * (3 * len(KINDS)))
    for name in configs:
        cells = []
        for kind in KINDS:
            q = pooled([s for s in scored if s.config == name and s.kind == kind])
            cells += [fmt(q["cpu"], 2), fmt(q["recall"]), fmt(q["cer"])]
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    dropped = [c for c in present if c not in configs]
    if dropped:
        out += [
            "",
            "Measured on part of the images only, then left out of the choice (against "
            "the current setting on the same images):",
            "",
        ]
        out.append(
            "| setting | images | CPU s/image | recall | CER | base CPU s/image | "
            "base recall | base CER |"
        )
        out.append("|---|---|---:|---:|---:|---:|---:|---:|")
        for name in dropped:
            for kind in KINDS:
                part = complete([s for s in all_scored if s.kind == kind], ["base", name])
                q = pooled([s for s in part if s.config == name])
                b = pooled([s for s in part if s.config == "base"])
                if q["n"]:
                    out.append(
                        f"| {name} | {kind} ({q['n']}) | {fmt(q['cpu'], 2)} | "
                        f"{fmt(q['recall'])} | {fmt(q['cer'])} | {fmt(b['cpu'], 2)} | "
                        f"{fmt(b['recall'])} | {fmt(b['cer'])} |"
                    )
    fit = choose(scored, configs, tolerance)
    chosen, held, held_base = cross_validate(scored, configs, tolerance)
    out += [
        "",
        f"## Choice (tolerance {tolerance}: word recall and bag CER on pages and scans "
        "within that of the current setting's, absolute; cheapest total CPU wins)",
        "",
    ]
    out.append(
        f"Dev fit (chosen on all documents): **{fit}**. Leave-one-document-out: chosen "
        + ", ".join(f"{k} {v}×" for k, v in sorted(chosen.items()))
        + "."
    )
    out.append("")
    out.append(
        "| | images | word recall | bag CER | CPU s/image | base recall | base CER | "
        "base CPU s/image |"
    )
    out.append("|---|---|---:|---:|---:|---:|---:|---:|")
    for kind in KINDS:
        dev = pooled([s for s in scored if s.config == fit and s.kind == kind])
        dev_b = pooled([s for s in scored if s.config == "base" and s.kind == kind])
        cv = pooled([s for s in held if s.kind == kind])
        cv_b = pooled([s for s in held_base if s.kind == kind])
        for label, q, b in (("dev fit", dev, dev_b), ("held out", cv, cv_b)):
            out.append(
                f"| {label} | {kind} ({q['n']}) | {fmt(q['recall'])} | {fmt(q['cer'])} | "
                f"{fmt(q['cpu'], 2)} | {fmt(b['recall'])} | {fmt(b['cer'])} | "
                f"{fmt(b['cpu'], 2)} |"
            )
    out += ["", "## Pictures, most expensive first (current setting)", ""]
    out.append("| picture | px | CPU s | recognition share | lines | crop width | padded width |")
    out.append("|---|---|---:|---:|---:|---:|---:|")
    pics = sorted(
        (r for r in runs if r["config"] == "base" and r["kind"] == "picture"),
        key=lambda r: -r["cpu"],
    )
    for r in pics[:15]:
        rec = (r["rec_model"] + r["rec_other"]) / max(r["cpu"], 1e-9)
        out.append(
            f"| {r['key']} | {r['size'][0]}×{r['size'][1]} | {r['cpu']:.2f} | "
            f"{100 * rec:.0f} % | {r['lines']} | {r.get('crop_width', 0):,.0f} | "
            f"{r.get('padded_width', 0):,.0f} |"
        )
    return "\n".join(out) + "\n"


def parse_shard(text: str) -> tuple[int, int]:
    k, n = (int(v) for v in text.split("/"))
    if not 0 <= k < n:
        raise argparse.ArgumentTypeError("shard is k/n with 0 <= k < n")
    return k, n


def main(argv: Iterable[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect")
    c.add_argument("--work", type=Path, required=True)
    c.add_argument("--data", type=Path, default=HERE.parent.parent / "shared" / "data")
    m = sub.add_parser("measure")
    m.add_argument("--work", type=Path, required=True)
    m.add_argument("--configs", default=",".join(CONFIGS))
    m.add_argument("--shard", type=parse_shard, default=(0, 1))
    r = sub.add_parser("report")
    r.add_argument("--work", type=Path, required=True)
    r.add_argument("--md", type=Path)
    r.add_argument("--tolerance", type=float, default=0.005)
    r.add_argument("--configs", help="the candidates, comma-separated (default: all measured)")
    args = parser.parse_args(list(argv) if argv is not None else None)
    if args.command == "collect":
        items = collect(args.data, args.work)
        print(json.dumps(Counter(i.kind for i in items)))
    elif args.command == "measure":
        measure(args.work, args.configs.split(","), args.shard)
    else:
        candidates = args.configs.split(",") if args.configs else None
        text = report(args.work, args.tolerance, machine(), candidates)
        print(text)
        if args.md:
            args.md.write_text(text)


if __name__ == "__main__":
    main()
