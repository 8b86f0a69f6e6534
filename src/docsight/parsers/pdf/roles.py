"""Roles of text blocks: title, headings and their levels, captions, lists, code, equations.

Document statistics decide: the body font size is the size carrying most characters; blocks
bigger than it, or bold at body size and followed by prose, are heading candidates. So is a
line in body type followed by prose that opens with a section number ("4.1 TASKS"), when the
document's numbers run in sequence around it (a neighbour, its parent or a child). Outline
entries are matched to blocks first (splitting a block whose first lines carry the title), and
their levels anchor the font-derived levels of the other headings. The blocks between the title
and the first body text of the title page (authors, affiliations) are front matter, never
sections. A heading-like line right above a chart (with at most a small subtitle between) is the
chart's title, so its caption, not a section: reports set every chart's title that way, and as
headings they would cut the text into one section per chart.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from docsight.document.captions import caption_target
from docsight.document.model import ElementKind
from docsight.parsers.pdf.page import Atom, Page
from docsight.parsers.pdf.reading import Block, starts_with_bullet
from docsight.parsers.textutil import clean_text, squash_spaces

#: Dot leaders of a table of contents ("Introduction . . . . 7").
_LEADERS = re.compile(r"(?:\.\s?){3,}\s*[0-9ivxlc]*$|…\s*[0-9ivxlc]*$")


@dataclass
class Role:
    kind: ElementKind
    level: int | None = None


#: A chart's title sits at most this many body-text sizes above the chart (or its subtitle) ...
_TITLE_GAP = 3.0
#: ... with at most this many subtitle blocks between ("% who say ...", "In millions").
_SUBTITLES = 2
#: Charts are at least this tall (points), and this many times their title's height: a strip of
#: logos under a section heading is not a chart with a title.
_CHART_MIN_HEIGHT = 60.0
_CHART_TITLE_RATIO = 3.0
#: A "figure" taller than this share of the page is a backdrop behind text, not a chart.
_CHART_MAX_SHARE = 0.6


def _norm(text: str) -> str:
    """Lower-case alphanumerics only, without a leading section number, for fuzzy matching."""
    text = re.sub(r"^\s*(?:[0-9IVX]+(?:\.[0-9]+)*\.?|[A-Z]\.)\s+", "", text)
    return " ".join(re.sub(r"[^0-9a-z]+", " ", text.lower()).split())


def _similar(a: str, b: str) -> float:
    if not a or not b:
        return 0.0
    if a == b:
        return 1.0
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return matcher.ratio() if matcher.real_quick_ratio() >= 0.8 else 0.0


@dataclass
class _Features:
    text: str
    size: float
    bold: bool
    words: int
    lines: int

    @property
    def size_class(self) -> float:
        return round(self.size * 2) / 2

    def heading_shape(self, max_words: int = 16) -> bool:
        t = self.text
        letters = sum(c.isalpha() for c in t)
        return (
            bool(t)
            and self.lines <= 3
            and self.words <= max_words
            and len(t) <= 160
            and letters >= 2
            and letters >= 0.5 * len(t.replace(" ", ""))
            and not t[0].islower()
            and not t.endswith((".", ",", ";"))
            and not starts_with_bullet(t)
            and caption_target(t) is None
            and not _LEADERS.search(t)
        )


def _features(block: Block) -> _Features:
    text = squash_spaces(clean_text(block.text))
    _, size = block.dominant_font()
    return _Features(
        text, size, block.style_share("bold") >= 0.7, len(text.split()), len(block.lines)
    )


#: What a heading candidate's level depends on: ``(size class, bold, size)``.
Style = tuple[float, bool, float]


@dataclass
class PendingHeading(Role):
    """A heading whose level waits until every page's candidates are known (the levels rank
    the styles of the whole document): resolved by :func:`resolve_headings`."""

    style: Style = (0.0, False, 0.0)


@dataclass
class PendingNumbered(PendingHeading):
    """A heading marked only by its section number ("4.1 TASKS" in body type): it stays one
    when the document's numbers run in sequence around it (:func:`in_sequence`), and is a
    paragraph otherwise."""

    number: tuple[int, ...] = ()


@dataclass
class PendingOcrHeading(Role):
    """A heading read by OCR whose level waits for the sizes of every OCR'd heading of the
    document (see :func:`~docsight.parsers.pdf.scan.hint_roles`)."""

    size: float = 0.0


# The roles pass runs page by page, so that a long document's pages need not be held together
# (:mod:`.passes`): each page's roles are kept in ``page.roles``; what is decided across pages
# (the body font size, outline matches, heading levels) is gathered first, in small values.


def add_font_sizes(page: Page, sizes: Counter[float]) -> None:
    """Count the characters of each half-point size class in the page's blocks."""
    for unit in page.units:
        if isinstance(unit, Block):
            for (_, size), n in unit.font_counts().items():
                sizes[round(size * 2) / 2] += n


