"""Born-digital PDF: pdfplumber for glyphs, rules and tables; pypdfium2 for the rest.

pypdfium2 opens and validates the file (so encryption and corruption are reported before anything
else runs), counts pages, reads the outline and metadata, and renders pages and crops. pdfplumber
supplies glyphs with font names and sizes, vector objects and embedded images, and finds ruled
tables. Pages whose vector content would make pdfplumber crawl (maps, dense charts) take their
glyphs from pdfium's text layer instead.

The parse runs in three passes: extraction per page (renders, tables, figures, lines), document
statistics (running headers and footers, body font size, heading levels, outline matching), and
emission in reading order through the :class:`DocumentBuilder`.

Figure text: words lying inside a figure (chart labels, axis ticks) are moved off the text flow
into ``attrs["labels"]`` of the FIGURE element, whose own ``text`` stays empty for descriptions
added later. A figure holding real prose (a photo behind a text box) keeps its words as text.
"""

from __future__ import annotations

import ctypes
import difflib
import io
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from statistics import median
from typing import Any

from docsight.document.builder import DocumentBuilder
from docsight.document.model import BBox, ElementKind, Font, ParsedDocument
from docsight.document.tables import normalize_rows, rows_to_markdown, rows_to_text
from docsight.errors import (
    DocsightError,
    EncryptedDocumentError,
    LimitExceededError,
    ParseError,
)
from docsight.parsers.base import SourceFile
from docsight.parsers.pdf_layout import (
    Block,
    Glyph,
    Line,
    Word,
    base_font_name,
    cluster_boxes,
    find_furniture,
    font_style,
    grid_from_lines,
    group_blocks,
    group_lines,
    inside,
    join_lines,
    merge_row_segments,
    reading_order,
    rule_regions,
    starts_with_bullet,
    words_from_glyphs,
)
from docsight.parsers.textutil import clean_text, squash_spaces
from docsight.settings import ParseSettings

#: Pages with more vector objects than this take their glyphs from pdfium (pdfminer would spend
#: seconds interpreting paths we only need for tables and charts).
MAX_VECTOR_OBJECTS = 4000
_FPDF_ERR_PASSWORD = 4
_FPDF_ERR_SECURITY = 6
_FPDF_PAGEOBJ_PATH = 2
_FPDF_PAGEOBJ_FORM = 5

_CAPTION = re.compile(
    r"^(?:fig(?:ure)?\.?|table|tab\.|chart|exhibit)\s*[0-9IVX]+[a-z]?(?:\s*[.:|—–-]|\s*$|\s+[A-Z])",
    re.I,
)
#: Dot leaders of a table of contents ("Introduction . . . . 7").
_LEADERS = re.compile(r"(?:\.\s?){3,}\s*[0-9ivxlc]*$|…\s*[0-9ivxlc]*$")
_TITLE_JUNK = re.compile(
    r"^(?:untitled|microsoft word|document\d*|slide \d+)|\.(?:docx?|pdf|indd|pptx?|qxd)$", re.I
)
#: Values PDF producers write when they know nothing (reportlab's defaults among them).
_PLACEHOLDERS = {"unspecified", "anonymous", "unknown", "untitled", "none", "n/a", "-"}
_DATE = re.compile(r"^D:(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2})?")


@dataclass
class _Atom:
    """A table or figure placed in the reading order like a line."""

    kind: ElementKind
    x0: float
    top: float
    x1: float
    bottom: float
    text: str = ""
    markdown: str | None = None
    image_id: str | None = None
    attrs: dict[str, Any] = field(default_factory=dict)
    #: Whether the words inside belong to the atom (cells, labels) rather than the text flow.
    absorbs: bool = True
    #: The lines a figure took over as labels (returned to the flow if it proves decoration).
    lines: list[Line] = field(default_factory=list)


@dataclass
class _Page:
    index: int
    width: float
    height: float
    #: Offset of the visible frame (crop box) in the glyph coordinate system.
    origin: tuple[float, float] = (0.0, 0.0)
    lines: list[Line] = field(default_factory=list)
    atoms: list[_Atom] = field(default_factory=list)
    units: list[Block | _Atom] = field(default_factory=list)
    furniture: dict[int, str] = field(default_factory=dict)

    def bbox(self, x0: float, top: float, x1: float, bottom: float) -> BBox:
        ox, oy = self.origin
        return BBox.from_absolute(x0 - ox, top - oy, x1 - ox, bottom - oy, self.width, self.height)


@dataclass
class _Role:
    kind: ElementKind
    level: int | None = None


class PdfParser:
    name = "pdf"
    version = "1"

    def parse(self, source: SourceFile, settings: ParseSettings) -> ParsedDocument:
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
            return self._parse(doc, source, settings)
        except DocsightError:
            raise
        except Exception as exc:  # the contract: name the file, never leak a library error
            raise ParseError(source.path, f"PDF could not be parsed ({exc})") from exc
        finally:
            doc.close()

    def _parse(self, doc: Any, source: SourceFile, settings: ParseSettings) -> ParsedDocument:
        n_pages = len(doc)
        if n_pages < 1:
            raise ParseError(source.path, "the PDF has no pages")
        if n_pages > settings.max_pages:
            raise LimitExceededError(
                source.path, f"{n_pages} pages, more than the limit of {settings.max_pages}"
            )
        builder = source.builder(f"{self.name}/{self.version}")
        metadata, meta_title = _metadata(doc)
        outline = _outline(doc, builder)
        plumber = _open_plumber(source.data, builder)
        pages: list[_Page] = []
        try:
            for i in range(n_pages):
                pages.append(_extract_page(doc, plumber, i, settings, builder))
        finally:
            if plumber is not None:
                plumber.close()
        _layout(pages)
        _emit(pages, _assign_roles(pages, outline, meta_title), builder)
        # Without a credible metadata title the builder uses the TITLE element.
        return builder.build(title=meta_title, metadata=metadata)


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


