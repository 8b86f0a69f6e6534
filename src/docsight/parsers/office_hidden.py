"""Which runs of a Word document a reader would not see: marked hidden, too small, no contrast.

Invisible text is how instructions get smuggled to a model and keywords to a search index, so the
DOCX parser keeps it out of the visible elements (see ``Hidden``). Run properties are layered the
way Word layers them (document defaults, the paragraph style chain, the character style chain,
the run's own properties), but only the few that decide visibility, and each style is resolved
once per document, so a run costs one pass over its own ``w:rPr``.

Not resolved, to stay cheap: table style run properties, theme colours, and the toggle semantics
of ``w:vanish`` across style levels (the nearest level that sets it wins). Where a fill the parser
does not resolve could lie behind the text (a table style with shading, a text box, a page with a
fill effect), the background counts as unknown and contrast is not judged: a reader would see
white text on a dark fill, and calling that hidden would drop legitimate text from the index.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from docsight.document.model import Hidden

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_VAL = W + "val"
WHITE = "FFFFFF"
#: Below this WCAG contrast ratio text and background count as the same colour: white on white
#: is 1.0, #EEEEEE on white 1.16, white on yellow highlight 1.07, white on light grey 1.4.
MIN_CONTRAST = 1.25
#: Word's size for text whose size nothing sets: 10 pt, in half-points.
_DEFAULT_HALF_POINTS = 20
_MAX_CHAIN = 20
_HIGHLIGHT = {
    "black": "000000",
    "blue": "0000FF",
    "cyan": "00FFFF",
    "green": "00FF00",
    "magenta": "FF00FF",
    "red": "FF0000",
    "yellow": "FFFF00",
    "white": "FFFFFF",
    "darkBlue": "000080",
    "darkCyan": "008080",
    "darkGreen": "008000",
    "darkMagenta": "800080",
    "darkRed": "800000",
    "darkYellow": "808000",
    "darkGray": "808080",
    "lightGray": "C0C0C0",
}
_HEX = frozenset("0123456789ABCDEF")
_WATCHED = frozenset(
    W + t for t in ("vanish", "specVanish", "sz", "color", "shd", "highlight", "rStyle")
)


def _hex(value: str | None) -> str | None:
    """``RRGGBB`` in upper case, or ``None`` for ``auto`` and anything malformed."""
    if not value or len(value) != 6:
        return None
    value = value.upper()
    return value if set(value) <= _HEX else None


@functools.lru_cache(maxsize=256)
def _luminance(color: str) -> float:
    def channel(c: int) -> float:
        v = c / 255
        return v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(int(color[i : i + 2], 16)) for i in (0, 2, 4))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    """The WCAG contrast ratio of two ``RRGGBB`` colours (1 = the same, 21 = black on white)."""
    la, lb = _luminance(a), _luminance(b)
    return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)


def shading(shd: Any) -> str | None:
    """The colour a ``w:shd`` paints behind text, or ``None`` when it paints nothing."""
    if shd is None:
        return None
    pattern = shd.get(_VAL)
    if pattern == "nil":
        return None
    if pattern == "solid":  # the pattern colour covers the fill completely
        color = _hex(shd.get(W + "color"))
        if color:
            return color
    return _hex(shd.get(W + "fill"))


def _half_points(value: str | None, default: int | None) -> int | None:
    try:
        return max(0, int(value or ""))
    except ValueError:
        return default


def _on(el: Any) -> bool:
    return el.get(_VAL, "true") not in ("0", "false", "off")


@dataclass(frozen=True)
class _Props:
    """The run properties that decide visibility; ``None`` where a level sets nothing."""

    vanish: bool | None = None
    half_points: int | None = None
    color: str | None = None  # as written: "RRGGBB" or "auto" (which overrides a style's colour)
    fill: str | None = None  # the run's own shading or highlight

    def over(self, base: _Props) -> _Props:
        """These properties laid over ``base``: the ones set here win."""
        return _Props(
            base.vanish if self.vanish is None else self.vanish,
            base.half_points if self.half_points is None else self.half_points,
            base.color if self.color is None else self.color,
            base.fill if self.fill is None else self.fill,
        )


_EMPTY = _Props()


def _rpr(rpr: Any) -> tuple[_Props, str | None]:
    """The visibility properties of a ``w:rPr`` and its character style id, in one pass."""
    if rpr is None:
        return _EMPTY, None
    vanish: bool | None = None
    size: int | None = None
    color: str | None = None
    shade: str | None = None
    light: str | None = None
    style: str | None = None
    for child in rpr:
        tag = child.tag
        if tag not in _WATCHED:  # fonts, bold, language and the like: most of a run's rPr
            continue
        if tag == W + "vanish" or tag == W + "specVanish":
            vanish = _on(child) or bool(vanish)
        elif tag == W + "sz":
            size = _half_points(child.get(_VAL), size)
        elif tag == W + "color":
            color = (child.get(_VAL) or "auto").upper()
        elif tag == W + "shd":
            shade = shading(child)
        elif tag == W + "highlight":
            light = _HIGHLIGHT.get(child.get(_VAL) or "")
        elif tag == W + "rStyle":
            style = child.get(_VAL)
    # A highlight is drawn over the shading.
    return _Props(vanish, size, color, light or shade), style


@dataclass
class _StyleDef:
    kind: str
    based_on: str | None
    props: _Props
    fill: str | None  # paragraph shading (paragraph styles) or any shading (table styles)


class WordVisibility:
    """Style-aware visibility of runs for one Word document."""

    def __init__(self, styles_root: Any, document_root: Any, min_font_pt: float) -> None:
        self.min_half_points = min_font_pt * 2
        self._styles: dict[str, _StyleDef] = {}
        self._defaults: dict[str, str] = {}  # style type → id of its default style
        self._doc_defaults = _EMPTY
        if styles_root is not None:
            self._read_styles(styles_root)
        self._paragraph_cache: dict[str | None, tuple[_Props, str | None]] = {}
        self._run_cache: dict[tuple[str | None, str], _Props] = {}
        self._shaded_cache: dict[str | None, bool] = {}
        self.page = self._page_background(document_root)

    def _read_styles(self, root: Any) -> None:
        defaults = root.find(f"{W}docDefaults/{W}rPrDefault/{W}rPr")
        self._doc_defaults = _rpr(defaults)[0]
        for el in root.iter(W + "style"):
            kind = el.get(W + "type", "paragraph")
            based = el.find(W + "basedOn")
            if kind == "table":
                fill = next((f for s in el.iter(W + "shd") if (f := shading(s))), None)
            else:
                fill = shading(el.find(f"{W}pPr/{W}shd"))
            style_id = el.get(W + "styleId") or ""
            self._styles[style_id] = _StyleDef(
                kind=kind,
                based_on=based.get(_VAL) if based is not None else None,
                props=_rpr(el.find(W + "rPr"))[0],
                fill=fill,
            )
            if el.get(W + "default") in ("1", "true"):
                self._defaults.setdefault(kind, style_id)

    def _chain(self, style_id: str | None, kind: str) -> list[_StyleDef]:
        """The style and the styles it is based on, nearest first."""
        chain: list[_StyleDef] = []
        seen: set[str] = set()
        while style_id and style_id not in seen and len(chain) < _MAX_CHAIN:
            seen.add(style_id)
            style = self._styles.get(style_id)
            if style is None or style.kind != kind:
                break
            chain.append(style)
            style_id = style.based_on
        return chain

    @staticmethod
    def _page_background(document_root: Any) -> str | None:
        background = document_root.find(W + "background") if document_root is not None else None
        if background is None:
            return WHITE
        if len(background):  # a gradient, texture or picture fill: not resolved
            return None
        return _hex(background.get(W + "color")) or WHITE

    def _paragraph_style(self, style_id: str | None) -> tuple[_Props, str | None]:
        """Document defaults with the paragraph style chain over them, and the style's shading."""
        cached = self._paragraph_cache.get(style_id)
        if cached is None:
            # An unknown style id falls back to the default paragraph style, as in Word.
            default = self._defaults.get("paragraph")
            chain = self._chain(style_id, "paragraph") or self._chain(default, "paragraph")
            props = self._doc_defaults
            for style in reversed(chain):
                props = style.props.over(props)
            fill = next((s.fill for s in chain if s.fill), None)
            cached = self._paragraph_cache[style_id] = (props, fill)
        return cached

    def with_run_style(self, paragraph_style: str | None, run_style: str) -> _Props:
        key = (paragraph_style, run_style)
        props = self._run_cache.get(key)
        if props is None:
            props = self._paragraph_style(paragraph_style)[0]
            for style in reversed(self._chain(run_style, "character")):
                props = style.props.over(props)
            self._run_cache[key] = props
        return props

    def table_background(self, tbl: Any, outer: str | None) -> str | None:
        """What lies behind a table's cells that set no shading of their own."""
        tblpr = tbl.find(W + "tblPr")
        style_id: str | None = None
        if tblpr is not None:
            fill = shading(tblpr.find(W + "shd"))
            if fill:
                return fill
            found = tblpr.find(W + "tblStyle")
            style_id = found.get(_VAL) if found is not None else None
        style_id = style_id or self._defaults.get("table")
        shaded = self._shaded_cache.get(style_id)
        if shaded is None:
            # Table styles shade header rows, banded rows and so on conditionally: any shading
            # makes the background of every cell unknown.
            shaded = any(s.fill for s in self._chain(style_id, "table"))
            self._shaded_cache[style_id] = shaded
        return None if shaded else outer

    @staticmethod
    def cell_background(tc: Any, table_background: str | None) -> str | None:
        return shading(tc.find(f"{W}tcPr/{W}shd")) or table_background

    def paragraph(
        self, ppr: Any, background: str | None, inherited: frozenset[Hidden]
    ) -> ParagraphRuns:
        """The judge of the runs of one paragraph; ``background`` is ``None`` when unknown."""
        found = ppr.find(W + "pStyle") if ppr is not None else None
        style_id = found.get(_VAL) if found is not None else None
        props, style_fill = self._paragraph_style(style_id)
        direct = shading(ppr.find(W + "shd")) if ppr is not None else None
        return ParagraphRuns(self, style_id, props, direct or style_fill or background, inherited)


