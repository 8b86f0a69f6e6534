"""What the offline typed parsers share: OCR line geometry, numbers, colours, compact text.

Everything here is pure numpy and the standard library, so the parsers run (on pixels alone)
without the ``ocr`` extra. Boxes are ``(x0, y0, x1, y1)`` pixels of ``QueryImage.rgb``.
"""

from __future__ import annotations

import colorsys
import re
from collections.abc import Iterable, Sequence
from statistics import median
from typing import Any

import numpy as np

from docsight.vision.common import Box, OcrLine

#: Characters of typed text a parser returns at most: it is appended to a question, and the
#: caller keeps only ``max_stream_words`` words of it anyway.
MAX_TEXT_CHARS = 1400
#: Items of a field list kept (strings, labels, nodes, ...).
MAX_ITEMS = 40

_NUMBER = re.compile(
    r"""^\s*
    (?P<open>\()?
    (?P<sign>[+\-−–])?\s*
    (?P<cur>[$€£¥])?\s*
    (?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)
    \s*(?P<suffix>%|k|K|M|B|bn|m|pts|pp)?
    (?P<close>\))?\s*\*?\s*$""",
    re.VERBOSE,
)
_SCALE = {"k": 1e3, "K": 1e3, "M": 1e6, "m": 1e6, "B": 1e9, "bn": 1e9}


def parse_number(text: str) -> float | None:
    """The value of a chart or table number ("43%", "$1,250.5", "(12)", "−3", "2.5bn"), or None
    when the text is not a single number."""
    match = _NUMBER.match(text)
    if match is None or bool(match["open"]) != bool(match["close"]):
        return None
    value = float(match["num"].replace(",", ""))
    value *= _SCALE.get(match["suffix"] or "", 1.0)
    if match["sign"] in ("-", "−", "–") or match["open"]:
        value = -value
    return value


def is_number(text: str) -> bool:
    return parse_number(text) is not None


# --- geometry -----------------------------------------------------------------------------------


def cx(line: OcrLine) -> float:
    return (line.x0 + line.x1) / 2


def cy(line: OcrLine) -> float:
    return (line.top + line.bottom) / 2


def height(line: OcrLine) -> float:
    return max(1.0, line.bottom - line.top)


def text_size(line: OcrLine) -> float:
    """The line's text height: box height for upright text, box width for vertical text."""
    return max(1.0, (line.x1 - line.x0) if line.vertical else (line.bottom - line.top))


def median_height(lines: Sequence[OcrLine]) -> float:
    upright = [height(ln) for ln in lines if not ln.vertical]
    return float(median(upright)) if upright else 12.0


def line_height(lines: Sequence[OcrLine]) -> float:
    """The typical height of horizontal text: boxes of rotated text (diagonal labels) are
    tall as well as wide, so only clearly wide boxes count when there are any."""
    flat = [height(ln) for ln in lines if not ln.vertical and ln.x1 - ln.x0 >= 1.5 * height(ln)]
    return float(median(flat)) if flat else median_height(lines)


def v_overlap(a: Box, b: Box) -> float:
    return max(0.0, min(a[3], b[3]) - max(a[1], b[1]))


def h_overlap(a: Box, b: Box) -> float:
    return max(0.0, min(a[2], b[2]) - max(a[0], b[0]))


def union(boxes: Iterable[Box]) -> Box:
    bs = list(boxes)
    return (
        min(b[0] for b in bs),
        min(b[1] for b in bs),
        max(b[2] for b in bs),
        max(b[3] for b in bs),
    )


def row_bands(lines: Iterable[OcrLine], share: float = 0.5) -> list[list[OcrLine]]:
    """Lines banded into rows by vertical overlap (each row sorted left to right), top first.

    A line joins a row when it overlaps the row's tallest line by ``share`` of the smaller
    height, so a superscript or a value label a few pixels off still joins its row.
    """
    rows: list[list[OcrLine]] = []
    refs: list[OcrLine] = []
    for ln in sorted((ln for ln in lines if not ln.vertical), key=cy):
        for k in range(len(rows) - 1, max(-1, len(rows) - 3), -1):
            ref = refs[k]
            if v_overlap(ln.box, ref.box) >= share * min(height(ln), height(ref)):
                rows[k].append(ln)
                if height(ln) > height(ref):
                    refs[k] = ln
                break
        else:
            rows.append([ln])
            refs.append(ln)
    return [sorted(row, key=lambda ln: ln.x0) for row in rows]


def reading_order(lines: Iterable[OcrLine]) -> list[OcrLine]:
    """Rows top to bottom, left to right inside a row; vertical lines last."""
    lines = list(lines)
    ordered = [ln for row in row_bands(lines) for ln in row]
    return ordered + sorted((ln for ln in lines if ln.vertical), key=lambda ln: ln.x0)


