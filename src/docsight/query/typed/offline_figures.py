"""Figures (panels and their labels) and photographs (what is knowable without a detector).

A figure's panels are found from their printed labels ("(a)", "b)", "(iii)") when there are
at least two in sequence, each line going to the label above and left of it; otherwise from
whitespace gutters, columns then rows of blank pixels that split the picture. The caption
(running text, usually "Figure 3: ...") is kept apart.

Photographs are the honest case: no object detector ships with docsight, so nothing here says
what objects a photograph shows. What is real: the text visible in it (signs, labels, captions:
the part search can use most), its dominant colours named, and coarse cues measured on the
pixels (brightness, a blue or bright top band, much green, black and white, orientation).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from docsight.query.image import ImageType, QueryImage, TypedText
from docsight.query.typed.common import (
    COLOUR_WORDS,
    clip,
    compact,
    cx,
    cy,
    height,
    ink_mask,
    is_caption_start,
    is_number,
    is_prose,
    median_height,
    name_pixels,
    reading_order,
    unique,
)
from docsight.vision.common import OcrLine

_PANEL_LABEL = re.compile(r"^\(([a-hA-H]|i{1,3}|iv|vi{0,3}|ix|x)\)|^([a-hA-H])\)(?=\s|$)")
_SEQUENCES = ("abcdefgh", "ABCDEFGH")
_ROMAN = ("i", "ii", "iii", "iv", "v", "vi", "vii", "viii", "ix", "x")
#: Labels kept per panel.
MAX_PANEL_LABELS = 14


@dataclass
class FigurePanel:
    name: str
    box: tuple[float, float, float, float]
    labels: list[str] = field(default_factory=list)


def _panel_key(line: OcrLine) -> str | None:
    match = _PANEL_LABEL.match(line.text.strip())
    if match is None:
        return None
    return match[1] or match[2]


def _in_sequence(keys: Sequence[str]) -> bool:
    distinct = sorted(set(keys))
    if len(distinct) < 2:
        return False
    if all(k in _ROMAN for k in distinct):
        return True
    return any(all(k in seq for k in distinct) for seq in _SEQUENCES)


def panels_by_labels(lines: Sequence[OcrLine]) -> list[FigurePanel]:
    """Panels anchored at their printed labels; every other line joins the nearest label above
    and to the left of it (panel labels sit at the top left corner)."""
    anchors = [(ln, key) for ln in lines if (key := _panel_key(ln)) is not None]
    if not _in_sequence([k for _, k in anchors]):
        return []
    seen: set[str] = set()
    firsts = []
    for ln, key in sorted(anchors, key=lambda a: (a[0].top, a[0].x0)):
        if key not in seen:
            seen.add(key)
            firsts.append((ln, key))
    firsts.sort(key=lambda a: _ROMAN.index(a[1]) if a[1] in _ROMAN else ord(a[1].lower()))
    panels = [FigurePanel(f"({key})", ln.box) for ln, key in firsts]
    h = median_height(lines)
    for ln in lines:
        owner = None
        best = float("inf")
        for panel, (anchor, _) in zip(panels, firsts, strict=True):
            if anchor.top > cy(ln) + h or anchor.x0 > cx(ln) + h:
                continue
            d = (cx(ln) - anchor.x0) ** 2 + (cy(ln) - anchor.top) ** 2
            if d < best:
                owner, best = panel, d
        if owner is None:
            continue
        rest = _PANEL_LABEL.sub("", ln.text).strip()
        if rest:
            owner.labels.append(rest)
    return panels


def _gaps(occupied: np.ndarray, min_gap: int) -> list[tuple[int, int]]:
    """Spans between blank runs at least ``min_gap`` long (runs at the edges trimmed)."""
    filled = np.flatnonzero(occupied)
    if filled.size == 0:
        return []
    spans = []
    start = prev = int(filled[0])
    for i in filled[1:]:
        if i - prev > min_gap:
            spans.append((start, prev + 1))
            start = int(i)
        prev = int(i)
    spans.append((start, prev + 1))
    return spans


def panels_by_gutters(rgb: np.ndarray, bottom: int | None = None) -> list[FigurePanel]:
    """Panels split by whitespace gutters: columns first, then rows inside each column."""
    mask = ink_mask(rgb)[: bottom or rgb.shape[0]]
    if mask.size == 0:
        return []
    h, w = mask.shape
    boxes = []
    for x0, x1 in _gaps(np.asarray(mask.any(axis=0)), max(6, int(0.02 * w))):
        rows = np.asarray(mask[:, x0:x1].any(axis=1))
        for y0, y1 in _gaps(rows, max(6, int(0.02 * h))):
            if (x1 - x0) * (y1 - y0) >= 0.03 * w * h and min(x1 - x0, y1 - y0) >= 12:
                boxes.append((float(x0), float(y0), float(x1), float(y1)))
    if len(boxes) < 2:
        return []
    boxes.sort(key=lambda b: (round(b[1] / max(1.0, 0.1 * h)), b[0]))
    return [FigurePanel(f"panel {k + 1}", b) for k, b in enumerate(boxes)]


def caption_lines(lines: Sequence[OcrLine], width: int) -> list[OcrLine]:
    """The caption: from a line opening one ("Figure 3:", "Fig. 2.") that reads as running text,
    every line below it in its column. Prose elsewhere (a quote, a text box) is content."""
    starts = [
        ln
        for ln in lines
        if is_caption_start(ln.text) and (is_prose(ln, width) or len(ln.text.split()) >= 3)
    ]
    if not starts:
        return []
    start = min(starts, key=lambda ln: ln.top)
    h = height(start)
    return [ln for ln in lines if ln.top >= start.top - 0.3 * h and ln.x0 >= start.x0 - 2 * h]


def _fill(panels: list[FigurePanel], lines: Sequence[OcrLine]) -> None:
    """Each line to the panel holding its centre, or to the nearest panel above or below it
    (a sub-caption under its picture)."""
    h = median_height(lines) if lines else 12.0
    for ln in lines:
        x, y = cx(ln), cy(ln)
        best, gap = None, 3 * h
        for panel in panels:
            x0, y0, x1, y1 = panel.box
            if not x0 <= x <= x1:
                continue
            d = max(0.0, y0 - y, y - y1)
            if d <= gap:
                best, gap = panel, d
        if best is not None:
            best.labels.append(ln.text)


def _panel_summary(labels: Sequence[str]) -> list[str]:
    """Words first, then a few numbers (figure numbers are mostly ticks)."""
    words = [t for t in labels if not is_number(t)]
    numbers = [t for t in labels if is_number(t)][:5]
    return unique([*words, *numbers], limit=MAX_PANEL_LABELS)


class OfflineFigureParser:
    """A figure as its panels ((a), (b), ... or split by whitespace) with each panel's labels,
    and its caption."""

    type: ImageType = "figure"
    version = "offline-figure/1"

    def parse(self, image: QueryImage) -> TypedText | None:
        lines = [ln for ln in image.lines if ln.text.strip()]
        caption = caption_lines(lines, image.width)
        labels = reading_order(ln for ln in lines if ln not in caption)
        caption_top = min((ln.top for ln in caption), default=None)
        bottom = (
            int(caption_top)
            if caption_top is not None and caption_top > 0.5 * image.height
            else None
        )
        panels = panels_by_labels(labels)
        if not panels and image.rgb.size:
            panels = panels_by_gutters(image.rgb, bottom)
            _fill(panels, labels)
        caption_text = " ".join(ln.text for ln in reading_order(caption))
        if not panels and not labels and not caption_text:
            return None
        parts = []
        if panels:
            parts.append(f"Panels: {len(panels)}")
            for panel in panels:
                summary = _panel_summary(panel.labels)
                if summary:
                    parts.append(f"{panel.name}: " + "; ".join(summary))
        elif labels:
            parts.append("Labels: " + "; ".join(unique(ln.text for ln in labels)))
        if caption_text:
            parts.append("Caption: " + clip(caption_text, 400))
        fields: dict[str, Any] = {
            "panels": [{"name": p.name, "labels": _panel_summary(p.labels)} for p in panels],
            "labels": unique(ln.text for ln in labels),
            "caption": clip(caption_text, 600),
        }
        return TypedText(type="figure", text=compact(parts), fields=fields, parser=self.version)


# --- photographs --------------------------------------------------------------------------------


def _small(rgb: np.ndarray, side: int = 96) -> np.ndarray:
    from PIL import Image

    image = Image.fromarray(rgb)
    image.thumbnail((side, side))
    return np.asarray(image.convert("RGB"))


def colour_shares(rgb: np.ndarray) -> list[tuple[str, float]]:
    """Named colours with their share of the pixels, largest first."""
    if rgb.size == 0:
        return []
    names = name_pixels(_small(rgb))
    counts = np.bincount(names, minlength=len(COLOUR_WORDS)) / max(1, names.size)
    order = np.argsort(-counts)
    return [(COLOUR_WORDS[int(k)], round(float(counts[k]), 3)) for k in order if counts[k] > 0]


def scene_cues(rgb: np.ndarray, lines: Sequence[OcrLine]) -> list[str]:
    """Coarse cues measured on the pixels; each is a measurement, not a recognised object."""
    if rgb.size == 0:
        return []
    small = _small(rgb).astype(np.float64) / 255.0
    cues = []
    luma = small @ np.array([0.299, 0.587, 0.114])
    mean = float(luma.mean())
    cues.append("dark" if mean < 0.3 else "dim" if mean < 0.45 else "bright" if mean > 0.7 else "")
    spread = small.max(axis=2) - small.min(axis=2)
    if float(spread.mean()) < 0.06:
        cues.append("black and white")
    names = name_pixels((small * 255).astype(np.uint8)).reshape(small.shape[0], small.shape[1])
    top = names[: max(1, names.shape[0] // 3)]
    if float((top == COLOUR_WORDS.index("blue")).mean()) >= 0.3:
        cues.append("blue upper part (sky or water)")
    if float((names == COLOUR_WORDS.index("green")).mean()) >= 0.2:
        cues.append("much green (vegetation)")
    text_area = sum((ln.x1 - ln.x0) * height(ln) for ln in lines)
    if text_area >= 0.15 * rgb.shape[0] * rgb.shape[1]:
        cues.append("much text (a sign, poster, slide or document)")
    h, w = rgb.shape[:2]
    cues.append("portrait" if h > 1.2 * w else "landscape" if w > 1.2 * h else "square")
    return [c for c in cues if c]


class OfflinePhotographParser:
    """What a photograph offline can honestly say: its visible text (signs, labels), dominant
    colours and pixel cues. It names no objects: that needs a detector model, and none ships."""

    type: ImageType = "photograph"
    version = "offline-photograph/1"

    def parse(self, image: QueryImage) -> TypedText | None:
        lines = reading_order(ln for ln in image.lines if ln.text.strip())
        text_lines = unique((ln.text for ln in lines), limit=30)
        shares = colour_shares(image.rgb)
        colours = [name for name, share in shares if share >= 0.08][:4]
        cues = scene_cues(image.rgb, lines)
        if not text_lines and not colours:
            return None
        parts = [
            "Visible text: " + " | ".join(text_lines) if text_lines else "",
            "Colours: " + ", ".join(colours) if colours else "",
            "Cues: " + ", ".join(cues) if cues else "",
        ]
        return TypedText(
            type="photograph",
            text=compact(parts),
            fields={
                "text": text_lines,
                "colours": colours,
                "colour_shares": dict(shares[:6]),
                "cues": cues,
                "objects": [],
            },
            parser=self.version,
        )
