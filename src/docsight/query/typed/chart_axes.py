"""Chart axes: tick labels found among a chart's numbers, and bar lengths read on the pixels.

A y axis is a column of right-aligned numbers, an x value axis a row of numbers, in both cases
evenly stepped by a round step (1, 2, 2.5 or 5 times a power of ten) at evenly spaced positions:
a column of values that happens to be monotonic rarely is. The axis maps pixels to values by a
linear fit, which is how a bar without a printed value gets one.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import median

import numpy as np

from docsight.query.typed.common import background, cx, cy, median_height, parse_number, row_bands
from docsight.vision.common import OcrLine


@dataclass
class Axis:
    """Tick labels along one axis; ``vertical`` for a y axis (ticks stacked top to bottom)."""

    lines: list[OcrLine]
    values: list[float]
    vertical: bool
    slope: float = 0.0
    intercept: float = 0.0

    def __post_init__(self) -> None:
        slope, intercept = np.polyfit(self.positions, self.values, 1)
        self.slope, self.intercept = float(slope), float(intercept)

    @property
    def positions(self) -> list[float]:
        return [cy(ln) if self.vertical else cx(ln) for ln in self.lines]

    @property
    def labels(self) -> list[str]:
        return [ln.text for ln in self.lines]

    @property
    def step(self) -> float:
        return abs(self.values[1] - self.values[0]) if len(self.values) > 1 else 1.0

    def value_at(self, position: float) -> float:
        return self.slope * position + self.intercept

    def position_of(self, value: float) -> float:
        return (value - self.intercept) / self.slope if self.slope else self.positions[0]


def _evenly_spaced(values: Sequence[float], positions: Sequence[float]) -> bool:
    """Tick values: strictly monotonic, evenly stepped, and linear in their positions."""
    if len(values) < 3:
        return False
    diffs = [b - a for a, b in itertools.pairwise(values)]
    if not (all(d > 0 for d in diffs) or all(d < 0 for d in diffs)):
        return False
    step = median(abs(d) for d in diffs)
    if any(abs(abs(d) - step) > 0.12 * step for d in diffs) or not _nice(step):
        return False
    gaps = [b - a for a, b in itertools.pairwise(positions)]
    gap = median(abs(g) for g in gaps)
    return gap > 0 and all(abs(abs(g) - gap) <= 0.25 * gap + 2 for g in gaps)


def _nice(step: float) -> bool:
    """Axis steps are round: 1, 2, 2.5 or 5 times a power of ten (a column of values that
    happens to be evenly spaced rarely is)."""
    if step <= 0:
        return False
    mantissa = step / 10 ** math.floor(math.log10(step))
    return any(abs(mantissa - m) <= 0.02 * m for m in (1.0, 2.0, 2.5, 5.0, 10.0))


def _columns(lines: Sequence[OcrLine], tol: float) -> list[list[OcrLine]]:
    """Lines grouped by right edge (tick labels are right-aligned), each group top to bottom."""
    groups: list[list[OcrLine]] = []
    for ln in sorted(lines, key=lambda ln: ln.x1):
        if groups and abs(ln.x1 - median(g.x1 for g in groups[-1])) <= tol:
            groups[-1].append(ln)
        else:
            groups.append([ln])
    return [sorted(g, key=cy) for g in groups]


def _tick_runs(column: Sequence[OcrLine]) -> list[list[OcrLine]]:
    """Maximal runs of a column that read as ticks (one column can hold the ticks of panels
    stacked one above the other, with other numbers between them)."""

    def ticks(run: list[OcrLine]) -> bool:
        values = [parse_number(x.text) or 0.0 for x in run]
        return _evenly_spaced(values, [cy(x) for x in run])

    runs: list[list[OcrLine]] = []
    run: list[OcrLine] = []
    for ln in column:
        below = not run or ln.top >= run[-1].bottom - 2
        cand = [*run, ln]
        if below and (len(cand) < 3 or ticks(cand)):
            run = cand
            continue
        if len(run) >= 3:
            runs.append(run)
            run = [ln]
        else:
            run = cand[-2:] if below else [ln]
    if len(run) >= 3 and ticks(run):
        runs.append(run)
    return runs


def find_y_axes(numbers: Sequence[OcrLine]) -> list[Axis]:
    """Columns of evenly spaced numbers, left to right: one y axis per panel. Signed numbers
    ("+3") are changes, never ticks."""
    numbers = [ln for ln in numbers if not ln.text.lstrip().startswith("+")]
    if not numbers:
        return []
    tol = 0.6 * median_height(numbers)
    axes = [
        Axis(run, [parse_number(x.text) or 0.0 for x in run], vertical=True)
        for column in _columns(numbers, tol)
        for run in _tick_runs(column)
    ]
    return sorted(axes, key=lambda a: (a.lines[0].x0, a.lines[0].top))


def find_x_axis(numbers: Sequence[OcrLine]) -> Axis | None:
    """The lowest row of evenly spaced numbers increasing to the right."""
    for row in reversed(row_bands(numbers)):
        values = [parse_number(ln.text) or 0.0 for ln in row]
        if _evenly_spaced(values, [cx(ln) for ln in row]) and values[0] < values[-1]:
            return Axis(row, values, vertical=False)
    return None


def _decimals(step: float) -> int:
    return max(0, -math.floor(math.log10(step / 10))) if step > 0 else 0


def _bar_end(
    rgb: np.ndarray, fixed: int, start: float, vertical: bool, reach: float
) -> float | None:
    """Where the bar that starts near ``start`` ends, scanning along row (or column) ``fixed``.

    Ink runs along the scan line are found with gaps of two pixels bridged; the first run
    starting within ``reach`` of the axis and longer than a stroke is the bar.
    """
    line = rgb[:, fixed] if vertical else rgb[fixed]
    if vertical:
        line = line[::-1]  # bars grow upwards: scan from the bottom
        start = rgb.shape[0] - 1 - start
    bg = background(rgb)
    ink = np.abs(line.astype(np.int16) - bg.astype(np.int16)).sum(axis=1) > 90
    idx = np.flatnonzero(ink)
    if idx.size == 0:
        return None
    runs: list[tuple[int, int]] = []
    lo = hi = int(idx[0])
    for i in idx[1:]:
        if i - hi <= 3:
            hi = int(i)
        else:
            runs.append((lo, hi))
            lo = hi = int(i)
    runs.append((lo, hi))
    for lo, hi in runs:
        if hi < start - reach:
            continue
        if lo > start + reach:
            break
        if hi - max(lo, int(start)) >= max(4.0, reach / 2):
            end = float(hi)
            return rgb.shape[0] - 1 - end if vertical else end
    return None


def estimate(rgb: np.ndarray, axis: Axis, fixed: float, h: float) -> str | None:
    origin = axis.position_of(min(axis.values)) if min(axis.values) >= 0 else axis.position_of(0)
    limit = rgb.shape[1] if not axis.vertical else rgb.shape[0]
    if not 0 <= fixed < (rgb.shape[0] if not axis.vertical else rgb.shape[1]):
        return None
    if not 0 <= origin < limit:
        return None
    end = _bar_end(rgb, int(fixed), origin, axis.vertical, reach=1.5 * h)
    if end is None:
        return None
    value = axis.value_at(end)
    lo, hi = min(axis.values), max(axis.values)
    if not lo - axis.step <= value <= hi + axis.step:
        return None
    return f"≈{value:.{_decimals(axis.step)}f}"


def span(axis: Axis) -> tuple[float, float, float, float]:
    return (
        min(ln.x0 for ln in axis.lines),
        min(ln.top for ln in axis.lines),
        max(ln.x1 for ln in axis.lines),
        max(ln.bottom for ln in axis.lines),
    )
