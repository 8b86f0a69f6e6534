"""Blocks in reading order from OCR lines and layout regions: the pure half of
:func:`~docsight.parsers.raster.page.read_page_image` (see its module for the steps).

All boxes are in pixels of one page image.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from statistics import median

from docsight.document.captions import caption_target
from docsight.document.model import ElementKind
from docsight.document.tables import normalize_rows, rows_to_markdown, rows_to_text
from docsight.parsers.pdf.furniture import is_page_number
from docsight.parsers.pdf.layout import Line, Word, group_lines, inside
from docsight.parsers.pdf.page import Atom
from docsight.parsers.pdf.reading import Block as LineBlock
from docsight.parsers.pdf.reading import order_units, starts_with_bullet
from docsight.parsers.pdf.tables import grid_from_lines
from docsight.parsers.textutil import clean_text, squash_spaces
from docsight.vision.common import Block, Box, Ink, OcrLine, PageLine, Region

#: A figure region covering more of the page than this is the page itself (a photo, a slide).
FULL_PAGE = 0.85
#: Top and bottom bands (fractions of the height) where headers and footers live.
FURNITURE_BAND = 0.08
#: OCR boxes are padded around the glyphs: a line box is about this many font sizes high.
BOX_PER_SIZE = 1.4
#: Share of an OCR box's height trimmed off at the top and the bottom (the detector's padding).
TRIM = 0.15
#: x-height and cap height as shares of the font size (typical of text faces).
X_HEIGHT = 0.53
CAP_HEIGHT = 0.72
#: Estimated sizes within these factors of the body size are taken as the body size.
SNAP = (0.85, 1.18)
#: Stroke weight (relative to size) this far above the page's body text reads as bold.
BOLD_RATIO = 1.4
_TEXT_LABELS = frozenset(
    {"text", "title", "header", "footer", "reference", "equation", "figure_caption",
     "table_caption"}
)  # fmt: skip

#: ``table_rows(box, lines)``: rows of the table in ``box`` given the OCR lines inside it.
TableRows = Callable[[Box, list[OcrLine]], list[list[str]]]


def _weighted_median(values: Sequence[float], weights: Sequence[int]) -> float:
    pairs = sorted(zip(values, weights, strict=True))
    total = sum(w for _, w in pairs)
    if total <= 0:
        return median(values) if values else 0.0
    acc = 0
    for v, w in pairs:
        acc += w
        if acc >= total / 2:
            return v
    return pairs[-1][0]


def _estimated_size(line: OcrLine, ink: Ink | None) -> float:
    """Font size in pixels: from the ink's core height when it is measured (box heights vary
    with ascenders and descenders), else from the padded box."""
    from_box = (line.bottom - line.top if not line.vertical else line.x1 - line.x0) / BOX_PER_SIZE
    letters = [c for c in line.text if c.isalpha()]
    if ink is None or ink.core <= 0 or sum(c.isalnum() for c in line.text) < 3:
        return from_box
    lower = sum(c.islower() for c in letters)
    share = X_HEIGHT if letters and lower >= 0.3 * len(letters) else CAP_HEIGHT
    size = ink.core / share
    return size if 0.5 * from_box <= size <= 2.0 * from_box else from_box


def _page_lines(lines: Sequence[OcrLine], ink: Sequence[Ink] | None) -> list[PageLine]:
    """OCR lines with an estimated font size and a bold flag (stroke width relative to size,
    against the page's typical text)."""
    if ink is None or len(ink) != len(lines):
        ink = None
    sizes = [_estimated_size(ln, ink[k] if ink else None) for k, ln in enumerate(lines)]
    bold = [False] * len(lines)
    if ink is not None:
        ratios = [i.stroke / s if s > 0 else 0.0 for i, s in zip(ink, sizes, strict=True)]
        measured = [(r, len(ln.text)) for r, ln in zip(ratios, lines, strict=True) if r > 0]
        if measured:
            body = _weighted_median([r for r, _ in measured], [n for _, n in measured])
            bold = [bool(r >= BOLD_RATIO * body > 0) for r in ratios]
    # Estimates wobble by 10-15% ("lens was" against "Storm damage"); sizes near the body size
    # are the body size, or every wobble would split a paragraph in two.
    upright = [(s, len(ln.text)) for s, ln in zip(sizes, lines, strict=True) if not ln.vertical]
    if upright:
        body_size = _weighted_median([s for s, _ in upright], [n for _, n in upright])
        sizes = [
            body_size if not ln.vertical and SNAP[0] * body_size <= s <= SNAP[1] * body_size else s
            for s, ln in zip(sizes, lines, strict=True)
        ]
    return [
        PageLine(ln.text, ln.box, ln.score, max(s, 1.0), b, ln.vertical)
        for ln, s, b in zip(lines, sizes, bold, strict=True)
    ]


def _centre_in(box: Box, frame: Box) -> bool:
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    return frame[0] <= cx <= frame[2] and frame[1] <= cy <= frame[3]


def _area(b: Box) -> float:
    return max(0.0, b[2] - b[0]) * max(0.0, b[3] - b[1])


def _overlap_share(a: Box, b: Box) -> float:
    """Intersection over the smaller box."""
    inter = _area((max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])))
    small = min(_area(a), _area(b))
    return inter / small if small > 0 else 0.0


