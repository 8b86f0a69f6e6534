"""Features of a query image for the offline router: pixels (numpy) and OCR lines.

Every feature is a plain float with a bounded, size-independent range (shares, counts per line,
log counts), so one linear model serves a 300-pixel chart crop and a 2000-pixel screenshot alike.
Pixel statistics run on a copy scaled to at most :data:`WORK_SIDE` pixels; thin rules survive the
scaling because the difference-from-background map is max-pooled rather than averaged.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, fields

import numpy as np

from docsight.query.image import QueryImage
from docsight.vision.common import OcrLine

#: Longest side the pixel statistics work on (keeps extraction well under 100 ms).
WORK_SIDE = 1024
#: A pixel is "ink" when a channel differs from the background colour by more than this; light
#: grey table rules (#d9d9d9 on white) still count.
INK_DIFF = 30

_NUMBER = re.compile(r"^[\$€£¥(+\-−]?\d[\d,.]*\s?(%|pp|k|m|bn|x)?\)?\*?$", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z]{2,}")
_CODE_PATTERNS = [
    re.compile(p)
    for p in (
        r"[A-Za-z_]\w*\(",  # a call without a space before "(": prose puts one there
        r"[;{}]\s*$",
        r"^\s*[{}]",
        r"==|!=|=>|->|::|&&|\|\||\+=|-=|<=|>=|\+\+",
        r"\b[a-z]+_[a-z_0-9]+\b",  # snake_case
        r"\b[a-z]+[A-Z][A-Za-z]+\b",  # camelCase
        r"^\s*(def|class|import|from|return|if|elif|else|for|while|try|except|with|function|"
        r"const|let|var|public|private|static|void|int|fn|func|package|#include|SELECT|print|"
        r"echo|struct|async|await|lambda|yield|raise|using|namespace|template|end|do|then)\b",
        r"^\s*(//|#|/\*|\*|--)",
        r"\w\s?=\s?[\w\"'\[({-]",
        r"\w\.\w+\(",
        r"\[\d*\]|\[\w+\]",
        r"[\"'][^\"']*[\"']",
    )
]
_CODE_CHARS = re.compile(r"[=(){}\[\];<>_]")
# "=" and "+" are too common in ordinary text ("n=1,526") to say "formula" on their own.
_MATH_CHARS = set("×÷^∑∫√∏∂∞≤≥≠≈±∈∀∃∇→⇒∥′²³₀₁₂ⁿ")
_SAMPLE_SIZE = re.compile(r"\bn\s?=\s?[\d,]+|[?&]\w+=")
_GREEK = set("αβγδεζηθικλμνξοπρστυφχψωΓΔΘΛΞΠΣΦΨΩ")
_UI_WORDS = frozenset(
    "file edit view help tools window ok cancel apply close save open settings preferences "
    "search login sign submit next back home menu options format insert run debug terminal "
    "refresh share download upload install update account profile dashboard".split()
)
_ERROR_WORDS = frozenset(
    "error errors exception failed failure warning traceback denied invalid cannot unable fatal "
    "errno crash crashed stopped unexpected timeout refused missing undefined null".split()
)
_MAP_WORDS = frozenset(
    "river lake sea ocean mount mountains county city park street st ave avenue road bay island "
    "islands north south east west valley district province region state border km miles "
    "gulf coast harbour harbor forest desert peninsula channel strait capital".split()
)
_CIRCUIT = re.compile(
    r"^(R|C|L|Q|D|U|J|SW|K|T|IC|LED)\d{1,3}$|^(vcc|vdd|vss|gnd|vin|vout|v\+|v-)$|"
    r"^\d+(\.\d+)?\s?(k|M|m|µ|μ|u|n|p)?(Ω|ohm|ohms|F|H|V|A|Hz)$",
    re.IGNORECASE,
)
_PANEL = re.compile(r"^\([a-hA-H]\)")
_CAPTION_FIG = re.compile(r"^(figure|fig\.?)\s*\d", re.IGNORECASE)
_CAPTION_TAB = re.compile(r"^table\s*\d", re.IGNORECASE)


@dataclass(frozen=True)
class ImageFeatures:
    """Named features of one image; see :func:`extract_features`."""

    # geometry
    log_aspect: float  # log(width / height)
    log_side: float  # log10 of the longest side
    # background and colour
    bg_share: float  # pixels within INK_DIFF of the dominant colour
    bg_dark: float  # 1 when the dominant colour is dark (terminals, dark code themes)
    ink_share: float
    n_colours: float  # log2 of quantised colours holding > 0.1% of pixels
    top8_share: float  # pixels in the 8 most common quantised colours (low for photos)
    unique_ratio: float  # distinct 15-bit colours per 1000 pixels, log-scaled
    sat_share: float  # saturated, not-too-dark pixels
    sat_ink_share: float  # saturated share of the ink
    flat_colour_share: float  # saturated pixels inside flat regions (bars, map regions)
    # texture
    flat_share: float  # near-zero gradient
    edge_share: float  # strong gradient
    soft_share: float  # weak, non-zero gradient: shading and noise in photographs
    axis_edge_share: float  # strong edges that are horizontal or vertical
    # rules and lines
    h_rules: float  # thin horizontal lines spanning half the width (log1p count)
    v_rules: float
    h_seg_len: float  # thin horizontal segments, in widths
    v_seg_len: float
    h_bands: float  # thick full-width bands of one colour (header rows, title bars)
    top_band: float  # a uniform band across the top, unlike the background (title bars)
    # text layout (OCR)
    has_ocr: float
    # ink that OCR did not read: the graphics (bars, lines, pictures) beside the text
    graphic_ink: float  # share of the image that is ink outside text boxes
    graphic_colour: float  # saturated pixels outside text boxes
    graphic_soft: float  # photographic shading outside text boxes
    text_ink_share: float  # share of the ink inside text boxes
    n_lines: float  # log1p
    n_words: float  # log1p
    text_area: float  # share of the image inside OCR boxes
    text_rows: float  # share of image rows crossed by OCR boxes
    rel_line_height: float  # median line height / image height
    line_height_cv: float
    char_width_cv: float  # low for monospace text
    words_per_line: float
    long_line_share: float  # lines wider than half the image
    prose_share: float  # lines of five or more words
    single_box_rows: float  # rows holding one OCR box
    multi_cell_rows: float  # rows holding three or more boxes
    aligned_columns: float  # columns of >= 3 boxes sharing a left or right edge (log1p)
    indent_levels: float  # distinct left edges of single-box lines (log1p)
    indent_share: float  # single-box lines indented from the leftmost edge
    scatter: float  # boxes that share neither a row nor a column with another box
    grid_cells: float  # boxes that share a row with another box and a column with two more
    pair_rows: float  # rows holding two or more boxes
    # text content
    numeric_share: float  # numeric tokens
    numeric_line_share: float
    percent_share: float
    code_line_share: float
    code_cues: float  # code cues per line
    math_share: float  # math symbols and Greek letters per character
    equals_line_share: float
    short_token_share: float  # one-character tokens (variables, OCR of formulas)
    ui_words: float  # per line, capped
    error_words: float
    map_words: float
    circuit_tokens: float
    panel_labels: float  # "(a)", "(b)", ...
    caption_figure: float
    caption_table: float
    # axes
    axis_left: float  # 1 for a column of evenly stepped numbers at the left
    axis_bottom: float  # 1 for such a row at the bottom, 0.5 for a row of short labels

    def vector(self) -> np.ndarray:
        return np.array([getattr(self, f.name) for f in fields(self)], dtype=np.float64)

    def as_dict(self) -> dict[str, float]:
        return {k: float(v) for k, v in asdict(self).items()}


FEATURE_NAMES: tuple[str, ...] = tuple(f.name for f in fields(ImageFeatures))
#: The features read from pixels alone (everything before ``has_ocr``).
PIXEL_FEATURES: tuple[str, ...] = FEATURE_NAMES[: FEATURE_NAMES.index("has_ocr")]


def extract_features(image: QueryImage) -> ImageFeatures:
    """Features of a loaded query image (its pixels and OCR lines)."""
    return compute_features(image.rgb, image.lines, ocr=image.ocr)


def compute_features(
    rgb: np.ndarray, ocr_lines: tuple[OcrLine, ...] | list[OcrLine] = (), *, ocr: bool = True
) -> ImageFeatures:
    """Features of an RGB array and OCR lines in its pixel coordinates."""
    height, width = int(rgb.shape[0]), int(rgb.shape[1])
    lines = [ln for ln in ocr_lines if ln.text.strip() and ln.x1 > ln.x0 and ln.bottom > ln.top]
    pixel = _pixel_features(rgb, [ln.box for ln in lines])
    text = _text_features(lines, width, height)
    return ImageFeatures(
        log_aspect=_clip(math.log(max(width, 1) / max(height, 1)), -3.0, 3.0),
        log_side=math.log10(max(width, height, 1)),
        has_ocr=1.0 if ocr else 0.0,
        **pixel,
        **text,
    )


# --- pixels ---------------------------------------------------------------------------------------


def _clip(value: float, low: float = 0.0, high: float = 1.0) -> float:
    return float(min(high, max(low, value)))


def _downscale(rgb: np.ndarray, factor: int, reduce: str) -> np.ndarray:
    if factor <= 1:
        return rgb
    h, w = (rgb.shape[0] // factor) * factor, (rgb.shape[1] // factor) * factor
    blocks = rgb[:h, :w].reshape(h // factor, factor, w // factor, factor, *rgb.shape[2:])
    if reduce == "max":
        return blocks.max(axis=(1, 3))
    return blocks.mean(axis=(1, 3)).astype(rgb.dtype)


def _runs(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row index, start and length of every run of True in each row of a 2-D mask."""
    rows, cols = mask.shape
    padded = np.zeros((rows, cols + 2), dtype=np.int8)
    padded[:, 1:-1] = mask
    d = np.diff(padded.ravel())
    starts = np.flatnonzero(d == 1)
    ends = np.flatnonzero(d == -1)
    row = starts // (cols + 2)
    return row, starts - row * (cols + 2), ends - starts


