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

    def __getstate__(self) -> dict[str, Any]:
        # ``hints`` and ``ocr_scores`` are keyed by ``id()``, which means nothing in another
        # process: a page extracted in one worker and laid out in another (a large file's pages
        # are spread over the workers) carries them as positions in ``units`` and ``lines``.
        state = dict(self.__dict__)
        units = {id(u): k for k, u in enumerate(self.units)}
        lines = {id(ln): k for k, ln in enumerate(self.lines)}
        state["hints"] = [(units[key], hint) for key, hint in self.hints.items()]
        state["ocr_scores"] = [(lines[key], score) for key, score in self.ocr_scores.items()]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.hints = {id(self.units[k]): hint for k, hint in state["hints"]}
        self.ocr_scores = {id(self.lines[k]): score for k, score in state["ocr_scores"]}

    def bbox(self, x0: float, top: float, x1: float, bottom: float) -> BBox:
        ox, oy = self.origin
        return BBox.from_absolute(x0 - ox, top - oy, x1 - ox, bottom - oy, self.width, self.height)


def intersects(a: Rect, b: Rect) -> bool:
    """Whether two boxes overlap with positive area."""
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]
