"""The PDF parser: opening and validation, document-level reads and the three passes.

pypdfium2 opens and validates the file (so encryption and corruption are reported before anything
else runs), counts pages, reads the outline and metadata, renders pages and crops, and supplies
each page's glyphs, drawn shapes and images (:mod:`.pdfium_objects`; pdfminer's reading of the
same, :mod:`.extract`, with ``parse.pdf_objects = "pdfminer"``). pdfplumber's finder turns the
shapes into ruled tables.

The parse runs in three passes: extraction per page (renders, tables, figures, lines; OCR for
pages without a usable text layer, see :mod:`~docsight.parsers.pdf.scan`), document
statistics (decoration, running headers and footers, reading order and blocks, then body font
size, heading levels and outline matching in :mod:`~docsight.parsers.pdf.roles`), and emission in
reading order through the :class:`DocumentBuilder` (:mod:`~docsight.parsers.pdf.emit`). Passes
2 and 3 take the pages one at a time from where pass 1 left them
(:mod:`~docsight.parsers.pdf.passes`): a long document's pages wait there packed, so its memory
does not grow with its pages' words.
"""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Iterable, Iterator
from typing import Any

from docsight.document.builder import DocumentBuilder
from docsight.document.model import ParsedDocument
from docsight.document.tables import normalize_rows
from docsight.errors import (
    DocsightError,
    EncryptedDocumentError,
    LimitExceededError,
    ParseError,
)
from docsight.parsers.base import ParseContext, SourceFile
from docsight.parsers.pdf.extract import (
    MAX_VECTOR_OBJECTS,
    Objects,
    crop_asset,
    render_page,
    vector_objects,
)
from docsight.parsers.pdf.figures import add_figures
from docsight.parsers.pdf.layout import Word, group_lines, inside, words_from_glyphs
from docsight.parsers.pdf.page import Page, Rect
from docsight.parsers.pdf.passes import LIVE_PAGES, PageStore, finish_pages
from docsight.parsers.pdf.pdfium_objects import pdfium_glyphs, pdfium_objects
from docsight.parsers.pdf.scan import OcrRun, ocr_page, wants_ocr
from docsight.parsers.pdf.tables import find_tables, table_atom, with_row_labels
from docsight.parsers.pdf.visibility import VisibilityCheck
from docsight.parsers.textutil import clean_text, squash_spaces
from docsight.settings import ParseSettings

_FPDF_ERR_PASSWORD = 4
_FPDF_ERR_SECURITY = 6
_TITLE_JUNK = re.compile(
    r"^(?:untitled|microsoft word|document\d*|slide \d+)|\.(?:docx?|pdf|indd|pptx?|qxd)$", re.I
)
#: Values PDF producers write when they know nothing (reportlab's defaults among them).
_PLACEHOLDERS = {"unspecified", "anonymous", "unknown", "untitled", "none", "n/a", "-"}
_DATE = re.compile(r"^D:(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2})?")


class PdfParser:
    name = "pdf"
    #: Pages without a text layer are read by OCR when the ``ocr`` extra is installed.
    uses_ocr = True
    #: Hands the elements to ``context.elements`` page by page when it is set.
    streams_elements = True
    # 2: figure labels as text, the shared caption rule; 3: Markdown lists; 4: OCR of pages
    # without a text layer; 5: hidden text flagged and kept out of the flow; 6: a chart's title
    # is its caption, not a section heading; 7: row labels left of a table's ruled or shaded
    # number columns belong to the table; 8: letter-spaced titles read as words; 9: pages read
    # from pdfium's objects instead of pdfminer's (parse.pdf_objects); 10: page renders named by
    # their recipe, not by their PNG (Asset.recipe_id)
    version = "10"

    def parse(
        self, source: SourceFile, settings: ParseSettings, context: ParseContext | None = None
    ) -> ParsedDocument:
        with self._opened(source, settings) as doc:
            n_pages = _page_count(doc, source, settings)
            builder = source.builder(f"{self.name}/{self.version}")
            metadata, meta_title = _metadata(doc)
            outline = _outline(doc, builder)
            plumber = _open_plumber(source.data, builder, settings)
            # A long document's pages wait packed, on disk, between the passes (see
            # :mod:`.passes`).
            pages = PageStore(packed=n_pages > LIVE_PAGES, spill=n_pages > LIVE_PAGES)
            run = extract_pages(doc, plumber, range(n_pages), settings, builder, context, pages)
            run.finish(builder)
            sink = context.elements if context is not None else None
            return finish_pages(pages, builder, outline, meta_title, metadata, sink)

    def extract_part(
        self,
        source: SourceFile,
        settings: ParseSettings,
        context: ParseContext | None,
        start: int,
        stop: int,
    ) -> bytes:
        """Pass 1 over pages ``start`` to ``stop`` only, for :meth:`parse_parts` (a large file's
        pages spread over workers); see :mod:`~docsight.parsers.pdf.parts`."""
        from docsight.parsers.pdf.parts import extract_part

        with self._opened(source, settings) as doc:
            n_pages = _page_count(doc, source, settings)
            builder = source.builder(f"{self.name}/{self.version}")
            return extract_part(doc, source.data, n_pages, start, stop, settings, builder, context)

    def parse_parts(
        self,
        source: SourceFile,
        settings: ParseSettings,
        context: ParseContext | None,
        parts: Iterable[bytes],
    ) -> ParsedDocument:
        """The document :meth:`parse` gives, from the parts :meth:`extract_part` made of all
        its pages, in page order, read once: passes 2 and 3 over the whole document."""
        from docsight.parsers.pdf.parts import merge_parts

        with self._opened(source, settings) as doc:
            n_pages = _page_count(doc, source, settings)
            builder = source.builder(f"{self.name}/{self.version}")
            metadata, meta_title = _metadata(doc)
            outline = _outline(doc, builder)
            pages = merge_parts(parts, n_pages, builder)
            sink = context.elements if context is not None else None
            return finish_pages(pages, builder, outline, meta_title, metadata, sink)

    @contextlib.contextmanager
    def _opened(self, source: SourceFile, settings: ParseSettings) -> Iterator[Any]:
        """The pdfium document; errors name the file, never leak a library error."""
        import pypdfium2 as pdfium

        if len(source.data) > settings.max_file_mb * 1024 * 1024:
            raise LimitExceededError(source.path, f"larger than {settings.max_file_mb:g} MB")
        try:
            doc = pdfium.PdfDocument(source.data)
        except pdfium.PdfiumError as exc:
            code = getattr(exc, "err_code", None)
            if code == _FPDF_ERR_PASSWORD:
                raise EncryptedDocumentError(source.path, "password protected") from exc
            if code == _FPDF_ERR_SECURITY:
                raise EncryptedDocumentError(source.path, "unsupported encryption") from exc
            raise ParseError(source.path, f"not a readable PDF ({exc})") from exc
        try:
            yield doc
        except DocsightError:
            raise
        except Exception as exc:  # the contract: name the file, never leak a library error
            raise ParseError(source.path, f"PDF could not be parsed ({exc})") from exc
        finally:
            doc.close()