def _open_plumber(data: bytes, builder: DocumentBuilder) -> Any:
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
    doc: Any, plumber: Any, i: int, settings: ParseSettings, builder: DocumentBuilder
) -> _Page:
    pdfium_page = doc[i]
    try:
        w, h = pdfium_page.get_size()
        page = _Page(i, float(w), float(h))
        plumber_page = None
        if (
            plumber is not None
            and i < len(plumber.pages)
            and _vector_objects(pdfium_page) <= MAX_VECTOR_OBJECTS
        ):
            plumber_page = plumber.pages[i]
            x0, top, x1, bottom = plumber_page.cropbox
            page = _Page(i, float(x1 - x0), float(bottom - top), origin=(x0, top))
        builder.add_page(page.width, page.height)
        render, scale = None, 1.0
        if settings.render_pages:
            render, scale = _render(pdfium_page, page, settings, builder)
        objects = None
        if plumber_page is not None:
            try:
                objects = _Objects.read(plumber_page)
            except Exception as exc:
                builder.warn(f"page {i + 1}: pdfplumber failed ({exc}); using pdfium text")
                plumber_page.close()
                plumber_page = None
        glyphs = objects.glyphs if objects is not None else _pdfium_glyphs(pdfium_page, page)
        builder.pages[i] = builder.pages[i].model_copy(
            update={"text_chars": sum(1 for g in glyphs if not g.text.isspace())}
        )
        ox, oy = page.origin
        # Content outside the crop box is invisible in every viewer.
        words = [
            w
            for w in words_from_glyphs(glyphs)
            if inside(w, (ox, oy, ox + page.width, oy + page.height), 0.0)
        ]
        if plumber_page is not None and objects is not None:
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
                plumber_page.close()
        taken = [(a.x0, a.top, a.x1, a.bottom) for a in page.atoms if a.absorbs]
        page.lines = group_lines([w for w in words if not any(inside(w, t) for t in taken)])
        return page
    except Exception as exc:
        builder.warn(f"page {i + 1}: could not be parsed ({exc})")
        if len(builder.pages) <= i:
            builder.add_page()
        return _Page(i, builder.pages[i].width or 1.0, builder.pages[i].height or 1.0)
    finally:
        pdfium_page.close()


_Rect = tuple[float, float, float, float]


@dataclass
class _Objects:
    """What one page holds, read straight from pdfminer's layout tree.

    pdfplumber turns every object into a dict of a dozen resolved attributes, which costs more
    than interpreting the page; walking the layout objects ourselves halves extraction time.
    Coordinates are converted exactly as pdfplumber does (top-left origin, media-box offsets).
    """

    glyphs: list[Glyph]
    images: list[_Rect]
    paths: list[_Rect]
    rules: list[tuple[float, float, float]]
    #: Vertical strokes and filled boxes: without them pdfplumber's ruled-table finder is moot.
    vertical_edges: int

    @classmethod
    def read(cls, plumber_page: Any) -> _Objects:
        from pdfminer.layout import LTChar, LTContainer, LTCurve, LTImage, LTLine, LTRect

        height = plumber_page.height
        mb_x0, mb_top = plumber_page.mediabox[0], plumber_page.mediabox[1]
        out = cls([], [], [], [], 0)
        stack = [iter(plumber_page.layout)]
        while stack:
            obj = next(stack[-1], None)
            if obj is None:
                stack.pop()
                continue
            if isinstance(obj, LTChar):
                if obj.get_text().startswith("(cid:"):
                    continue  # a glyph without a Unicode mapping; its code means nothing
                top, bottom = height - obj.y1 + mb_top, height - obj.y0 + mb_top
                a, b, c, d, _, f = obj.matrix
                if a > 0 and d > 0 and abs(b) < 1e-3 and abs(c) < 1e-3:
                    # Boxes hang from each font's descent, which math fonts (CMSY, CMEX) set
                    # absurdly deep; anchoring every glyph to its baseline keeps a line together.
                    bottom = height - f + mb_top + 0.2 * (bottom - top)
                    top = bottom - (obj.y1 - obj.y0)
                out.glyphs.append(
                    Glyph(
                        obj.get_text(),
                        obj.x0 + mb_x0,
                        top,
                        obj.x1 + mb_x0,
                        bottom,
                        obj.size,
                        base_font_name(str(obj.fontname)),
                        bool(obj.upright),
                    )
                )
                continue
            box = (
                obj.x0 + mb_x0,
                height - obj.y1 + mb_top,
                obj.x1 + mb_x0,
                height - obj.y0 + mb_top,
            )
            if isinstance(obj, LTImage):
                out.images.append(box)
            elif isinstance(obj, LTCurve):
                if not obj.stroke and (not obj.fill or _is_white(obj.non_stroking_color)):
                    continue  # white backgrounds and knock-outs draw nothing visible
                w, h = box[2] - box[0], box[3] - box[1]
                if h <= 2.5 and w >= 40 and isinstance(obj, (LTLine, LTRect)):
                    out.rules.append((box[1], box[0], box[2]))
                elif isinstance(obj, LTRect) or (isinstance(obj, LTLine) and w <= 2.5):
                    out.vertical_edges += 1
                out.paths.append(box)
            elif isinstance(obj, LTContainer):
                stack.append(iter(obj))
        return out