def _union(boxes: Sequence[Box]) -> Box:
    return (
        min(b[0] for b in boxes),
        min(b[1] for b in boxes),
        max(b[2] for b in boxes),
        max(b[3] for b in boxes),
    )


def _score(lines: Sequence[PageLine]) -> float | None:
    total = sum(len(ln.text) for ln in lines)
    if not total:
        return None
    return round(sum(ln.score * len(ln.text) for ln in lines) / total, 4)


def _words(lines: Sequence[PageLine]) -> tuple[list[Word], dict[int, PageLine]]:
    """One word per OCR line, its box trimmed to about the glyphs' extent: OCR pads boxes so
    much that the lines of a paragraph overlap, and paragraph spacing would be the only
    positive gap left to measure the usual leading by."""
    words: list[Word] = []
    owner: dict[int, PageLine] = {}
    for ln in lines:
        x0, y0, x1, y1 = ln.box
        if ln.vertical:
            d = TRIM * (x1 - x0)
            x0, x1 = x0 + d, x1 - d
        else:
            d = TRIM * (y1 - y0)
            y0, y1 = y0 + d, y1 - d
        font = "ocr-bold" if ln.bold else "ocr"
        w = Word(ln.text, x0, y0, x1, y1, size=ln.size, font=font, upright=not ln.vertical)
        words.append(w)
        owner[id(w)] = ln
    return words, owner


def assemble_blocks(
    lines: Sequence[OcrLine],
    regions: Sequence[Region],
    page_size: tuple[float, float],
    *,
    ink: Sequence[Ink] | None = None,
    table_rows: TableRows | None = None,
) -> list[Block]:
    """Blocks in reading order from OCR lines and layout regions (see the module docstring).

    ``ink`` is :func:`~.page.measure_ink` of the lines (without it sizes come from the box
    heights alone and nothing is bold);
    ``table_rows`` reads a table's structure (the whitespace grid alone without it).
    """
    width, height = page_size
    if ink is not None and len(ink) == len(lines):
        ink = [i for i, ln in zip(ink, lines, strict=True) if ln.text.strip()]
    plines = _page_lines([ln for ln in lines if ln.text.strip()], ink)
    ocr_of = {id(p): OcrLine(p.text, p.box, p.score) for p in plines}
    atoms: list[Atom] = []
    free = list(plines)
    tables = [r for r in regions if r.label == "table"]
    figures = [
        r
        for r in regions
        if r.label == "figure"
        and _area(r.box) <= FULL_PAGE * width * height
        and not any(_overlap_share(r.box, t.box) > 0.5 for t in tables)
    ]
    for region in [*tables, *figures]:
        inner = [p for p in free if _centre_in(p.box, region.box)]
        if region.label == "table":
            atom = _table_atom(region, inner, [ocr_of[id(p)] for p in inner], table_rows)
            if atom is None:
                continue  # not a table after all: its lines stay text
        else:
            atom = _figure_atom(region, inner)
        atoms.append(atom)
        taken = {id(p) for p in atom.attrs["_lines"]}
        free = [p for p in free if id(p) not in taken]

    words, owner = _words(free)
    units = order_units(group_lines(words), atoms, width)
    text_regions = [r for r in regions if r.label in _TEXT_LABELS]
    split: list[LineBlock | Atom] = []
    for unit in units:
        split.extend(
            _split_by_region(unit, text_regions) if isinstance(unit, LineBlock) else [unit]
        )

    body = _body_size(plines)
    blocks: list[Block] = []
    for k, unit in enumerate(split):
        if isinstance(unit, Atom):
            blocks.append(_atom_block(unit))
            continue
        near_atom = any(isinstance(split[j], Atom) for j in (k - 1, k + 1) if 0 <= j < len(split))
        block = _text_block(unit, owner, text_regions, body, (width, height), near_atom)
        if block is not None:
            blocks.append(block)
    _assign_levels(blocks, body, height)
    return blocks


