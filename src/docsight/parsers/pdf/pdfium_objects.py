"""A page's vector objects and images from pdfium, in the form the table and figure passes read.

pdfminer interprets a page's whole content stream in Python to find the few things the parser
needs besides glyphs: where images sit, which paths are drawn, which of them are rules, and the
line, rectangle and curve shapes pdfplumber's ruled-table finder turns into edges. pdfium has
already parsed the page into objects, so walking them costs a few ctypes calls an object.
Glyphs come from pdfium's text layer (:func:`pdfium_glyphs`).

The shapes are classified as pdfminer classifies them, so the passes after this one see the
same kinds of things: a path is split into its subpaths; a subpath of one straight segment is a
line, a closed axis-aligned four-sided one a rectangle, anything else a curve whose points are
the segments' end points (Bézier control points left out). Boxes are in the page's top-left
frame (crop box, ``/Rotate`` applied), the frame of pdfium's glyphs.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from docsight.parsers.pdf.extract import MAX_VECTOR_OBJECTS, Objects
from docsight.parsers.pdf.layout import Glyph, base_font_name
from docsight.parsers.pdf.page import Page

_PATH, _IMAGE, _FORM = 2, 3, 5
_LINETO, _BEZIERTO, _MOVETO = 0, 1, 2
#: Forms nested deeper than this are not entered (pdfminer's own limit is the stack).
_MAX_DEPTH = 12
#: Path segments read on one page at most: a hostile or pathological path (millions of points
#: in one object) makes the page a text-only one, like a page of too many paths.
MAX_SEGMENTS = 200_000

Matrix = tuple[float, float, float, float, float, float]
_IDENTITY: Matrix = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)


def pdfium_objects(pdfium_page: Any, page: Page) -> Objects | None:
    """Glyphs, images, drawn paths, rules and ruled-table shapes of the page; ``None`` when it
    draws more than :data:`~.extract.MAX_VECTOR_OBJECTS` paths or :data:`MAX_SEGMENTS` path
    segments (a map, a dense chart: its text alone is read)."""
    walker = _Walker(pdfium_page, page)
    if not walker.walk():
        return None
    out = walker.out
    out.glyphs = pdfium_glyphs(pdfium_page, page)
    return out


class _Walker:
    def __init__(self, pdfium_page: Any, page: Page) -> None:
        import pypdfium2.raw as raw

        self.raw = raw
        self.page = pdfium_page
        left, bottom, right, top = pdfium_page.get_cropbox()
        self.left, self.top = left, top
        self.width, self.height = right - left, top - bottom
        self.rotation = pdfium_page.get_rotation() % 360
        #: The frame's height, for pdfplumber's bottom-origin ``y0``/``y1``.
        self.frame_height = page.height
        self.out = Objects([], [], [], [], 0)
        self.paths_seen = 0
        self.segments_left = MAX_SEGMENTS
        self._m = raw.FS_MATRIX()
        self._f = [ctypes.c_float() for _ in range(4)]
        self._mode = ctypes.c_int()
        self._stroke = ctypes.c_int()
        self._rgba = [ctypes.c_uint() for _ in range(4)]

    def walk(self) -> bool:
        raw = self.raw
        n = raw.FPDFPage_CountObjects(self.page.raw)
        return self._visit(raw.FPDFPage_GetObject, self.page.raw, n, _IDENTITY, 0)

    def _visit(self, get: Any, parent: Any, n: int, outer: Matrix, depth: int) -> bool:
        raw = self.raw
        for k in range(n):
            obj = get(parent, k)
            if not obj:
                continue
            kind = raw.FPDFPageObj_GetType(obj)
            if kind == _PATH:
                self.paths_seen += 1
                if self.paths_seen > MAX_VECTOR_OBJECTS:
                    return False
                if not self._path(obj, outer):
                    return False
            elif kind == _IMAGE:
                box = self._bounds(obj, outer)
                if box is not None:
                    self.out.images.append(box)
            elif kind == _FORM and depth < _MAX_DEPTH:
                inner = _multiply(self._matrix(obj), outer)
                count = raw.FPDFFormObj_CountObjects(obj)
                if count > 0 and not self._visit(
                    raw.FPDFFormObj_GetObject, obj, count, inner, depth + 1
                ):
                    return False
        return True

    # --- geometry -----------------------------------------------------------------------------

    def _matrix(self, obj: Any) -> Matrix:
        m = self._m
        if not self.raw.FPDFPageObj_GetMatrix(obj, ctypes.byref(m)):
            return _IDENTITY
        return (m.a, m.b, m.c, m.d, m.e, m.f)

    def _frame(self, x: float, y: float) -> tuple[float, float]:
        """Page space (bottom-left origin) → the displayed page's top-left frame."""
        fx, fy = x - self.left, self.top - y
        if self.rotation:
            return _rotate(fx, fy, self.width, self.height, self.rotation)
        return fx, fy

    def _bounds(self, obj: Any, outer: Matrix) -> tuple[float, float, float, float] | None:
        """An object's box in the frame; its bounds are in the space of the form holding it."""
        left, bottom, right, top = self._f
        if not self.raw.FPDFPageObj_GetBounds(
            obj, ctypes.byref(left), ctypes.byref(bottom), ctypes.byref(right), ctypes.byref(top)
        ):
            return None
        corners = [
            self._frame(*_apply(outer, x, y))
            for x, y in (
                (left.value, bottom.value),
                (right.value, bottom.value),
                (right.value, top.value),
                (left.value, top.value),
            )
        ]
        xs, ys = [c[0] for c in corners], [c[1] for c in corners]
        return (min(xs), min(ys), max(xs), max(ys))

    # --- paths --------------------------------------------------------------------------------

    def _path(self, obj: Any, outer: Matrix) -> bool:
        """Reads one path object's subpaths; ``False`` when the page's segment budget ran out."""
        raw = self.raw
        count = raw.FPDFPath_CountSegments(obj)
        self.segments_left -= max(0, count)
        if self.segments_left < 0:
            return False
        matrix = _multiply(self._matrix(obj), outer)
        raw.FPDFPath_GetDrawMode(obj, ctypes.byref(self._mode), ctypes.byref(self._stroke))
        stroke, fill = bool(self._stroke.value), self._mode.value != 0
        if not stroke and not fill:
            return True  # a path that only clips ("n"): pdfminer paints nothing for it either
        visible = stroke or (fill and not self._white_fill(obj))
        x, y = self._f[0], self._f[1]
        subpaths: list[tuple[list[tuple[float, float]], bool, bool]] = []
        points: list[tuple[float, float]] = []
        closed = curved = False
        controls = 0  # Bézier control points still to skip in the current curve segment
        for s in range(count):
            seg = raw.FPDFPath_GetPathSegment(obj, s)
            kind = raw.FPDFPathSegment_GetType(seg)
            if kind == _MOVETO:
                if points:
                    subpaths.append((points, closed, curved))
                points, closed, curved, controls = [], False, False, 0
            elif kind == _BEZIERTO:
                curved = True
                if controls == 0:
                    controls = 3
                controls -= 1
                if controls:
                    continue
            raw.FPDFPathSegment_GetPoint(seg, ctypes.byref(x), ctypes.byref(y))
            points.append(self._frame(*_apply(matrix, x.value, y.value)))
            if raw.FPDFPathSegment_GetClose(seg):
                closed = True
        if points:
            subpaths.append((points, closed, curved))
        for pts, was_closed, has_curves in subpaths:
            self._shape(pts, was_closed, has_curves, stroke, fill, visible)
        return True

    def _shape(
        self,
        pts: list[tuple[float, float]],
        closed: bool,
        curved: bool,
        stroke: bool,
        fill: bool,
        visible: bool,
    ) -> None:
        if len(pts) < 2 and not closed:
            return
        if closed and pts[-1] != pts[0]:
            pts = [*pts, pts[0]]  # "h" returns to the start, as pdfminer counts it
        if len(pts) > 3 and closed and pts[-2] == pts[0]:
            pts = pts[:-1]  # a redundant last segment before the close
        kind = "curve"
        if curved:
            pass  # a Bézier segment makes a curve, whatever its end points
        elif len(pts) == 2 or (len(pts) == 3 and closed):
            kind = "line"
            pts = pts[:2]
        elif len(pts) == 5 and pts[0] == pts[4] and _square(pts):
            kind = "rect"
        xs, ys = [p[0] for p in pts], [p[1] for p in pts]
        box = (min(xs), min(ys), max(xs), max(ys))
        self.out.shapes.append(self._shape_dict(kind, box, pts, stroke, fill))
        if not visible:
            return  # white backgrounds and knock-outs draw nothing visible
        w, h = box[2] - box[0], box[3] - box[1]
        if h <= 2.5 and w >= 40 and kind in ("line", "rect"):
            self.out.rules.append((box[1], box[0], box[2]))
        elif kind == "rect" or (kind == "line" and w <= 2.5):
            self.out.vertical_edges += 1
        self.out.paths.append(box)

    def _shape_dict(
        self,
        kind: str,
        box: tuple[float, float, float, float],
        pts: list[tuple[float, float]],
        stroke: bool,
        fill: bool,
    ) -> dict[str, Any]:
        """The attributes pdfplumber's edge functions read of a line, rect or curve."""
        x0, top, x1, bottom = box
        return {
            "object_type": kind,
            "x0": x0,
            "x1": x1,
            "top": top,
            "bottom": bottom,
            "doctop": top,
            "y0": self.frame_height - bottom,
            "y1": self.frame_height - top,
            "width": x1 - x0,
            "height": bottom - top,
            "pts": pts,
            "stroke": stroke,
            "fill": fill,
        }

    def _white_fill(self, obj: Any) -> bool:
        r, g, b, a = self._rgba
        if not self.raw.FPDFPageObj_GetFillColor(
            obj, ctypes.byref(r), ctypes.byref(g), ctypes.byref(b), ctypes.byref(a)
        ):
            return False
        # pdfium has resolved the colour space (a Separation tint, an ICC profile) to RGB.
        # Its alpha is not read: design tools draw text frames as fully transparent boxes,
        # which the figure and table passes (written against pdfminer, which has no alpha)
        # take as drawn panels.
        return min(r.value, g.value, b.value) >= 253


