"""Word (DOCX) through python-docx's package reader and a walk over the body XML.

python-docx opens the package and resolves parts (styles, numbering, headers, images), but its
``document.paragraphs`` and ``document.tables`` lists lose the order in which paragraphs and tables
alternate, so the body is walked directly, child by child. Word files carry no page geometry: the
parser starts a new page only at explicit page breaks and section breaks, and pages have size 0.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from docsight.document.captions import caption_target
from docsight.document.model import ElementKind, Hidden, ParsedDocument
from docsight.document.tables import rows_to_markdown, rows_to_text
from docsight.errors import LimitExceededError, ParseError
from docsight.parsers.base import ParseContext, SourceFile
from docsight.parsers.office_hidden import ParagraphRuns, WordVisibility
from docsight.parsers.ooxml import (
    MAIN_PART_TYPES,
    MAX_REPEAT_CHARS,
    bounded_rows,
    chart_content,
    check_archive,
    core_metadata,
    image_asset,
    library_errors,
    list_markdown,
    safe_xml,
)
from docsight.parsers.sniff import DOCX
from docsight.parsers.textutil import clean_text, squash_spaces
from docsight.settings import ParseSettings

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_R = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
_WP = "{http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing}"
_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_MC = "{http://schemas.openxmlformats.org/markup-compatibility/2006}"
_V = "{urn:schemas-microsoft-com:vml}"
_M = "{http://schemas.openxmlformats.org/officeDocument/2006/math}"
_C = "{http://schemas.openxmlformats.org/drawingml/2006/chart}"
_VAL = _W + "val"
#: Inline containers whose text never shows: deletions, field instructions, properties.
_SKIP_INLINE = frozenset(
    _W + t for t in ("del", "moveFrom", "delText", "instrText", "rPr", "pPr", "sdtPr", "fldData")
)
#: Containers walked into for the blocks, rows or cells they hold (content controls, custom
#: XML, tracked insertions, alternate content).
_WRAPPERS = frozenset(_W + t for t in ("sdt", "sdtContent", "customXml", "ins", "moveTo"))
_BLOCKS = frozenset((_W + "p", _W + "tbl"))
#: Nested tables and text boxes deeper than this are read as plain text.
_MAX_DEPTH = 20
_HEADING = re.compile(r"^heading\s*([1-9])$")
_LIST_STYLE = re.compile(r"^list (bullet|number)(?:\s*([2-9]))?$")
_VISIBLE: frozenset[Hidden] = frozenset()
#: What carries from a run to the images and text boxes anchored in it: a hidden run hides them,
#: while its size and colour say nothing about theirs.
_CARRIED = frozenset({Hidden.MARKED})
#: Text found hidden, with why.
_Found = tuple[str, frozenset[Hidden]]


@dataclass
class _Style:
    name: str = ""
    based_on: str | None = None
    outline: int | None = None
    num_id: str | None = None
    ilvl: int | None = None


def _lines(parts: list[str]) -> str:
    lines = (squash_spaces(line) for line in clean_text("".join(parts)).split("\n"))
    return "\n".join(line for line in lines if line)


@dataclass
class _Segment:
    """Inline content between two page breaks; hidden runs' text is kept apart from the rest."""

    parts: list[str] = field(default_factory=list)
    hidden_parts: list[str] = field(default_factory=list)
    reasons: set[Hidden] = field(default_factory=set)
    hiding: bool = False  # inside a stretch of hidden runs
    #: ("image" or "chart", relationship id, alt text, hidden reasons), in order
    drawings: list[tuple[str, str | None, str, frozenset[Hidden]]] = field(default_factory=list)
    #: (w:txbxContent element, hidden reasons it inherits from its anchor run)
    boxes: list[tuple[Any, frozenset[Hidden]]] = field(default_factory=list)
    notes: list[tuple[str, str]] = field(default_factory=list)  # ("footnote", id) references

    def add(self, text: str, reasons: frozenset[Hidden]) -> None:
        blank = not text.strip()
        if reasons and not blank:
            if not self.hiding:
                # The hidden stretch is cut out: keep the words on either side apart, and
                # separate stretches from each other.
                self.hiding = True
                self.parts.append(" ")
                self.hidden_parts.append(" ")
            self.hidden_parts.append(text)
            self.reasons.update(reasons)
            return
        # Whitespace shows nothing either way: it stays visible so words do not run together.
        self.parts.append(text)
        if self.hiding:
            if blank:
                self.hidden_parts.append(text)
            else:
                self.hiding = False

    @property
    def text(self) -> str:
        return _lines(self.parts)

    @property
    def hidden_text(self) -> str:
        return _lines(self.hidden_parts) if self.hidden_parts else ""

    def found(self) -> _Found | None:
        text = self.hidden_text
        return (text, frozenset(self.reasons)) if text else None


