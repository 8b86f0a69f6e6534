"""The parser's working state for one page, and the atoms (tables, figures) placed on it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from docsight.document.model import BBox, ElementKind
from docsight.parsers.pdf.layout import Line
from docsight.parsers.pdf.reading import Block

if TYPE_CHECKING:  # visibility imports this module's Rect
    from docsight.parsers.pdf.visibility import HiddenText

#: A box as ``(x0, top, x1, bottom)`` in PDF points, top-left origin.
Rect = tuple[float, float, float, float]


@dataclass
class Atom:
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
class Page:
    """One page as the three passes see it: lines, atoms, then ordered units and furniture."""

    index: int
    width: float
    height: float
    #: Offset of the visible frame (crop box) in the glyph coordinate system.
    origin: tuple[float, float] = (0.0, 0.0)
    lines: list[Line] = field(default_factory=list)
    atoms: list[Atom] = field(default_factory=list)
    units: list[Block | Atom] = field(default_factory=list)
    furniture: dict[int, str] = field(default_factory=dict)
    #: Content read by OCR from a render (see :mod:`.scan`): ``units`` are set at extraction.
    scanned: bool = False
    #: Kind and heading level OCR gave each text block, keyed by ``id(block)``.
    hints: dict[int, tuple[ElementKind, int | None]] = field(default_factory=dict)
    #: OCR confidence of each line, keyed by ``id(line)``.
    ocr_scores: dict[int, float] = field(default_factory=dict)
    #: Text a reader would not see, kept out of ``lines`` (see :mod:`.visibility`).
    hidden: list[HiddenText] = field(default_factory=list)
    #: The role (:class:`~docsight.parsers.pdf.roles.Role`) of each block, keyed by
    #: ``id(block)``, once the roles pass has been over the page.
    roles: dict[int, Any] = field(default_factory=dict)

    def __getstate__(self) -> dict[str, Any]:
        # ``hints``, ``ocr_scores`` and ``roles`` are keyed by ``id()``, which means nothing
        # once the page is unpickled: a page extracted in one worker and laid out in another,
        # or set aside between the passes of a long file (:mod:`.passes`), carries them as
        # positions in ``units`` and in the lines it reaches. Keys of units a pass dropped
        # (furniture of a scanned page) go with them.
        state = dict(self.__dict__)
        units = _positions(self.units)
        lines = _positions(self._reachable_lines())
        state["hints"] = [(units[k], v) for k, v in self.hints.items() if k in units]
        state["roles"] = [(units[k], v) for k, v in self.roles.items() if k in units]
        state["ocr_scores"] = [(lines[k], v) for k, v in self.ocr_scores.items() if k in lines]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        lines = self._reachable_lines()
        self.hints = {id(self.units[k]): hint for k, hint in state["hints"]}
        self.roles = {id(self.units[k]): role for k, role in state.get("roles", ())}
        self.ocr_scores = {id(lines[k]): score for k, score in state["ocr_scores"]}

    def _reachable_lines(self) -> list[Line]:
        """The page's lines, then those of its blocks (the same objects, once laid out), in an
        order pickling keeps."""
        out = list(self.lines)
        for unit in self.units:
            if isinstance(unit, Block):
                out.extend(unit.lines)
        return out

    def bbox(self, x0: float, top: float, x1: float, bottom: float) -> BBox:
        ox, oy = self.origin
        return BBox.from_absolute(x0 - ox, top - oy, x1 - ox, bottom - oy, self.width, self.height)


def _positions(items: list[Any]) -> dict[int, int]:
    """``id(item)`` → the item's first position in ``items``."""
    out: dict[int, int] = {}
    for k, item in enumerate(items):
        out.setdefault(id(item), k)
    return out


def intersects(a: Rect, b: Rect) -> bool:
    """Whether two boxes overlap with positive area."""
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]
