"""One large file's pages spread over the workers (issue 17).

Files already run in parallel, one per worker; a 1,000-page filing alone would still run on one
core. When ``ingest.pages_per_part`` is set and there are two workers or more, the supervisor
lets a file's job count its pages first (``ParseJob.pages_per_part``): a file of pages (a PDF)
with more pages than that ends its job at once with the count. :class:`PageSplitter` then
queues one job per page range (:func:`run_part`: the parser's per-page pass, nearly all of its
cost) ahead of every other file, and once all ranges are in, one job that finishes the parse from
them and goes on as any file does (picture text, descriptions, chunks: :func:`run_job
<docsight.ingest.worker.run_job>` with ``ParseJob.parts``). The document is exactly the one a
whole-file parse gives (see :class:`~docsight.parsers.base.PagedParser`).

Parts are cut by expected cost, not by pages alone: a PDF whose first pages OCR would read (a
scan) costs about ten times a text PDF a page, so its parts hold a tenth of the pages
(:func:`part_size`), and three 8-page scanned decks spread over two workers instead of the last
one running alone.

Limits stay per job: each range gets the time budget of its pages, and the finishing job that of
the whole file. The file ends as one result: the finishing job's, or the first failure of any of
its jobs (a range that timed out, crashed or ran out of memory), with that job's reason; jobs of
a failed file still queued are dropped and results still to come are ignored. The caller sees
one job per file, as before: progress counts the pages of all ranges, and the result carries the
wall seconds from the first job to the last, the peak memory of the busiest job and the stage
timings of all of them (``parse`` then sums the workers' seconds).
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from docsight.errors import IngestError
from docsight.ingest.spool import Spooled, remove_file
from docsight.ingest.timings import StageClock, model_timings
from docsight.ingest.worker import (
    JobEvents,
    JobResult,
    ParseJob,
    ParseProgress,
    PartOutput,
    verified_bytes,
)
from docsight.settings import Settings

#: The index of a file's finishing job among its jobs (range jobs count from 0).
_FINISH = -1


def run_part(
    job: ParseJob, settings: Settings, context: Any, events: JobEvents | None = None
) -> PartOutput:
    """The parser's per-page pass over ``job.page_range`` of a file split by pages."""
    from docsight.parsers import parser_for
    from docsight.parsers.base import PagedParser, SourceFile
    from docsight.vision.common import model_stats, model_stats_since

    assert job.page_range is not None
    events = events or JobEvents()
    timings: dict[str, float] = {}
    clock = StageClock(timings)
    path = Path(job.path)
    with clock("verify"):
        data = verified_bytes(job)
    parser = parser_for(job.media_type, path)
    if not isinstance(parser, PagedParser):
        raise IngestError(path, f"the {parser.name} parser cannot parse a file in parts")
    start, stop = job.page_range
    events.pages(stop - start)
    events.progress("parse", 0, stop - start)
    source = SourceFile(
        path=path,
        data=data,
        sha256=job.sha256,
        media_type=job.media_type,
        page_pixels=job.rendered_pixels or context.vlm is not None,
    )
    models_start = model_stats()
    with clock("parse"):
        context = dataclasses.replace(context, progress=events.progress)
        blob = parser.extract_part(source, settings.parse, context, start, stop)
    timings.update(model_timings(model_stats_since(models_start, model_stats())))
    return PartOutput(blob, timings)


#: A page read by OCR costs about ten times a page with a text layer: on the dev PDFs, OCR and
#: layout take 3.0 CPU s a scanned page and parsing 0.27 s a text page
#: (``benchmarks/results/ingest_profile.md``). A scanned file's parts are a tenth as long, so a
#: few 8-page scans spread over the workers as one 80-page report would.
SCAN_COST = 10
#: The smallest part worth its own job (each part opens the file again).
MIN_SCAN_PART = 2
#: The first pages probed for a text layer.
_PROBE_PAGES = 3