def _count_bands(flags: np.ndarray) -> int:
    """Number of groups of consecutive True values."""
    if flags.size == 0:
        return 0
    f = flags.astype(np.int8)
    return int(f[0] + np.count_nonzero(np.diff(f) == 1))


def _line_stats(ink: np.ndarray, thickness: int) -> tuple[int, float, int]:
    """Thin full-span rules, thin segment length (in spans) and thick bands, along rows."""
    rows, cols = ink.shape
    if rows < 3 or cols < 3:
        return 0, 0.0, 0
    gap = thickness + 1
    above = np.zeros_like(ink)
    below = np.zeros_like(ink)
    above[gap:] = ink[:-gap]
    below[:-gap] = ink[gap:]
    # A pixel of a thin line has background a few pixels above and below; text strokes do too,
    # but are short, hence the minimum length.
    thin = ink & ~above & ~below
    # Where a crossing line interrupts a rule (table grids), bridge the gap if ink fills it.
    left_any = np.zeros_like(thin)
    right_any = np.zeros_like(thin)
    for k in range(1, gap + 2):
        left_any[:, k:] |= thin[:, :-k]
        right_any[:, :-k] |= thin[:, k:]
    thin |= ink & left_any & right_any
    row, _, length = _runs(thin)
    min_seg = max(12, int(0.06 * cols))
    seg = length >= min_seg
    seg_len = float(length[seg].sum()) / cols
    long_rows = np.zeros(rows, dtype=bool)
    long_rows[row[length >= 0.5 * cols]] = True
    # Thick bands: rows whose ink runs almost across, grouped, thicker than a rule.
    krow, _, klen = _runs(ink)
    full = np.zeros(rows, dtype=bool)
    full[krow[klen >= 0.9 * cols]] = True
    bands = 0
    start = None
    for i, flag in enumerate(np.append(full, False)):
        if flag and start is None:
            start = i
        elif not flag and start is not None:
            if i - start > gap:
                bands += 1
            start = None
    return _count_bands(long_rows), seg_len, bands


