"""Ingestion does not hold the pixels of rendered images it will store as recipes (issue 17).

A collection keeps each PDF and stores its page renders and crops as recipes (issue 13), so the
PNG bytes a parse makes are only needed for their ids, for picture OCR and descriptions in the
worker, and for page vectors in the parent. Without a visual encoder or a vision model, the worker
keeps no page render's bytes while it parses and returns crops without theirs: a 1,000-page PDF
no longer holds a PNG of every page in the worker, the pipe and the parent. The documents, chunks,
asset ids and every stored row must be the same as when the pixels travel.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

import pytest

from docsight import DocSight, Settings
from docsight.document.ids import bytes_sha256
from docsight.document.pixels import PixelFile
from docsight.ingest import pipeline as pipeline_module
from docsight.ingest.chunking import create_chunker
from docsight.ingest.worker import ParseJob, ParseOutput, run_job
from docsight.parsers.base import ParseContext
from docsight.parsers.sniff import PDF

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from make_large_pdf import make_large_pdf

INLINE = Settings(ingest={"isolation": "none"})
#: Stored columns that differ between two ingestions of the same file by design.
VOLATILE = {"ingested_at", "vector"}


@pytest.fixture(scope="module")
def long_pdf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Five pages of the benchmark's report: sections across pages, a table, page furniture."""
    return make_large_pdf(tmp_path_factory.mktemp("long") / "long.pdf", pages=5)


def _run(path: Path, rendered_pixels: bool) -> ParseOutput:
    data = path.read_bytes()
    job = ParseJob(str(path), bytes_sha256(data), PDF, rendered_pixels=rendered_pixels)
    return run_job(job, INLINE, ParseContext(), create_chunker(INLINE.chunk))


@pytest.mark.parametrize("which", ["report", "long"])
def test_same_document_without_the_pixels(which: str, report_pdf: Path, long_pdf: Path) -> None:
    path = report_pdf if which == "report" else long_pdf
    full, lean = _run(path, True), _run(path, False)

    assert lean.parsed.document.model_dump() == full.parsed.document.model_dump()
    assert [(c.id, c.text) for c in lean.chunks] == [(c.id, c.text) for c in full.chunks]
    assert lean.parsed.warnings == full.parsed.warnings

    def shape(out: ParseOutput) -> list[tuple[Any, ...]]:
        return [(a.id, a.kind, a.width, a.height, a.render) for a in out.parsed.assets]

    assert shape(lean) == shape(full)
    kinds = {a.kind for a in full.parsed.assets}
    assert "page" in kinds and "crop" in kinds  # both kinds are exercised
    assert all(a.data for a in full.parsed.assets)
    # Every image with a recipe went without its bytes; an asset's id still names its pixels.
    assert all(a.data == b"" for a in lean.parsed.assets if a.render is not None)
    pages = {p.image_id for p in lean.parsed.document.pages}
    assert pages == {a.id for a in full.parsed.assets if a.kind == "page"}


def test_pictures_are_still_classified_from_their_pixels(report_pdf: Path) -> None:
    """Descriptions read the crops before they are dropped: a blank or a picture class comes
    from the pixels, so it would change if the crop were gone too early."""
    full, lean = _run(report_pdf, True), _run(report_pdf, False)

    def classes(out: ParseOutput) -> list[str]:
        return [
            e.attrs["picture_class"]
            for e in out.parsed.document.elements
            if "picture_class" in e.attrs
        ]

    assert classes(full) and classes(lean) == classes(full)


@pytest.mark.parametrize("which", ["report", "long", "photos"])
def test_a_streamed_parse_reads_its_crops_from_disk(
    which: str,
    report_pdf: Path,
    long_pdf: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """In a worker with a spool the elements stream out of the parse, and without the pixels
    every crop waits on disk until its page is described: the descriptions and picture
    classes, which read the crops, are those of a parse that holds them in memory."""
    paths = {"report": report_pdf, "long": long_pdf}
    if which == "photos":
        paths[which] = make_large_pdf(tmp_path / "photos.pdf", pages=4, photos=True)
    path = paths[which]
    full = _run(path, True)
    put = PixelFile.put
    spilled: list[str] = []

    def spy(self: PixelFile, key: str, data: bytes) -> None:
        spilled.append(key)
        put(self, key, data)

    monkeypatch.setattr(PixelFile, "put", spy)
    data = path.read_bytes()
    spool = tmp_path / "spool"
    spool.mkdir()
    job = ParseJob(str(path), bytes_sha256(data), PDF, rendered_pixels=False, spool=str(spool))
    lean = run_job(job, INLINE, ParseContext(), create_chunker(INLINE.chunk))
    assert lean.windows is not None
    parsed, chunks = lean.windows.whole()
    lean.windows.discard()
    assert list(spool.iterdir()) == []  # the crops' file was never one of the spool's

    crops = [a.id for a in full.parsed.assets if a.kind == "crop" and a.render is not None]
    assert crops and sorted(spilled) == sorted(crops)
    assert parsed.document.model_dump() == full.parsed.document.model_dump()
    assert [(c.id, c.text) for c in chunks] == [(c.id, c.text) for c in full.chunks]
    assert [dataclasses.replace(a, data=b"") for a in parsed.assets] == [
        dataclasses.replace(a, data=b"") for a in full.parsed.assets
    ]
    assert all(a.data == b"" for a in parsed.assets if a.render is not None)
    if which == "photos":  # one a body page, each read as a picture from its pixels
        figures = [e for e in parsed.document.elements if e.kind == "figure"]
        assert len(figures) >= 3 and all("picture_class" in e.attrs for e in figures)


def _rows(ds: DocSight, table: str) -> list[dict[str, Any]]:
    rows = ds.store._table(table).to_arrow().to_pylist()  # type: ignore[attr-defined]
    return sorted(
        ({k: v for k, v in row.items() if k not in VOLATILE} for row in rows),
        key=lambda row: str(row.get("id")),
    )


def test_stored_rows_are_the_same(
    report_pdf: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through real worker processes without the pixels, and in-process with them forced on,
    the collection holds the same rows, and page images are made again from the kept file."""
    lean = DocSight(tmp_path / "lean")
    assert lean.settings.ingest.isolation == "process"
    assert lean.ingest([report_pdf]).added

    def with_pixels(**fields: Any) -> ParseJob:
        return ParseJob(**{**fields, "rendered_pixels": True})

    monkeypatch.setattr(pipeline_module, "ParseJob", with_pixels)
    full = DocSight(tmp_path / "full", settings=INLINE)
    assert full.ingest([report_pdf]).added

    for table in ("documents", "pages", "elements", "chunks", "assets"):
        assert _rows(lean, table) == _rows(full, table), table
    page_ids = [row["image_id"] for row in _rows(lean, "pages")]
    assert page_ids and all(page_ids)
    image = lean.store.get_asset(page_ids[0])
    again = full.store.get_asset(page_ids[0])
    assert image is not None and again is not None
    assert image.data and image.data == again.data
    assert dataclasses.replace(image, data=b"") == dataclasses.replace(again, data=b"")
