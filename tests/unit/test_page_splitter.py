"""The supervisor's bookkeeping of a file split by pages (``ingest.split.PageSplitter``).

No processes: results are made by hand, in the orders workers may deliver them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from docsight.document.model import Document, ParsedDocument
from docsight.ingest.split import PageSplitter, Step, page_ranges
from docsight.ingest.spool import Spooled, SpoolWriter, load_bytes
from docsight.ingest.worker import JobResult, ParseJob, ParseOutput, ParseProgress, PartOutput

JOB = ParseJob(path="/docs/long.pdf", sha256="ab" * 32, media_type="application/pdf")


def _output() -> ParseOutput:
    document = Document(
        id="d" * 64,
        name="long.pdf",
        source="/docs/long.pdf",
        media_type="application/pdf",
        sha256="ab" * 32,
        parser="pdf/10",
    )
    return ParseOutput(ParsedDocument(document), [], {"parse": 1.0, "chunk": 0.5})


def _split(splitter: PageSplitter, pages: int = 10) -> list[tuple[int, ParseJob]]:
    asked = splitter.prepare(7, JOB)
    assert asked.pages_per_part == splitter.pages_per_part and asked.page_range is None
    step = splitter.result(JobResult(7, split_pages=pages, seconds=0.2, peak_rss_mb=90.0))
    assert step.result is None and step.progress == ParseProgress(7, "parse", 0, pages)
    return step.jobs


def test_page_ranges_are_even_and_cover_the_file() -> None:
    assert page_ranges(10, 4) == [(0, 3), (3, 7), (7, 10)]
    assert page_ranges(8, 4) == [(0, 4), (4, 8)]
    assert page_ranges(1000, 40)[-1] == (960, 1000) and len(page_ranges(1000, 40)) == 25
    assert page_ranges(3, 40) == [(0, 3)]


def test_parts_then_one_finishing_job_then_one_result() -> None:
    splitter = PageSplitter(4)
    jobs = _split(splitter)
    assert [job.page_range for _, job in jobs] == [(0, 3), (3, 7), (7, 10)]
    assert all(key < 0 and job.pages_per_part == 0 and not job.parts for key, job in jobs)
    assert len({key for key, _ in jobs}) == 3

    # Progress adds up the ranges' pages, whichever reports first.
    (k0, _), (k1, _), (k2, _) = jobs
    assert splitter.progress(ParseProgress(k1, "parse", 2, 4)) == ParseProgress(7, "parse", 2, 10)
    assert splitter.progress(ParseProgress(k0, "parse", 3, 3)) == ParseProgress(7, "parse", 5, 10)
    assert splitter.progress(ParseProgress(99, "parse", 1, 5)) == ParseProgress(99, "parse", 1, 5)

    # Results arrive out of order; the finishing job waits for the last range.
    parts = {
        k: PartOutput(f"part {k}".encode(), {"parse": 2.0, "model.ocr.calls": 1})
        for k in (k0, k1, k2)
    }
    assert splitter.result(JobResult(k2, part=parts[k2], peak_rss_mb=120.0)).jobs == []
    assert splitter.result(JobResult(k0, part=parts[k0], peak_rss_mb=300.0)).jobs == []
    step = splitter.result(JobResult(k1, part=parts[k1], peak_rss_mb=110.0))
    assert step.result is None
    [(finish_key, finish)] = step.jobs
    assert finish_key < 0 and finish.page_range is None and finish.pages_per_part == 0
    assert finish.parts == [b"part %d" % k0, b"part %d" % k1, b"part %d" % k2]

    # A finishing job's progress is the file's.
    event = splitter.progress(ParseProgress(finish_key, "describe", 0, 10))
    assert event == ParseProgress(7, "describe", 0, 10)
    done = splitter.result(JobResult(finish_key, output=_output(), peak_rss_mb=200.0))
    result = done.result
    assert result is not None and result.key == 7 and result.output is not None
    assert result.peak_rss_mb == 300.0  # the busiest of the file's jobs
    timings = result.output.timings
    assert timings["parse"] == 1.0 + 3 * 2.0 and timings["model.ocr.calls"] == 3
    assert timings["chunk"] == 0.5 and timings["parse.parts"] == 3
    assert result.seconds >= 0.2


def test_the_first_failed_range_ends_the_file_and_drops_the_rest() -> None:
    splitter = PageSplitter(4)
    (k0, _), (k1, _), (k2, _) = _split(splitter)
    step = splitter.result(
        JobResult(k1, error_code="timeout", reason="killed after 42 s", peak_rss_mb=80.0)
    )
    assert step.result is not None and step.result.key == 7
    assert (step.result.error_code, step.result.reason) == ("timeout", "killed after 42 s")
    assert step.result.output is None and step.jobs == []
    assert step.drop == {k0, k2}
    # k2 was still queued and is dropped; k0 was running and reports later: ignored.
    splitter.forget({k2})
    assert splitter.progress(ParseProgress(k0, "parse", 1, 3)) is None
    late = splitter.result(JobResult(k0, part=PartOutput(b"x")))
    assert late.result is None and late.jobs == [] and not late.drop


def test_a_file_parsed_whole_passes_through() -> None:
    splitter = PageSplitter(40)
    splitter.prepare(3, JOB)
    whole = JobResult(3, output=_output())
    assert splitter.result(whole).result is whole
    with pytest.raises(ValueError):
        splitter.prepare(-1, JOB)


def test_a_scan_is_cut_into_parts_a_tenth_as_long(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A page read by OCR costs about ten text pages: a scanned PDF's parts are shorter, so a
    few short scans spread over the workers; a file with a text layer keeps the setting."""
    import sys
    from pathlib import Path

    from docsight.ingest.split import MIN_SCAN_PART, SCAN_COST, part_size
    from docsight.settings import Settings
    from fixtures import scangen

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
    from make_large_pdf import make_large_pdf

    scans = scangen.make_scans(tmp_path / "scans", dpi=72)
    scanned = scans.image_pdf.read_bytes()
    make_large_pdf(tmp_path / "report.pdf", pages=3)
    report = (tmp_path / "report.pdf").read_bytes()
    settings = Settings()
    pdf = "application/pdf"
    assert part_size(40, 8, pdf, scanned, settings) == 40 // SCAN_COST == 4
    assert part_size(40, 8, pdf, report, settings) == 40
    assert part_size(10, 8, pdf, scanned, settings) == MIN_SCAN_PART
    # Too short to split, no splitting at all, no OCR, or not a PDF: nothing is probed.
    assert part_size(40, MIN_SCAN_PART, pdf, scanned, settings) == 40
    assert part_size(0, 8, pdf, scanned, settings) == 0
    assert part_size(40, 8, pdf, scanned, Settings(parse={"ocr": "never"})) == 40
    assert part_size(40, 8, "image/tiff", scans.tiff.read_bytes(), settings) == 40
    assert part_size(40, 8, pdf, b"%PDF-1.7 broken", settings) == 40

    # The splitter cuts by the part size the job reported.
    splitter = PageSplitter(40)
    splitter.prepare(3, JOB)
    step = splitter.result(JobResult(3, split_pages=8, split_part=4))
    assert [job.page_range for _, job in step.jobs] == [(0, 4), (4, 8)]