@dataclass
class _Hide:
    """How runs are judged in flattened text (cells, headers, notes), and the hidden text found."""

    visibility: WordVisibility
    background: str | None  # what lies behind the text; None when unknown
    inherited: frozenset[Hidden]
    found: list[_Found] = field(default_factory=list)

    def inside(self, background: str | None, carried: frozenset[Hidden] = _VISIBLE) -> _Hide:
        """The same judge and sink for content nested on another background."""
        return _Hide(self.visibility, background, self.inherited | carried, self.found)

    def runs(self, ppr: Any) -> ParagraphRuns:
        return self.visibility.paragraph(ppr, self.background, self.inherited)


def _int(value: str | None, default: int = 0, low: int = 0, high: int = 64) -> int:
    try:
        return max(low, min(high, int(value or default)))
    except ValueError:
        return default


def _val(el: Any, path: str) -> str | None:
    """The ``w:val`` of the child at ``path`` (``None`` when either is missing)."""
    found = el.find(path) if el is not None else None
    return found.get(_VAL) if found is not None else None


class _Walker:
    def __init__(self, source: SourceFile, settings: ParseSettings, part: Any) -> None:
        self.source = source
        self.settings = settings
        self.part = part
        self.builder = source.builder(f"{DocxParser.name}/{DocxParser.version}")
        self.page = self.builder.add_page()
        self.break_pending = False
        self.list_items: list[tuple[int, bool, str]] = []  # (level, ordered, text)
        self.furniture: set[tuple[ElementKind, str]] = set()
        self.styles = self._read_styles()
        self.numbering = self._read_numbering()
        self.visibility: WordVisibility | None = None
        if settings.flag_hidden_text:
            try:
                styles_root = part.styles.element
            except Exception:  # no styles part: only direct formatting counts
                styles_root = None
            self.visibility = WordVisibility(styles_root, part.element, settings.min_font_pt)
        #: What lies behind body text (None when unknown) and the hidden reasons it inherits;
        #: both change inside text boxes.
        self.background = self.visibility.page if self.visibility else None
        self.inherited = _VISIBLE
        #: Hidden text of list items, emitted after their list so the list stays whole.
        self.pending_hidden: list[_Found] = []
        self.notes = self._read_notes()
        self.pending_notes: list[tuple[str, str]] = []
        self.figures = 0
        self.sections: list[Any] = []
        self.section_index: dict[int, int] = {}
        self.section = 0

    # --- style sheet and numbering -------------------------------------------------------------

    def _read_styles(self) -> dict[str, _Style]:
        styles: dict[str, _Style] = {}
        try:
            root = self.part.styles.element
        except Exception:  # no styles part: everything is body text
            return styles
        for el in root.iter(_W + "style"):
            if el.get(_W + "type", "paragraph") != "paragraph":
                continue
            outline = _val(el, f"{_W}pPr/{_W}outlineLvl")
            ilvl = _val(el, f"{_W}pPr/{_W}numPr/{_W}ilvl")
            style = _Style(
                name=(_val(el, _W + "name") or "").strip().lower(),
                based_on=_val(el, _W + "basedOn"),
                outline=_int(outline, 9, 0, 9) if outline is not None else None,
                num_id=_val(el, f"{_W}pPr/{_W}numPr/{_W}numId"),
                ilvl=_int(ilvl, 0, 0, 8) if ilvl is not None else None,
            )
            style_id = el.get(_W + "styleId") or ""
            styles[style_id] = style
            if el.get(_W + "default") in ("1", "true"):
                styles["\0default"] = style
        return styles

    def _style_chain(self, style_id: str | None) -> list[_Style]:
        chain: list[_Style] = []
        seen: set[str] = set()
        while style_id and style_id in self.styles and style_id not in seen and len(chain) < 20:
            seen.add(style_id)
            chain.append(self.styles[style_id])
            style_id = self.styles[style_id].based_on
        return chain

    def _read_numbering(self) -> dict[tuple[str, int], bool]:
        """(numId, level) → whether the level is numbered (True) or bulleted (False)."""
        formats: dict[tuple[str, int], bool] = {}
        try:
            from docx.opc.constants import RELATIONSHIP_TYPE as RT

            root = self.part.part_related_by(RT.NUMBERING).element
        except Exception:  # no numbering part
            return formats
        abstract: dict[str, dict[int, bool]] = {}
        for el in root.iter(_W + "abstractNum"):
            levels: dict[int, bool] = {}
            for lvl in el.iter(_W + "lvl"):
                fmt = _val(lvl, _W + "numFmt") or "decimal"
                levels[_int(lvl.get(_W + "ilvl"), 0, 0, 8)] = fmt not in ("bullet", "none")
            abstract[el.get(_W + "abstractNumId") or ""] = levels
        for el in root.iter(_W + "num"):
            levels = abstract.get(_val(el, _W + "abstractNumId") or "", {})
            for level, ordered in levels.items():
                formats[(el.get(_W + "numId") or "", level)] = ordered
        return formats

    def _read_notes(self) -> dict[tuple[str, str], tuple[str, list[_Found]]]:
        """("footnote" or "endnote", id) → text of the note, and its hidden text."""
        from docx.opc.constants import RELATIONSHIP_TYPE as RT

        notes: dict[tuple[str, str], tuple[str, list[_Found]]] = {}
        for kind, rel in (("footnote", RT.FOOTNOTES), ("endnote", RT.ENDNOTES)):
            try:
                root = _part_xml(self.part.part_related_by(rel))
            except Exception:  # no such part, or a damaged one: the body still reads
                continue
            for note in root.iter(_W + kind):
                if note.get(_W + "type", "normal") != "normal":
                    continue  # separators between body and notes
                hide = self.hide()
                text = _flat_text(note, 0, hide)
                found = hide.found if hide is not None else []
                if text or found:
                    notes[(kind, note.get(_W + "id") or "")] = (text, found)
        return notes

    # --- hidden text ---------------------------------------------------------------------------

    def hide(self) -> _Hide | None:
        """A judge and sink for flattened text here, or None when hidden text is not flagged."""
        if self.visibility is None:
            return None
        return _Hide(self.visibility, self.background, self.inherited)

    def runs_of(self, ppr: Any) -> ParagraphRuns | None:
        if self.visibility is None:
            return None
        return self.visibility.paragraph(ppr, self.background, self.inherited)

    def emit_hidden(self, found: list[_Found], kind: ElementKind = ElementKind.PARAGRAPH) -> None:
        """Hidden text as one element of its own, so none of it reaches a visible element."""
        texts = [text for text, _ in found if text]
        if texts:
            reasons = set().union(*(r for _, r in found))
            self.emit(kind, "\n".join(texts), hidden=reasons)

    def text_box(self, box: Any, depth: int, carried: frozenset[Hidden]) -> None:
        saved = self.background, self.inherited
        # The box's own fill (colour, gradient, picture) lies behind its text and is not
        # resolved: white text in a dark callout box is normal, so contrast is not judged.
        self.background, self.inherited = None, self.inherited | carried
        try:
            self.blocks(box, depth)
        finally:
            self.background, self.inherited = saved

    # --- emitting ------------------------------------------------------------------------------

    def page_break(self) -> None:
        """Start a new page before the next element; several breaks in a row make one."""
        self.flush_list()
        self.break_pending = True

    def emit(self, kind: ElementKind, text: str, **kwargs: Any) -> None:
        if self.break_pending:
            self.break_pending = False
            if len(self.builder.pages) >= self.settings.max_pages:
                raise LimitExceededError(
                    self.source.path, f"more than the limit of {self.settings.max_pages} pages"
                )
            self.page = self.builder.add_page()
        self.builder.add(kind, text, page=self.page, **kwargs)

    def flush_list(self) -> None:
        items, self.list_items = self.list_items, []
        if not items:
            return
        self.emit(
            ElementKind.LIST,
            "\n".join(text for _, _, text in items),
            markdown=list_markdown(items),
            attrs={"items": len(items)},
        )
        pending, self.pending_hidden = self.pending_hidden, []
        self.emit_hidden(pending)
        self.emit_notes()

    def emit_notes(self) -> None:
        """Footnotes follow the paragraph (or list) citing them, once each."""
        refs, self.pending_notes = self.pending_notes, []
        for ref in refs:
            note = self.notes.pop(ref, None)
            if note is None:
                continue
            text, found = note
            if text:
                self.emit(ElementKind.NOTE, text, attrs={ref[0]: ref[1]})
            self.emit_hidden(found)

    # --- blocks --------------------------------------------------------------------------------

    def blocks(self, container: Any, depth: int = 0) -> None:
        for child in _unwrapped(container, _BLOCKS):
            if child.tag == _W + "p":
                self.paragraph(child, depth)
            else:
                self.flush_list()
                self.table(child, depth)

    def paragraph(self, p: Any, depth: int) -> None:
        ppr = p.find(_W + "pPr")
        kind, level, list_info = self._classify(ppr)
        if ppr is not None and _flag(ppr.find(_W + "pageBreakBefore")):
            self.page_break()
        segments = [_Segment()]
        _inline(p, segments, 0, self.runs_of(ppr), self.inherited)
        for i, segment in enumerate(segments):
            if i:
                self.page_break()
            self._emit_segment(segment, kind, level, list_info)
            for box, carried in segment.boxes:
                if depth < _MAX_DEPTH:
                    self.text_box(box, depth + 1, carried)
        sect = ppr.find(_W + "sectPr") if ppr is not None else None
        if sect is not None and id(sect) in self.section_index:
            self.end_section(self.section_index[id(sect)])

    def _emit_segment(
        self,
        segment: _Segment,
        kind: ElementKind,
        level: int | None,
        list_info: tuple[int, bool] | None,
    ) -> None:
        text = segment.text
        if text:
            if list_info is not None and kind == ElementKind.PARAGRAPH:
                ilvl, ordered = list_info
                if self.list_items and self.list_items[0][1] != ordered and ilvl == 0:
                    self.flush_list()  # a bullet list right after a numbered one
                self.list_items.append((ilvl, ordered, text))
            else:
                self.flush_list()
                if kind == ElementKind.PARAGRAPH and caption_target(text):
                    kind = ElementKind.CAPTION
                self.emit(kind, text, level=level)
        found = segment.found()
        if found is not None:
            # Right after the visible text it was cut from (after the list, for list items).
            if self.list_items:
                self.pending_hidden.append(found)
            else:
                self.emit_hidden([found])
        for what, rel_id, alt, carried in segment.drawings:
            self.flush_list()
            (self.figure if what == "image" else self.chart)(rel_id, alt, carried)
        self.pending_notes.extend(segment.notes)
        if not self.list_items:
            self.emit_notes()

    def _classify(self, ppr: Any) -> tuple[ElementKind, int | None, tuple[int, bool] | None]:
        """The paragraph's kind and heading level, and (list level, ordered) for list items."""
        num_id = _val(ppr, f"{_W}numPr/{_W}numId")
        value = _val(ppr, f"{_W}numPr/{_W}ilvl")
        ilvl = _int(value, 0, 0, 8) if value is not None else None
        value = _val(ppr, _W + "outlineLvl")
        outline = _int(value, 9, 0, 9) if value is not None else None
        chain = self._style_chain(_val(ppr, _W + "pStyle")) or (
            [self.styles["\0default"]] if "\0default" in self.styles else []
        )
        name = chain[0].name if chain else ""
        if name == "title":
            return ElementKind.TITLE, None, None
        heading = next((m for s in chain if (m := _HEADING.match(s.name))), None)
        if outline is None:
            outline = next((s.outline for s in chain if s.outline is not None), None)
        if heading is not None:
            return ElementKind.HEADING, int(heading.group(1)), None
        if outline is not None and outline < 9:
            return ElementKind.HEADING, outline + 1, None
        if name == "caption":
            return ElementKind.CAPTION, None, None
        if num_id is None:
            num_id = next((s.num_id for s in chain if s.num_id is not None), None)
        named = _LIST_STYLE.match(name)
        if num_id == "0" or (num_id is None and named is None):
            return ElementKind.PARAGRAPH, None, None
        if ilvl is None:
            ilvl = int(named.group(2)) - 1 if named and named.group(2) else None
        if ilvl is None:
            ilvl = next((s.ilvl for s in chain if s.ilvl is not None), 0)
        ordered = self.numbering.get((num_id or "", ilvl))
        if ordered is None:
            ordered = bool(named and named.group(1) == "number")
        return ElementKind.PARAGRAPH, None, (ilvl, ordered)

    def figure(self, rel_id: str | None, alt: str, hidden: frozenset[Hidden] = _VISIBLE) -> None:
        self.figures += 1
        image_id: str | None = None
        attrs: dict[str, Any] = {"missing_image": True}
        blob = _related_blob(self.part, rel_id)
        if blob is not None and self.settings.extract_figures:
            where = f"image {self.figures}"
            image_id, attrs = image_asset(self.builder, blob, self.settings, where)
        elif blob is not None:
            attrs = {}
        self.emit(ElementKind.FIGURE, alt, image_id=image_id, attrs=attrs, hidden=hidden)

    def chart(self, rel_id: str | None, alt: str, hidden: frozenset[Hidden] = _VISIBLE) -> None:
        """A chart's data through python-pptx's chart classes (DrawingML is shared)."""
        blob = _related_blob(self.part, rel_id)
        if blob is None:
            return
        from pptx.chart.chart import Chart
        from pptx.oxml import parse_xml

        try:
            summary, markdown, attrs = chart_content(Chart(parse_xml(blob), None))
        except Exception as exc:  # a damaged chart part costs the chart, not the document
            self.builder.warn(f"chart skipped ({exc!r:.200})")
            return
        if alt and not attrs["title"]:
            summary += f"; {alt}"
        self.emit(
            ElementKind.CHART,
            summary,
            markdown=markdown,
            attrs={**attrs, "alt": alt},
            hidden=hidden,
        )

    def table(self, tbl: Any, depth: int) -> None:
        hide = self.hide()
        rows, cut = bounded_rows(_table_rows(tbl, depth, hide), self.settings.max_sheet_cells)
        if cut:
            self.builder.warn(f"table cut to {len(rows)} rows (max_sheet_cells)")
        if any(any(cell for cell in row) for row in rows):
            self.emit(
                ElementKind.TABLE,
                rows_to_text(rows),
                markdown=rows_to_markdown(rows),
                attrs={"rows": len(rows), "cols": max(len(r) for r in rows)},
            )
        if hide is not None:
            self.emit_hidden(hide.found)

    # --- sections and furniture ----------------------------------------------------------------

    def run(self) -> None:
        body = self.part.element.find(_W + "body")
        if body is None:
            raise ParseError(self.source.path, "Word document without a body")
        # Section properties sit on the last paragraph of each section and, for the last
        # section, at the end of the body; a section's own break type decides its first page.
        self.sections = list(body.iter(_W + "sectPr"))
        self.section_index = {id(s): i for i, s in enumerate(self.sections)}
        self.furniture_of(self.section, "header")
        self.blocks(body)
        self.flush_list()
        self.furniture_of(self.section, "footer")

    def end_section(self, index: int) -> None:
        self.flush_list()
        self.furniture_of(index, "footer")
        self.section = index + 1
        if self.section < len(self.sections):
            kind = _val(self.sections[self.section], _W + "type")
            if kind not in ("continuous", "nextColumn"):
                self.page_break()
            self.furniture_of(self.section, "header")

    def furniture_of(self, index: int, which: str) -> None:
        if index >= len(self.sections):
            return
        kind = ElementKind.HEADER if which == "header" else ElementKind.FOOTER
        for ref in self.sections[index].findall(f"{_W}{which}Reference"):
            try:
                root = self.part.related_parts[ref.get(_R + "id")].element
            except Exception:  # a dangling reference
                continue
            hide = self.hide()
            text = squash_spaces(" ".join(_flat_text(root, 0, hide).split()))
            if text and (kind, text) not in self.furniture:
                self.furniture.add((kind, text))
                self.emit(kind, text, attrs={"variant": ref.get(_W + "type", "default")})
            if hide is not None and hide.found:
                # Kept as furniture (never indexed either way), apart from the visible text.
                key = (kind, "\0" + " ".join(t for t, _ in hide.found))
                if key not in self.furniture:
                    self.furniture.add(key)
                    self.emit_hidden(hide.found, kind)


