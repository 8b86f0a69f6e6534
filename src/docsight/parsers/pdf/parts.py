"""A large PDF parsed in parts: pass 1 of page ranges in several workers, the rest in one.

Pass 1 (extraction) looks at one page at a time and costs nearly all of a born-digital parse
(pdfminer's glyphs, tables, figures, renders) and all of a scan's (OCR). Passes 2 and 3 decide
over the whole document (running headers, body font size, heading levels, the title) and are
cheap. So a long file's pages are split into ranges, each range is extracted by
:func:`extract_part` (in any worker), and :func:`merge_parts` puts the ranges back together in
page order, exactly as the sequential parse would have left them, before passes 2 and 3 run
once. The document, its element ids and its assets are the same as from
:meth:`PdfParser.parse <docsight.parsers.pdf.parser.PdfParser.parse>`. A part's pages travel
packed, each on its own (:class:`~docsight.parsers.pdf.passes.PageStore`), and the finishing job
takes them in as they are: passes 2 and 3 unpack one page at a time.

What a part carries besides its pages is what pass 1 wrote into the document builder: the pages'
sizes, renders and text-layer sizes, the assets (renders and crops, in the order they were
added), the warnings, and the pages OCR could not read for want of the ``ocr`` extra.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from docsight.document.builder import DocumentBuilder
from docsight.document.model import Asset
from docsight.document.model import Page as PageInfo
from docsight.parsers.base import ParseContext
from docsight.parsers.pdf.passes import PageStore
from docsight.parsers.pdf.scan import warn_unread
from docsight.settings import ParseSettings


@dataclass
class Part:
    """Pass 1 of pages ``start`` to ``stop`` (exclusive) of one PDF."""

    start: int
    stop: int
    pages: PageStore
    #: The builder's record of the same pages (size, render id, text-layer characters).
    infos: list[PageInfo]
    assets: list[Asset]
    #: Warnings from opening the file for extraction (the same in every part; the first
    #: part's are kept), then those of the pages.
    open_warnings: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: Pages left unread for want of the ``ocr`` extra, and why.
    unread: list[int] = field(default_factory=list)
    unread_why: str | None = None


def extract_part(
    doc: Any,
    data: bytes,
    n_pages: int,
    start: int,
    stop: int,
    settings: ParseSettings,
    builder: DocumentBuilder,
    context: ParseContext | None,
) -> bytes:
    """Pass 1 over pages ``start`` to ``stop`` of ``doc``, pickled for :func:`merge_parts`."""
    from docsight.parsers.pdf.parser import _open_plumber, extract_pages

    if not 0 <= start < stop <= n_pages:
        raise ValueError(f"pages {start}-{stop} are not within the document's {n_pages}")
    # The builder numbers pages by position: the pages before the range hold their places.
    for _ in range(start):
        builder.add_page()
    plumber = _open_plumber(data, builder, settings)
    opened = len(builder.warnings)
    pages = PageStore(packed=True)
    run = extract_pages(doc, plumber, range(start, stop), settings, builder, context, pages)
    part = Part(
        start=start,
        stop=stop,
        pages=pages,
        infos=builder.pages[start:stop],
        assets=list(builder.assets.values()),
        open_warnings=builder.warnings[:opened],
        warnings=builder.warnings[opened:],
        unread=run.skipped,
        unread_why=run.missing.message if run.missing is not None else None,
    )
    # The pages are compressed already (a page's words and lines pickle to about 56 KiB and
    # shrink fourfold), and the parts of a long file wait in the parent until the last is in.
    return pickle.dumps(part, protocol=pickle.HIGHEST_PROTOCOL)


def merge_parts(parts: Iterable[bytes], n_pages: int, builder: DocumentBuilder) -> PageStore:
    """The pages of every part in order, with what pass 1 wrote into ``builder`` written again
    in the order the sequential parse writes it. The parts must cover the document.

    ``parts`` is read once, one part at a time (an iterator may load each as it is asked for);
    a list is consumed: each part's bytes are replaced by ``b""`` once they are unpickled. Its
    pages are copied out of them, so the caller's parts would otherwise stay resident beside
    the document until its job ended (15 MiB for a 1,000-page report)."""
    pages = PageStore(packed=True, spill=True)
    unread: list[int] = []
    why: str | None = None
    for k, blob in enumerate(_consumed(parts)):
        part: Part = pickle.loads(blob)  # our own workers' output
        del blob
        if part.start != len(pages) or len(part.pages) != part.stop - part.start:
            raise ValueError(f"part {k} starts at page {part.start}, not {len(pages)}")
        if k == 0:
            builder.warnings.extend(part.open_warnings)
        builder.pages.extend(part.infos)
        for asset in part.assets:
            # An asset met again (the same logo crop on two pages) keeps its first record.
            builder.keep_asset(asset)
        builder.warnings.extend(part.warnings)
        pages.extend(part.pages)  # packed as they came
        unread.extend(part.unread)
        # Once OCR is found missing, the sequential parse skips every later page needing it.
        why = why or part.unread_why
    if len(pages) != n_pages:
        raise ValueError(f"the parts hold {len(pages)} pages of {n_pages}")
    if why is not None:
        warn_unread(builder, unread, why)
    return pages


def _consumed(parts: Iterable[bytes]) -> Iterator[bytes]:
    if not isinstance(parts, list):
        yield from parts
        return
    for k in range(len(parts)):
        blob, parts[k] = parts[k], b""
        yield blob