def _body_size(lines: Sequence[PageLine]) -> float:
    upright = [ln for ln in lines if not ln.vertical]
    if not upright:
        return 10.0
    return _weighted_median([ln.size for ln in upright], [len(ln.text) for ln in upright])


def _table_atom(
    region: Region,
    inner: list[PageLine],
    ocr: list[OcrLine],
    table_rows: TableRows | None,
) -> Atom | None:
    if len(inner) < 2:
        return None
    box = _union([region.box, *(p.box for p in inner)])
    chars = sum(len(p.text.replace(" ", "")) for p in inner)
    rows: list[list[str]] = []
    if table_rows is not None:
        try:
            rows = normalize_rows(table_rows(box, ocr))
        except Exception:  # a model failure on one table must not lose the page
            rows = []
    if not _plausible(rows, chars):
        words, _ = _words(inner)
        rows = normalize_rows(grid_from_lines(group_lines(words)))
    if not _plausible(rows, chars):
        return None
    return Atom(
        ElementKind.TABLE,
        *box,
        text=rows_to_text(rows),
        markdown=rows_to_markdown(rows),
        attrs={"rows": rows, "_lines": inner, "_label": region.label},
    )


def _plausible(rows: list[list[str]], chars: int) -> bool:
    """At least two rows and two columns, holding most of the text OCR found in the region."""
    if len(rows) < 2 or not rows or len(rows[0]) < 2:
        return False
    found = sum(len(c.replace(" ", "")) for row in rows for c in row)
    return found >= 0.6 * chars


def _figure_atom(region: Region, inner: list[PageLine]) -> Atom:
    # Prose inside a "figure" (a text box, a screenshot of a page) is content, not labels.
    if sum(1 for p in inner if len(p.text.split()) >= 8) >= 3:
        inner = []
    inner = sorted(inner, key=lambda p: (p.box[1], p.box[0]))
    labels = clean_text("\n".join(p.text for p in inner))
    return Atom(
        ElementKind.FIGURE,
        *region.box,
        text=labels,
        attrs={"_lines": inner, "_label": region.label},
    )


def _atom_block(atom: Atom) -> Block:
    lines: list[PageLine] = atom.attrs["_lines"]
    rows = atom.attrs.get("rows")
    return Block(
        atom.kind,
        atom.text,
        (atom.x0, atom.top, atom.x1, atom.bottom),
        markdown=atom.markdown,
        rows=rows,
        score=_score(lines),
        lines=lines,
        label=atom.attrs["_label"],
    )


def _region_of(line: Line, regions: Sequence[Region]) -> int:
    """Index of the smallest text region holding the line's centre, or -1."""
    best, best_area = -1, float("inf")
    for k, r in enumerate(regions):
        if inside(line, r.box, 0.0) and _area(r.box) < best_area:
            best, best_area = k, _area(r.box)
    return best


def _split_by_region(block: LineBlock, regions: Sequence[Region]) -> list[LineBlock]:
    """Split a block where consecutive lines sit in different layout regions (two paragraphs
    the geometry could not tell apart); lines outside every region never split."""
    if not regions or len(block.lines) < 2:
        return [block]
    out = [LineBlock([block.lines[0]], block.column)]
    prev = _region_of(block.lines[0], regions)
    for ln in block.lines[1:]:
        cur = _region_of(ln, regions)
        if cur != prev and cur >= 0 and prev >= 0:
            out.append(LineBlock([ln], block.column))
        else:
            out[-1].lines.append(ln)
        prev = cur if cur >= 0 else prev
    return out


def _text_block(
    unit: LineBlock,
    owner: dict[int, PageLine],
    regions: Sequence[Region],
    body: float,
    page: tuple[float, float],
    near_atom: bool,
) -> Block | None:
    text = squash_spaces(clean_text(unit.text))
    if not text:
        return None
    plines = [owner[id(w)] for ln in unit.lines for w in ln.words if id(w) in owner]
    n_chars = [len(p.text) for p in plines]
    size = _weighted_median([p.size for p in plines], n_chars)
    bold = sum(n for p, n in zip(plines, n_chars, strict=True) if p.bold) / max(1, sum(n_chars))
    votes: dict[str, int] = {}
    for ln in unit.lines:
        k = _region_of(ln, regions)
        if k >= 0:
            votes[regions[k].label] = votes.get(regions[k].label, 0) + ln.n_chars
    label = max(votes, key=lambda lab: votes[lab]) if votes else None
    box = (unit.x0, unit.top, unit.x1, unit.bottom)
    kind = _kind(text, label, box, size, bold, len(unit.lines), body, page, near_atom)
    return Block(kind, text, box, score=_score(plines), lines=plines, label=label)


