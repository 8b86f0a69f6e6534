"""A long PDF's pages spread over the workers (issue 17): the same collection, one outcome.

The generated report (sections across pages, running headers, "Page N of M" footers, ruled
tables, an outline) is ingested twice: whole, in this process, and split into page ranges over
two real worker processes. Every stored row must be the same, vectors within float tolerance.
A part that crashes, hangs or raises ends its file as one failed outcome, with nothing of it
stored, while the other files of the batch go on.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from docsight import DocSight, Settings
from docsight.document.ids import bytes_sha256
from docsight.document.stream import ElementBatch
from docsight.errors import ParseError
from docsight.ingest.report import IngestProgress
from docsight.ingest.split import PageSplitter
from docsight.ingest.spool import Spooled
from docsight.parsers import PARSERS
from docsight.parsers.base import ParseContext, SourceFile
from docsight.parsers.pdf.page import Page
from docsight.parsers.pdf.parser import PdfParser
from docsight.parsers.sniff import PDF
from fixtures.hostile_parsers import PAGED_TARGET

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from make_large_pdf import make_large_pdf

#: Stored columns that differ between two ingestions of the same file by design.
VOLATILE = {"ingested_at", "vector"}


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("split-docs")
    make_large_pdf(folder / "a-long.pdf", pages=14)
    make_large_pdf(folder / "b-short.pdf", pages=3, seed=5)
    return folder


def _source(path: Path) -> SourceFile:
    data = path.read_bytes()
    return SourceFile(path=path, data=data, sha256=bytes_sha256(data), media_type=PDF)


def _rows(ds: DocSight, table: str) -> list[dict[str, Any]]:
    rows = ds.store._table(table).to_arrow().to_pylist()  # type: ignore[attr-defined]
    return sorted(
        ({k: v for k, v in row.items() if k not in VOLATILE} for row in rows),
        key=lambda row: str(row.get("id")),
    )


def _vectors(ds: DocSight) -> dict[str, np.ndarray]:
    rows = ds.store._table("chunks").to_arrow().to_pylist()  # type: ignore[attr-defined]
    return {row["id"]: np.asarray(row["vector"], dtype=np.float32) for row in rows}


def test_parts_make_the_document_a_whole_parse_makes(
    docs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Uneven ranges, one of a single page: elements, ids, assets and warnings are the same.

    The whole parse holds its 14 pages as objects; the parts' pages wait packed (pickled and
    compressed, one by one) and pass through the last passes one at a time: flat memory."""
    import docsight.parsers.pdf.parser as pdf_parser
    from docsight.parsers.pdf.passes import PageStore

    source = _source(docs / "a-long.pdf")
    settings = Settings().parse
    parser = PdfParser()
    whole = parser.parse(source, settings)
    ranges = [(0, 1), (1, 6), (6, 13), (13, 14)]
    parts = [parser.extract_part(source, settings, None, a, b) for a, b in ranges]
    stores: list[PageStore] = []
    real = pdf_parser.finish_pages

    def spy(store: PageStore, *args: Any) -> Any:
        # What the finishing job holds of the pages is bytes, not word objects.
        assert store.packed and len(store) == 14 and store.packed_bytes() > 0
        assert not any(isinstance(p, Page) for p in store._pages)
        stores.append(store)
        return real(store, *args)

    monkeypatch.setattr(pdf_parser, "finish_pages", spy)
    given = list(parts)
    merged = parser.parse_parts(source, settings, None, given)
    assert stores and all(p is None for p in stores[0]._pages)  # each page let go once emitted
    # A list of parts is read once: each part's bytes are let go as soon as they are unpickled,
    # so they are not held beside the pages copied out of them.
    assert given == [b""] * len(ranges)

    assert merged.document.model_dump() == whole.document.model_dump()
    assert merged.assets == whole.assets
    assert merged.warnings == whole.warnings
    # The file exercises what the document-wide pass decides across the ranges.
    kinds = {e.kind.value for e in whole.document.elements}
    assert {"header", "footer", "heading", "table"} <= kinds
    with pytest.raises(ParseError, match="part 2 starts at page 13, not 6"):
        parser.parse_parts(source, settings, None, parts[:2] + parts[3:])


def test_parts_keep_their_crops_on_disk_for_the_stream(docs: Path) -> None:
    """The finishing job of a split parse without crop pixels takes the parts' crops into a
    temporary file, not memory: each batch's readers get the very bytes of the whole parse,
    and the document comes with the crops' records alone."""
    source = _source(docs / "a-long.pdf")
    settings = Settings().parse
    parser = PdfParser()
    whole = parser.parse(source, settings)
    crops = {a.id: a.data for a in whole.assets if a.kind == "crop" and a.render is not None}
    assert len(crops) >= 2
    ranges = [(0, 5), (5, 14)]
    parts = [parser.extract_part(source, settings, None, a, b) for a, b in ranges]
    seen: dict[str, bytes] = {}

    def sink(batch: ElementBatch) -> None:
        for element in batch.elements:
            if element.image_id in crops:
                seen[element.image_id] = batch.assets[element.image_id].data

    lean = dataclasses.replace(source, crop_pixels=False)
    merged = parser.parse_parts(lean, settings, ParseContext(elements=sink), parts)
    assert seen == crops
    assert [dataclasses.replace(a, data=b"") if a.id in crops else a for a in whole.assets] == (
        merged.assets
    )