def _pixel_features(
    rgb: np.ndarray, boxes: list[tuple[float, float, float, float]]
) -> dict[str, float]:
    rgb = np.asarray(rgb, dtype=np.uint8)
    if rgb.ndim == 2:
        rgb = np.stack([rgb] * 3, axis=-1)
    rgb = rgb[:, :, :3]
    factor = math.ceil(max(rgb.shape[0], rgb.shape[1]) / WORK_SIDE)
    # A sliver (2 × 3000 pixels) must keep at least one row after scaling.
    factor = max(1, min(factor, rgb.shape[0], rgb.shape[1]))
    small = _downscale(rgb, factor, "mean")
    h, w = small.shape[:2]
    n = max(h * w, 1)
    q4 = (small >> 4).astype(np.int32)
    codes4 = (q4[..., 0] << 8) | (q4[..., 1] << 4) | q4[..., 2]
    counts = np.bincount(codes4.ravel(), minlength=4096)
    mode = int(counts.argmax())
    bg = np.array([(mode >> 8) & 15, (mode >> 4) & 15, mode & 15], dtype=np.int16) * 16 + 8
    # The background is refined to the mean of its bin, so near-white stays near-white.
    in_bin = codes4 == mode
    if in_bin.any():
        bg = small[in_bin].reshape(-1, 3).mean(axis=0).astype(np.int16)
    bg_luma = float(0.299 * bg[0] + 0.587 * bg[1] + 0.114 * bg[2])

    # Ink at full resolution, max-pooled: a 1-pixel rule must not fade when scaled down.
    diff_full = np.abs(rgb.astype(np.int16) - bg).max(axis=2)
    diff = _downscale(diff_full, factor, "max")[:h, :w]
    ink = diff > INK_DIFF

    q3 = (small >> 5).astype(np.int32)
    codes3 = (q3[..., 0] << 6) | (q3[..., 1] << 3) | q3[..., 2]
    c3 = np.bincount(codes3.ravel(), minlength=512)
    n_colours = int((c3 > 0.001 * n).sum())
    top8 = float(np.sort(c3)[-8:].sum()) / n
    q5 = (small >> 3).astype(np.int32)
    codes5 = (q5[..., 0] << 10) | (q5[..., 1] << 5) | q5[..., 2]
    unique = len(np.unique(codes5))

    f = small.astype(np.float32)
    mx, mn = f.max(axis=2), f.min(axis=2)
    sat = (mx - mn) / np.maximum(mx, 1.0)
    saturated = (sat > 0.3) & (mx > 60)
    gray = 0.299 * f[..., 0] + 0.587 * f[..., 1] + 0.114 * f[..., 2]
    gx = np.zeros_like(gray)
    gy = np.zeros_like(gray)
    gx[:, 1:] = np.abs(np.diff(gray, axis=1))
    gy[1:, :] = np.abs(np.diff(gray, axis=0))
    grad = np.maximum(gx, gy)
    flat = grad < 3
    strong = grad > 40
    soft = (grad >= 3) & (grad <= 40)
    n_strong = max(int(strong.sum()), 1)
    axis_aligned = strong & ((gx < 0.25 * gy) | (gy < 0.25 * gx))
    # Flat neighbourhood: this pixel and its right and lower neighbours are flat.
    flat_nb = flat.copy()
    flat_nb[:, :-1] &= flat[:, 1:]
    flat_nb[:-1, :] &= flat[1:, :]

    # Text boxes at working scale, padded: antialiased glyph edges fall just outside OCR boxes.
    text_mask = np.zeros((h, w), dtype=bool)
    pad = 2
    for x0, y0, x1, y1 in boxes:
        text_mask[
            max(0, int(y0 / factor) - pad) : int(y1 / factor) + pad + 1,
            max(0, int(x0 / factor) - pad) : int(x1 / factor) + pad + 1,
        ] = True
    outside = ~text_mask
    n_ink = max(int(ink.sum()), 1)

    thickness = 2
    h_rules, h_seg, h_bands = _line_stats(ink, thickness)
    v_rules, v_seg, _ = _line_stats(ink.T, thickness)
    top = _top_band(small, bg, h)

    return {
        "bg_share": float((np.abs(small.astype(np.int16) - bg).max(axis=2) <= INK_DIFF).mean()),
        "bg_dark": 1.0 if bg_luma < 90 else 0.0,
        "ink_share": float(ink.mean()),
        "n_colours": math.log2(1 + n_colours),
        "top8_share": top8,
        "unique_ratio": math.log1p(1000.0 * unique / n),
        "sat_share": float(saturated.mean()),
        "sat_ink_share": float((saturated & ink).sum()) / max(int(ink.sum()), 1),
        "flat_colour_share": float((saturated & flat_nb).mean()),
        "flat_share": float(flat.mean()),
        "edge_share": float(strong.mean()),
        "soft_share": float(soft.mean()),
        "axis_edge_share": float(axis_aligned.sum()) / n_strong,
        "h_rules": math.log1p(h_rules),
        "v_rules": math.log1p(v_rules),
        "h_seg_len": math.log1p(h_seg),
        "v_seg_len": math.log1p(v_seg),
        "h_bands": math.log1p(h_bands),
        "top_band": top,
        "graphic_ink": float((ink & outside).mean()),
        "graphic_colour": float((saturated & outside).mean()),
        "graphic_soft": float((soft & outside).mean()),
        "text_ink_share": float((ink & text_mask).sum()) / n_ink,
    }