def _square(pts: list[tuple[float, float]]) -> bool:
    (x0, y0), (x1, y1), (x2, y2), (x3, y3) = pts[:4]
    return (x0 == x1 and y1 == y2 and x2 == x3 and y3 == y0) or (
        y0 == y1 and x1 == x2 and y2 == y3 and x3 == x0
    )


def _apply(m: Matrix, x: float, y: float) -> tuple[float, float]:
    a, b, c, d, e, f = m
    return a * x + c * y + e, b * x + d * y + f


def _multiply(inner: Matrix, outer: Matrix) -> Matrix:
    """The matrix that applies ``inner`` and then ``outer`` (PDF's row-vector convention)."""
    a, b, c, d, e, f = inner
    p, q, r, s, t, u = outer
    return (
        a * p + b * r,
        a * q + b * s,
        c * p + d * r,
        c * q + d * s,
        e * p + f * r + t,
        e * q + f * s + u,
    )


# --- glyphs from the text layer ----------------------------------------------------------------


def pdfium_glyphs(pdfium_page: Any, page: Page) -> list[Glyph]:
    """Glyphs from pdfium's text layer, in the same top-left frame as the crop box.

    pdfium inserts spaces and line breaks it infers; they are left out, because the passes
    after this one measure the gaps between glyphs themselves, as they do for pdfminer's. Its
    order is the content stream's, except that it puts an accent drawn after its letter into
    the word ("Frenay" where pdfminer reads "Fr´ enay").

    Each character costs a few ctypes calls, so the text comes in one call and what a character
    shares with its text object (font, direction, size) is asked once per object. Upright
    glyphs on an unrotated page are placed as pdfminer's are (:meth:`Objects.read`): from the
    origin over the advance width, hung from their baseline, one em high, so math fonts' deep
    descents do not merge lines and an italic f's overhang does not split its word.
    """
    import pypdfium2.raw as raw

    left, bottom, right, top = pdfium_page.get_cropbox()
    rotation = pdfium_page.get_rotation() % 360
    w, h = right - left, top - bottom
    textpage = pdfium_page.get_textpage()
    try:
        tp = textpage.raw
        n = raw.FPDFText_CountChars(tp)
        text = _page_chars(tp, n)
        rect = raw.FS_RECTF()
        rect_ref = ctypes.byref(rect)
        ox, oy = ctypes.c_double(), ctypes.c_double()
        ox_ref, oy_ref = ctypes.byref(ox), ctypes.byref(oy)
        shared_of = _TextObjects(raw, tp, rotation)
        #: Each glyph, and whether it is placed from its origin (see _join_ligatures).
        drawn: list[tuple[Glyph, bool]] = []
        for k in range(n):
            ch = text[k]
            if not ch:
                continue  # a surrogate pair's second half
            # pdfium generates only spaces and line breaks (on the dev and smoke PDFs' 2.9
            # million characters, 193,599 spaces and 44,612 CR LF pairs): asking for every
            # character was a fifth of this loop's ctypes calls.
            if ch in _GENERATED and raw.FPDFText_IsGenerated(tp, k) == 1:
                continue  # a space or line break pdfium inferred
            if ch in _NO_CHAR:
                # pdfium reports a hyphen that ends a line as a control code; the hyphen stays,
                # so the line join treats it as it treats pdfminer's.
                ch = "-" if raw.FPDFText_IsHyphen(tp, k) == 1 else " "
            if ch.isspace():
                drawn.append((_SPACE, False))  # a separator: its box is never read
                continue
            font, upright, em, size, font_address, scale_x = shared_of(k)
            if em:
                raw.FPDFText_GetCharOrigin(tp, k, ox_ref, oy_ref)
                x0, y0 = ox.value - left, top - oy.value - 0.8 * em
                width = shared_of.advance(font_address, size, ch) if font_address else 0.0
                if width > 0:
                    x1 = x0 + width * scale_x
                else:  # no width for this character: the outline's box
                    raw.FPDFText_GetLooseCharBox(tp, k, rect_ref)
                    x1 = rect.right - left
                glyph = Glyph(ch, x0, y0, max(x1, x0), y0 + em, em, font, True)
                drawn.append((glyph, True))
                continue
            raw.FPDFText_GetLooseCharBox(tp, k, rect_ref)
            x0, x1 = rect.left - left, rect.right - left
            y0, y1 = top - rect.top, top - rect.bottom
            if rotation:
                x0, y0 = _rotate(x0, y0, w, h, rotation)
                x1, y1 = _rotate(x1, y1, w, h, rotation)
                x0, x1 = sorted((x0, x1))
                y0, y1 = sorted((y0, y1))
                upright = not upright if rotation in (90, 270) else upright
            # Slanted, mirrored or turned text (see _TextObjects for its size).
            glyph = Glyph(ch, x0, y0, x1, y1, size or max(y1 - y0, 1.0), font, upright)
            drawn.append((glyph, False))
        return _join_ligatures(drawn)
    finally:
        textpage.close()