def _vector_objects(pdfium_page: Any) -> int:
    """Path objects on the page, counting inside form XObjects one level deep."""
    import pypdfium2.raw as raw

    n = raw.FPDFPage_CountObjects(pdfium_page.raw)
    if n > MAX_VECTOR_OBJECTS:
        return n
    total = 0
    for k in range(n):
        obj = raw.FPDFPage_GetObject(pdfium_page.raw, k)
        kind = raw.FPDFPageObj_GetType(obj)
        if kind == _FPDF_PAGEOBJ_PATH:
            total += 1
        elif kind == _FPDF_PAGEOBJ_FORM:
            total += raw.FPDFFormObj_CountObjects(obj)
    return total


def _is_white(color: Any) -> bool:
    if isinstance(color, (int, float)):
        return color >= 0.99
    if isinstance(color, (tuple, list)) and all(isinstance(c, (int, float)) for c in color):
        if len(color) in (1, 3):
            return all(c >= 0.99 for c in color)
        if len(color) == 4:  # CMYK
            return all(c <= 0.01 for c in color)
    return False


def _pdfium_glyphs(pdfium_page: Any, page: _Page) -> list[Glyph]:
    """Glyphs from pdfium's text layer, in the same top-left frame as the crop box."""
    import pypdfium2.raw as raw

    left, bottom, right, top = pdfium_page.get_cropbox()
    rotation = pdfium_page.get_rotation() % 360
    w, h = right - left, top - bottom
    textpage = pdfium_page.get_textpage()
    try:
        tp = textpage.raw
        rect = raw.FS_RECTF()
        buf = ctypes.create_string_buffer(128)
        flags = ctypes.c_int()
        fonts: dict[bytes, str] = {}
        glyphs: list[Glyph] = []
        for k in range(raw.FPDFText_CountChars(tp)):
            code = raw.FPDFText_GetUnicode(tp, k)
            if code in (0, 0xFFFE, 0xFFFF) or raw.FPDFText_IsGenerated(tp, k) == 1:
                glyphs.append(Glyph(" ", 0, 0, 0, 0, 1.0, ""))
                continue
            raw.FPDFText_GetLooseCharBox(tp, k, ctypes.byref(rect))
            n = raw.FPDFText_GetFontInfo(tp, k, buf, len(buf), ctypes.byref(flags))
            key = buf.raw[: max(0, n - 1)]
            font = fonts.setdefault(key, base_font_name(key.decode("latin-1")))
            x0, y0 = rect.left - left, top - rect.top
            x1, y1 = rect.right - left, top - rect.bottom
            angle = raw.FPDFText_GetCharAngle(tp, k)
            upright = abs(angle) < 0.1 or abs(angle - 3.14159) < 0.1 or abs(angle - 6.28318) < 0.1
            if rotation:
                x0, y0 = _rotate(x0, y0, w, h, rotation)
                x1, y1 = _rotate(x1, y1, w, h, rotation)
                x0, x1 = sorted((x0, x1))
                y0, y1 = sorted((y0, y1))
                upright = not upright if rotation in (90, 270) else upright
            # pdfium reports the nominal size (1 for text scaled by its matrix); the loose box
            # height is the size as drawn.
            size = max(raw.FPDFText_GetFontSize(tp, k), 0.8 * (y1 - y0), 1.0)
            glyphs.append(Glyph(chr(code), x0, y0, x1, y1, size, font, upright))
        return glyphs
    finally:
        textpage.close()


def _rotate(x: float, y: float, w: float, h: float, rotation: int) -> tuple[float, float]:
    """Top-left coordinates on the unrotated page → on the page as displayed (clockwise)."""
    if rotation == 90:
        return h - y, x
    if rotation == 180:
        return w - x, h - y
    return y, w - x


def _render(
    pdfium_page: Any, page: _Page, settings: ParseSettings, builder: DocumentBuilder
) -> tuple[Any, float]:
    scale = _scale(page, settings)
    try:
        image = pdfium_page.render(scale=scale).to_pil().convert("RGB")
    except Exception as exc:
        builder.warn(f"page {page.index + 1}: render failed ({exc})")
        return None, scale
    asset = builder.add_asset("page", "image/png", _png(image), image.width, image.height)
    builder.set_page_image(page.index, asset)
    return image, scale


def _scale(page: _Page, settings: ParseSettings) -> float:
    scale = settings.render_dpi / 72.0
    pixels = page.width * page.height * scale * scale
    if pixels > settings.max_render_pixels:
        scale *= (settings.max_render_pixels / pixels) ** 0.5
        # pdfium rounds the bitmap size up; keep the rounded size within the limit too.
        while math.ceil(page.width * scale) * math.ceil(page.height * scale) > (
            settings.max_render_pixels
        ):
            scale *= 0.995
    return scale


def _png(image: Any) -> bytes:
    out = io.BytesIO()
    image.save(out, format="PNG", compress_level=1)
    return out.getvalue()