def _kind(
    text: str,
    label: str | None,
    box: Box,
    size: float,
    bold: float,
    n_lines: int,
    body: float,
    page: tuple[float, float],
    near_atom: bool,
) -> ElementKind:
    height = page[1]
    band = FURNITURE_BAND * height
    words = len(text.split())
    if box[3] <= band and (label == "header" or is_page_number(text)):
        return ElementKind.HEADER
    if box[1] >= height - band and (label == "footer" or is_page_number(text)):
        return ElementKind.FOOTER
    # The labels alone are weak: slide titles at the top get called headers. Small text only.
    if label in ("header", "footer") and words <= 12 and size < 1.18 * body:
        if box[3] <= 1.5 * band:
            return ElementKind.HEADER
        if box[1] >= height - 1.5 * band:
            return ElementKind.FOOTER
    # Caption labels alone are weak (the model calls paragraphs next to tables captions): only a
    # short single line beside a table or figure is taken on the label's word.
    if caption_target(text) is not None or (
        label in ("figure_caption", "table_caption") and near_atom and n_lines == 1 and words <= 15
    ):
        return ElementKind.CAPTION
    if _heading_shape(text, n_lines) and (
        size >= 1.25 * body
        or (bold >= 0.7 and size >= 0.9 * body and n_lines <= 2)
        or (label == "title" and (size >= 1.1 * body or bold >= 0.5))
    ):
        return ElementKind.HEADING
    if label == "equation" and n_lines <= 4:
        return ElementKind.EQUATION
    if starts_with_bullet(text):
        return ElementKind.LIST
    return ElementKind.PARAGRAPH


def _heading_shape(text: str, n_lines: int) -> bool:
    letters = sum(c.isalpha() for c in text)
    return (
        n_lines <= 3
        and len(text.split()) <= 16
        and len(text) <= 160
        and letters >= 2
        and letters >= 0.5 * len(text.replace(" ", ""))
        and not text[0].islower()
        and not text.endswith((".", ",", ";"))
        and not starts_with_bullet(text)
    )


def _assign_levels(blocks: list[Block], body: float, height: float) -> None:
    """The first heading is the TITLE when it is the largest text near the top of the page;
    the other headings get levels by size class (largest = 1), emphasis-only ones below."""
    heads = [b for b in blocks if b.kind == ElementKind.HEADING]
    if not heads:
        return

    def size(b: Block) -> float:
        return _weighted_median([p.size for p in b.lines], [len(p.text) for p in b.lines])

    first = next(b for b in blocks if b.kind not in (ElementKind.HEADER, ElementKind.FOOTER))
    if (
        first.kind == ElementKind.HEADING
        and first.box[1] < 0.4 * height
        and size(first) >= 1.5 * body
        and size(first) >= max(size(b) for b in heads)
    ):
        first.kind = ElementKind.TITLE
        heads.remove(first)
    big = sorted({round(size(b), 1) for b in heads if size(b) >= 1.25 * body}, reverse=True)
    classes: list[float] = []
    for s in big:
        if not classes or s < 0.88 * classes[-1]:
            classes.append(s)
    for b in heads:
        s = size(b)
        big_level = sum(1 for c in classes if s < 0.88 * c) + 1
        b.level = min(big_level if s >= 1.25 * body else len(classes) + 1, 6)


def merge_lists(blocks: list[Block]) -> list[Block]:
    """Consecutive LIST blocks (:func:`assemble_blocks` gives one per item) as one LIST block,
    one item per line; the text drops bullet glyphs, the Markdown turns them into "-"
    (enumerators stay in both). The blocks given are modified."""
    out: list[Block] = []
    for b in blocks:
        if b.kind != ElementKind.LIST:
            out.append(b)
            continue
        marker, item = _list_item(b.text)
        line = f"{marker} {item}"
        prev = out[-1] if out else None
        if prev is not None and prev.kind == ElementKind.LIST and prev.markdown is not None:
            prev.text += "\n" + item
            prev.markdown += "\n" + line
            prev.box = _union([prev.box, b.box])
            prev.lines = prev.lines + b.lines
            prev.score = _score(prev.lines)
            continue
        b.text, b.markdown = item, line
        out.append(b)
    return out


def _list_item(text: str) -> tuple[str, str]:
    """``(Markdown marker, item text)`` of a list item."""
    head, _, rest = text.partition(" ")
    if head[:1].isalnum() or head[:1] == "(":  # an enumerator ("3.", "b)", "(iv)") stays
        return head, rest
    return "-", rest or head