def body_size(sizes: Counter[float]) -> float:
    """The body font size: the size class carrying most characters."""
    return sizes.most_common(1)[0][0] if sizes else 10.0


def title_roles(page: Page, body: float, meta_title: str | None) -> set[int]:
    """The title on the first page (in ``page.roles``); returns the ids of the front matter
    blocks below it, for :func:`page_roles` of the same page."""
    title = _find_title(page, body, meta_title)
    if title is None:
        return set()
    page.roles[id(title)] = Role(ElementKind.TITLE)
    return _front_matter(page, title, body, page.roles)


def page_roles(
    page: Page,
    body: float,
    front: set[int],
    numbered: list[tuple[tuple[int, ...], Style | None]] | None = None,
) -> list[Style]:
    """Kinds for the page's blocks not given one yet (outline headings, the title), in
    ``page.roles``; heading candidates get a :class:`PendingHeading`, whose styles are
    returned for :func:`heading_levels`. Lines marked as headings by their number alone get a
    :class:`PendingNumbered`, and their numbers and styles are added to ``numbered``, as are
    the numbers of the other heading candidates (with no style)."""
    roles = page.roles
    candidates: list[tuple[Block, _Features]] = []
    titles: list[tuple[Block, list[Block]]] = []
    claimed: set[int] = set()  # blocks merged into a chart's title
    for k, unit in enumerate(page.units):
        if not isinstance(unit, Block) or id(unit) in roles or id(unit) in claimed:
            continue
        f = _features(unit)
        if id(unit) in front:
            roles[id(unit)] = Role(ElementKind.PARAGRAPH)
            continue
        subtitles = _chart_title(page, k, f, body)
        if subtitles is not None:
            roles[id(unit)] = Role(ElementKind.CAPTION)
            # A block read earlier as a paragraph may still be this title's subtitle.
            mine = [
                b
                for b in subtitles
                if id(b) not in claimed
                and roles.get(id(b), Role(ElementKind.PARAGRAPH)).kind == ElementKind.PARAGRAPH
                and id(b) not in front
            ]
            claimed.update(id(b) for b in mine)
            titles.append((unit, mine))
            continue
        big = f.size >= body * 1.08 and f.size - body >= 0.8
        body_sized = abs(f.size - body) <= 0.12 * body and f.lines <= 2
        bold_body = body_sized and f.bold and _prose_follows(page.units, k, body)
        # "4.1 TASKS": a section number marks a heading that papers set in body type, neither
        # bigger nor bold.
        number = section_number(f.text)
        plain = number is not None and body_sized and not f.bold
        if plain and not _prose_follows(page.units, k, body):
            number, plain = None, False
        if (
            (big or bold_body or plain)
            and f.heading_shape(16 if big else 12)
            and not (unit.style_share("monospace") >= 0.5 or unit.style_share("math") >= 0.3)
        ):
            if big or bold_body:
                candidates.append((unit, f))
                if number is not None and numbered is not None:
                    numbered.append((number, None))  # a neighbour for the plain ones
            elif number is not None:  # always, when plain
                style = (f.size_class, f.bold, f.size)
                roles[id(unit)] = PendingNumbered(ElementKind.HEADING, None, style, number)
                if numbered is not None:
                    numbered.append((number, style))
        else:
            roles[id(unit)] = Role(_body_kind(unit, f))
    styles: list[Style] = []
    for block, f in candidates:
        if id(block) not in claimed:
            style = (f.size_class, f.bold, f.size)
            roles[id(block)] = PendingHeading(ElementKind.HEADING, None, style)
            styles.append(style)
    for title, subtitles in titles:
        # One caption: the title and its subtitle ("% who say ...") describe the chart together.
        for sub in subtitles:
            title.lines.extend(sub.lines)
            page.units.remove(sub)
            roles.pop(id(sub), None)
    return styles