def _crop(
    pdfium_page: Any,
    page: _Page,
    box: tuple[float, float, float, float],
    render: Any,
    scale: float,
    settings: ParseSettings,
    builder: DocumentBuilder,
) -> str | None:
    """PNG crop of ``box`` (frame coordinates) from the page render, or a render of just it."""
    x0, top, x1, bottom = (
        max(0.0, box[0]),
        max(0.0, box[1]),
        min(page.width, box[2]),
        min(page.height, box[3]),
    )
    if x1 - x0 < 1 or bottom - top < 1:
        return None
    try:
        if render is not None:
            image = render.crop(
                (
                    int(x0 * scale),
                    int(top * scale),
                    int(x1 * scale + 0.999),
                    int(bottom * scale + 0.999),
                )
            )
        else:
            # pypdfium2 applies the crop margins after rotation, i.e. in our frame.
            margins = (x0, page.height - bottom, page.width - x1, top)
            image = pdfium_page.render(scale=_scale(page, settings), crop=margins).to_pil()
            image = image.convert("RGB")
    except Exception as exc:
        builder.warn(f"page {page.index + 1}: crop failed ({exc})")
        return None
    return builder.add_asset("crop", "image/png", _png(image), image.width, image.height)


def _find_atoms(
    plumber_page: Any,
    objects: _Objects,
    page: _Page,
    words: list[Word],
    settings: ParseSettings,
    builder: DocumentBuilder,
    pdfium_page: Any,
    render: Any,
    scale: float,
) -> None:
    ox, oy = page.origin
    area = page.width * page.height

    def crop(box: tuple[float, float, float, float]) -> str | None:
        frame_box = (box[0] - ox, box[1] - oy, box[2] - ox, box[3] - oy)
        return _crop(pdfium_page, page, frame_box, render, scale, settings, builder)

    # Tables are located even when not extracted, so their rules never pass for a chart.
    tables = _tables(plumber_page, objects, page, words)
    if settings.extract_tables:
        for box, rows in tables:
            table = normalize_rows(rows)
            page.atoms.append(
                _Atom(
                    ElementKind.TABLE,
                    *box,
                    text=rows_to_text(table),
                    markdown=rows_to_markdown(table),
                    image_id=crop(box),
                    attrs={"rows": len(table), "cols": len(table[0])},
                )
            )
    if settings.extract_figures:
        taken = [box for box, _ in tables]
        free = [w for w in words if not any(inside(w, t) for t in taken)]
        for box, raster in _figures(objects, page, taken):
            fig_area = (box[2] - box[0]) * (box[3] - box[1])
            if fig_area < settings.min_figure_area * area or fig_area > 0.85 * area:
                continue  # decoration, or a full-page background/scan (left to OCR)
            grown, lines = _with_labels(box, free)
            n_words = sum(len(ln.words) for ln in lines)
            if (raster and n_words > 15) or sum(1 for ln in lines if len(ln.words) >= 10) >= 4:
                # Text set over a photo, or prose in a box: the words are content, not labels.
                page.atoms.append(
                    _Atom(ElementKind.FIGURE, *box, image_id=crop(box), absorbs=False)
                )
                continue
            box = grown
            banded = _banded_table(objects, box, lines)
            if banded is not None:
                if settings.extract_tables:  # otherwise its words stay ordinary text
                    page.atoms.append(
                        _Atom(
                            ElementKind.TABLE,
                            *box,
                            text=rows_to_text(banded),
                            markdown=rows_to_markdown(banded),
                            image_id=crop(box),
                            attrs={"rows": len(banded), "cols": len(banded[0])},
                        )
                    )
                continue
            attrs: dict[str, Any] = {}
            if lines:
                attrs["labels"] = clean_text("\n".join(ln.text for ln in lines))
            page.atoms.append(
                _Atom(ElementKind.FIGURE, *box, image_id=crop(box), attrs=attrs, lines=lines)
            )


def _banded_table(objects: _Objects, box: _Rect, lines: list[Line]) -> list[list[str]] | None:
    """Rows of a table drawn with shaded bands or full-width rules instead of a grid.

    Bar charts are also made of rectangles, but their bars vary in length; table bands span
    the table. The text must also fall into a dense grid.
    """
    if sum(len(ln.words) for ln in lines) < 15:
        return None
    width = box[2] - box[0]
    paths = [p for p in objects.paths if inside(_R(p), box, 1.0)]
    if not paths or sum(1 for p in paths if p[2] - p[0] >= 0.8 * width) < 0.5 * len(paths):
        return None
    rows = normalize_rows(grid_from_lines(lines))
    return rows if len(rows) >= 3 and _plausible(rows) else None


def _with_labels(box: _Rect, words: list[Word]) -> tuple[_Rect, list[Line]]:
    """Grow a figure box over the short lines hugging it (axis ticks, legends, panel titles)
    and return the box with the lines of text inside it."""
    near = [w for w in words if _intersects(_grow(box, 40.0), _box(w))]
    lines = group_lines(near)
    for _ in range(4):
        grown = box
        for ln in lines:
            d = max(4.0, ln.size)
            if (
                len(ln.words) <= 6
                and not _CAPTION.match(ln.text)
                and _intersects(_grow(box, d), _box(ln))
            ):
                grown = (
                    min(grown[0], ln.x0),
                    min(grown[1], ln.top),
                    max(grown[2], ln.x1),
                    max(grown[3], ln.bottom),
                )
        if grown == box:
            break
        box = grown
    inner = [ln for ln in lines if inside(ln, box, 0.0)]
    return box, sorted(inner, key=lambda ln: (ln.top, ln.x0))


def _grow(b: _Rect, d: float) -> _Rect:
    return (b[0] - d, b[1] - d, b[2] + d, b[3] + d)