# --- inline content -------------------------------------------------------------------------------


def _choice(alternate: Any) -> Any:
    """The first ``mc:Choice`` of an ``mc:AlternateContent``; the fallback repeats it."""
    choice = alternate.find(_MC + "Choice")
    if choice is None:
        choice = alternate.find(_MC + "Fallback")
    return choice if choice is not None else []


def _flag(el: Any) -> bool:
    return el is not None and el.get(_VAL, "true") not in ("0", "false", "off")


def _inline(
    el: Any,
    segments: list[_Segment],
    depth: int,
    runs: ParagraphRuns | None = None,
    reasons: frozenset[Hidden] = _VISIBLE,
) -> None:
    """Collect text, page breaks, images and text boxes of a paragraph, in order.

    ``runs`` judges each ``w:r`` (None: nothing is hidden); ``reasons`` apply to the text here.
    """
    for child in el:
        tag = child.tag
        if not isinstance(tag, str) or tag in _SKIP_INLINE:
            continue
        seg = segments[-1]
        if tag in (_W + "t", _M + "t"):
            seg.add(child.text or "", reasons)
        elif tag in (_W + "tab", _W + "ptab"):
            seg.add("\t", reasons)
        elif tag == _W + "br":
            kind = child.get(_W + "type")
            if kind == "page":
                segments.append(_Segment())
            else:
                seg.add(" " if kind == "column" else "\n", reasons)
        elif tag == _W + "cr":
            seg.add("\n", reasons)
        elif tag == _W + "noBreakHyphen":
            seg.add("-", reasons)
        elif tag in (_W + "footnoteReference", _W + "endnoteReference"):
            seg.notes.append((tag[len(_W) : -len("Reference")], child.get(_W + "id") or ""))
        elif tag == _W + "drawing":
            _drawing(child, seg, reasons & _CARRIED)
        elif tag == _W + "pict" or tag == _W + "object":
            _vml(child, seg, reasons & _CARRIED)
        elif tag == _MC + "AlternateContent":
            _inline(_choice(child), segments, depth + 1, runs, reasons)
        elif depth < _MAX_DEPTH:
            if tag == _W + "r" and runs is not None:
                _inline(child, segments, depth + 1, runs, runs.run(child))
            else:
                _inline(child, segments, depth + 1, runs, reasons)