def test_parts_of_a_scan_keep_what_ocr_said(
    require_ocr: None, tmp_path: Path, ocr_context: ParseContext
) -> None:
    """OCR's hints and line confidences are keyed by object identity inside a page; a page
    read in one process and laid out in another must keep them."""
    from fixtures import scangen

    scans = scangen.make_scans(tmp_path / "scans", dpi=100)
    source = _source(scans.image_pdf)
    settings = Settings().parse
    settings.ocr_dpi = 100
    parser = PdfParser()
    whole = parser.parse(source, settings, ocr_context)
    n = whole.document.page_count
    assert n >= 2
    parts = [parser.extract_part(source, settings, ocr_context, i, i + 1) for i in range(n)]
    merged = parser.parse_parts(source, settings, ocr_context, parts)
    assert merged.document.model_dump() == whole.document.model_dump()
    assert any(e.attrs.get("ocr") for e in whole.document.elements)


def test_pages_spread_over_workers_store_the_same_rows(
    docs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from docsight.ingest import supervisor

    whole = DocSight(tmp_path / "whole", settings=Settings(ingest={"isolation": "none"}))
    assert [f.status for f in whole.ingest([docs]).files] == ["added", "added"]

    # What the supervisor keeps of each job it sends (the finishing job's parts go).
    kept: list[tuple[int, int]] = []
    running = supervisor._Running

    def keep(key: int, job: Any, *args: Any) -> Any:
        kept.append((job.page_range is None, len(job.parts)))
        return running(key, job, *args)

    monkeypatch.setattr(supervisor, "_Running", keep)
    # What the finishing job is sent: where the parts lie in the spool, not their bytes.
    sent: list[list[Any]] = []
    result = PageSplitter.result

    def spy(self: PageSplitter, job_result: Any) -> Any:
        step = result(self, job_result)
        sent.extend([list(job.parts) for _, job in step.jobs if job.parts])
        return step

    monkeypatch.setattr(PageSplitter, "result", spy)
    split_settings = Settings(ingest={"workers": 2, "pages_per_part": 4})
    split = DocSight(tmp_path / "split", settings=split_settings)
    events: list[IngestProgress] = []
    report = split.ingest([docs], progress=events.append)
    # Whole-file jobs: the long file's first (it only counts the pages), its finishing job
    # (sent with the 4 parts, kept with none) and the short file's; and the long file's 4 ranges.
    assert kept.count((False, 0)) == 4 and kept.count((True, 0)) == 3
    assert all(parts == 0 for _, parts in kept)
    [parts] = sent
    assert len(parts) == 4 and all(isinstance(p, Spooled) for p in parts)
    assert not any(Path(p.path).exists() for p in parts)  # deleted once the file ended
    long, short = report.files
    assert (long.status, short.status) == ("added", "added")
    # 14 pages in ranges of at most 4: 4 range jobs; the 3-page file is one job.
    assert long.timings["parse.parts"] == 4
    assert "parse.parts" not in short.timings
    assert long.peak_memory_mb is not None and long.peak_memory_mb > 0
    assert long.timings["count.pages"] == 14

    for table in ("documents", "chunks", "nodes", "graphs", "elements", "pages", "assets"):
        assert _rows(split, table) == _rows(whole, table), table
    mine, theirs = _vectors(split), _vectors(whole)
    assert mine.keys() == theirs.keys() and len(mine) > 20
    for chunk_id, vector in theirs.items():
        np.testing.assert_allclose(mine[chunk_id], vector, atol=1e-5)

    # Progress counts the long file's pages as its ranges report them, up to all 14, never
    # backwards, and ends each file with "done" in order.
    parsed = [e.page for e in events if e.index == 1 and e.stage == "parse" and e.pages == 14]
    assert parsed and parsed == sorted(parsed) and parsed[-1] == 14
    assert len(set(parsed)) > 2  # more than the start and the end
    assert [e.index for e in events if e.stage == "done"] == [1, 2]
    assert events[-1].batch_pages_done == events[-1].batch_pages == 17


@pytest.fixture
def hostile_pdf(monkeypatch: pytest.MonkeyPatch) -> None:
    """PDFs go through the hostile paged parser, in this process and in every worker."""
    monkeypatch.setattr(PARSERS, "_entries", dict(PARSERS._entries))
    PARSERS.register(PDF, PAGED_TARGET, description="test: a part misbehaves on command")


@pytest.mark.usefixtures("hostile_pdf")
def test_a_failing_part_fails_its_file_once_and_stores_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    names = ["1-abort.pdf", "2-ok.pdf", "3-hang.pdf", "4-raise.pdf", "5-ok.pdf"]
    for k, name in enumerate(names):
        make_large_pdf(folder / name, pages=12, seed=k)
    ingest = {"workers": 2, "pages_per_part": 3, "timeout_s": 4, "per_page_s": 1}
    settings = Settings(ingest=ingest)
    ds = DocSight(tmp_path / "col", settings=settings)
    report = ds.ingest([folder])
    outcomes = {Path(f.path).name: f for f in report.files}
    assert [Path(f.path).name for f in report.files] == names

    aborted, hung, raised = outcomes["1-abort.pdf"], outcomes["3-hang.pdf"], outcomes["4-raise.pdf"]
    assert aborted.status == "failed" and aborted.error_code == "worker_crashed"
    assert "SIGABRT" in (aborted.reason or "")
    assert hung.status == "failed" and hung.error_code == "timeout"
    # The range's own budget: 4 s plus 1 s for each of its 3 pages.
    assert "ingest.per_page_s 1 s × 3 pages" in (hung.reason or "")
    assert raised.status == "failed" and raised.error_code == "internal_error"
    assert "page 6" in (raised.reason or "")
    assert outcomes["2-ok.pdf"].status == outcomes["5-ok.pdf"].status == "added"
    # Nothing of a failed file is visible: only the two good files are stored.
    stored = {d.name for d in ds.documents()}
    assert stored == {"2-ok.pdf", "5-ok.pdf"}
    chunk_docs = {row["doc_id"] for row in _rows(ds, "chunks")}
    assert chunk_docs == {d.id for d in ds.documents()}