def _page_count(doc: Any, source: SourceFile, settings: ParseSettings) -> int:
    n_pages = len(doc)
    if n_pages < 1:
        raise ParseError(source.path, "the PDF has no pages")
    if n_pages > settings.max_pages:
        raise LimitExceededError(
            source.path, f"{n_pages} pages, more than the limit of {settings.max_pages}"
        )
    return n_pages


def extract_pages(
    doc: Any,
    plumber: Any,
    indexes: range,
    settings: ParseSettings,
    builder: DocumentBuilder,
    context: ParseContext | None,
    into: PageStore,
) -> OcrRun:
    """Pass 1 over the pages ``indexes``, each added to ``into`` and reported through the
    context as it is done; closes ``plumber``."""
    run = OcrRun(context)
    try:
        for done, i in enumerate(indexes, 1):
            into.add(_extract_page(doc, plumber, i, settings, builder, run))
            if context is not None:
                context.report("parse", done, len(indexes))
    finally:
        if plumber is not None:
            plumber.close()
    return run


# --- document-level reads ------------------------------------------------------------------------


def _metadata(doc: Any) -> tuple[dict[str, str], str | None]:
    try:
        raw = doc.get_metadata_dict()
    except Exception:  # metadata is optional; a broken Info dictionary must not fail the parse
        return {}, None
    names = {
        "Author": "author",
        "Subject": "subject",
        "Keywords": "keywords",
        "Creator": "creator",
        "Producer": "producer",
        "CreationDate": "created",
        "ModDate": "modified",
    }
    meta: dict[str, str] = {}
    for key, name in names.items():
        value = squash_spaces(clean_text(str(raw.get(key) or "")))
        if value and value.lower() not in _PLACEHOLDERS:
            meta[name] = _pdf_date(value) if key.endswith("Date") else value
    title = squash_spaces(clean_text(str(raw.get("Title") or ""))).strip(" -–—|:")
    return meta, title if _looks_like_title(title) else None


def _pdf_date(value: str) -> str:
    m = _DATE.match(value)
    if not m:
        return value
    y, mo, d, h, mi, s = (g or "" for g in m.groups())
    out = "-".join(p for p in (y, mo, d) if p)
    return out + (f"T{h}:{mi or '00'}:{s or '00'}" if h else "")


def _looks_like_title(title: str) -> bool:
    if not 3 <= len(title) <= 250 or _TITLE_JUNK.search(title):
        return False
    letters = sum(c.isalpha() for c in title)
    return letters >= 3 and letters >= 0.5 * len(title.replace(" ", ""))


def _outline(doc: Any, builder: DocumentBuilder) -> list[tuple[int, str, int]]:
    """Outline entries as ``(depth, title, page index)``; entries without a target are dropped."""
    entries: list[tuple[int, str, int]] = []
    try:
        for bm in doc.get_toc(max_depth=8):
            dest = bm.get_dest()
            page = dest.get_index() if dest is not None else None
            title = squash_spaces(clean_text(bm.get_title() or ""))
            if page is not None and title:
                entries.append((bm.level, title, page))
    except Exception as exc:  # a cyclic or broken outline only costs us the section hints
        builder.warn(f"outline unreadable: {exc}")
    return entries


