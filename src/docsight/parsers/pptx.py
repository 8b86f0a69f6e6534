"""PowerPoint (PPTX) through python-pptx: one page per slide, shapes in reading order.

Each slide becomes a page measured in points. Its title placeholder becomes a level-1 heading, so
the slides form the section tree; the other shapes follow top to bottom and left to right, group
shapes are entered with their coordinate transforms, and every element keeps the box of its shape
normalised by the slide size. Charts keep their data as a Markdown table, speaker notes become a
NOTE of their slide.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from docsight.document.captions import caption_target
from docsight.document.model import BBox, ElementKind, Hidden, ParsedDocument
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
_VISIBLE: frozenset[Hidden] = frozenset()
_MARKED = frozenset({Hidden.MARKED})


@dataclass
class _Placed:
    shape: Any
    box: tuple[float, float, float, float] | None  # x0, y0, x1, y1 in slide EMU
    #: MARKED when the shape or a group around it is marked hidden
    hidden: frozenset[Hidden] = _VISIBLE


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


def _placed(
    shapes: Any,
    transform: tuple[float, float, float, float],
    depth: int,
    inherited: frozenset[Hidden] = _VISIBLE,
) -> list[_Placed]:
    """Shapes with absolute boxes; ``transform`` is (sx, sy, tx, ty) from group to slide space.

    ``inherited`` is MARKED inside a group marked hidden: PowerPoint hides its children too.
    """
    from pptx.shapes.group import GroupShape

    sx, sy, tx, ty = transform
    placed: list[_Placed] = []
    for shape in shapes:
        hidden = inherited | _MARKED if _marked_hidden(shape) else inherited
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
                placed.append(_Placed(marker, box, hidden))
        else:
            placed.append(_Placed(shape, box, hidden))
    return placed


def _cnvpr(element: Any) -> Any:
    for child in element:  # the nvXxPr holder comes first and holds cNvPr
        cnvpr = child.find(_P + "cNvPr")
        if cnvpr is not None:
            return cnvpr
    return None


def _marked_hidden(shape: Any) -> bool:
    cnvpr = _cnvpr(shape._element)
    return cnvpr is not None and cnvpr.get("hidden") in ("1", "true")


def _outside(box: tuple[float, float, float, float], rotation: float, w: float, h: float) -> bool:
    """Whether a shape's box lies wholly outside a ``w`` × ``h`` slide.

    Touching an edge counts as inside: generators write text boxes of size 0 at the origin and
    let the text flow out of them onto the slide.
    """
    x0, x1 = sorted((box[0], box[2]))
    y0, y1 = sorted((box[1], box[3]))
    if rotation % 180:
        # A shape turns about its centre: what it covers is the rotated box's bounding box.
        cx, cy, hw, hh = (x0 + x1) / 2, (y0 + y1) / 2, (x1 - x0) / 2, (y1 - y0) / 2
        cos, sin = abs(math.cos(math.radians(rotation))), abs(math.sin(math.radians(rotation)))
        hw, hh = hw * cos + hh * sin, hw * sin + hh * cos
        x0, x1, y0, y1 = cx - hw, cx + hw, cy - hh, cy + hh
    return x1 < 0 or y1 < 0 or x0 > w or y0 > h


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
    cnvpr = _cnvpr(shape._element)
    return _text(cnvpr.get("descr") or cnvpr.get("title") or "") if cnvpr is not None else ""


def _size(rpr: Any) -> int | None:
    """The ``sz`` (hundredths of a point) of an ``a:rPr`` or ``a:defRPr``, if it sets one."""
    if rpr is None:
        return None
    try:
        return max(0, int(rpr.get("sz") or ""))
    except ValueError:
        return None


def _font_scale(value: str | None) -> float:
    """``fontScale`` of ``a:normAutofit``: thousandths of a percent, or "62.5%" (strict)."""
    if not value:
        return 1.0
    try:
        if value.endswith("%"):
            return max(0.0, float(value[:-1]) / 100)
        return max(0.0, int(value) / 100_000)
    except ValueError:
        return 1.0


class _TinyText:
    """Splits the runs of one text body set smaller than a minimum size from the others.

    A run's size is its own ``sz``, else the paragraph's ``a:defRPr``, else the text body's list
    style for the paragraph's level, scaled by the body's shrink-on-overflow ``fontScale``. Sizes
    inherited from the layout, the master and the presentation defaults are not resolved (they
    are readable in practice): a run whose size is not found here counts as readable.
    """

    def __init__(self, frame: Any, min_font_pt: float) -> None:
        txbody = frame._txBody
        self.limit = min_font_pt * 100
        autofit = txbody.find(f"{_A}bodyPr/{_A}normAutofit")
        self.scale = _font_scale(autofit.get("fontScale") if autofit is not None else None)
        self.levels: dict[int, int] = {}
        styles = txbody.find(_A + "lstStyle")
        for level in range(9):
            found = styles.find(f"{_A}lvl{level + 1}pPr/{_A}defRPr") if styles is not None else None
            size = _size(found)
            if size is not None:
                self.levels[level] = size

    def split(self, paragraph: Any) -> tuple[str, str]:
        """(the paragraph's text without its tiny runs, the text of those runs)."""
        p = paragraph._p
        ppr = p.find(_A + "pPr")
        default = _size(ppr.find(_A + "defRPr")) if ppr is not None else None
        if default is None:
            default = self.levels.get(int(paragraph.level or 0))
        visible: list[str] = []
        tiny: list[str] = []
        stretch = False
        for child in p.content_children:  # a:r, a:br and a:fld, as python-pptx's text joins them
            text = child.text
            blank = not text.strip()
            size = _size(child.find(_A + "rPr"))
            if size is None:
                size = default
            if size is not None and size * self.scale < self.limit and not blank:
                if not stretch:  # keep the words either side, and separate stretches, apart
                    visible.append(" ")
                    tiny.append(" ")
                    stretch = True
                tiny.append(text)
                continue
            # Whitespace shows nothing either way: it stays visible so words do not run together.
            visible.append(text)
            if stretch and blank:
                tiny.append(text)
            stretch = stretch and blank
        return "".join(visible), "".join(tiny)


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

    def add(
        self,
        kind: ElementKind,
        text: str,
        box: Any = None,
        hidden: Iterable[Hidden] = (),
        **kwargs: Any,
    ) -> None:
        attrs = {**self.attrs, **kwargs.pop("attrs", {})}
        self.builder.add(
            kind,
            text,
            page=self.page,
            bbox=self.bbox(box),
            attrs=attrs,
            hidden=hidden,
            **kwargs,
        )

    def hidden(self, item: _Placed) -> frozenset[Hidden]:
        """Why a placed shape would not be seen on its slide."""
        if not self.settings.flag_hidden_text:
            return _VISIBLE
        if item.box is None:  # no position: where PowerPoint draws it is not known
            return item.hidden
        try:
            rotation = float(item.shape.rotation or 0.0)
        except Exception:  # graphic frames and group markers carry no rotation of their own
            rotation = 0.0
        if _outside(item.box, rotation, self.width, self.height):
            return item.hidden | {Hidden.OFF_PAGE}
        return item.hidden

    def paragraphs(self, frame: Any) -> Iterator[tuple[Any, str, str]]:
        """(paragraph, its text, the text of its tiny runs) for each paragraph of a text frame.

        Tiny runs are split off, as in Word, rather than flagging a paragraph only when all of
        it is tiny: readable text with a tiny instruction inside must not index the instruction.
        """
        if not self.settings.flag_hidden_text or self.settings.min_font_pt <= 0:
            for paragraph in frame.paragraphs:
                yield paragraph, paragraph.text, ""
            return
        tiny = _TinyText(frame, self.settings.min_font_pt)
        for paragraph in frame.paragraphs:
            yield paragraph, *tiny.split(paragraph)

    def frame_text(self, frame: Any, tiny: list[str]) -> str:
        """A frame's text without its tiny runs, whose text is added to ``tiny``."""
        lines: list[str] = []
        for _, text, small in self.paragraphs(frame):
            lines.append(text)
            if small.strip():
                tiny.append(_text(small))
        return "\n".join(lines)

    def add_tiny(self, tiny: list[str], box: Any, hidden: frozenset[Hidden]) -> None:
        text = "\n".join(t for t in tiny if t)
        if text:
            self.add(ElementKind.PARAGRAPH, text, box, hidden | {Hidden.TINY})

    def slide(self, index: int, slide: Any) -> str | None:
        """Read one slide onto a new page; returns the slide title."""
        self.page = self.builder.add_page(
            width=self.width / _EMU_PER_POINT, height=self.height / _EMU_PER_POINT
        )
        self.attrs = {"slide": index + 1}
        if slide._element.get("show") in ("0", "false"):
            # Shown in the editor, skipped in the show: content, not hidden text.
            self.attrs["hidden_slide"] = True
        title_shape = slide.shapes.title
        title: str | None = None
        items = _placed(slide.shapes, (1.0, 1.0, 0.0, 0.0), 0)
        if title_shape is not None:
            element = title_shape._element
            found = next((p for p in items if getattr(p.shape, "_element", None) is element), None)
            tiny: list[str] = []
            title = " ".join(_text(self.frame_text(title_shape.text_frame, tiny)).split()) or None
            if found is not None:
                items.remove(found)
                hidden = self.hidden(found)
                if title:
                    self.add(ElementKind.HEADING, title, found.box, hidden, level=1)
                self.add_tiny(tiny, found.box, hidden)
                if hidden:
                    title = None  # an unseen title must not name the document
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
                shapes = group.shape.shapes
                self.shapes(_placed(shapes, group.transform, group.depth + 1, item.hidden))
                continue
            try:
                self.shape(item)
            except Exception as exc:  # one odd shape should not cost the whole deck
                if isinstance(exc, (LimitExceededError, MemoryError)):
                    raise
                self.builder.warn(f"slide {self.attrs['slide']}: shape skipped ({exc!r:.200})")

    def shape(self, item: _Placed) -> None:
        from pptx.shapes.picture import Picture

        shape, box, hidden = item.shape, item.box, self.hidden(item)
        if getattr(shape, "has_chart", False):
            self.chart(shape.chart, box, hidden)
        elif getattr(shape, "has_table", False):
            self.table(shape.table, box, hidden)
        elif isinstance(shape, Picture):
            self.picture(shape, box, hidden)
        elif getattr(shape, "has_text_frame", False):
            self.text_frame(shape, box, hidden)

    def text_frame(self, shape: Any, box: Any, hidden: frozenset[Hidden]) -> None:
        from pptx.enum.shapes import PP_PLACEHOLDER

        default_bullet = False
        if shape.is_placeholder:
            kind = shape.placeholder_format.type
            furniture = _FURNITURE.get(kind.name if kind is not None else "")
            if furniture is not None:
                text = " ".join(_text(shape.text_frame.text).split())
                if text:  # slide numbers, dates and footers: kept but never indexed
                    placeholder = {"placeholder": kind.name.lower()}
                    self.add(furniture, text, box, hidden, attrs=placeholder)
                return
            # Body and content placeholders inherit bullets from the slide master.
            default_bullet = kind in (PP_PLACEHOLDER.BODY, PP_PLACEHOLDER.OBJECT)
        runs: list[tuple[bool, list[tuple[int, bool, str]]]] = []
        tiny: list[str] = []
        for paragraph, visible, small in self.paragraphs(shape.text_frame):
            if small.strip():
                tiny.append(_text(small))
            text = _text(visible)
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
                    hidden,
                    markdown=list_markdown(items),
                    attrs={"items": len(items)},
                )
            else:
                kind = ElementKind.CAPTION if caption_target(text) else ElementKind.PARAGRAPH
                self.add(kind, text, box, hidden)
        self.add_tiny(tiny, box, hidden)

    def table(self, table: Any, box: Any, hidden: frozenset[Hidden]) -> None:
        n_rows, n_cols = len(table.rows), len(table.columns)
        if n_rows * n_cols > self.settings.max_sheet_cells:
            # The grid is declared, not backed by cells: keep the first rows that fit.
            n_rows = max(1, self.settings.max_sheet_cells // max(1, n_cols))
            self.builder.warn(f"slide {self.attrs['slide']}: table cut to {n_rows} rows")
        grid = [["" for _ in range(n_cols)] for _ in range(n_rows)]
        tiny: list[str] = []
        for r in range(n_rows):
            for c in range(n_cols):
                cell = table.cell(r, c)
                if cell.is_spanned:
                    continue
                text = " ".join(_text(self.frame_text(cell.text_frame, tiny)).split())
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
                hidden,
                markdown=rows_to_markdown(grid),
                attrs={"rows": n_rows, "cols": n_cols},
            )
        self.add_tiny(tiny, box, hidden)

    def picture(self, shape: Any, box: Any, hidden: frozenset[Hidden]) -> None:
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
        self.add(ElementKind.FIGURE, alt, box, hidden, image_id=image_id, attrs=attrs)

    def chart(self, chart: Any, box: Any, hidden: frozenset[Hidden]) -> None:
        summary, markdown, attrs = chart_content(chart)
        self.add(ElementKind.CHART, summary, box, hidden, markdown=markdown, attrs=attrs)


class PptxParser:
    name = "pptx"
    # 2: shapes off the slide or marked hidden, and runs too small to read, flagged ``hidden``;
    # hidden slides carry attrs["hidden_slide"] (was attrs["hidden"])
    version = "2"

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