def _drawing(drawing: Any, seg: _Segment, carried: frozenset[Hidden]) -> None:
    for frame in drawing:
        if frame.tag not in (_WP + "inline", _WP + "anchor"):
            continue
        doc_pr = frame.find(_WP + "docPr")
        alt = ""
        if doc_pr is not None:
            alt = doc_pr.get("descr") or doc_pr.get("title") or ""
        alt = squash_spaces(clean_text(alt))
        blip = next(frame.iter(_A + "blip"), None)
        if blip is not None:
            seg.drawings.append(("image", blip.get(_R + "embed"), alt, carried))
        chart = next(frame.iter(_C + "chart"), None)
        if chart is not None:
            seg.drawings.append(("chart", chart.get(_R + "id"), alt, carried))
        seg.boxes.extend((box, carried) for box in frame.iter(_W + "txbxContent"))


def _vml(pict: Any, seg: _Segment, carried: frozenset[Hidden]) -> None:
    for image in pict.iter(_V + "imagedata"):
        shape = image.getparent()
        alt = squash_spaces(clean_text(shape.get("alt", "") if shape is not None else ""))
        seg.drawings.append(("image", image.get(_R + "id"), alt, carried))
    seg.boxes.extend((box, carried) for box in pict.iter(_W + "txbxContent"))


