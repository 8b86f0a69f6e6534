"""Roles of text blocks: title, headings and their levels, captions, lists, code, equations.

Document statistics decide: the body font size is the size carrying most characters; blocks
bigger than it, or bold at body size and followed by prose, are heading candidates. Outline
entries are matched to blocks first (splitting a block whose first lines carry the title), and
their levels anchor the font-derived levels of the other headings. The blocks between the title
and the first body text of the title page (authors, affiliations) are front matter, never
sections.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
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


def assign_roles(
    pages: list[Page], outline: list[tuple[int, str, int]], meta_title: str | None
) -> dict[int, Role]:
    """Kinds and heading levels for every block, keyed by ``id(block)``."""
    sizes: Counter[float] = Counter()
    for page in pages:
        for unit in page.units:
            if isinstance(unit, Block):
                for (_, size), n in unit.font_counts().items():
                    sizes[round(size * 2) / 2] += n
    body = sizes.most_common(1)[0][0] if sizes else 10.0
    matched = _match_outline(pages, outline)
    roles: dict[int, Role] = {id(b): Role(ElementKind.HEADING, lvl) for b, lvl in matched}
    title = _find_title(pages[0], body, meta_title) if pages else None
    front: set[int] = set()
    if title is not None:
        roles[id(title)] = Role(ElementKind.TITLE)
        front = _front_matter(pages[0], title, body, roles)
    candidates: list[tuple[Block, _Features]] = []
    for page in pages:
        for k, unit in enumerate(page.units):
            if not isinstance(unit, Block) or id(unit) in roles:
                continue
            f = _features(unit)
            if id(unit) in front:
                roles[id(unit)] = Role(ElementKind.PARAGRAPH)
                continue
            big = f.size >= body * 1.08 and f.size - body >= 0.8
            bold_body = (
                f.bold
                and abs(f.size - body) <= 0.12 * body
                and f.lines <= 2
                and _prose_follows(page.units, k, body)
            )
            if (
                (big or bold_body)
                and f.heading_shape(16 if big else 12)
                and not (unit.style_share("monospace") >= 0.5 or unit.style_share("math") >= 0.3)
            ):
                candidates.append((unit, f))
            else:
                roles[id(unit)] = Role(_body_kind(unit, f))
    for block, level in _heading_levels(candidates, matched, body):
        roles[id(block)] = Role(ElementKind.HEADING, level)
    return roles


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


def _prose_follows(units: list[Block | Atom], k: int, body: float) -> bool:
    """Whether a bold body-size line is followed by running text or a bigger heading, as a
    section heading is (bold row labels of tables are followed by more short rows)."""
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


def _heading_levels(
    candidates: list[tuple[Block, _Features]], matched: list[tuple[Block, int]], body: float
) -> list[tuple[Block, int]]:
    """Font-derived heading levels; with an outline, styles seen on outline headings reuse its
    levels and other styles go below the deepest outline level."""
    if matched:
        style_level: dict[tuple[float, bool], int] = {}
        for block, level in matched:
            f = _features(block)
            key = (f.size_class, f.bold)
            style_level[key] = min(level, style_level.get(key, level))
        deepest = max(level for _, level in matched)
        others = sorted(
            {(f.size_class, f.bold) for _, f in candidates} - set(style_level),
            key=lambda k: (-k[0], not k[1]),
        )
        for rank, key in enumerate(others):
            style_level[key] = min(deepest + 1 + rank, 6)
        return [(b, style_level[(f.size_class, f.bold)]) for b, f in candidates]
    big_classes = sorted(
        {f.size_class for _, f in candidates if f.size - body >= 0.8}, reverse=True
    )
    size_level = {size: min(i + 1, 4) for i, size in enumerate(big_classes)}
    bold_level = min(len(big_classes), 4) + 1
    return [
        (b, size_level.get(f.size_class, bold_level) if f.size - body >= 0.8 else bold_level)
        for b, f in candidates
    ]


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


def _match_outline(
    pages: list[Page], outline: list[tuple[int, str, int]]
) -> list[tuple[Block, int]]:
    """Blocks carrying outline titles, as ``(block, level)``; a block whose first lines are the
    heading is split so the heading stands alone."""
    used: set[int] = set()
    out: list[tuple[Block, int]] = []
    for depth, title, target in outline:
        want = _norm(title)
        if not want:
            continue
        best: tuple[float, Page, int, int] | None = None
        for p in (target, target + 1, target - 1):
            if not 0 <= p < len(pages):
                continue
            for idx, unit in enumerate(pages[p].units):
                if not isinstance(unit, Block) or id(unit) in used:
                    continue
                for k in range(1, min(3, len(unit.lines)) + 1):
                    got = _norm(" ".join(ln.text for ln in unit.lines[:k]))
                    score = _similar(want, got)
                    if score >= 0.85 and (best is None or score > best[0]):
                        best = (score, pages[p], idx, k)
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
        used.add(id(block))
        out.append((block, depth + 1))
    return out