def _join_ligatures(drawn: list[tuple[Glyph, bool]]) -> list[Glyph]:
    """pdfium spells a ligature out ("fi" drawn as one glyph is an f and an i at one origin);
    pdfminer reads one glyph of two letters. Its advance is taken as its letters' together, a
    little wider than the ligature's own, so the next letter still touches it while a word gap
    after it stays a gap."""
    glyphs: list[Glyph] = []
    previous_anchored = False
    for glyph, anchored in drawn:
        last = glyphs[-1] if glyphs and previous_anchored and anchored else None
        if last is not None and abs(last.top - glyph.top) < 0.01 and abs(last.x0 - glyph.x0) < 0.01:
            width = glyph.x1 - glyph.x0
            glyphs[-1] = last._replace(text=last.text + glyph.text, x1=last.x1 + width)
            continue
        glyphs.append(glyph)
        previous_anchored = anchored  # a separator is never anchored
    return glyphs


class _TextObjects:
    """What the characters of one pdfium text object share, asked once per object: its font's
    base name, whether it runs upright, its em in points when it runs upright on an unrotated
    page without mirroring (``0.0`` otherwise), the font size to measure advances at (nominal
    when ``em`` is set; else the em as drawn, ``0.0`` if unknown), its font's address and its
    horizontal scale (for advance widths).

    Some producers draw every character as a text object of its own (a 10-K of 528,000
    characters had 391,000 objects), so the per-object questions are few: the font's name is
    asked once per font, and the character's angle only where pdfium has no matrix for it."""

    def __init__(self, raw: Any, textpage: Any, rotation: int) -> None:
        self.raw = raw
        self.tp = textpage
        self.rotation = rotation
        self.calls = _by_address(raw)
        self.buf = ctypes.create_string_buffer(128)
        self.flags = ctypes.c_int()
        self.matrix = raw.FS_MATRIX()
        self.matrix_ref = ctypes.byref(self.matrix)
        self.fonts: dict[bytes, str] = {}
        self.font_names: dict[int, str] = {}
        self.seen: dict[int, tuple[str, bool, float, float, int, float]] = {}
        self.width = ctypes.c_float()
        self.width_ref = ctypes.byref(self.width)
        #: Advance widths by font, size and character: a page asks for the same few hundred
        #: again and again.
        self.widths: dict[tuple[int, float, str], float] = {}

    def __call__(self, k: int) -> tuple[str, bool, float, float, int, float]:
        address = self.calls.text_object(self.tp, k)
        if not address:
            return self._read(k, 0)
        shared = self.seen.get(address)
        if shared is None:
            shared = self.seen[address] = self._read(k, address)
        return shared

    def _read(self, k: int, address: int) -> tuple[str, bool, float, float, int, float]:
        raw = self.raw
        font_address = (self.calls.font_of(address) or 0) if address else 0
        font = self.font_names.get(font_address) if font_address else None
        if font is None:
            buf = self.buf
            n = raw.FPDFText_GetFontInfo(self.tp, k, buf, len(buf), ctypes.byref(self.flags))
            key = buf.raw[: max(0, n - 1)]
            font = self.fonts.setdefault(key, base_font_name(key.decode("latin-1")))
            if font_address:
                self.font_names[font_address] = font
        nominal = float(raw.FPDFText_GetFontSize(self.tp, k))
        em = scale_x = drawn = 0.0
        m = self.matrix
        if raw.FPDFText_GetMatrix(self.tp, k, self.matrix_ref):
            # pdfminer's reading: slanted (oblique) text still runs along its line.
            upright = m.a * m.d > 0 and m.b * m.c <= 0
            upright_here = m.a > 0 and m.d > 0 and abs(m.b) < 1e-3 * m.a and abs(m.c) < 1e-3 * m.d
            if upright_here and not self.rotation:
                em, scale_x = nominal * m.d, m.a
            # Text running across the page as displayed has the em it is drawn at (pdfium's
            # size is the nominal one, 1 for text scaled by its matrix). Text running up or
            # down the page gets the height of its box, the advance, as pdfminer gives it
            # (the table passes' tolerances were set on that): ``drawn`` stays 0.
            across = (
                abs(m.b) < 1e-3 * abs(m.a)
                if self.rotation in (0, 180)
                else (abs(m.a) < 1e-3 * abs(m.b))
            )
            if across:
                drawn = nominal * abs(m.a * m.d - m.b * m.c) ** 0.5
        else:  # the angle decides only where there is no matrix
            angle = raw.FPDFText_GetCharAngle(self.tp, k)
            upright = abs(angle) < 0.1 or abs(angle - 3.14159) < 0.1 or abs(angle - 6.28318) < 0.1
        if em >= 0.5:
            return (font, upright, em, nominal, font_address, scale_x)
        return (font, upright, 0.0, drawn if drawn >= 1.0 else 0.0, 0, 0.0)

    def advance(self, font_address: int, size: float, ch: str) -> float:
        """The advance width of ``ch`` in the font at ``font_address`` at ``size`` points; 0.0
        when pdfium has none."""
        key = (font_address, size, ch)
        width = self.widths.get(key)
        if width is None:
            ok = self.calls.glyph_width(font_address, ord(ch[0]), size, self.width_ref)
            width = self.width.value if ok and self.width.value > 0 else 0.0
            self.widths[key] = width
        return width