def _open_plumber(data: bytes, builder: DocumentBuilder, settings: ParseSettings) -> Any:
    """pdfplumber over the file when ``parse.pdf_objects`` asks for pdfminer; ``None`` has
    the pages read from pdfium's objects."""
    if settings.pdf_objects != "pdfminer":
        return None
    import pdfplumber

    try:
        pdf = pdfplumber.open(io.BytesIO(data))
        _ = len(pdf.pages)
        return pdf
    except Exception as exc:  # pdfium could open it, so its text layer is the fallback
        builder.warn(f"pdfplumber could not read the file ({exc}); using pdfium text only")
        return None


# --- pass 1: extraction per page -----------------------------------------------------------------


def _extract_page(
    doc: Any,
    plumber: Any,
    i: int,
    settings: ParseSettings,
    builder: DocumentBuilder,
    run: OcrRun,
) -> Page:
    pdfium_page = doc[i]
    try:
        w, h = pdfium_page.get_size()
        page = Page(i, float(w), float(h))
        plumber_page = None
        objects = None
        if plumber is None:
            # pdfium's objects (or, on a page drawing too many paths, its text alone).
            try:
                objects = pdfium_objects(pdfium_page, page)
            except Exception as exc:
                builder.warn(f"page {i + 1}: its objects could not be read ({exc}); text only")
        elif i < len(plumber.pages) and vector_objects(pdfium_page) <= MAX_VECTOR_OBJECTS:
            plumber_page = plumber.pages[i]
            x0, top, x1, bottom = plumber_page.cropbox
            page = Page(i, float(x1 - x0), float(bottom - top), origin=(x0, top))
        builder.add_page(page.width, page.height)
        render, scale = None, 1.0
        if settings.render_pages:
            render, scale = render_page(pdfium_page, page, settings, builder)
        if plumber_page is not None:
            try:
                objects = Objects.read(plumber_page)
            except Exception as exc:
                builder.warn(f"page {i + 1}: pdfplumber failed ({exc}); using pdfium text")
                plumber_page.close()
                plumber_page = None
        glyphs = objects.glyphs if objects is not None else pdfium_glyphs(pdfium_page, page)
        ox, oy = page.origin
        frame = (ox, oy, ox + page.width, oy + page.height)
        words = words_from_glyphs(glyphs)
        if settings.flag_hidden_text:
            check = VisibilityCheck(frame, render, scale, settings.min_font_pt)
            words, page.hidden = check.split(words)
        else:
            # Content outside the crop box is invisible in every viewer.
            words = [w for w in words if inside(w, frame, 0.0)]
        # Only visible text counts: a scan carrying a hidden line of text is still read by OCR.
        text_chars = sum(len(w.text) for w in words)
        builder.update_page(i, text_chars=text_chars)
        if wants_ocr(settings, text_chars) and ocr_page(pdfium_page, page, settings, builder, run):
            if plumber_page is not None:
                plumber_page.close()
            return page
        if objects is not None:
            try:
                _find_atoms(
                    plumber_page,
                    objects,
                    page,
                    words,
                    settings,
                    builder,
                    pdfium_page,
                    render,
                    scale,
                )
            except Exception as exc:
                builder.warn(f"page {i + 1}: table/figure detection failed ({exc})")
            finally:
                if plumber_page is not None:
                    plumber_page.close()
        taken = [(a.x0, a.top, a.x1, a.bottom) for a in page.atoms if a.absorbs]
        page.lines = group_lines([w for w in words if not any(inside(w, t) for t in taken)])
        return page
    except Exception as exc:
        builder.warn(f"page {i + 1}: could not be parsed ({exc})")
        if len(builder.pages) <= i:
            builder.add_page()
        return Page(i, builder.pages[i].width or 1.0, builder.pages[i].height or 1.0)
    finally:
        pdfium_page.close()


def _find_atoms(
    plumber_page: Any,
    objects: Objects,
    page: Page,
    words: list[Word],
    settings: ParseSettings,
    builder: DocumentBuilder,
    pdfium_page: Any,
    render: Any,
    scale: float,
) -> None:
    ox, oy = page.origin

    def crop(box: Rect) -> str | None:
        frame_box = (box[0] - ox, box[1] - oy, box[2] - ox, box[3] - oy)
        return crop_asset(pdfium_page, page, frame_box, render, scale, settings, builder)

    # Tables are located even when not extracted, so their rules never pass for a chart.
    tables = find_tables(plumber_page, objects, page, words)
    for i, (box, rows) in enumerate(tables):
        loose = [w for w in words if not any(inside(w, b) for b, _ in tables)]
        labelled = with_row_labels(box, rows, loose + [w for w in words if inside(w, box)])
        if labelled is not None:
            tables[i] = labelled
    if settings.extract_tables:
        for box, rows in tables:
            page.atoms.append(table_atom(box, normalize_rows(rows), crop(box)))
    if settings.extract_figures:
        add_figures(objects, page, words, [box for box, _ in tables], settings, crop)