def part_size(per_part: int, pages: int, media_type: str, data: bytes, settings: Settings) -> int:
    """Pages per part for a file of ``pages`` pages: ``per_part``, or for a PDF whose first
    pages OCR would read (no text layer, or ``parse.ocr = "always"``) ``per_part / SCAN_COST``,
    at least ``MIN_SCAN_PART``. Only a file that could be split is probed."""
    if per_part <= 0 or pages <= MIN_SCAN_PART or not _read_by_ocr(media_type, data, settings):
        return per_part
    return max(MIN_SCAN_PART, per_part // SCAN_COST)


def _read_by_ocr(media_type: str, data: bytes, settings: Settings) -> bool:
    from docsight.parsers import sniff
    from docsight.parsers.pdf.scan import wants_ocr

    if media_type != sniff.PDF or settings.parse.ocr == "never":
        return False
    import pypdfium2 as pdfium

    try:
        doc = pdfium.PdfDocument(data)
    except Exception:  # the parser reports what is wrong with the file
        return False
    try:
        probed = []
        for i in range(min(_PROBE_PAGES, len(doc))):
            page = doc[i]
            text = page.get_textpage()
            probed.append(len(text.get_text_range().strip()))
            text.close()
            page.close()
        return bool(probed) and all(wants_ocr(settings.parse, n) for n in probed)
    except Exception:
        return False
    finally:
        doc.close()


def page_ranges(pages: int, per_part: int) -> list[tuple[int, int]]:
    """``pages`` cut into ranges of at most ``per_part`` pages, as even as they can be."""
    n = max(1, -(-pages // max(1, per_part)))
    bounds = [round(k * pages / n) for k in range(n + 1)]
    return list(itertools.pairwise(bounds))


@dataclass
class _File:
    """A file whose pages are spread over the workers, from its split to its result."""

    key: int
    job: ParseJob
    pages: int
    #: When the file's first job started (``time.monotonic``).
    started: float
    parts: list[PartOutput | None]
    #: Pages each range has been through, for progress.
    done: list[int]
    #: Keys of the file's jobs not yet returned.
    out: set[int] = field(default_factory=set)
    peak_mb: float | None = None
    failed: bool = False
    #: The spool files of its parts, deleted when the file ends.
    spooled: list[str] = field(default_factory=list)


@dataclass
class Step:
    """What the supervisor does after a result: queue ``jobs`` before all others, drop the
    queued jobs ``drop``, and hand ``result`` (the file's, if it has ended) to the caller."""

    jobs: list[tuple[int, ParseJob]] = field(default_factory=list)
    drop: set[int] = field(default_factory=set)
    result: JobResult | None = None
    progress: ParseProgress | None = None


class PageSplitter:
    """The supervisor's bookkeeping of split files: their jobs' keys (negative, so they never
    meet the caller's), their parts, and how their results and progress map onto the file.

    Used from the supervisor's thread only.
    """

    def __init__(self, pages_per_part: int) -> None:
        self.pages_per_part = pages_per_part
        self._jobs: dict[int, tuple[_File, int]] = {}
        #: The caller's jobs not yet returned, by key.
        self._asked: dict[int, ParseJob] = {}
        self._next_key = -1

    def prepare(self, key: int, job: ParseJob) -> ParseJob:
        """The caller's job, allowed to end with its page count if the file is long."""
        if key < 0:
            raise ValueError("job keys below 0 are the splitter's own")
        self._asked[key] = job
        return dataclasses.replace(job, pages_per_part=self.pages_per_part)

    def progress(self, event: ParseProgress) -> ParseProgress | None:
        """The file's progress for a job's report (``None``: nothing to tell the caller)."""
        owner = self._jobs.get(event.key)
        if owner is None:
            return event
        file, index = owner
        if file.failed:
            return None
        if index == _FINISH:
            return dataclasses.replace(event, key=file.key)
        if event.stage != "parse":
            return None
        file.done[index] = min(event.done, event.total or event.done)
        return ParseProgress(file.key, "parse", sum(file.done), file.pages)

    def result(self, result: JobResult) -> Step:
        """What follows from a job's result."""
        owner = self._jobs.pop(result.key, None)
        if owner is None:
            asked = self._asked.pop(result.key, None)
            if result.split_pages and asked is not None:
                return self._split(result, asked)
            return Step(result=result)  # a file parsed whole
        file, index = owner
        file.out.discard(result.key)
        if result.peak_rss_mb is not None:
            file.peak_mb = max(file.peak_mb or 0.0, result.peak_rss_mb)
        if file.failed:
            if result.part is not None and isinstance(result.part.data, Spooled):
                remove_file(result.part.data.path)
            return Step()  # the file has its result already
        if index == _FINISH or result.part is None:
            # The finished parse, or the first failure of any of the file's jobs.
            file.failed = index != _FINISH
            drop = set(file.out) if file.failed else set()
            for path in file.spooled:  # read by the finishing job, or never to be
                remove_file(path)
            return Step(drop=drop, result=self._file_result(file, result))
        file.parts[index] = result.part
        if isinstance(result.part.data, Spooled):
            file.spooled.append(result.part.data.path)
        if any(part is None for part in file.parts):
            return Step()
        key = self._new_key(file, _FINISH)
        # A list: the finishing job's parse empties it as it reads the parts (merge_parts).
        # Spooled parts are only where they lie: the finishing job reads them from the file.
        parts = [part.data for part in file.parts if part is not None]
        job = dataclasses.replace(file.job, pages_per_part=0, parts=parts)
        for part in file.parts:
            if part is not None:
                part.data = b""  # the finishing job holds them now
        return Step(jobs=[(key, job)])

    def forget(self, keys: set[int]) -> None:
        """Jobs dropped from the queue: no result will come for them."""
        for key in keys:
            owner = self._jobs.pop(key, None)
            if owner is not None:
                owner[0].out.discard(key)

    def _split(self, result: JobResult, job: ParseJob) -> Step:
        ranges = page_ranges(result.split_pages, result.split_part or self.pages_per_part)
        file = _File(
            key=result.key,
            job=job,
            pages=result.split_pages,
            started=time.monotonic() - result.seconds,
            parts=[None] * len(ranges),
            done=[0] * len(ranges),
            peak_mb=result.peak_rss_mb,
        )
        jobs = [
            (self._new_key(file, index), dataclasses.replace(job, page_range=pages))
            for index, pages in enumerate(ranges)
        ]
        return Step(jobs=jobs, progress=ParseProgress(file.key, "parse", 0, file.pages))

    def _new_key(self, file: _File, index: int) -> int:
        key, self._next_key = self._next_key, self._next_key - 1
        self._jobs[key] = (file, index)
        file.out.add(key)
        return key

    def _file_result(self, file: _File, result: JobResult) -> JobResult:
        out = dataclasses.replace(
            result,
            key=file.key,
            seconds=time.monotonic() - file.started,
            peak_rss_mb=round(file.peak_mb, 1) if file.peak_mb is not None else None,
        )
        if out.output is not None:
            # The ranges' stages and models count with the file's: parse adds up the seconds
            # of every worker that read pages.
            timings = out.output.timings
            for part in file.parts:
                for name, value in (part.timings if part is not None else {}).items():
                    timings[name] = round(timings.get(name, 0.0) + value, 4)
            timings["parse.parts"] = len(file.parts)
        return out
