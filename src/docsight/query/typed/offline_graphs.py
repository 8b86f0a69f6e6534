"""Node-and-edge images (diagrams, circuits) and maps, from OCR labels and pixels.

Nodes are the OCR'd labels (stacked lines of one label merged). Edges are found on the ink
left after the text is erased, two ways: a connected stroke (one connected component of ink)
that reaches both nodes' surroundings, which follows elbows and box outlines; and a straight
stroke along the segment between two nodes, sampled pixel by pixel. The direction of an edge
is read from the stroke's width near each end: an arrowhead is several times wider than the
line. Connectivity that runs through large shared shapes (a frame around everything, a ground
rail touching every part) is left out rather than guessed.

Circuits get the same treatment with their labels read as parts: designators (R1, C2, U1),
nets (Vcc, GND) and values (10kΩ, 100nF) paired with the nearest designator. Offline, the
wiring between symbols is only partly visible this way; the parts list is the reliable part.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from docsight.query.image import ImageType, QueryImage, TypedText
from docsight.query.typed.common import (
    clip,
    compact,
    cx,
    cy,
    h_overlap,
    height,
    ink_mask,
    is_number,
    is_prose,
    line_height,
    median_height,
    reading_order,
    unique,
)
from docsight.vision.common import Box, OcrLine

#: Nodes considered for edges at most (pairs grow quadratically).
MAX_NODES = 60
#: Characters of a node label kept.
MAX_LABEL = 60


@dataclass
class Node:
    label: str
    box: Box

    @property
    def centre(self) -> tuple[float, float]:
        return (self.box[0] + self.box[2]) / 2, (self.box[1] + self.box[3]) / 2


@dataclass(frozen=True)
class Edge:
    a: int
    b: int
    #: 1: a → b, -1: b → a, 2: both ways, 0: no arrowhead seen.
    direction: int = 0

    def render(self, nodes: Sequence[Node]) -> str:
        a, b = nodes[self.a].label, nodes[self.b].label
        if self.direction == -1:
            a, b = b, a
        arrow = {1: "->", -1: "->", 2: "<->"}.get(self.direction, "--")
        return f"{a} {arrow} {b}"


def _rule_between(mask: np.ndarray | None, upper: Box, lower: OcrLine) -> bool:
    """Whether a horizontal stroke (a box edge) runs between two stacked lines."""
    if mask is None:
        return False
    x0, x1 = int(max(upper[0], lower.x0)), int(min(upper[2], lower.x1))
    y0, y1 = int(upper[3] - 0.2 * height(lower)), int(lower.top + 0.2 * height(lower))
    if x1 - x0 < 4 or y1 <= y0:
        return False
    band = mask[max(0, y0) : y1, x0:x1]
    return bool(band.size) and float(band.mean(axis=1).max()) >= 0.6


def group_labels(lines: Sequence[OcrLine], mask: np.ndarray | None = None) -> list[Node]:
    """Nodes from OCR lines: lines stacked closely under each other, overlapping horizontally
    and of about one size, are one multi-line label, unless a box edge in ``mask`` (the ink
    with the text erased) runs between them."""
    nodes: list[Node] = []
    sizes: list[float] = []
    for ln in sorted((ln for ln in lines if ln.text.strip()), key=lambda ln: (ln.top, ln.x0)):
        h = height(ln)
        for k, node in enumerate(nodes):
            x0, y0, x1, y1 = node.box
            stacked = 0 <= ln.top - y1 + 0.3 * h <= 0.9 * h
            overlapping = h_overlap(ln.box, node.box) >= 0.5 * min(ln.x1 - ln.x0, x1 - x0)
            if (
                stacked
                and overlapping
                and 0.7 <= h / sizes[k] <= 1.4
                and not _rule_between(mask, node.box, ln)
            ):
                node.label = f"{node.label} {ln.text}"
                node.box = (min(x0, ln.x0), y0, max(x1, ln.x1), ln.bottom)
                break
        else:
            nodes.append(Node(ln.text, ln.box))
            sizes.append(h)
    for node in nodes:
        node.label = clip(node.label, MAX_LABEL)
    return nodes


def _components(mask: np.ndarray, h: float) -> np.ndarray | None:
    """Connected-component labels of the strokes in ``mask`` (8-connected; filled shapes,
    which join whatever they touch, are dropped to 0), or None without OpenCV."""
    try:
        import cv2
    except ImportError:
        return None
    _, labels, stats, _ = cv2.connectedComponentsWithStats(mask.astype(np.uint8), connectivity=8)
    w, ht, area = stats[:, cv2.CC_STAT_WIDTH], stats[:, cv2.CC_STAT_HEIGHT], stats[:, 4]
    filled = (area >= 0.35 * w * ht) & (np.minimum(w, ht) > h)
    filled[0] = True
    return np.where(filled[labels], 0, labels)


def _grow(box: Box, pad: float, shape: tuple[int, ...]) -> tuple[int, int, int, int]:
    return (
        max(0, int(box[0] - pad)),
        max(0, int(box[1] - pad)),
        min(shape[1], math.ceil(box[2] + pad)),
        min(shape[0], math.ceil(box[3] + pad)),
    )


def _inside(x: float, y: float, box: Box, pad: float) -> bool:
    return box[0] - pad <= x <= box[2] + pad and box[1] - pad <= y <= box[3] + pad


def _ink_at(mask: np.ndarray, x: float, y: float) -> bool:
    """Ink at the pixel or one of its neighbours (anti-aliased and off-by-one strokes)."""
    xi, yi = round(x), round(y)
    window = mask[max(0, yi - 1) : yi + 2, max(0, xi - 1) : xi + 2]
    return bool(window.any())


def _width(mask: np.ndarray, x: float, y: float, nx: float, ny: float, reach: int) -> int:
    """Length of the ink run through (x, y) across the stroke (along the normal)."""
    total = 0
    for sign in (1, -1):
        for k in range(1 if sign == 1 else 0, reach):
            xi, yi = round(x + sign * k * nx), round(y + sign * k * ny)
            if not (0 <= yi < mask.shape[0] and 0 <= xi < mask.shape[1]) or not mask[yi, xi]:
                break
            total += 1
    return total


def _run_from_middle(flags: Sequence[bool], start: int) -> int:
    """Index where the ink run containing ``start`` ends (gaps of two pixels bridged)."""
    end, gap = start, 0
    for k in range(start, len(flags)):
        if flags[k]:
            end, gap = k, 0
        else:
            gap += 1
            if gap > 2:
                break
    return end


def _head_at_end(
    mask: np.ndarray, p: tuple[float, float], q: tuple[float, float], h: float
) -> bool:
    """Whether the stroke from the middle of p→q towards q ends in an arrowhead: a stretch
    before its end (the end itself may be a box outline) several times the line's width."""
    length = math.dist(p, q)
    if length < 4:
        return False
    ux, uy = (q[0] - p[0]) / length, (q[1] - p[1]) / length
    nx, ny = -uy, ux
    points = [(p[0] + t * ux, p[1] + t * uy) for t in range(int(length))]
    mid = len(points) // 2
    flags = [bool(mask[round(y), round(x)]) for x, y in points]
    if not flags[mid]:
        near = [k for k in range(mid, len(flags)) if flags[k]][:1]
        if not near:
            return False
        mid = near[0]
    end = _run_from_middle(flags, mid)
    reach = int(2 * h) + 2
    widths = [_width(mask, *points[k], nx, ny, reach) for k in range(mid, end + 1)]
    if len(widths) < 4:
        return False
    stroke = float(np.median(widths[: max(2, len(widths) // 2)]))
    tail = widths[-int(1.5 * h) - 3 : -max(2, int(stroke) + 2)]
    return bool(tail) and max(tail) >= max(3.0, 2.5 * stroke)


def _straight(mask: np.ndarray, a: Node, b: Node, nodes: Sequence[Node], h: float) -> bool:
    """A stroke along the segment between two nodes, covering most of the stretch outside
    their labels, with no third node in the way."""
    p, q = a.centre, b.centre
    length = math.dist(p, q)
    if length < 2:
        return False
    pts = [
        (p[0] + (q[0] - p[0]) * t / length, p[1] + (q[1] - p[1]) * t / length)
        for t in range(int(length))
    ]
    pad = 0.25 * h
    outside = [pt for pt in pts if not _inside(*pt, a.box, pad) and not _inside(*pt, b.box, pad)]
    if len(outside) < max(4, 0.5 * h):
        return False
    for other in nodes:
        if other is not a and other is not b and any(_inside(*pt, other.box, 0) for pt in outside):
            return False
    flags = [_ink_at(mask, *pt) for pt in outside]
    longest = run = 0
    for flag in flags:
        run = run + 1 if flag else 0
        longest = max(longest, run)
    if longest < 0.5 * len(flags) and sum(flags) < 0.7 * len(flags):
        return False
    # A stroke is thin: ink across a wide band is a filled shape the segment happens to cross.
    ux, uy = (q[0] - p[0]) / length, (q[1] - p[1]) / length
    inked = [pt for pt, flag in zip(outside, flags, strict=True) if flag]
    step = max(1, len(inked) // 12)
    widths = [_width(mask, x, y, -uy, ux, int(2 * h) + 2) for x, y in inked[::step]]
    return bool(widths) and float(np.median(widths)) <= 0.5 * h + 2


def stroke_mask(rgb: np.ndarray, lines: Sequence[OcrLine]) -> np.ndarray:
    """The ink of the image with the text erased: strokes, outlines and shapes."""
    mask = ink_mask(rgb)
    for ln in lines:
        x0, y0, x1, y1 = _grow(ln.box, 1, mask.shape)
        mask[y0:y1, x0:x1] = False
    return mask


def find_edges(rgb: np.ndarray, nodes: Sequence[Node], lines: Sequence[OcrLine]) -> list[Edge]:
    """Edges between nodes, with the direction their arrowheads show."""
    if len(nodes) < 2 or rgb.size == 0:
        return []
    h = line_height(lines) if lines else 12.0
    mask = stroke_mask(rgb, lines)
    pairs: set[tuple[int, int]] = set()
    labels = _components(mask, h)
    if labels is not None:
        touching: dict[int, set[int]] = {}
        for i, node in enumerate(nodes):
            x0, y0, x1, y1 = _grow(node.box, 0.8 * h, mask.shape)
            for comp in np.unique(labels[y0:y1, x0:x1]):
                if comp:
                    touching.setdefault(int(comp), set()).add(i)
        for members in touching.values():
            if 2 <= len(members) <= 4:
                pairs.update(_spanning_pairs(sorted(members), nodes))
    centres = [n.centre for n in nodes]
    for i, a in enumerate(nodes):
        near = sorted(
            (j for j in range(len(nodes)) if j != i),
            key=lambda j: math.dist(centres[i], centres[j]),
        )[:4]
        for j in near:
            key = (min(i, j), max(i, j))
            if key not in pairs and _straight(mask, a, nodes[j], nodes, h):
                pairs.add(key)
    edges = []
    for i, j in sorted(pairs):
        p, q = nodes[i].centre, nodes[j].centre
        to_j, to_i = _head_at_end(mask, p, q, h), _head_at_end(mask, q, p, h)
        direction = 2 if to_i and to_j else 1 if to_j else -1 if to_i else 0
        edges.append(Edge(i, j, direction))
    return edges


def _spanning_pairs(members: list[int], nodes: Sequence[Node]) -> list[tuple[int, int]]:
    """A stroke touching three or four nodes joins each to its nearest (a minimum spanning
    tree), not every node to every other."""
    if len(members) == 2:
        return [(members[0], members[1])]
    centres = {i: nodes[i].centre for i in members}
    linked = {members[0]}
    out = []
    while len(linked) < len(members):
        i, j = min(
            ((i, j) for i in linked for j in members if j not in linked),
            key=lambda ij: math.dist(centres[ij[0]], centres[ij[1]]),
        )
        linked.add(j)
        out.append((min(i, j), max(i, j)))
    return out


def _graph_text(nodes: Sequence[Node], edges: Sequence[Edge], head: str = "Nodes") -> str:
    return compact(
        [
            f"{head}: " + "; ".join(n.label for n in nodes),
            "Edges: " + "; ".join(e.render(nodes) for e in edges) if edges else "",
        ]
    )


class OfflineDiagramParser:
    """A diagram as nodes (its labels) and edges (strokes joining them, with arrow direction)."""

    type: ImageType = "diagram"
    version = "offline-diagram/1"

    def parse(self, image: QueryImage) -> TypedText | None:
        lines = [ln for ln in image.lines if ln.text.strip()]
        caption = [ln for ln in lines if is_prose(ln, image.width) and len(ln.text.split()) >= 9]
        labels = [ln for ln in lines if ln not in caption]
        if not labels:
            return None
        mask = stroke_mask(image.rgb, lines) if image.rgb.size else None
        nodes = group_labels(labels, mask)[:MAX_NODES]
        edges = find_edges(image.rgb, nodes, lines)
        caption_text = " ".join(ln.text for ln in reading_order(caption))
        text = compact([_graph_text(nodes, edges), clip(caption_text, 300)])
        return TypedText(
            type="diagram",
            text=text,
            fields={
                "nodes": [n.label for n in nodes],
                "edges": [e.render(nodes) for e in edges],
                "caption": clip(caption_text, 400),
            },
            parser=self.version,
        )


# --- circuits -----------------------------------------------------------------------------------

_DESIGNATOR = re.compile(
    r"^(R|C|L|D|Q|U|IC|J|K|SW|S|T|F|Y|X|LED|VR|RV|TP|BT|M|P|CN|FB|Z|ZD)\d{1,3}[A-Z]?$"
)
_NET = re.compile(
    r"^(VCC|VDD|VSS|VEE|GND|AGND|DGND|PGND|V\+|V-|VIN|VOUT|VREF|[+-]?\d+(\.\d+)?V\d*|"
    r"[+-]?V[A-Z]{1,4}|EN|CLK|SDA|SCL|TX|RX|MOSI|MISO|SCK|CS|RST|RESET)$",
    re.IGNORECASE,
)
_VALUE = re.compile(
    r"^\d+(\.\d+)?\s*([kKMmµunpR]|meg)?\d*\s*(Ω|ohms?|F|H|V|A|Hz|W|VA)?$|^\d+[kKMR]\d+$"
)


def classify_part(text: str) -> str:
    """``designator``, ``net``, ``value`` or ``label`` for one circuit label."""
    t = text.strip().replace(" ", "")
    if _DESIGNATOR.match(t):
        return "designator"
    if _NET.match(t):
        return "net"
    if _VALUE.match(t) and any(c.isdigit() for c in t):
        return "value"
    return "label"


class OfflineCircuitParser:
    """A circuit as its parts (designators with their values), nets and visible connections."""

    type: ImageType = "circuit"
    version = "offline-circuit/1"

    def parse(self, image: QueryImage) -> TypedText | None:
        lines = [ln for ln in image.lines if ln.text.strip()]
        if not lines:
            return None
        tokens: list[OcrLine] = []
        for ln in lines:
            words = ln.text.split()
            if len(words) <= 1:
                tokens.append(ln)
                continue
            # "R1 10k" is two labels: split the box in proportion to the characters.
            width = (ln.x1 - ln.x0) / max(1, len(ln.text))
            start = 0
            for word in words:
                at = ln.text.index(word, start)
                x0 = ln.x0 + at * width
                tokens.append(OcrLine(word, (x0, ln.top, x0 + len(word) * width, ln.bottom), 1))
                start = at + len(word)
        kinds = {id(t): classify_part(t.text) for t in tokens}
        designators = [t for t in tokens if kinds[id(t)] == "designator"]
        values = [t for t in tokens if kinds[id(t)] == "value"]
        nets = unique(t.text for t in tokens if kinds[id(t)] == "net")
        others = unique(t.text for t in tokens if kinds[id(t)] == "label" and not is_number(t.text))
        parts = []
        h = median_height(lines)
        for d in designators:
            near = [v for v in values if math.dist((cx(d), cy(d)), (cx(v), cy(v))) <= 4 * h]
            best = min(near, key=lambda v: math.dist((cx(d), cy(d)), (cx(v), cy(v))), default=None)
            parts.append(f"{d.text} {best.text}" if best is not None else d.text)
            if best is not None:
                values.remove(best)
        nodes = [Node(t.text, t.box) for t in tokens if kinds[id(t)] in ("designator", "net")]
        edges = find_edges(image.rgb, nodes[:MAX_NODES], lines)
        if not parts and not nets and not others:
            return None
        text = compact(
            [
                "Parts: " + "; ".join(unique(parts)) if parts else "",
                "Nets: " + ", ".join(nets) if nets else "",
                "Values: " + ", ".join(unique(v.text for v in values)) if values else "",
                "Connections: " + "; ".join(e.render(nodes) for e in edges) if edges else "",
                "Labels: " + ", ".join(others) if others else "",
            ]
        )
        return TypedText(
            type="circuit",
            text=text,
            fields={
                "nodes": unique(parts) + nets,
                "edges": [e.render(nodes) for e in edges],
                "parts": unique(parts),
                "nets": nets,
                "labels": others,
            },
            parser=self.version,
        )


# --- maps ---------------------------------------------------------------------------------------

_SCALE = re.compile(
    r"(\b1\s*:\s*\d[\d,. ]*\b|\b\d+(\.\d+)?\s*(km|mi|miles?|m|ft|feet|kilomet(er|re)s?|"
    r"met(er|re)s?|nm)\b)",
    re.IGNORECASE,
)
_COORD = re.compile(r"\d+(\.\d+)?\s*°\s*\d*['′]?\s*[NSEW]?\b|\b\d+(\.\d+)?\s*[NSEW]\b")
_LEGEND_HEAD = re.compile(r"^(legend|key|map key)\b", re.IGNORECASE)


def _place_like(text: str) -> bool:
    words = text.split()
    if not words or len(words) > 5 or is_number(text):
        return False
    letters = [c for c in text if c.isalpha()]
    if len(letters) < 2:
        return False
    capitals = sum(1 for w in words if w[:1].isupper())
    return capitals >= max(1, len(words) // 2)


class OfflineMapParser:
    """A map as its place names (capitalised labels), scale, coordinates and legend text."""

    type: ImageType = "map"
    version = "offline-map/1"

    def parse(self, image: QueryImage) -> TypedText | None:
        lines = reading_order(ln for ln in image.lines if ln.text.strip())
        if not lines:
            return None
        scale = unique(m[0] for ln in lines for m in _SCALE.finditer(ln.text))
        coords = unique(m[0] for ln in lines for m in _COORD.finditer(ln.text))
        legend: list[str] = []
        heads = [ln for ln in lines if _LEGEND_HEAD.match(ln.text)]
        for head in heads:
            legend.extend(
                ln.text
                for ln in lines
                if ln.top > head.top
                and ln.top - head.bottom <= 12 * height(head)
                and abs(ln.x0 - head.x0) <= 4 * height(head)
            )
        legend = unique(legend, limit=15)
        places = unique(
            ln.text
            for ln in lines
            if _place_like(ln.text)
            and ln.text not in legend
            and not _SCALE.search(ln.text)
            and not _LEGEND_HEAD.match(ln.text)
        )
        title = next((ln.text for ln in lines if len(ln.text.split()) >= 3), "")
        text = compact(
            [
                "Places: " + "; ".join(places) if places else "",
                "Scale: " + ", ".join(scale) if scale else "",
                "Coordinates: " + ", ".join(coords) if coords else "",
                "Legend: " + "; ".join(legend) if legend else "",
                "Other text: "
                + " | ".join(unique(ln.text for ln in lines if ln.text not in places + legend)),
            ]
        )
        fields: dict[str, Any] = {
            "places": places,
            "scale": scale,
            "coordinates": coords,
            "legend": legend,
            "title": title,
        }
        return TypedText(type="map", text=text, fields=fields, parser=self.version)


__all__ = [
    "Edge",
    "Node",
    "OfflineCircuitParser",
    "OfflineDiagramParser",
    "OfflineMapParser",
    "classify_part",
    "find_edges",
    "group_labels",
]
