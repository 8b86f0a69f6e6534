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


#: A page's furniture candidates: ``(line index, zone, digit-normalised text, in the band)``.
Candidates = list[tuple[int, str, str, bool]]


def find_furniture(
    pages: Sequence[Sequence[Line]], frames: Sequence[tuple[float, float]]
) -> list[dict[int, str]]:
    """Running headers and footers: for each page, ``{line index: "header" | "footer"}``.

    ``frames`` gives each page's ``(top, height)``. A line in the top or bottom band is furniture
    when its digit-normalised text recurs on several pages, or when it is a bare page number.
    """
    found = [furniture_candidates(lines, frame) for lines, frame in zip(pages, frames, strict=True)]
    return mark_furniture(found)


def furniture_candidates(lines: Sequence[Line], frame: tuple[float, float]) -> Candidates:
    """The lines of one page that may be running headers or footers (``frame``: the page's
    ``(top, height)``). Only these, never the page's lines, are needed to decide across pages
    (:func:`mark_furniture`), so a long document's pages need not be held together."""
    top, h = frame
    band = FURNITURE_BAND * h
    found: Candidates = []
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
    return found


def mark_furniture(candidates: Sequence[Candidates]) -> list[dict[int, str]]:
    """For each page, ``{line index: "header" | "footer"}`` from every page's candidates."""
    n = len(candidates)
    seen: defaultdict[tuple[str, str], set[int]] = defaultdict(set)
    for p, found in enumerate(candidates):
        for _, zone, key, _ in found:
            seen[(zone, key)].add(p)
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