def _top_band(small: np.ndarray, bg: np.ndarray, h: int) -> float:
    """1 when the top rows form a uniform band of a colour other than the background."""
    depth = max(3, int(0.12 * h))
    if h < 20:
        return 0.0
    rows = small[:depth].astype(np.int16)
    medians = np.median(rows, axis=1)  # one colour per row
    spread = np.abs(rows - medians[:, None, :]).max(axis=2)
    uniform = (spread <= 12).mean(axis=1) >= 0.7
    unlike = np.abs(medians - bg).max(axis=1) > INK_DIFF
    band = uniform & unlike
    # A band at least 3 rows thick, starting within the first few rows.
    run = 0
    for i, flag in enumerate(band):
        if flag:
            run += 1
            if run >= 3:
                return 1.0
        elif i > 4:
            break
        else:
            run = 0
    return 0.0


# --- text ----------------------------------------------------------------------------------------


def _cluster(values: list[float], tolerance: float) -> list[list[int]]:
    """Indices grouped by 1-D proximity (sorted sweep)."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    groups: list[list[int]] = []
    for i in order:
        if groups and values[i] - values[groups[-1][-1]] <= tolerance:
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


def _number(text: str) -> float | None:
    cleaned = text.strip().replace("−", "-").replace(",", "").rstrip("%*").strip("$€£()")
    try:
        return float(cleaned)
    except ValueError:
        return None


def _even_steps(values: list[float]) -> bool:
    """Monotonic, evenly stepped numbers: axis ticks rather than data."""
    if len(values) < 3:
        return False
    steps = np.diff(np.asarray(values, dtype=np.float64))
    if not (np.all(steps > 0) or np.all(steps < 0)):
        return False
    mean = float(np.abs(steps).mean())
    return mean > 0 and float(np.abs(np.abs(steps) - mean).max()) <= 0.15 * mean


def _axis_scores(lines: list[OcrLine], width: int, height: int, tol: float) -> tuple[float, float]:
    numeric = [ln for ln in lines if _number(ln.text) is not None]
    left = 0.0
    for group in _cluster([ln.x1 for ln in numeric], tol):
        members = sorted((numeric[i] for i in group), key=lambda ln: ln.top)
        if len(members) < 3 or max(ln.x1 for ln in members) > 0.35 * width:
            continue
        values = [_number(ln.text) or 0.0 for ln in members]
        span = members[-1].bottom - members[0].top
        if _even_steps(values) and span >= 0.25 * height:
            left = 1.0
    bottom = 0.0
    centres = [(ln.top + ln.bottom) / 2 for ln in lines]
    for group in _cluster(centres, tol):
        members = sorted((lines[i] for i in group), key=lambda ln: ln.x0)
        if len(members) < 3 or centres[group[0]] < 0.55 * height:
            continue
        span = members[-1].x1 - members[0].x0
        if span < 0.35 * width:
            continue
        values = [v for v in (_number(ln.text) for ln in members) if v is not None]
        if len(values) == len(members) and _even_steps(values):
            bottom = 1.0
        elif all(len(ln.text.split()) <= 3 for ln in members):
            bottom = max(bottom, 0.5)
    return left, bottom


def _is_prose(text: str) -> bool:
    """Five or more words and at most one code-like character (prose has the odd bracket)."""
    return len(_WORD.findall(text)) >= 5 and len(_CODE_CHARS.findall(text)) <= 1


def _text_features(lines: list[OcrLine], width: int, height: int) -> dict[str, float]:
    zero = dict.fromkeys(FEATURE_NAMES[FEATURE_NAMES.index("n_lines") :], 0.0)
    if not lines:
        return zero
    n = len(lines)
    heights = np.array([ln.bottom - ln.top for ln in lines], dtype=np.float64)
    med_h = float(np.median(heights))
    tol = 0.6 * med_h

    covered = np.zeros((min(height, 4096), min(width, 4096)), dtype=bool)
    sy, sx = covered.shape[0] / max(height, 1), covered.shape[1] / max(width, 1)
    for ln in lines:
        y_from, x_from = max(0, int(ln.top * sy)), max(0, int(ln.x0 * sx))
        covered[y_from : math.ceil(ln.bottom * sy), x_from : math.ceil(ln.x1 * sx)] = True
    text_area = float(covered.mean())
    text_rows = float(covered.any(axis=1).mean())

    tokens = [t for ln in lines for t in ln.text.split()]
    n_tok = max(len(tokens), 1)
    chars = "".join(ln.text for ln in lines)
    n_chars = max(len(chars), 1)
    numeric_tokens = sum(1 for t in tokens if _NUMBER.match(t))
    numeric_lines = sum(
        1
        for ln in lines
        if sum(1 for t in ln.text.split() if _NUMBER.match(t)) * 2 >= len(ln.text.split())
    )

    cw = [
        (ln.x1 - ln.x0) / len(ln.text)
        for ln in lines
        if len(ln.text) >= 8 and " " not in ln.text[-1:]
    ]
    char_width_cv = float(np.std(cw) / np.mean(cw)) if len(cw) >= 3 else 0.5

    # Rows: boxes whose vertical centres agree.
    centres = [(ln.top + ln.bottom) / 2 for ln in lines]
    rows = _cluster(centres, tol)
    single_rows = [g for g in rows if len(g) == 1]
    multi = sum(1 for g in rows if len(g) >= 3)
    # Columns: boxes sharing a left or a right edge (numbers are right-aligned).
    col_members: set[int] = set()
    n_cols = 0
    for key in (lambda ln: ln.x0, lambda ln: ln.x1, lambda ln: (ln.x0 + ln.x1) / 2):
        for group in _cluster([key(ln) for ln in lines], tol):
            if len(group) >= 3:
                n_cols += 1
                col_members.update(group)
    row_members = {i for g in rows if len(g) >= 2 for i in g}
    scatter = sum(1 for i in range(n) if i not in col_members and i not in row_members) / n
    grid_cells = len(col_members & row_members) / n

    # Indentation of single-box lines, in character widths from the leftmost edge.
    singles = [lines[g[0]] for g in single_rows]
    indent_levels = 0
    indent_share = 0.0
    if len(singles) >= 3:
        char_w = float(np.median([(ln.x1 - ln.x0) / max(len(ln.text), 1) for ln in singles]))
        left = min(ln.x0 for ln in singles)
        offsets = [(ln.x0 - left) / max(char_w, 1.0) for ln in singles]
        indent_levels = len(_cluster(offsets, 0.8))
        indent_share = sum(1 for o in offsets if o >= 1.5) / len(singles)

    code_hits = [sum(1 for p in _CODE_PATTERNS if p.search(ln.text)) for ln in lines]
    words = [w.lower() for w in _WORD.findall(" ".join(ln.text for ln in lines))]
    left_axis, bottom_axis = _axis_scores(lines, width, height, tol)

    def per_line(count: int) -> float:
        return _clip(count / n, 0.0, 2.0)

    return {
        "n_lines": math.log1p(n),
        "n_words": math.log1p(len(tokens)),
        "text_area": text_area,
        "text_rows": text_rows,
        "rel_line_height": _clip(med_h / max(height, 1)),
        "line_height_cv": _clip(float(heights.std() / max(heights.mean(), 1.0)), 0.0, 2.0),
        "char_width_cv": _clip(char_width_cv),
        "words_per_line": _clip(len(tokens) / n / 10.0, 0.0, 2.0),
        "long_line_share": sum(1 for ln in lines if ln.x1 - ln.x0 > 0.5 * width) / n,
        "prose_share": sum(1 for ln in lines if _is_prose(ln.text)) / n,
        "single_box_rows": len(single_rows) / max(len(rows), 1),
        "multi_cell_rows": multi / max(len(rows), 1),
        "aligned_columns": math.log1p(n_cols),
        "indent_levels": math.log1p(indent_levels),
        "indent_share": indent_share,
        "scatter": scatter,
        "grid_cells": grid_cells,
        "pair_rows": sum(1 for g in rows if len(g) >= 2) / max(len(rows), 1),
        "numeric_share": numeric_tokens / n_tok,
        "numeric_line_share": numeric_lines / n,
        "percent_share": sum(1 for t in tokens if "%" in t) / n_tok,
        "code_line_share": sum(1 for h in code_hits if h >= 2) / n,
        "code_cues": _clip(sum(code_hits) / n / 3.0, 0.0, 2.0),
        "math_share": _clip(
            10.0 * sum(1 for c in chars if c in _MATH_CHARS or c in _GREEK) / n_chars
        ),
        "equals_line_share": sum(1 for ln in lines if "=" in _SAMPLE_SIZE.sub("", ln.text)) / n,
        "short_token_share": sum(1 for t in tokens if len(t) == 1 and t.isalpha()) / n_tok,
        "ui_words": per_line(sum(1 for w in words if w in _UI_WORDS)),
        "error_words": per_line(sum(1 for w in words if w in _ERROR_WORDS)),
        "map_words": per_line(sum(1 for w in words if w in _MAP_WORDS)),
        "circuit_tokens": sum(1 for t in tokens if _CIRCUIT.match(t.strip(",.:;"))) / n_tok,
        "panel_labels": _clip(sum(1 for t in tokens if _PANEL.match(t)) / 3.0),
        "caption_figure": 1.0 if any(_CAPTION_FIG.match(ln.text) for ln in lines) else 0.0,
        "caption_table": 1.0 if any(_CAPTION_TAB.match(ln.text) for ln in lines) else 0.0,
        "axis_left": left_axis,
        "axis_bottom": bottom_axis,
    }