#: The characters pdfium inserts itself (``FPDFText_IsGenerated``).
_GENERATED = frozenset({" ", "\r", "\n"})


@dataclass(frozen=True)
class _AddressCalls:
    """pdfium functions that take and return handles as plain addresses. pypdfium2's return
    typed pointers, and turning one into an address (to know an object seen before) cost
    more than the call; these are prototypes of our own at the same entry points."""

    text_object: Any
    font_of: Any
    glyph_width: Any


@lru_cache(maxsize=1)
def _by_address(raw: Any) -> _AddressCalls:
    def at(function: Any, restype: Any, *argtypes: Any) -> Any:
        entry = ctypes.cast(function, ctypes.c_void_p).value
        assert entry, "a pdfium function without an address"
        return ctypes.CFUNCTYPE(restype, *argtypes)(entry)

    void_p = ctypes.c_void_p
    return _AddressCalls(
        text_object=at(raw.FPDFText_GetTextObject, void_p, void_p, ctypes.c_int),
        font_of=at(raw.FPDFTextObj_GetFont, void_p, void_p),
        glyph_width=at(
            raw.FPDFFont_GetGlyphWidth,
            ctypes.c_int,
            void_p,
            ctypes.c_uint,
            ctypes.c_float,
            ctypes.POINTER(ctypes.c_float),
        ),
    )