def _box(b: Word | Line) -> _Rect:
    return (b.x0, b.top, b.x1, b.bottom)


def _tables(
    plumber_page: Any, objects: _Objects, page: _Page, words: list[Word]
) -> list[tuple[_Rect, list[list[str]]]]:
    found: list[tuple[_Rect, list[list[str]]]] = []
    ox, oy = page.origin
    frame = (ox - 2, oy - 2, ox + page.width + 2, oy + page.height + 2)
    if objects.vertical_edges >= 2 and len(objects.rules) + objects.vertical_edges >= 4:
        for table in plumber_page.find_tables():
            box = tuple(table.bbox)
            if box[0] < frame[0] or box[1] < frame[1] or box[2] > frame[2] or box[3] > frame[3]:
                continue  # grids running off the page are figure backgrounds, not tables
            rows = normalize_rows(_cells(table, [w for w in words if inside(w, box)]))
            if _plausible(rows):
                found.append((box, rows))
    # LaTeX booktabs and many reports rule tables with horizontal lines only.
    all_lines = group_lines(words) if objects.rules else []
    for x0, top, x1, bottom, ys in rule_regions(objects.rules, all_lines, 0.6 * page.height):
        box = (x0, top - 1, x1, bottom + 1)
        hits = [f for f in found if _intersects(box, f[0])]
        if any(not inside(_R(f[0]), box, 2.0) for f in hits) or (
            sum(_area(f[0]) for f in hits) > 0.6 * _area(box)
        ):
            continue  # the ruled grid already covers it
        lines = group_lines([w for w in words if inside(w, box, 0.0)])
        if len(lines) < 2 or sum(ln.width for ln in lines) > 0.8 * len(lines) * (x1 - x0):
            continue  # empty, or prose between two rules
        head = _header_rows(words, box)
        if head:
            box = (x0, min(ln.top for ln in head) - 1, x1, bottom + 1)
            lines = group_lines([w for w in words if inside(w, box, 0.0)])
            ys = [box[1], *ys]
        rows = normalize_rows(grid_from_lines(lines, ys[1] if len(ys) >= 3 else None))
        if _plausible(rows):
            # Partial vertical rules made pdfplumber see a fragment; the rules bound the whole.
            found = [f for f in found if f not in hits] + [(box, rows)]
    return found


def _header_rows(words: list[Word], box: _Rect) -> list[Line]:
    """Column headings stacked right above a table's top rule (financial statements put their
    header outside the rules): short pieces of text, closely spaced, within the table's width."""
    inner = [w.size for w in words if inside(w, box, 0.0)]
    size = median(inner) if inner else 10.0
    above = [
        w
        for w in words
        if box[0] - 1 <= w.x0
        and w.x1 <= box[2] + 1
        and box[1] - 80 <= w.top
        and w.bottom <= box[1] + 1
    ]
    rows: list[Line] = []
    edge = box[1]
    for ln in sorted(group_lines(above), key=lambda ln: -ln.bottom):
        if edge - ln.bottom > 1.2 * ln.size or len(ln.words) > 5 or ln.size > 1.15 * size:
            break
        rows.append(ln)
        edge = min(edge, ln.top)
    return rows


@dataclass
class _R:
    """A plain box, for geometry helpers that take objects with coordinates."""

    x0: float
    top: float
    x1: float
    bottom: float

    def __init__(self, b: _Rect) -> None:
        self.x0, self.top, self.x1, self.bottom = b


def _area(b: _Rect) -> float:
    return max(0.0, b[2] - b[0]) * max(0.0, b[3] - b[1])


def _cells(table: Any, words: list[Word]) -> list[list[str]]:
    """Cell text from our own words (pdfplumber's extraction drops spaces in tight text)."""
    rows: list[list[str]] = []
    for row in table.rows:
        in_row = [w for w in words if inside(w, row.bbox, 0.5)]
        cells = []
        for cell in row.cells:
            lines = group_lines([w for w in in_row if cell is not None and inside(w, cell, 0.5)])
            lines.sort(key=lambda ln: (ln.top, ln.x0))
            cells.append(join_lines([ln.text for ln in lines]))
        rows.append(cells)
    return rows


def _plausible(rows: list[list[str]]) -> bool:
    """At least 2×2, not mostly empty, and most rows really split into cells (chart gridlines
    and boxed text produce grids whose text sits in one cell)."""
    if len(rows) < 2 or len(rows[0]) < 2:
        return False
    cells = [c for row in rows for c in row]
    multi = sum(1 for row in rows if sum(1 for c in row if c) >= 2)
    return sum(1 for c in cells if not c) <= 0.5 * len(cells) and multi >= 0.5 * len(rows)