def is_prose(line: OcrLine, image_width: int) -> bool:
    """A line of running text (a caption or a note) rather than a label."""
    words = len(line.text.split())
    return words >= 9 or (words >= 5 and line.x1 - line.x0 >= 0.55 * image_width)


_CAPTION = re.compile(r"^(fig(ure)?|table|chart|exhibit|source|note)s?\b\.?\s*[\dA-Z:]", re.I)


def is_caption_start(text: str) -> bool:
    return bool(_CAPTION.match(text.strip()))


_BULLETS = frozenset("•●○◦▪■□-–—*·>")


def title_line(lines: Sequence[OcrLine], image_height: int) -> OcrLine | None:
    """The title: the tallest label in the top quarter, if it stands out or leads the image.

    Text height is the signal (titles are set larger); position breaks ties, since a title sits
    above what it names.
    """
    labels = [
        ln
        for ln in lines
        if not ln.vertical
        and not is_number(ln.text)
        and sum(c.isalpha() for c in ln.text) >= 3
        and len(ln.text.split()) <= 16
        and ln.top <= 0.25 * image_height
        and not is_caption_start(ln.text)
        and ln.text.lstrip()[:1] not in _BULLETS
    ]
    if not labels:
        return None
    body = median_height(lines)
    # Box heights vary by a quarter with descenders and accents: only a clear margin counts.
    best = max(labels, key=lambda ln: (round(height(ln) / max(body, 1.0), 1), -ln.top))
    first = min(labels, key=lambda ln: ln.top)
    if height(best) >= 1.35 * body:
        return best
    if best is first and 3 <= len(first.text.split()) <= 12 and first.top <= 0.1 * image_height:
        return first
    return None


def title_block(lines: Sequence[OcrLine], image_height: int) -> list[OcrLine]:
    """The title line and the lines that continue it (same size, just below, same left edge
    or centred under it): a two-line title is one title."""
    first = title_line(lines, image_height)
    if first is None:
        return []
    block = [first]
    for ln in sorted((ln for ln in lines if ln.top > first.top and not ln.vertical), key=cy):
        last = block[-1]
        same_size = abs(height(ln) - height(first)) <= 0.15 * height(first)
        close = ln.top - last.bottom <= 0.6 * height(first)
        aligned = abs(ln.x0 - first.x0) <= height(first) or abs(cx(ln) - cx(first)) <= height(first)
        wordy = not is_number(ln.text) or re.fullmatch(r"(19|20)\d\d", ln.text.strip())
        if same_size and close and aligned and wordy:
            block.append(ln)
        elif ln.top - last.bottom > 0.6 * height(first):
            break
    return block


# --- pixels -------------------------------------------------------------------------------------


def background(rgb: np.ndarray) -> np.ndarray:
    """The background colour: the median of the border pixels."""
    border = np.concatenate([rgb[0], rgb[-1], rgb[:, 0], rgb[:, -1]]).reshape(-1, 3)
    return np.median(border, axis=0)


def ink_mask(rgb: np.ndarray, bg: np.ndarray | None = None, threshold: float = 90.0) -> np.ndarray:
    """Pixels that differ from the background (summed absolute RGB difference)."""
    bg = background(rgb) if bg is None else bg
    return np.abs(rgb.astype(np.int16) - bg.astype(np.int16)).sum(axis=2) > threshold


def clip_box(box: Box, width: int, height_: int) -> tuple[int, int, int, int]:
    x0, y0, x1, y1 = box
    return (
        max(0, int(x0)),
        max(0, int(y0)),
        min(width, int(np.ceil(x1))),
        min(height_, int(np.ceil(y1))),
    )


def ink_colour(rgb: np.ndarray, box: Box) -> tuple[int, int, int] | None:
    """The colour of the text in ``box``: the pixels farthest from the box's own background."""
    x0, y0, x1, y1 = clip_box(box, rgb.shape[1], rgb.shape[0])
    crop = rgb[y0:y1, x0:x1].reshape(-1, 3).astype(np.int16)
    if crop.shape[0] < 4:
        return None
    bg = np.median(crop, axis=0)
    dist = np.abs(crop - bg).sum(axis=1)
    # The most distant pixels: anti-aliased edges of small glyphs are washed-out mixtures.
    far = crop[dist >= max(60.0, float(np.percentile(dist, 95)))]
    if far.shape[0] < 3:
        return None
    r, g, b = np.median(far, axis=0)
    return int(r), int(g), int(b)