def test_the_worker_asks_for_short_parts_of_a_scanned_pdf(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from PIL import Image, ImageDraw

    from docsight.document.ids import bytes_sha256
    from docsight.ingest.worker import SplitRequested, run_job
    from docsight.settings import Settings

    pages = []
    for n in range(6):
        page = Image.new("RGB", (600, 800), "white")
        ImageDraw.Draw(page).text((50, 50), f"Scanned page {n + 1}", fill="black")
        pages.append(page)
    path = tmp_path / "scan.pdf"
    pages[0].save(path, save_all=True, append_images=pages[1:], resolution=72)
    data = path.read_bytes()
    job = ParseJob(
        path=str(path), sha256=bytes_sha256(data), media_type="application/pdf", pages_per_part=40
    )
    with pytest.raises(SplitRequested) as split:
        run_job(job, Settings(), None, None)
    assert (split.value.pages, split.value.per_part) == (6, 4)


def _spooled(tmp_path: Path, text: str) -> Spooled:
    with SpoolWriter(str(tmp_path), ".part") as writer:
        return writer.put(text.encode())


def test_spooled_parts_go_to_the_finishing_job_and_their_files_with_the_file(
    tmp_path: Path,
) -> None:
    splitter = PageSplitter(4)
    (k0, _), (k1, _), (k2, _) = _split(splitter)
    parts = {k: _spooled(tmp_path, f"part {k}") for k in (k0, k1, k2)}
    for k in (k0, k2):
        assert splitter.result(JobResult(k, part=PartOutput(parts[k]))).jobs == []
    [(finish_key, finish)] = splitter.result(JobResult(k1, part=PartOutput(parts[k1]))).jobs
    # The finishing job is told where the parts lie; it reads them itself.
    assert finish.parts == [parts[k0], parts[k1], parts[k2]]
    assert [load_bytes(p) for p in finish.parts] == [b"part %d" % k for k in (k0, k1, k2)]
    assert all(Path(p.path).is_file() for p in parts.values())
    done = splitter.result(JobResult(finish_key, output=_output()))
    assert done.result is not None and done.result.output is not None
    assert not any(Path(p.path).exists() for p in parts.values())


def test_a_failed_file_deletes_its_spooled_parts_even_those_that_come_later(
    tmp_path: Path,
) -> None:
    splitter = PageSplitter(4)
    (k0, _), (k1, _), (k2, _) = _split(splitter)
    first, late = _spooled(tmp_path, "first"), _spooled(tmp_path, "late")
    assert splitter.result(JobResult(k0, part=PartOutput(first))).jobs == []
    failed = splitter.result(JobResult(k1, error_code="timeout", reason="too slow"))
    assert failed.result is not None and failed.result.error_code == "timeout"
    assert failed.drop == {k2}
    assert not Path(first.path).exists()
    # A range that was running when the file failed still returns its part: it goes too.
    assert splitter.result(JobResult(k2, part=PartOutput(late))) == Step()
    assert not Path(late.path).exists()