def _intersects(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _figures(objects: _Objects, page: _Page, taken: list[_Rect]) -> list[tuple[_Rect, bool]]:
    """Embedded images plus clusters of vector drawing (charts), clipped to the page, each
    with whether it holds a raster image."""
    ox, oy = page.origin
    frame = (ox, oy, ox + page.width, oy + page.height)

    def clip(b: _Rect) -> _Rect:
        return (max(b[0], frame[0]), max(b[1], frame[1]), min(b[2], frame[2]), min(b[3], frame[3]))

    boxes = [clip(b) for b in objects.images]
    vector = []
    for b in map(clip, objects.paths):
        if (b[2] - b[0]) * (b[3] - b[1]) > 0.5 * page.width * page.height:
            continue  # page backgrounds and frames
        if not any(_intersects(b, t) for t in taken):
            vector.append(b)
    clusters = cluster_boxes(vector, gap=10.0)
    for box, count in clusters:
        if count >= 8:
            # Gridlines, legend keys and axis stubs a little further away belong to the chart.
            for other, n in clusters:
                if n < 8 and _intersects(_grow(box, 16.0), other):
                    box = (
                        min(box[0], other[0]),
                        min(box[1], other[1]),
                        max(box[2], other[2]),
                        max(box[3], other[3]),
                    )
            boxes.append(box)
    images = [b for b in boxes[: len(objects.images)] if b[2] > b[0] and b[3] > b[1]]
    merged = [b for b, _ in cluster_boxes([b for b in boxes if b[2] > b[0] and b[3] > b[1]], 0.0)]
    return [
        (b, any(_intersects(b, im) for im in images))
        for b in merged
        if not any(_intersects(b, t) for t in taken)
    ]


# --- pass 2: layout and document statistics ------------------------------------------------------


def _drop_decoration(pages: list[_Page]) -> None:
    """Figures recurring at the same place on many pages are page decoration (slide templates,
    logos, bands): drop them and give their words back to the text flow."""
    boxes: Counter[tuple[int, int, int, int]] = Counter()

    def key(a: _Atom) -> tuple[int, int, int, int]:
        return (round(a.x0 / 4), round(a.top / 4), round(a.x1 / 4), round(a.bottom / 4))

    for page in pages:
        boxes.update({key(a) for a in page.atoms if a.kind == ElementKind.FIGURE})
    need = max(3, math.ceil(0.3 * len(pages)))
    for page in pages:
        for atom in [a for a in page.atoms if a.kind == ElementKind.FIGURE]:
            if boxes[key(atom)] >= need:
                page.atoms.remove(atom)
                page.lines.extend(atom.lines)


def _layout(pages: list[_Page]) -> None:
    _drop_decoration(pages)
    marks = find_furniture([p.lines for p in pages], [(p.origin[1], p.height) for p in pages])
    for page, furniture in zip(pages, marks, strict=True):
        page.furniture = furniture
        body = [ln for k, ln in enumerate(page.lines) if k not in furniture]
        items: list[Line | _Atom] = [*body, *page.atoms]
        ordered = reading_order(items, page.width)
        run: list[tuple[Line, int]] = []
        for item, col in ordered:
            if isinstance(item, Line):
                run.append((item, col))
                continue
            page.units.extend(group_blocks(merge_row_segments(run)))
            run = []
            page.units.append(item)
        page.units.extend(group_blocks(merge_row_segments(run)))


def _norm(text: str) -> str:
    """Lower-case alphanumerics only, without a leading section number, for fuzzy matching."""
    text = re.sub(r"^\s*(?:[0-9IVX]+(?:\.[0-9]+)*\.?|[A-Z]\.)\s+", "", text)
    return " ".join(re.sub(r"[^0-9a-z]+", " ", text.lower()).split())


def _similar(a: str, b: str) -> float:
    if not a or not b:
        return 0.0
    if a == b:
        return 1.0
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return matcher.ratio() if matcher.real_quick_ratio() >= 0.8 else 0.0


@dataclass
class _Features:
    text: str
    size: float
    bold: bool
    words: int
    lines: int

    @property
    def size_class(self) -> float:
        return round(self.size * 2) / 2

    def heading_shape(self, max_words: int = 16) -> bool:
        t = self.text
        letters = sum(c.isalpha() for c in t)
        return (
            bool(t)
            and self.lines <= 3
            and self.words <= max_words
            and len(t) <= 160
            and letters >= 2
            and letters >= 0.5 * len(t.replace(" ", ""))
            and not t[0].islower()
            and not t.endswith((".", ",", ";"))
            and not starts_with_bullet(t)
            and not _CAPTION.match(t)
            and not _LEADERS.search(t)
        )


def _features(block: Block) -> _Features:
    text = squash_spaces(clean_text(block.text))
    _, size = block.dominant_font()
    return _Features(
        text, size, block.style_share("bold") >= 0.7, len(text.split()), len(block.lines)
    )


def _assign_roles(
    pages: list[_Page], outline: list[tuple[int, str, int]], meta_title: str | None
) -> dict[int, _Role]:
    """Kinds and heading levels for every block, keyed by ``id(block)``."""
    sizes: Counter[float] = Counter()
    for page in pages:
        for unit in page.units:
            if isinstance(unit, Block):
                for (_, size), n in unit.font_counts().items():
                    sizes[round(size * 2) / 2] += n
    body = sizes.most_common(1)[0][0] if sizes else 10.0
    matched = _match_outline(pages, outline)
    roles: dict[int, _Role] = {id(b): _Role(ElementKind.HEADING, lvl) for b, lvl in matched}
    title = _find_title(pages[0], body, meta_title) if pages else None
    front: set[int] = set()
    if title is not None:
        roles[id(title)] = _Role(ElementKind.TITLE)
        front = _front_matter(pages[0], title, body, roles)
    candidates: list[tuple[Block, _Features]] = []
    for page in pages:
        for k, unit in enumerate(page.units):
            if not isinstance(unit, Block) or id(unit) in roles:
                continue
            f = _features(unit)
            if id(unit) in front:
                roles[id(unit)] = _Role(ElementKind.PARAGRAPH)
                continue
            big = f.size >= body * 1.08 and f.size - body >= 0.8
            bold_body = (
                f.bold
                and abs(f.size - body) <= 0.12 * body
                and f.lines <= 2
                and _prose_follows(page.units, k, body)
            )
            if (
                (big or bold_body)
                and f.heading_shape(16 if big else 12)
                and not (unit.style_share("monospace") >= 0.5 or unit.style_share("math") >= 0.3)
            ):
                candidates.append((unit, f))
            else:
                roles[id(unit)] = _Role(_body_kind(unit, f))
    for block, level in _heading_levels(candidates, matched, body):
        roles[id(block)] = _Role(ElementKind.HEADING, level)
    return roles


_FRONT_END = re.compile(
    r"^(?:abstract|summary|executive summary|introduction|contents"
    r"|table of contents|overview|preface|foreword)\b",
    re.I,
)


def _front_matter(page: _Page, title: Block, body: float, roles: dict[int, _Role]) -> set[int]:
    """Blocks between the title and the first body text of the title page: authors,
    affiliations, addresses, dates. They are paragraphs, never sections."""
    units = page.units
    start = next(i for i, u in enumerate(units) if u is title)
    front: set[int] = set()
    for unit in units[start + 1 :]:
        if not isinstance(unit, Block):
            continue
        if id(unit) in roles:
            break  # an outline heading
        f = _features(unit)
        if _FRONT_END.match(_norm(f.text)) or (f.words >= 25 and abs(f.size - body) <= 0.1 * body):
            break
        front.add(id(unit))
    return front


def _prose_follows(units: list[Block | _Atom], k: int, body: float) -> bool:
    """Whether a bold body-size line is followed by running text or a bigger heading, as a
    section heading is (bold row labels of tables are followed by more short rows)."""
    nxt = units[k + 1] if k + 1 < len(units) else None
    if not isinstance(nxt, Block):
        return nxt is None  # the last line of a page: the text continues overleaf
    f = _features(nxt)
    return (f.words >= 12 and not f.bold) or f.size >= body * 1.08


def _body_kind(block: Block, f: _Features) -> ElementKind:
    if _CAPTION.match(f.text):
        return ElementKind.CAPTION
    if starts_with_bullet(f.text):
        return ElementKind.LIST
    if block.style_share("monospace") >= 0.8:
        return ElementKind.CODE
    if (
        block.style_share("math") >= 0.35
        and f.lines <= 4
        and len(f.text) <= 300
        and not _LEADERS.search(f.text)
    ):  # TeX sets dot leaders in a math font
        return ElementKind.EQUATION
    return ElementKind.PARAGRAPH


def _heading_levels(
    candidates: list[tuple[Block, _Features]], matched: list[tuple[Block, int]], body: float
) -> list[tuple[Block, int]]:
    """Font-derived heading levels; with an outline, styles seen on outline headings reuse its
    levels and other styles go below the deepest outline level."""
    if matched:
        style_level: dict[tuple[float, bool], int] = {}
        for block, level in matched:
            f = _features(block)
            key = (f.size_class, f.bold)
            style_level[key] = min(level, style_level.get(key, level))
        deepest = max(level for _, level in matched)
        others = sorted(
            {(f.size_class, f.bold) for _, f in candidates} - set(style_level),
            key=lambda k: (-k[0], not k[1]),
        )
        for rank, key in enumerate(others):
            style_level[key] = min(deepest + 1 + rank, 6)
        return [(b, style_level[(f.size_class, f.bold)]) for b, f in candidates]
    big_classes = sorted(
        {f.size_class for _, f in candidates if f.size - body >= 0.8}, reverse=True
    )
    size_level = {size: min(i + 1, 4) for i, size in enumerate(big_classes)}
    bold_level = min(len(big_classes), 4) + 1
    return [
        (b, size_level.get(f.size_class, bold_level) if f.size - body >= 0.8 else bold_level)
        for b, f in candidates
    ]


def _find_title(page: _Page, body: float, meta_title: str | None) -> Block | None:
    blocks = [
        u for u in page.units if isinstance(u, Block) and u.top - page.origin[1] < 0.6 * page.height
    ]
    feats = [(b, _features(b)) for b in blocks]
    feats = [
        (b, f)
        for b, f in feats
        if f.heading_shape(40)
        or (f.lines <= 4 and f.words <= 40 and f.text[:1].isupper() and not f.text.endswith("."))
    ]
    if meta_title:
        want = _norm(meta_title)
        best = max(feats, key=lambda bf: _similar(want, _norm(bf[1].text)), default=None)
        if best is not None and _similar(want, _norm(best[1].text)) >= 0.75:
            return best[0]
    if not feats:
        return None
    block, f = max(feats, key=lambda bf: (bf[1].size, -bf[0].top))
    return block if f.size >= body * 1.15 else None


def _match_outline(
    pages: list[_Page], outline: list[tuple[int, str, int]]
) -> list[tuple[Block, int]]:
    """Blocks carrying outline titles, as ``(block, level)``; a block whose first lines are the
    heading is split so the heading stands alone."""
    used: set[int] = set()
    out: list[tuple[Block, int]] = []
    for depth, title, target in outline:
        want = _norm(title)
        if not want:
            continue
        best: tuple[float, _Page, int, int] | None = None
        for p in (target, target + 1, target - 1):
            if not 0 <= p < len(pages):
                continue
            for idx, unit in enumerate(pages[p].units):
                if not isinstance(unit, Block) or id(unit) in used:
                    continue
                for k in range(1, min(3, len(unit.lines)) + 1):
                    got = _norm(" ".join(ln.text for ln in unit.lines[:k]))
                    score = _similar(want, got)
                    if score >= 0.85 and (best is None or score > best[0]):
                        best = (score, pages[p], idx, k)
            if best is not None:
                break
        if best is None:
            continue
        _, page, idx, k = best
        block = page.units[idx]
        assert isinstance(block, Block)
        if k < len(block.lines):
            rest = Block(block.lines[k:], block.column)
            block.lines = block.lines[:k]
            page.units.insert(idx + 1, rest)
        used.add(id(block))
        out.append((block, depth + 1))
    return out


# --- pass 3: emission ----------------------------------------------------------------------------


def _font(block: Block) -> Font:
    name, size = block.dominant_font()
    style = font_style(name)
    return Font(
        name=name or None,
        size=round(size, 1),
        bold=style.bold,
        italic=style.italic,
        monospace=style.monospace,
    )


def _code_text(block: Block) -> str:
    """Code keeps its line breaks and, roughly, its indentation."""
    x0 = block.x0
    out = []
    for ln in block.lines:
        char_w = max(1.0, sum(w.x1 - w.x0 for w in ln.words) / max(1, ln.n_chars))
        out.append(" " * round((ln.x0 - x0) / char_w) + clean_text(ln.text))
    return "\n".join(out)


def _list_item(text: str) -> tuple[str, str]:
    """``(marker for Markdown, item text)``; bullet glyphs become ``-``."""
    m = re.match(r"^(\(?[0-9a-zA-Z]{1,4}[.)])\s+(.*)$", text)
    if m and not starts_with_bullet(text[:1] + " "):
        return m.group(1), m.group(2)
    return "-", text[1:].strip() if starts_with_bullet(text) else text


def _emit(pages: list[_Page], roles: dict[int, _Role], builder: DocumentBuilder) -> None:
    for page in pages:
        furniture = sorted(
            page.furniture.items(), key=lambda kv: (page.lines[kv[0]].top, page.lines[kv[0]].x0)
        )
        for idx, zone in furniture:
            if zone == "header":
                _emit_furniture(page, page.lines[idx], ElementKind.HEADER, builder)
        units = page.units
        i = 0
        while i < len(units):
            unit = units[i]
            if isinstance(unit, _Atom):
                _emit_atom(page, unit, units, i, roles, builder)
                i += 1
                continue
            role = roles.get(id(unit), _Role(ElementKind.PARAGRAPH))
            if role.kind == ElementKind.LIST:
                items = [unit]
                while i + 1 < len(units):
                    nxt = units[i + 1]
                    if not (
                        isinstance(nxt, Block)
                        and roles.get(id(nxt)) == role
                        and nxt.column == unit.column
                    ):
                        break
                    items.append(nxt)
                    i += 1
                _emit_list(page, items, builder)
            else:
                _emit_block(page, unit, role, builder)
            i += 1
        for idx, zone in furniture:
            if zone == "footer":
                _emit_furniture(page, page.lines[idx], ElementKind.FOOTER, builder)


def _emit_furniture(page: _Page, line: Line, kind: ElementKind, builder: DocumentBuilder) -> None:
    text = squash_spaces(clean_text(line.text))
    if text:
        builder.add(
            kind, text, page=page.index, bbox=page.bbox(line.x0, line.top, line.x1, line.bottom)
        )


def _emit_block(page: _Page, block: Block, role: _Role, builder: DocumentBuilder) -> None:
    kind = role.kind
    markdown = None
    if kind == ElementKind.CODE:
        text = _code_text(block)
        markdown = f"```\n{text}\n```"
    else:
        text = squash_spaces(clean_text(block.text))
    if not text.strip():
        return
    builder.add(
        kind,
        text,
        page=page.index,
        level=role.level,
        bbox=page.bbox(block.x0, block.top, block.x1, block.bottom),
        font=_font(block),
        markdown=markdown,
    )


def _emit_list(page: _Page, blocks: list[Block], builder: DocumentBuilder) -> None:
    items = [_list_item(squash_spaces(clean_text(b.text))) for b in blocks]
    items = [(m, t) for m, t in items if t]
    if not items:
        return
    box = (
        min(b.x0 for b in blocks),
        min(b.top for b in blocks),
        max(b.x1 for b in blocks),
        max(b.bottom for b in blocks),
    )
    builder.add(
        ElementKind.LIST,
        "\n".join(t for _, t in items),
        page=page.index,
        bbox=page.bbox(*box),
        font=_font(blocks[0]),
        markdown="\n".join(f"{m} {t}" for m, t in items),
        attrs={"items": len(items)},
    )


def _emit_atom(
    page: _Page,
    atom: _Atom,
    units: list[Block | _Atom],
    i: int,
    roles: dict[int, _Role],
    builder: DocumentBuilder,
) -> None:
    attrs = dict(atom.attrs)
    want = ("tab",) if atom.kind == ElementKind.TABLE else ("fig", "chart", "exhibit")
    for j in (i - 1, i + 1):
        if 0 <= j < len(units):
            other = units[j]
            if (
                isinstance(other, Block)
                and roles.get(id(other)) is not None
                and roles[id(other)].kind == ElementKind.CAPTION
            ):
                caption = squash_spaces(clean_text(other.text))
                if caption.lower().startswith(want):
                    attrs["caption"] = caption
                    break
    builder.add(
        atom.kind,
        atom.text,
        page=page.index,
        bbox=page.bbox(atom.x0, atom.top, atom.x1, atom.bottom),
        markdown=atom.markdown,
        image_id=atom.image_id,
        attrs=attrs,
    )