def resolve_headings(
    roles: dict[int, Role],
    font_level: Callable[[Style], int],
    ocr_level: Callable[[float], int] | None = None,
    numbers: Mapping[tuple[int, ...], int] | None = None,
) -> None:
    """Give every pending heading among ``roles`` its level. A numbered one whose number is
    among ``numbers`` (those in sequence) goes that many levels under its style's ("5.1.1"
    one under "5.1", set alike); any other is a paragraph."""
    for key, role in roles.items():
        if isinstance(role, PendingNumbered):
            deeper = (numbers or {}).get(role.number)
            roles[key] = (
                Role(ElementKind.HEADING, font_level(role.style) + deeper)
                if deeper is not None
                else Role(ElementKind.PARAGRAPH)
            )
        elif isinstance(role, PendingOcrHeading) and ocr_level is not None:
            roles[key] = Role(ElementKind.HEADING, ocr_level(role.size))
        elif isinstance(role, PendingHeading):
            roles[key] = Role(ElementKind.HEADING, font_level(role.style))


def _chart_title(page: Page, k: int, f: _Features, body: float) -> list[Block] | None:
    """When block ``k`` is the title of the chart below it: the blocks to merge into it (the
    rest of a title split in two, a subtitle such as "% who say ..."), possibly none; ``None``
    otherwise.

    A title is heading-like (bigger or bolder than the body). Below it, within its width, come
    at most a small subtitle (smaller than the body text, a few lines), then either the chart,
    close below and at least as wide as the title, or a chart drawn as small labels only, down
    to its "Source:" or "Note:" line. Section headings are followed by body text, stand over a
    strip of logos or a full-page backdrop, or head a frame whose text is read as text (a box of
    code, a sidebar), none of which is a chart. The page is read by position, not reading
    order: a narrow text column beside a chart is often interleaved with it.
    """
    block = page.units[k]
    assert isinstance(block, Block)
    big = f.size >= body * 1.08 and f.size - body >= 0.8
    if not ((big or (f.bold and f.size >= body - 0.5)) and f.heading_shape(24)):
        return None
    below = sorted(
        (
            u
            for u in page.units
            if u is not block and u.top >= block.bottom - 2 and _overlap(u, block) > 0
        ),
        key=lambda u: (u.top, u.x0),
    )
    merged: list[Block] = []
    above: Block = block
    subtitles = 0
    for i, unit in enumerate(below[: _MAX_LABELS + 3]):
        if isinstance(unit, Atom):
            return merged if _charts_below(page, unit, block, above, body) else None
        g = _features(unit)
        if not merged and _continues(unit, g, block, f):
            merged.append(unit)  # the second line of a title that was split in two blocks
            above = unit
            continue
        if subtitles and g.size <= body - 0.5 and _LABELS_END.search(g.text):
            return merged  # labels and the source line read as one block
        if not _small(unit, body) or _LABELS_END.search(g.text):
            return None  # body text, or a note with no chart above it: a section heading
        if subtitles and _labels_to_source(below[i:], body):
            return merged  # the labels of a chart drawn without a picture
        if subtitles >= _SUBTITLES:
            return None
        merged.append(unit)
        above = unit
        subtitles += 1
    return None


#: The line that ends a chart in reports: where its data come from (axis labels set just above
#: it are often read into the same line).
_LABELS_END = re.compile(r"(?:^|\s)(?:sources?|notes?)\s*:", re.I)
_MAX_LABELS = 12


def _overlap(unit: Block | Atom, block: Block) -> float:
    """Horizontal overlap as a share of the narrower of the two."""
    width = min(unit.x1 - unit.x0, block.x1 - block.x0)
    shared = min(unit.x1, block.x1) - max(unit.x0, block.x0)
    return shared / width if width > 0 and shared > 0 else 0.0


def _continues(unit: Block, g: _Features, title: Block, f: _Features) -> bool:
    return (
        g.size_class == f.size_class
        and g.bold == f.bold
        and unit.top - title.bottom <= 0.6 * f.size
        and abs(unit.x0 - title.x0) <= f.size
        and g.heading_shape(24)
    )


def _small(block: Block, body: float) -> bool:
    f = _features(block)
    return f.size <= body - 0.5 and f.lines <= 4 and f.words <= 50


def _labels_to_source(units: list[Block | Atom], body: float) -> bool:
    """Whether blocks in small type (labels, rows of figures) run, with no body text or picture,
    to a "Source:" line."""
    for unit in units[:_MAX_LABELS]:
        if not isinstance(unit, Block) or _features(unit).size > body - 0.5:
            return False
        if _LABELS_END.search(_features(unit).text):
            return True
    return False


