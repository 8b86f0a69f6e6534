"""Running headers and footers: lines in the top or bottom band that recur across pages."""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Sequence

from docsight.parsers.pdf.layout import Line

#: Top and bottom bands (fractions of page height) where running headers and footers live.
FURNITURE_BAND = 0.08

_DIGITS = re.compile(r"\d+")
_PAGE_NUMBER = re.compile(
    r"^(?:page\s*)?(?:#|[ivxlc]{1,6})(?:\s*(?:of|/)\s*#)?$|^[-–—]\s*#\s*[-–—]$|^#\s*\|.*$|^.*\|\s*#$"
)


def furniture_key(text: str) -> str:
    return " ".join(_DIGITS.sub("#", text.lower()).split())


def is_page_number(text: str) -> bool:
    """Whether ``text`` is a bare page number ("12", "Page 3 of 9", "- iv -")."""
    key = furniture_key(text)
    return bool(key) and bool(_PAGE_NUMBER.match(key))


def find_furniture(
    pages: Sequence[Sequence[Line]], frames: Sequence[tuple[float, float]]
) -> list[dict[int, str]]:
    """Running headers and footers: for each page, ``{line index: "header" | "footer"}``.

    ``frames`` gives each page's ``(top, height)``. A line in the top or bottom band is furniture
    when its digit-normalised text recurs on several pages, or when it is a bare page number.
    """
    n = len(pages)
    seen: defaultdict[tuple[str, str], set[int]] = defaultdict(set)
    candidates: list[list[tuple[int, str, str, bool]]] = []
    for p, (lines, (top, h)) in enumerate(zip(pages, frames, strict=True)):
        band = FURNITURE_BAND * h
        found: list[tuple[int, str, str, bool]] = []
        # The first and last rows count too: some pages end their text well above the band.
        first = min((ln.bottom for ln in lines), default=0.0)
        last = max((ln.top for ln in lines), default=0.0)
        for i, ln in enumerate(lines):
            in_band = True
            if ln.bottom - top <= band or ln.top <= first:
                zone, in_band = "header", ln.bottom - top <= band
            elif ln.top - top >= h - band or ln.bottom >= last:
                zone, in_band = "footer", ln.top - top >= h - band
            else:
                continue
            key = furniture_key(ln.text)
            if key:
                found.append((i, zone, key, in_band))
                seen[(zone, key)].add(p)
        candidates.append(found)
    # Outside the bands a line must recur on many pages: a short document can repeat a body
    # line by chance.
    need = max(2, min(5, math.ceil(0.25 * n)))
    need_outside = max(3, math.ceil(0.4 * n))
    result: list[dict[int, str]] = []
    for found in candidates:
        marks: dict[int, str] = {}
        for i, zone, key, in_band in found:
            count = len(seen[(zone, key)])
            if count >= (need if in_band else need_outside) or (
                in_band and _PAGE_NUMBER.match(key)
            ):
                marks[i] = zone
        result.append(marks)
    return result