def colour_name(colour: Sequence[float]) -> str:
    """A plain colour word for an RGB triple (hue buckets; greys by lightness)."""
    r, g, b = (float(c) / 255.0 for c in colour[:3])
    h, s, v = colorsys.rgb_to_hsv(r, g, b)
    if v < 0.2:
        return "black"
    if s < 0.18 or (s < 0.3 and v < 0.45):
        return "white" if v > 0.9 else "grey" if v > 0.3 else "black"
    deg = h * 360
    if deg < 15 or deg >= 340:
        return "red" if v > 0.55 or s > 0.6 else "brown"
    if deg < 40:
        return "orange" if v > 0.7 else "brown"
    if deg < 65:
        return "yellow" if v > 0.6 else "olive"
    if deg < 160:
        return "green"
    if deg < 195:
        return "teal"
    if deg < 255:
        return "blue"
    if deg < 290:
        return "purple"
    return "pink"


COLOUR_WORDS = (
    "black", "grey", "white", "red", "brown", "orange", "yellow", "olive", "green", "teal",
    "blue", "purple", "pink",
)  # fmt: skip


def name_pixels(rgb: np.ndarray) -> np.ndarray:
    """:func:`colour_name` for every pixel of an ``N × 3`` array, as indices into
    :data:`COLOUR_WORDS` (the same rules, vectorised)."""
    arr = rgb.reshape(-1, 3).astype(np.float64) / 255.0
    v = arr.max(axis=1)
    c = v - arr.min(axis=1)
    s = np.where(v > 0, c / np.maximum(v, 1e-9), 0.0)
    r, g, b = arr[:, 0], arr[:, 1], arr[:, 2]
    safe = np.maximum(c, 1e-9)
    hue = np.where(
        v == r, ((g - b) / safe) % 6, np.where(v == g, (b - r) / safe + 2, (r - g) / safe + 4)
    )
    deg = np.where(c > 0, hue * 60.0, 0.0)
    idx = {w: k for k, w in enumerate(COLOUR_WORDS)}
    out = np.full(arr.shape[0], idx["pink"], dtype=np.int64)
    bounds: list[tuple[np.ndarray, Any]] = [
        (deg < 15, np.where((v > 0.55) | (s > 0.6), idx["red"], idx["brown"])),
        (deg < 40, np.where(v > 0.7, idx["orange"], idx["brown"])),
        (deg < 65, np.where(v > 0.6, idx["yellow"], idx["olive"])),
        (deg < 160, idx["green"]),
        (deg < 195, idx["teal"]),
        (deg < 255, idx["blue"]),
        (deg < 290, idx["purple"]),
        (deg < 340, idx["pink"]),
        (deg >= 340, np.where((v > 0.55) | (s > 0.6), idx["red"], idx["brown"])),
    ]
    done = np.zeros(arr.shape[0], dtype=bool)
    for cond, value in bounds:
        pick = cond & ~done
        out = np.where(pick, value, out)
        done |= pick
    grey = (s < 0.18) | ((s < 0.3) & (v < 0.45))
    shade = np.where(v > 0.9, idx["white"], np.where(v > 0.3, idx["grey"], idx["black"]))
    out = np.where(grey, shade, out)
    return np.where(v < 0.2, idx["black"], out)


def chromatic(colour: Sequence[float] | None) -> bool:
    return colour is not None and colour_name(colour) not in ("black", "grey", "white")


# --- compact text -------------------------------------------------------------------------------


def clip(text: str, max_chars: int) -> str:
    """``text`` cut at a word boundary to at most ``max_chars`` characters (with an ellipsis)."""
    text = text.strip()
    if len(text) <= max_chars:
        return text
    cut = text[: max_chars - 1]
    space = cut.rfind(" ")
    if space >= max_chars // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + "…"


def unique(items: Iterable[str], limit: int = MAX_ITEMS) -> list[str]:
    """Distinct non-empty items, first occurrence kept, at most ``limit``."""
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        item = " ".join(item.split())
        key = item.casefold()
        if item and key not in seen:
            seen.add(key)
            out.append(item)
            if len(out) >= limit:
                break
    return out


def compact(parts: Iterable[str], max_chars: int = MAX_TEXT_CHARS) -> str:
    """Non-empty parts, one a line, clipped to ``max_chars`` overall (whole lines first)."""
    out: list[str] = []
    used = 0
    for part in parts:
        part = part.strip()
        if not part:
            continue
        if used + len(part) + 1 > max_chars:
            room = max_chars - used - 1
            if room >= 40:
                out.append(clip(part, room))
            break
        out.append(part)
        used += len(part) + 1
    return "\n".join(out)
