"""Figures: embedded images and clusters of vector drawing (charts), their labels, and page
decoration.

Words lying inside a figure (chart labels, axis ticks) are moved off the text flow and become the
FIGURE atom's text, line by line from the top (also kept in ``attrs["labels"]``). A figure holding
real prose (a photo behind a text box) keeps its words in the flow, and a figure drawn as shaded
bands around a dense grid of text is a table. Figures recurring at the same place on many pages
are decoration and are dropped again once every page is read (:func:`drop_decoration`).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from docsight.document.captions import caption_target
from docsight.document.model import ElementKind
from docsight.parsers.pdf.extract import Objects
from docsight.parsers.pdf.layout import Line, Word, group_lines, inside
from docsight.parsers.pdf.page import Atom, Page, Rect, intersects
from docsight.parsers.pdf.tables import banded_table, table_atom, with_row_labels
from docsight.parsers.textutil import clean_text
from docsight.settings import ParseSettings


def add_figures(
    objects: Objects,
    page: Page,
    words: list[Word],
    taken: list[Rect],
    settings: ParseSettings,
    crop: Callable[[Rect], str | None],
) -> None:
    """Append the page's figures (and tables drawn as bands) to ``page.atoms``; ``taken`` are
    the tables already found, ``crop`` stores an image of a box and returns its asset id."""
    area = page.width * page.height
    free = [w for w in words if not any(inside(w, t) for t in taken)]
    for box, raster in _figures(objects, page, taken):
        fig_area = (box[2] - box[0]) * (box[3] - box[1])
        if fig_area < settings.min_figure_area * area or fig_area > 0.85 * area:
            continue  # decoration, or a full-page background/scan (left to OCR)
        grown, lines = _with_labels(box, free)
        n_words = sum(len(ln.words) for ln in lines)
        if (raster and n_words > 15) or sum(1 for ln in lines if len(ln.words) >= 10) >= 4:
            # Text set over a photo, or prose in a box: the words are content, not labels.
            page.atoms.append(Atom(ElementKind.FIGURE, *box, image_id=crop(box), absorbs=False))
            continue
        box = grown
        banded = banded_table(objects, box, lines)
        if banded is not None:
            labelled = with_row_labels(box, banded, free)
            if labelled is not None:
                box, banded = labelled
            if settings.extract_tables:  # otherwise its words stay ordinary text
                page.atoms.append(table_atom(box, banded, crop(box)))
            continue
        # The labels are the figure's text, so its chunk can be found by them; attrs keep them
        # apart from any description added later.
        labels = clean_text("\n".join(ln.text for ln in lines))
        attrs: dict[str, Any] = {"labels": labels} if lines else {}
        page.atoms.append(
            Atom(
                ElementKind.FIGURE,
                *box,
                text=labels,
                image_id=crop(box),
                attrs=attrs,
                lines=lines,
            )
        )


def _figures(objects: Objects, page: Page, taken: list[Rect]) -> list[tuple[Rect, bool]]:
    """Embedded images plus clusters of vector drawing (charts), clipped to the page, each
    with whether it holds a raster image."""
    ox, oy = page.origin
    frame = (ox, oy, ox + page.width, oy + page.height)

    def clip(b: Rect) -> Rect:
        return (max(b[0], frame[0]), max(b[1], frame[1]), min(b[2], frame[2]), min(b[3], frame[3]))

    boxes = [clip(b) for b in objects.images]
    vector = []
    for b in map(clip, objects.paths):
        if (b[2] - b[0]) * (b[3] - b[1]) > 0.5 * page.width * page.height:
            continue  # page backgrounds and frames
        if not any(intersects(b, t) for t in taken):
            vector.append(b)
    clusters = cluster_boxes(vector, gap=10.0)
    for box, count in clusters:
        if count >= 8:
            # Gridlines, legend keys and axis stubs a little further away belong to the chart.
            for other, n in clusters:
                if n < 8 and intersects(_grow(box, 16.0), other):
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
        (b, any(intersects(b, im) for im in images))
        for b in merged
        if not any(intersects(b, t) for t in taken)
    ]


def _with_labels(box: Rect, words: list[Word]) -> tuple[Rect, list[Line]]:
    """Grow a figure box over the short lines hugging it (axis ticks, legends, panel titles)
    and return the box with the lines of text inside it."""
    near = [w for w in words if intersects(_grow(box, 40.0), _box(w))]
    lines = group_lines(near)
    for _ in range(4):
        grown = box
        for ln in lines:
            d = max(4.0, ln.size)
            if (
                len(ln.words) <= 6
                and caption_target(ln.text) is None
                and intersects(_grow(box, d), _box(ln))
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


def _grow(b: Rect, d: float) -> Rect:
    return (b[0] - d, b[1] - d, b[2] + d, b[3] + d)


def _box(b: Word | Line) -> Rect:
    return (b.x0, b.top, b.x1, b.bottom)


def cluster_boxes(
    boxes: Sequence[tuple[float, float, float, float]], gap: float
) -> list[tuple[tuple[float, float, float, float], int]]:
    """Union boxes lying within about ``gap`` of each other; returns ``(bbox, member count)``.

    Boxes are stamped onto a sparse grid of ``gap``-sized cells and joined through a union-find,
    which stays linear in the covered area where pairwise tests would be quadratic in the
    thousands of paths a chart can hold.
    """
    parent = list(range(len(boxes)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    # Cells coarser than the gap only merge slightly more eagerly, and keep big boxes cheap.
    step = max(gap, 8.0)
    cells = [
        (
            int((x0 - gap / 2) // step),
            int((x1 + gap / 2) // step),
            int((top - gap / 2) // step),
            int((bottom + gap / 2) // step),
        )
        for x0, top, x1, bottom in boxes
    ]
    covered = sum(max(0, cx1 - cx0 + 1) * max(0, cy1 - cy0 + 1) for cx0, cx1, cy0, cy1 in cells)
    if len(boxes) * (len(boxes) - 1) // 2 <= covered:
        # Few large boxes (pictures, the clusters being merged): two boxes stamp a common
        # cell exactly when their cell ranges overlap on both axes, so testing the pairs
        # joins the same groups as stamping, without visiting each of the thousands of cells
        # a page-sized picture covers (the stamping took 4.2 of 176 CPU s, cProfile, three
        # dev PDFs).
        for i, (ax0, ax1, ay0, ay1) in enumerate(cells):
            for j in range(i):
                bx0, bx1, by0, by1 = cells[j]
                if max(ax0, bx0) <= min(ax1, bx1) and max(ay0, by0) <= min(ay1, by1):
                    ri, rj = find(i), find(j)
                    if ri != rj:
                        parent[ri] = rj
    else:
        owner: dict[tuple[int, int], int] = {}
        for i, (cx0, cx1, cy0, cy1) in enumerate(cells):
            root = find(i)
            for cx in range(cx0, cx1 + 1):
                for cy in range(cy0, cy1 + 1):
                    j = owner.setdefault((cx, cy), i)
                    if j != i:
                        # ``root`` stays i's root: only it is ever re-parented here.
                        rj = find(j)
                        if root != rj:
                            parent[root] = rj
                            root = rj
    groups: dict[int, list[int]] = defaultdict(list)
    for i in range(len(boxes)):
        groups[find(i)].append(i)
    out = []
    for members in groups.values():
        out.append(
            (
                (
                    min(boxes[i][0] for i in members),
                    min(boxes[i][1] for i in members),
                    max(boxes[i][2] for i in members),
                    max(boxes[i][3] for i in members),
                ),
                len(members),
            )
        )
    return sorted(out, key=lambda c: (c[0][1], c[0][0]))


def drop_decoration(pages: list[Page]) -> None:
    """Figures recurring at the same place on many pages are page decoration (slide templates,
    logos, bands): drop them and give their words back to the text flow."""
    boxes: Counter[tuple[int, int, int, int]] = Counter()
    for page in pages:
        boxes.update(figure_places(page))
    for page in pages:
        drop_figures_at(page, decoration_places(boxes, len(pages)))


def figure_places(page: Page) -> set[tuple[int, int, int, int]]:
    """Where the page's figures sit, on a 4-point grid (each place counted once a page)."""
    return {_place(a) for a in page.atoms if a.kind == ElementKind.FIGURE}


def decoration_places(
    boxes: Counter[tuple[int, int, int, int]], n_pages: int
) -> set[tuple[int, int, int, int]]:
    """The places holding a figure on enough of the document's pages to be decoration."""
    need = max(3, math.ceil(0.3 * n_pages))
    return {place for place, n in boxes.items() if n >= need}


def drop_figures_at(page: Page, places: set[tuple[int, int, int, int]]) -> bool:
    """Drop the page's figures at ``places``, their labels back in the flow; whether any was."""
    dropped = False
    for atom in [a for a in page.atoms if a.kind == ElementKind.FIGURE]:
        if _place(atom) in places:
            page.atoms.remove(atom)
            page.lines.extend(atom.lines)
            dropped = True
    return dropped


def _place(a: Atom) -> tuple[int, int, int, int]:
    return (round(a.x0 / 4), round(a.top / 4), round(a.x1 / 4), round(a.bottom / 4))