class ParagraphRuns:
    """Why each run of one paragraph would not be seen."""

    def __init__(
        self,
        visibility: WordVisibility,
        style_id: str | None,
        props: _Props,
        background: str | None,
        inherited: frozenset[Hidden],
    ) -> None:
        self.visibility = visibility
        self.style_id = style_id
        self.background = background
        #: Reasons every run shares: a text box anchored in a hidden run is hidden too.
        self.inherited = inherited
        self.props = props
        self.plain = self._judge(props)

    def run(self, r: Any) -> frozenset[Hidden]:
        first = r[0] if len(r) else None  # w:rPr, when present, is the run's first child
        if first is None or first.tag != W + "rPr":
            return self.plain
        direct, run_style = _rpr(first)
        base = self.props
        if run_style:
            base = self.visibility.with_run_style(self.style_id, run_style)
        elif direct == _EMPTY:
            return self.plain
        return self._judge(direct.over(base))

    def _judge(self, props: _Props) -> frozenset[Hidden]:
        found: set[Hidden] = set()
        if props.vanish:
            found.add(Hidden.MARKED)
        size = _DEFAULT_HALF_POINTS if props.half_points is None else props.half_points
        if size < self.visibility.min_half_points:
            found.add(Hidden.TINY)
        color = _hex(props.color)
        behind = props.fill or self.background
        if color and behind and contrast(color, behind) < MIN_CONTRAST:
            found.add(Hidden.NO_CONTRAST)
        if not found:
            return self.inherited
        return frozenset(found) | self.inherited