def _charts_below(page: Page, first: Atom, title: Block, above: Block, body: float) -> bool:
    """Whether ``first`` (with any figures beside it) is a chart that ``title`` names."""
    if first.kind != ElementKind.FIGURE:
        return False
    figures = [
        a
        for a in page.units
        if isinstance(a, Atom)
        and a.kind == ElementKind.FIGURE
        and abs(a.top - first.top) <= 2 * body
        and a.bottom > first.top
    ]
    x0, x1 = min(a.x0 for a in figures), max(a.x1 for a in figures)
    top, bottom = min(a.top for a in figures), max(a.bottom for a in figures)
    # Sentences set inside the picture's box are read as text: the "figure" is a frame or a
    # backdrop (a chart's own labels are a word or a number each).
    framed = any(
        isinstance(u, Block)
        and u is not title
        and u.x0 >= x0 - 1
        and u.x1 <= x1 + 1
        and u.top >= top - 1
        and u.bottom <= bottom + 1
        and _features(u).words >= 8
        for u in page.units
    )
    # Labels may stand beside the picture, so the title need only share half its width with it.
    width = min(x1 - x0, title.x1 - title.x0)
    shared = min(x1, title.x1) - max(x0, title.x0)
    return (
        width > 0
        and shared >= 0.5 * width
        and top - above.bottom <= _TITLE_GAP * body
        and bottom - top >= max(_CHART_MIN_HEIGHT, _CHART_TITLE_RATIO * (title.bottom - title.top))
        and bottom - top <= _CHART_MAX_SHARE * page.height
        and not framed
    )


_FRONT_END = re.compile(
    r"^(?:abstract|summary|executive summary|introduction|contents"
    r"|table of contents|overview|preface|foreword)\b",
    re.I,
)


def _front_matter(page: Page, title: Block, body: float, roles: dict[int, Role]) -> set[int]:
    """Blocks between the title and the first body text of the title page: authors,
    affiliations, addresses, dates. They are paragraphs, never sections."""
    units = page.units
    start = next(i for i, u in enumerate(units) if u is title)
    front: set[int] = set()
    for unit in units[start + 1 :]:
        if not isinstance(unit, Block):
            continue
        if id(unit) in roles:
            break  # an outline heading
        f = _features(unit)
        if _FRONT_END.match(_norm(f.text)) or (f.words >= 25 and abs(f.size - body) <= 0.1 * body):
            break
        front.add(id(unit))
    return front


#: A section number opening a heading: "4", "4.1.2" or "B.1", then the heading's first word in
#: capitals. "4." with a dot is a list item's marker (``starts_with_bullet``).
_NUMBERED = re.compile(r"^(\d{1,2}(?:\.\d{1,2}){0,3}|[A-Z](?:\.\d{1,2}){1,3})\s+[A-Z]")


def section_number(text: str) -> tuple[int, ...] | None:
    """The section number opening ``text`` as integers ("B.1" is (101, 1): appendix letters
    are kept apart from numbers), or None."""
    found = _NUMBERED.match(text)
    if found is None:
        return None
    return tuple(
        int(part) if part.isdigit() else 100 + ord(part) - ord("A")
        for part in found.group(1).split(".")
    )


def numbered_depths(
    numbered: Sequence[tuple[tuple[int, ...], Style | None]],
) -> dict[tuple[int, ...], int]:
    """The numbers of the plain numbered headings (those with a style) that are in sequence,
    each with how many parts it has beyond the shortest of them: "5.1" 0, "5.1.1" 1."""
    accepted = in_sequence([number for number, _ in numbered])
    plain = {number for number, style in numbered if style is not None and number in accepted}
    shallowest = min(map(len, plain), default=0)
    return {number: len(number) - shallowest for number in plain}


def in_sequence(numbers: Sequence[tuple[int, ...]]) -> frozenset[tuple[int, ...]]:
    """The section numbers that have a neighbour among ``numbers``: the one before or after
    it at its level ("4.1" and "4.2"), its parent ("4") or a child ("4.1.1"). A document's
    sections are numbered in sequence, so a number alone ("21 Professional Development ..."
    in a contents list) is not taken for one."""
    present = set(numbers)
    parents = {n[:-1] for n in present}
    return frozenset(
        n
        for n in present
        if (*n[:-1], n[-1] - 1) in present
        or (*n[:-1], n[-1] + 1) in present
        or (len(n) > 1 and n[:-1] in present)
        or n in parents
    )


def _prose_follows(units: list[Block | Atom], k: int, body: float) -> bool:
    """Whether a body-size line (bold, or opening with a section number) is followed by running
    text or a bigger heading, as a section heading is (bold row labels of tables are followed by
    more short rows, and so are the numbered lines of a list)."""
    nxt = units[k + 1] if k + 1 < len(units) else None
    if not isinstance(nxt, Block):
        return nxt is None  # the last line of a page: the text continues overleaf
    f = _features(nxt)
    return (f.words >= 12 and not f.bold) or f.size >= body * 1.08