def _part_xml(part: Any) -> Any:
    """The XML root of a part python-docx loaded as XML, or parsed here from its bytes."""
    element = getattr(part, "element", None)
    return element if element is not None else safe_xml(part.blob)


def _related_blob(part: Any, rel_id: str | None) -> bytes | None:
    if not rel_id:
        return None
    try:
        blob = part.related_parts[rel_id].blob
    except Exception:  # external (linked) images and dangling references
        return None
    return blob if isinstance(blob, bytes) else None


# --- tables and flattened text --------------------------------------------------------------


def _unwrapped(container: Any, tags: frozenset[str], depth: int = 0) -> Iterator[Any]:
    """Children of ``container`` with one of ``tags``, looking through wrapper elements."""
    for child in container:
        tag = child.tag
        if tag in tags:
            yield child
        elif depth < _MAX_DEPTH and (tag in _WRAPPERS or tag == _MC + "AlternateContent"):
            inner = _choice(child) if tag == _MC + "AlternateContent" else child
            yield from _unwrapped(inner, tags, depth + 1)


def _table_rows(tbl: Any, depth: int, hide: _Hide | None) -> list[list[str]]:
    """Cell texts row by row; merged cells repeat their text in every grid cell they cover.

    Hidden text of the cells goes to ``hide.found`` instead of the cells.
    """
    if hide is not None:
        hide = hide.inside(hide.visibility.table_background(tbl, hide.background))
    rows: list[list[str]] = []
    above: dict[int, str] = {}  # grid column → text of the vertical merge started above
    for tr in _unwrapped(tbl, frozenset((_W + "tr",))):
        row: list[str] = []
        row.extend([""] * _int(_val(tr, f"{_W}trPr/{_W}gridBefore"), 0, 0, 64))
        for tc in _unwrapped(tr, frozenset((_W + "tc",))):
            span = _int(_val(tc, f"{_W}tcPr/{_W}gridSpan"), 1, 1, 64)
            merge = tc.find(f"{_W}tcPr/{_W}vMerge")
            vmerge = merge.get(_VAL, "continue") if merge is not None else None
            col = len(row)
            if vmerge == "continue":
                row.extend([above.get(c, "") for c in range(col, col + span)])
                continue
            cell = None
            if hide is not None:
                cell = hide.inside(hide.visibility.cell_background(tc, hide.background))
            text = _flat_text(tc, depth + 1, cell)
            # Short merged texts (labels) are repeated in every grid cell; long ones only once,
            # so a crafted merge cannot multiply a long text across a large grid.
            repeat = text if len(text) <= MAX_REPEAT_CHARS else ""
            for c in range(col, col + span):
                if vmerge == "restart":
                    above[c] = repeat
                else:
                    above.pop(c, None)
            row.extend([text] + [repeat] * (span - 1))
        rows.append(row)
    return rows


