"""Scanned and image-only pages: OCR of a render, fed into the parser's normal passes.

A page whose text layer holds fewer than ``settings.ocr_min_chars`` characters (every page with
``ocr="always"``) is rendered at ``settings.ocr_dpi`` and read by
:func:`docsight.parsers.raster.page.read_page_image`. Its blocks are converted from render pixels
to PDF points and placed on the page as the other passes expect them: text blocks as blocks of
lines (so running headers and footers are found across pages, and emission, list merging and
captions work as for born-digital pages), tables and figures as atoms. The kinds OCR gave the
blocks are kept as hints and override the font-based roles (:func:`apply_hints`), except that the
document's own title and heading levels stay with :mod:`.roles`.

Without the ``ocr`` extra such pages keep whatever text layer they have, and the document gets
one warning naming the extra.

Not done: OCR of embedded images on born-digital pages (a chart's labels). It costs 0.5–3 s per
image and most such images are photos or charts whose text is already in the text layer; the
figure crops are kept, so it can be added where it pays off.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from docsight.document.builder import DocumentBuilder
from docsight.document.model import HEADING_KINDS, ElementKind
from docsight.errors import MissingDependencyError
from docsight.parsers.base import ParseContext
from docsight.parsers.pdf.extract import crop_asset
from docsight.parsers.pdf.layout import Word, group_lines
from docsight.parsers.pdf.page import Atom, Page
from docsight.parsers.pdf.reading import Block
from docsight.parsers.pdf.roles import PendingOcrHeading, Role
from docsight.settings import ParseSettings

_FURNITURE = {ElementKind.HEADER: "header", ElementKind.FOOTER: "footer"}


def wants_ocr(settings: ParseSettings, text_chars: int) -> bool:
    if settings.ocr == "always":
        return True
    return settings.ocr == "auto" and text_chars < settings.ocr_min_chars


@dataclass
class OcrRun:
    """OCR state of one document: the cache, and pages left unread for want of the extra."""

    context: ParseContext | None = None
    missing: MissingDependencyError | None = None
    skipped: list[int] = field(default_factory=list)

    def finish(self, builder: DocumentBuilder) -> None:
        if self.missing is not None:
            warn_unread(builder, self.skipped, self.missing.message)


def warn_unread(builder: DocumentBuilder, skipped: list[int], why: str) -> None:
    """One warning for the pages left unread for want of the ``ocr`` extra."""
    if skipped:
        pages = ", ".join(str(p + 1) for p in skipped[:10])
        more = f" and {len(skipped) - 10} more" if len(skipped) > 10 else ""
        builder.warn(
            f"{len(skipped)} page(s) without a usable text layer were not OCR'd "
            f"(pages {pages}{more}): {why}"
        )


def ocr_page(
    pdfium_page: Any, page: Page, settings: ParseSettings, builder: DocumentBuilder, run: OcrRun
) -> bool:
    """Read ``page`` by OCR into its units; ``False`` when OCR could not run (the caller keeps
    the text layer)."""
    scale = ocr_scale(pdfium_page, page, settings)
    if scale is None:
        return False
    if run.missing is not None:
        run.skipped.append(page.index)
        return False
    try:
        from docsight.parsers.raster.page import read_page_image

        image = pdfium_page.render(scale=scale).to_pil().convert("RGB")
        blocks = read_page_image(image, run.context, settings)
    except MissingDependencyError as exc:
        run.missing = exc
        run.skipped.append(page.index)
        return False
    except Exception as exc:  # a model failure costs this page's OCR, not the document
        builder.warn(f"page {page.index + 1}: OCR failed ({exc})")
        return False
    sx, sy = image.width / page.width, image.height / page.height
    ox, oy = page.origin

    def to_points(box: tuple[float, float, float, float]) -> tuple[float, float, float, float]:
        return (ox + box[0] / sx, oy + box[1] / sy, ox + box[2] / sx, oy + box[3] / sy)

    page.scanned = True
    page.lines, page.atoms, page.units, page.furniture = [], [], [], {}
    for block in blocks:
        if block.kind in (ElementKind.TABLE, ElementKind.FIGURE):
            frame = (block.box[0] / sx, block.box[1] / sy, block.box[2] / sx, block.box[3] / sy)
            image_id = crop_asset(
                pdfium_page, page, frame, image, sx, settings, builder, render_scale=scale
            )
            atom = Atom(
                block.kind,
                *to_points(block.box),
                text=block.text,
                markdown=block.markdown,
                image_id=image_id,
                attrs=_atom_attrs(block.kind, block.rows, block.text, block.score),
            )
            page.atoms.append(atom)
            page.units.append(atom)
            continue
        words: list[Word] = []
        scores: dict[int, float] = {}
        for ln in block.lines:
            w = Word(
                ln.text,
                *to_points(ln.box),
                size=ln.size / sy,
                font="ocr-bold" if ln.bold else "ocr",
                upright=not ln.vertical,
            )
            words.append(w)
            scores[id(w)] = ln.score
        lines = group_lines(words)
        if not lines:
            continue
        for line in lines:
            page.ocr_scores[id(line)] = sum(scores[id(w)] for w in line.words) / len(line.words)
        if block.kind in _FURNITURE:
            for line in lines:
                page.furniture[len(page.lines)] = _FURNITURE[block.kind]
                page.lines.append(line)
            continue
        unit = Block(lines)
        page.lines.extend(lines)
        page.units.append(unit)
        page.hints[id(unit)] = (block.kind, block.level)
    return True


def ocr_scale(pdfium_page: Any, page: Page, settings: ParseSettings) -> float | None:
    """The render scale for OCR, or ``None`` when there is nothing to read.

    With ``ocr="auto"`` a page is read only if it draws something OCR could read: raster images
    covering a share of it, or many vector paths (text converted to outlines). Blank pages and
    pages holding a few words and nothing else are common in born-digital files, and each OCR
    pass costs seconds. A page that is one big raster (a scan) is rendered near the raster's
    own resolution: upsampling a 150 dpi scan to 200 dpi costs time and blurs the glyphs.
    """
    import pypdfium2.raw as raw

    from docsight.vision.ocr import MAX_SIDE

    area = max(1.0, page.width * page.height)
    image_area, native, paths = 0.0, 0.0, 0
    try:
        kinds = (raw.FPDF_PAGEOBJ_IMAGE, raw.FPDF_PAGEOBJ_PATH)
        for seen, obj in enumerate(pdfium_page.get_objects(filter=kinds, max_depth=2)):
            if seen >= _MAX_OBJECTS:
                break  # a map or a dense chart: enough is known
            if obj.type == raw.FPDF_PAGEOBJ_PATH:
                paths += 1
                continue
            left, bottom, right, top = obj.get_bounds()
            share = max(0.0, right - left) * max(0.0, top - bottom) / area
            image_area += share
            if share >= 0.5:
                px_w, _ = obj.get_px_size()
                native = max(native, px_w / max(1.0, right - left))
    except Exception:  # unreadable objects: let OCR decide on the render
        image_area = 1.0
    if settings.ocr == "auto" and image_area < _MIN_IMAGE_AREA and paths < _OUTLINE_PATHS:
        return None
    scale = settings.ocr_dpi / 72.0
    if native:
        scale = min(scale, max(native, _MIN_DPI / 72.0))
    return min(scale, MAX_SIDE / max(page.width, page.height, 1.0))


#: Raster images covering less of the page than this hold no text worth a page of OCR.
_MIN_IMAGE_AREA = 0.02
#: Vector paths from which a page may show text drawn as outlines.
_OUTLINE_PATHS = 50
#: Page objects looked at when deciding.
_MAX_OBJECTS = 5000
#: Scans of lower resolution are upsampled to this for OCR.
_MIN_DPI = 150


def _atom_attrs(
    kind: ElementKind, rows: list[list[str]] | None, text: str, score: float | None
) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    if kind == ElementKind.TABLE and rows:
        attrs.update(rows=len(rows), cols=len(rows[0]))
    elif text:
        attrs["labels"] = text
    attrs["ocr"] = True
    if score is not None:
        attrs["confidence"] = round(score, 3)
    return attrs


def layout_scanned(page: Page, furniture: dict[int, str]) -> None:
    """Pass 2 for a scanned page: the units are already in reading order; lines found to be
    running headers or footers (across pages, or by OCR) leave them."""
    page.furniture = {**furniture, **page.furniture}
    gone = {id(page.lines[k]) for k in page.furniture}
    units: list[Block | Atom] = []
    for unit in page.units:
        if isinstance(unit, Atom):
            if any(unit is a for a in page.atoms):  # figures found to be decoration are gone
                units.append(unit)
            continue
        unit.lines = [ln for ln in unit.lines if id(ln) not in gone]
        if unit.lines:
            units.append(unit)
    page.units = units


def apply_hints(pages: list[Page], roles: dict[int, Role]) -> None:
    """OCR's kinds override font-based roles on scanned pages: OCR has no font names and its
    sizes are estimates, too rough for the roles pass's half-point size classes. The document
    title stays with the roles pass; heading levels come from the sizes of all OCR'd headings
    of the document together, so equal headings on different pages get equal levels."""
    sizes: list[tuple[float, int]] = []
    heads: list[float] = []
    for page in pages:
        hint_roles(page, roles, sizes, heads)
    level = ocr_heading_levels(sizes, heads)
    if level is not None:
        for key, role in roles.items():
            if isinstance(role, PendingOcrHeading):
                roles[key] = Role(ElementKind.HEADING, level(role.size))


def hint_roles(
    page: Page, roles: dict[int, Role], sizes: list[tuple[float, int]], heads: list[float]
) -> None:
    """:func:`apply_hints` for one page: OCR's kinds into ``roles``; its headings wait for their
    levels (:class:`~docsight.parsers.pdf.roles.PendingOcrHeading`). Adds the characters of each
    size of the page's OCR'd blocks to ``sizes``, and each heading's size to ``heads``."""
    for unit in page.units:
        hint = page.hints.get(id(unit))
        if hint is None or not isinstance(unit, Block):
            continue
        counts = unit.font_counts()
        sizes.extend((size, n) for (_, size), n in counts.items())
        kind = hint[0]
        role = roles.get(id(unit))
        if kind not in HEADING_KINDS:
            roles[id(unit)] = Role(kind)
        elif role is None or role.kind != ElementKind.TITLE:
            size = _weighted_median(list(counts.items()))
            roles[id(unit)] = PendingOcrHeading(ElementKind.HEADING, None, size)
            heads.append(size)