def _body_kind(block: Block, f: _Features) -> ElementKind:
    if caption_target(f.text) is not None:
        return ElementKind.CAPTION
    if starts_with_bullet(f.text):
        return ElementKind.LIST
    if block.style_share("monospace") >= 0.8:
        return ElementKind.CODE
    if (
        block.style_share("math") >= 0.35
        and f.lines <= 4
        and len(f.text) <= 300
        and not _LEADERS.search(f.text)
    ):  # TeX sets dot leaders in a math font
        return ElementKind.EQUATION
    return ElementKind.PARAGRAPH


def heading_levels(
    candidates: Sequence[Style], matched: Sequence[tuple[Style, int]], body: float
) -> Callable[[Style], int]:
    """The level of a candidate heading's style, from the styles of every candidate and of the
    outline's headings: with an outline, styles seen on outline headings reuse its levels and
    other styles go below the deepest outline level; without, bigger sizes rank higher and
    bold body-size headings come last."""
    if matched:
        style_level: dict[tuple[float, bool], int] = {}
        for (size_class, bold, _), level in matched:
            key = (size_class, bold)
            style_level[key] = min(level, style_level.get(key, level))
        deepest = max(level for _, level in matched)
        others = sorted(
            {(c, b) for c, b, _ in candidates} - set(style_level),
            key=lambda k: (-k[0], not k[1]),
        )
        for rank, key in enumerate(others):
            style_level[key] = min(deepest + 1 + rank, 6)
        return lambda style: style_level[(style[0], style[1])]
    big_classes = sorted({c for c, _, size in candidates if size - body >= 0.8}, reverse=True)
    size_level = {size: min(i + 1, 4) for i, size in enumerate(big_classes)}
    bold_level = min(len(big_classes), 4) + 1

    def by_size(style: Style) -> int:
        c, _, size = style
        return size_level.get(c, bold_level) if size - body >= 0.8 else bold_level

    return by_size


def _find_title(page: Page, body: float, meta_title: str | None) -> Block | None:
    blocks = [
        u for u in page.units if isinstance(u, Block) and u.top - page.origin[1] < 0.6 * page.height
    ]
    feats = [(b, _features(b)) for b in blocks]
    feats = [
        (b, f)
        for b, f in feats
        if f.heading_shape(40)
        or (f.lines <= 4 and f.words <= 40 and f.text[:1].isupper() and not f.text.endswith("."))
    ]
    if meta_title:
        want = _norm(meta_title)
        best = max(feats, key=lambda bf: _similar(want, _norm(bf[1].text)), default=None)
        if best is not None and _similar(want, _norm(best[1].text)) >= 0.75:
            return best[0]
    if not feats:
        return None
    block, f = max(feats, key=lambda bf: (bf[1].size, -bf[0].top))
    return block if f.size >= body * 1.15 else None


def match_outline(
    pages: Sequence[Page], outline: Sequence[tuple[int, str, int]]
) -> list[tuple[Style, int]]:
    """Blocks carrying outline titles become headings of the outline's level (in their page's
    ``roles``); a block whose first lines are the heading is split so the heading stands alone.
    Returns each match's style and level, for :func:`heading_levels`. Must run before any other
    role is given: a block with a role is taken."""
    out: list[tuple[Style, int]] = []
    for depth, title, target in outline:
        want = _norm(title)
        if not want:
            continue
        best: tuple[float, Page, int, int] | None = None
        for p in (target, target + 1, target - 1):
            if not 0 <= p < len(pages):
                continue
            page = pages[p]
            for idx, unit in enumerate(page.units):
                if not isinstance(unit, Block) or id(unit) in page.roles:
                    continue
                for k in range(1, min(3, len(unit.lines)) + 1):
                    got = _norm(" ".join(ln.text for ln in unit.lines[:k]))
                    score = _similar(want, got)
                    if score >= 0.85 and (best is None or score > best[0]):
                        best = (score, page, idx, k)
            if best is not None:
                break
        if best is None:
            continue
        _, page, idx, k = best
        block = page.units[idx]
        assert isinstance(block, Block)
        if k < len(block.lines):
            rest = Block(block.lines[k:], block.column)
            block.lines = block.lines[:k]
            page.units.insert(idx + 1, rest)
        page.roles[id(block)] = Role(ElementKind.HEADING, depth + 1)
        f = _features(block)
        out.append(((f.size_class, f.bold, f.size), depth + 1))
    return out
