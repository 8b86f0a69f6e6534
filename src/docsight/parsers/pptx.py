"""PowerPoint (PPTX) through python-pptx: one page per slide, shapes in reading order.

Each slide becomes a page measured in points. Its title placeholder becomes a level-1 heading, so
the slides form the section tree; the other shapes follow top to bottom and left to right, group
shapes are entered with their coordinate transforms, and every element keeps the box of its shape
normalised by the slide size. Charts keep their data as a Markdown table, speaker notes become a
NOTE of their slide.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

from docsight.document.captions import caption_target
from docsight.document.model import BBox, ElementKind, ParsedDocument
from docsight.document.tables import rows_to_markdown, rows_to_text
from docsight.errors import LimitExceededError, ParseError
from docsight.parsers.base import ParseContext, SourceFile
from docsight.parsers.ooxml import (
    MAX_REPEAT_CHARS,
    chart_content,
    check_archive,
    core_metadata,
    image_asset,
    library_errors,
    list_markdown,
)
from docsight.parsers.textutil import clean_text, squash_spaces
from docsight.settings import ParseSettings

_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_P = "{http://schemas.openxmlformats.org/presentationml/2006/main}"
#: 10 × 7.5 inches, PowerPoint's default when presentation.xml names no slide size.
_DEFAULT_SIZE = (9_144_000, 6_858_000)
_EMU_PER_POINT = 12_700
#: Shapes whose tops differ by less than this share of the slide height read as one row.
_ROW_TOLERANCE = 0.02
_MAX_GROUP_DEPTH = 20
_FURNITURE = {
    "SLIDE_NUMBER": ElementKind.FOOTER,
    "FOOTER": ElementKind.FOOTER,
    "DATE": ElementKind.FOOTER,
    "HEADER": ElementKind.HEADER,
}


@dataclass
class _Placed:
    shape: Any
    box: tuple[float, float, float, float] | None  # x0, y0, x1, y1 in slide EMU


def _text(value: str | None) -> str:
    """Clean text, keeping line breaks (python-pptx renders ``<a:br>`` as a vertical tab)."""
    lines = clean_text((value or "").replace("\v", "\n")).split("\n")
    return "\n".join(line for line in (squash_spaces(x) for x in lines) if line)


def _xfrm_numbers(el: Any, tag: str, a: str, b: str) -> tuple[float, float] | None:
    found = el.find(_A + tag) if el is not None else None
    if found is None:
        return None
    try:
        return float(found.get(a, 0)), float(found.get(b, 0))
    except ValueError:
        return None


def _placed(shapes: Any, transform: tuple[float, float, float, float], depth: int) -> list[_Placed]:
    """Shapes with absolute boxes; ``transform`` is (sx, sy, tx, ty) from group to slide space."""
    from pptx.shapes.group import GroupShape

    sx, sy, tx, ty = transform
    placed: list[_Placed] = []
    for shape in shapes:
        box: tuple[float, float, float, float] | None = None
        try:
            left, top, width, height = shape.left, shape.top, shape.width, shape.height
        except Exception:  # placeholders whose layout counterpart is missing
            left = top = width = height = None
        if None not in (left, top, width, height):
            x0, y0 = sx * left + tx, sy * top + ty
            box = (x0, y0, x0 + sx * width, y0 + sy * height)
        if isinstance(shape, GroupShape):
            if depth < _MAX_GROUP_DEPTH:
                marker = _GroupMarker(shape, _group_transform(shape, transform), depth)
                placed.append(_Placed(marker, box))
        else:
            placed.append(_Placed(shape, box))
    return placed


class _GroupMarker:
    """A group shape in the reading order; its children are read in place, in their own order."""

    def __init__(self, shape: Any, transform: tuple[float, float, float, float], depth: int):
        self.shape = shape
        self.transform = transform
        self.depth = depth


def _group_transform(
    group: Any, transform: tuple[float, float, float, float]
) -> tuple[float, float, float, float]:
    sx, sy, tx, ty = transform
    xfrm = group._element.find(f"{_P}grpSpPr/{_A}xfrm")
    off = _xfrm_numbers(xfrm, "off", "x", "y")
    ext = _xfrm_numbers(xfrm, "ext", "cx", "cy")
    ch_off = _xfrm_numbers(xfrm, "chOff", "x", "y")
    ch_ext = _xfrm_numbers(xfrm, "chExt", "cx", "cy")
    if not (off and ext and ch_off and ch_ext) or not ch_ext[0] or not ch_ext[1]:
        return transform  # children are already in the parent's space
    kx, ky = ext[0] / ch_ext[0], ext[1] / ch_ext[1]
    # child → group: x' = off + (x - chOff) * k; then group → slide through the outer transform.
    return (
        sx * kx,
        sy * ky,
        sx * (off[0] - ch_off[0] * kx) + tx,
        sy * (off[1] - ch_off[1] * ky) + ty,
    )


def _reading_order(items: list[_Placed], slide_height: float) -> list[_Placed]:
    """Top to bottom in rows of roughly equal top, each row left to right; unplaced ones last."""
    boxed = sorted(((p.box, p) for p in items if p.box is not None), key=lambda bp: bp[0][1])
    rows: list[list[tuple[tuple[float, float, float, float], _Placed]]] = []
    tolerance = slide_height * _ROW_TOLERANCE
    for box, item in boxed:
        if rows and box[1] - rows[-1][0][0][1] <= tolerance:
            rows[-1].append((box, item))
        else:
            rows.append([(box, item)])
    ordered = [p for row in rows for _, p in sorted(row, key=lambda bp: bp[0][0])]
    return ordered + [p for p in items if p.box is None]


def _bullet(paragraph: Any, default: bool) -> tuple[bool, bool]:
    """(is a bullet, is numbered) from the paragraph's own properties or the shape's default."""
    ppr = paragraph._p.find(_A + "pPr")
    if ppr is not None:
        if ppr.find(_A + "buNone") is not None:
            return False, False
        if ppr.find(_A + "buAutoNum") is not None:
            return True, True
        if ppr.find(_A + "buChar") is not None or ppr.find(_A + "buBlip") is not None:
            return True, False
    return default, False


def _alt_text(shape: Any) -> str:
    element = shape._element
    for child in element:  # the nvXxPr holder comes first and holds cNvPr
        cnvpr = child.find(_P + "cNvPr")
        if cnvpr is not None:
            return _text(cnvpr.get("descr") or cnvpr.get("title") or "")
    return ""


class _SlideReader:
    def __init__(self, source: SourceFile, settings: ParseSettings, prs: Any) -> None:
        self.source = source
        self.settings = settings
        self.builder = source.builder(f"{PptxParser.name}/{PptxParser.version}")
        self.builder.layout = "horizontal"
        width, height = prs.slide_width, prs.slide_height
        if not width or not height or width <= 0 or height <= 0:
            width, height = _DEFAULT_SIZE
        self.width, self.height = float(width), float(height)
        self.page = 0
        self.attrs: dict[str, Any] = {}
        self.figures = 0

    def bbox(self, box: tuple[float, float, float, float] | None) -> BBox | None:
        if box is None:
            return None
        return BBox.from_absolute(box[0], box[1], box[2], box[3], self.width, self.height)

    def add(self, kind: ElementKind, text: str, box: Any = None, **kwargs: Any) -> None:
        attrs = {**self.attrs, **kwargs.pop("attrs", {})}
        self.builder.add(kind, text, page=self.page, bbox=self.bbox(box), attrs=attrs, **kwargs)

    def slide(self, index: int, slide: Any) -> str | None:
        """Read one slide onto a new page; returns the slide title."""
        self.page = self.builder.add_page(
            width=self.width / _EMU_PER_POINT, height=self.height / _EMU_PER_POINT
        )
        self.attrs = {"slide": index + 1}
        if slide._element.get("show") in ("0", "false"):
            self.attrs["hidden"] = True
        title_shape = slide.shapes.title
        title: str | None = None
        items = _placed(slide.shapes, (1.0, 1.0, 0.0, 0.0), 0)
        if title_shape is not None:
            element = title_shape._element
            found = next((p for p in items if getattr(p.shape, "_element", None) is element), None)
            title = " ".join(_text(title_shape.text_frame.text).split()) or None
            if found is not None:
                items.remove(found)
                if title:
                    self.add(ElementKind.HEADING, title, found.box, level=1)
        self.shapes(items)
        if slide.has_notes_slide:
            frame = slide.notes_slide.notes_text_frame
            notes = _text(frame.text) if frame is not None else ""
            if notes:
                self.add(ElementKind.NOTE, notes, attrs={"notes": True})
        return title

    def shapes(self, items: list[_Placed]) -> None:
        for item in _reading_order(items, self.height):
            if isinstance(item.shape, _GroupMarker):
                group = item.shape
                self.shapes(_placed(group.shape.shapes, group.transform, group.depth + 1))
                continue
            try:
                self.shape(item)
            except Exception as exc:  # one odd shape should not cost the whole deck
                if isinstance(exc, (LimitExceededError, MemoryError)):
                    raise
                self.builder.warn(f"slide {self.attrs['slide']}: shape skipped ({exc!r:.200})")

    def shape(self, item: _Placed) -> None:
        from pptx.shapes.picture import Picture

        shape, box = item.shape, item.box
        if getattr(shape, "has_chart", False):
            self.chart(shape.chart, box)
        elif getattr(shape, "has_table", False):
            self.table(shape.table, box)
        elif isinstance(shape, Picture):
            self.picture(shape, box)
        elif getattr(shape, "has_text_frame", False):
            self.text_frame(shape, box)

    def text_frame(self, shape: Any, box: Any) -> None:
        from pptx.enum.shapes import PP_PLACEHOLDER

        default_bullet = False
        if shape.is_placeholder:
            kind = shape.placeholder_format.type
            furniture = _FURNITURE.get(kind.name if kind is not None else "")
            if furniture is not None:
                text = " ".join(_text(shape.text_frame.text).split())
                if text:  # slide numbers, dates and footers: kept but never indexed
                    self.add(furniture, text, box, attrs={"placeholder": kind.name.lower()})
                return
            # Body and content placeholders inherit bullets from the slide master.
            default_bullet = kind in (PP_PLACEHOLDER.BODY, PP_PLACEHOLDER.OBJECT)
        runs: list[tuple[bool, list[tuple[int, bool, str]]]] = []
        for paragraph in shape.text_frame.paragraphs:
            text = _text(paragraph.text)
            if not text:
                continue
            bullet, ordered = _bullet(paragraph, default_bullet)
            if not runs or runs[-1][0] != bullet:
                runs.append((bullet, []))
            runs[-1][1].append((int(paragraph.level or 0), ordered, text))
        for bullet, items in runs:
            text = "\n".join(t for _, _, t in items)
            if bullet:
                self.add(
                    ElementKind.LIST,
                    text,
                    box,
                    markdown=list_markdown(items),
                    attrs={"items": len(items)},
                )
            else:
                kind = ElementKind.CAPTION if caption_target(text) else ElementKind.PARAGRAPH
                self.add(kind, text, box)

    def table(self, table: Any, box: Any) -> None:
        n_rows, n_cols = len(table.rows), len(table.columns)
        if n_rows * n_cols > self.settings.max_sheet_cells:
            # The grid is declared, not backed by cells: keep the first rows that fit.
            n_rows = max(1, self.settings.max_sheet_cells // max(1, n_cols))
            self.builder.warn(f"slide {self.attrs['slide']}: table cut to {n_rows} rows")
        grid = [["" for _ in range(n_cols)] for _ in range(n_rows)]
        for r in range(n_rows):
            for c in range(n_cols):
                cell = table.cell(r, c)
                if cell.is_spanned:
                    continue
                text = " ".join(_text(cell.text).split())
                height = max(1, cell.span_height) if cell.is_merge_origin else 1
                width = max(1, cell.span_width) if cell.is_merge_origin else 1
                # A merged cell's text is repeated over the grid cells it covers, if short.
                repeat = text if len(text) <= MAX_REPEAT_CHARS else ""
                for rr in range(r, min(n_rows, r + height)):
                    for cc in range(c, min(n_cols, c + width)):
                        grid[rr][cc] = repeat
                grid[r][c] = text
        if any(any(row) for row in grid):
            self.add(
                ElementKind.TABLE,
                rows_to_text(grid),
                box,
                markdown=rows_to_markdown(grid),
                attrs={"rows": n_rows, "cols": n_cols},
            )

    def picture(self, shape: Any, box: Any) -> None:
        alt = _alt_text(shape)
        bbox = self.bbox(box)
        if bbox is not None and bbox.area < self.settings.min_figure_area and not alt:
            return  # icons and bullets drawn as pictures
        self.figures += 1
        image_id: str | None = None
        attrs: dict[str, Any] = {}
        if self.settings.extract_figures:
            try:
                blob = shape.image.blob
            except Exception:  # linked (not embedded) or missing image
                blob = None
            if blob:
                where = f"slide {self.attrs['slide']} image {self.figures}"
                image_id, attrs = image_asset(self.builder, blob, self.settings, where)
        self.add(ElementKind.FIGURE, alt, box, image_id=image_id, attrs=attrs)

    def chart(self, chart: Any, box: Any) -> None:
        summary, markdown, attrs = chart_content(chart)
        self.add(ElementKind.CHART, summary, box, markdown=markdown, attrs=attrs)


class PptxParser:
    name = "pptx"
    version = "1"

    def parse(
        self, source: SourceFile, settings: ParseSettings, context: ParseContext | None = None
    ) -> ParsedDocument:
        check_archive(source.path, source.data, settings)
        with library_errors(source.path, "invalid PowerPoint file"):
            from pptx.package import Package
            from pptx.parts.presentation import PresentationPart

            part = Package.open(io.BytesIO(source.data)).main_document_part
            if not isinstance(part, PresentationPart):
                raise ParseError(source.path, "not a PowerPoint file (no presentation part)")
            prs = part.presentation
            slides = list(prs.slides)
            if len(slides) > settings.max_pages:
                raise LimitExceededError(
                    source.path,
                    f"{len(slides)} slides, more than the limit of {settings.max_pages}",
                )
            reader = _SlideReader(source, settings, prs)
            titles = [reader.slide(i, slide) for i, slide in enumerate(slides)]
            title, metadata = core_metadata(prs.core_properties)
            if not reader.builder.elements:
                reader.builder.warn("no text")
            return reader.builder.build(
                title=title or next((t for t in titles if t), None), metadata=metadata
            )