def ocr_heading_levels(
    sizes: list[tuple[float, int]], heads: list[float]
) -> Callable[[float], int] | None:
    """The level of an OCR'd heading of a given size, from the sizes of every OCR'd block and
    heading of the document (``None`` without headings)."""
    if not heads:
        return None
    body = _weighted_median([(("", s), n) for s, n in sizes])
    big = sorted((s for s in heads if s >= _BIG * body), reverse=True)
    classes: list[float] = []
    for s in big:
        if not classes or s < _SAME_LEVEL * classes[-1]:
            classes.append(s)

    def level(s: float) -> int:
        rank = sum(1 for c in classes if s < _SAME_LEVEL * c) + 1 if s >= _BIG * body else None
        return min(rank or len(classes) + 1, 6)

    return level


#: OCR'd headings this much larger than the body text are ranked by size; smaller ones (bold
#: at body size) come below them.
_BIG = 1.25
#: Sizes within this ratio of a larger heading's are the same level (OCR sizes vary by ~10%).
_SAME_LEVEL = 0.88


def _weighted_median(counts: list[tuple[tuple[str, float], int]]) -> float:
    """The size carrying the middle character of ``((font, size), characters)`` pairs."""
    pairs = sorted((size, n) for (_, size), n in counts)
    total = sum(n for _, n in pairs)
    acc = 0
    for size, n in pairs:
        acc += n
        if 2 * acc >= total:
            return size
    return pairs[-1][0] if pairs else 10.0