def _flat_text(container: Any, depth: int, hide: _Hide | None) -> str:
    """The text of a cell, header or text box on one line; nested tables as ``a, b; c, d``.

    Hidden text goes to ``hide.found`` instead (``hide`` None: nothing is hidden).
    """
    parts: list[str] = []
    for child in _unwrapped(container, _BLOCKS):
        if child.tag == _W + "p":
            segments = [_Segment()]
            if hide is None:
                _inline(child, segments, 0)
            else:
                _inline(child, segments, 0, hide.runs(child.find(_W + "pPr")), hide.inherited)
            for seg in segments:
                parts.append(seg.text)
                found = seg.found()
                if found is not None and hide is not None:
                    hide.found.append(found)
                for box, carried in seg.boxes:
                    if depth < _MAX_DEPTH:
                        inner = hide.inside(None, carried) if hide is not None else None
                        parts.append(_flat_text(box, depth + 1, inner))
        elif depth >= _MAX_DEPTH:
            parts.append(_deep_text(child, hide))
        else:
            rows = _table_rows(child, depth + 1, hide)
            parts.append("; ".join(", ".join(c for c in row if c) for row in rows))
    return squash_spaces(" ".join(p for p in parts if p).replace("\n", " "))


def _deep_text(el: Any, hide: _Hide | None) -> str:
    """All text under ``el`` run by run, past the nesting limit: no structure, still judged."""
    if hide is None:
        return " ".join(t.text or "" for t in el.iter(_W + "t"))
    runs = hide.runs(None)
    visible: list[str] = []
    for r in el.iter(_W + "r"):
        text = "".join(t.text or "" for t in r.iter(_W + "t"))
        reasons = runs.run(r)
        if reasons and text.strip():
            hide.found.append((squash_spaces(clean_text(text)), reasons))
        else:
            visible.append(text)
    return " ".join(visible)