#: What pdfium reports for a character without a Unicode mapping (or none at all).
_NO_CHAR = frozenset({"\x00", "\x02", "\ufffe", "\uffff"})
_SPACE = Glyph(" ", 0, 0, 0, 0, 1.0, "")


def _page_chars(textpage: Any, n: int) -> list[str]:
    """The page's characters, one per pdfium character index, from one call.

    pdfium counts a character beyond the Basic Multilingual Plane (math italics such as 𝐴) as
    two indices, the halves of its UTF-16 surrogate pair: the first index gets the character,
    the second ``""`` (nothing, not even a separator); a lone half is ``"\x00"`` (no character).
    """
    import pypdfium2.raw as raw

    if n <= 0:
        return []
    buffer = (ctypes.c_ushort * (n + 1))()
    got = raw.FPDFText_GetText(textpage, 0, n, buffer)
    units = (
        list(buffer[:n])
        if got - 1 == n
        else [raw.FPDFText_GetUnicode(textpage, k) for k in range(n)]
    )
    chars: list[str] = []
    k = 0
    while k < n:
        u = units[k]
        if 0xD800 <= u < 0xDC00 and k + 1 < n and 0xDC00 <= units[k + 1] < 0xE000:
            chars.append(chr(0x10000 + ((u - 0xD800) << 10) + (units[k + 1] - 0xDC00)))
            chars.append("")
            k += 2
            continue
        chars.append("\x00" if 0xD800 <= u < 0xE000 or not 0 <= u <= 0x10FFFF else chr(u))
        k += 1
    return chars


def _rotate(x: float, y: float, w: float, h: float, rotation: int) -> tuple[float, float]:
    """Top-left coordinates on the unrotated page → on the page as displayed (clockwise)."""
    if rotation == 90:
        return h - y, x
    if rotation == 180:
        return w - x, h - y
    return y, w - x