# --- the parser ----------------------------------------------------------------------------------


def _register_variants() -> None:
    """Let python-docx load templates and macro-enabled files as the documents they are."""
    from docx.opc.part import PartFactory
    from docx.parts.document import DocumentPart

    for content_type, media_type in MAIN_PART_TYPES.items():
        if media_type == DOCX:
            PartFactory.part_type_for.setdefault(content_type, DocumentPart)


class DocxParser:
    name = "docx"
    # 2: text of hidden, tiny and no-contrast runs split off into elements flagged ``hidden``
    version = "2"

    def parse(
        self, source: SourceFile, settings: ParseSettings, context: ParseContext | None = None
    ) -> ParsedDocument:
        check_archive(source.path, source.data, settings)
        with library_errors(source.path, "invalid Word document"):
            from docx.package import Package
            from docx.parts.document import DocumentPart

            _register_variants()
            part = Package.open(io.BytesIO(source.data)).main_document_part
            if not isinstance(part, DocumentPart):
                raise ParseError(source.path, "not a Word document (no main document part)")
            walker = _Walker(source, settings, part)
            walker.run()
            title, metadata = core_metadata(part.package.core_properties)
            if not walker.builder.elements:
                walker.builder.warn("no text")
            return walker.builder.build(title=title, metadata=metadata)
