"""Page references in questions: "page 14", "pages 3 to 10", "the cover", "the second last page".

People point at pages by the number printed on them or by position. A reference resolves against a
document's printed page labels first and its physical page numbers second (see
``retrieval.locate.LocateRetriever``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from docsight.document.text import FORM_EXAMPLE, NUMBER_WORDS

_NUMBER_WORDS = {word: n for word, n in NUMBER_WORDS.items() if n}  # no page zero
_ORDINAL_WORDS = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
    "eighth": 8, "ninth": 9, "tenth": 10,
}  # fmt: skip
_NUM = r"(\d{1,5}|" + "|".join(sorted(_NUMBER_WORDS, key=len, reverse=True)) + r")"
_PAGE = r"(?:pages?|pp?\.|slides?)"
_MAX_RANGE = 50

_RANGE = re.compile(rf"\b{_PAGE}\s*{_NUM}\s*(?:-|–|to|through|and)\s*(?:{_PAGE}\s*)?{_NUM}\b", re.I)
_SINGLE = re.compile(rf"\b{_PAGE}\s*(?:no\.?\s*|number\s*|#\s*)?{_NUM}\b", re.I)
_ORDINAL = re.compile(
    r"\b(?:the\s+)?(" + "|".join(_ORDINAL_WORDS) + r")\s+(last\s+)?(?:page|slide)\b", re.I
)
_FROM_END = re.compile(r"\b(?:page|slide)\s+(?:at\s+)?the\s+(second|third)\s+last\b", re.I)
_LAST = re.compile(r"\b(?:the\s+)?(?:last|final)\s+(?:page|slide)\b", re.I)
_COVER = re.compile(r"\b(?:cover|front)\s*(?:page)?\b|\btitle\s+page\b", re.I)


@dataclass(frozen=True)
class PageRef:
    """``number``: a page number as printed or counted (1-based); ``position``: counted from the
    start (1 = first page) or, when ``from_end``, from the end (1 = last page)."""

    kind: Literal["number", "position"]
    value: int
    from_end: bool = False


def _to_int(token: str) -> int:
    return int(token) if token.isdigit() else _NUMBER_WORDS[token.lower()]


def page_references(question: str) -> list[PageRef]:
    """Page references in ``question``, in order of appearance, without duplicates."""
    # 'formatted as a list, for example ["Page 17", "Page 25"]' names no page to look at.
    question = FORM_EXAMPLE.sub(lambda m: " " * len(m.group()), question)
    found: list[tuple[int, PageRef]] = []
    taken: list[tuple[int, int]] = []

    def free(span: tuple[int, int]) -> bool:
        return all(span[1] <= a or span[0] >= b for a, b in taken)

    for m in _RANGE.finditer(question):
        start, end = _to_int(m.group(1)), _to_int(m.group(2))
        if 0 < start <= end and end - start <= _MAX_RANGE:
            taken.append(m.span())
            found.extend((m.start(), PageRef("number", n)) for n in range(start, end + 1))
    for m in _SINGLE.finditer(question):
        if free(m.span()):
            taken.append(m.span())
            found.append((m.start(), PageRef("number", _to_int(m.group(1)))))
    for m in _FROM_END.finditer(question):
        if free(m.span()):
            taken.append(m.span())
            found.append((m.start(), PageRef("position", _ORDINAL_WORDS[m.group(1).lower()], True)))
    for m in _ORDINAL.finditer(question):
        if free(m.span()):
            taken.append(m.span())
            n = _ORDINAL_WORDS[m.group(1).lower()]
            found.append((m.start(), PageRef("position", n, from_end=bool(m.group(2)))))
    for m in _LAST.finditer(question):
        if free(m.span()):
            taken.append(m.span())
            found.append((m.start(), PageRef("position", 1, from_end=True)))
    for m in _COVER.finditer(question):
        if free(m.span()):
            taken.append(m.span())
            found.append((m.start(), PageRef("position", 1)))
    return list(dict.fromkeys(ref for _, ref in sorted(found, key=lambda x: x[0])))


def resolve(refs: list[PageRef], page_count: int, labels: dict[str, list[int]]) -> list[int]:
    """0-based pages of one document that ``refs`` point at, best first.

    ``labels`` maps printed page labels to the pages that carry them. A number matches a printed
    label first and the physical page with that number second; positions count physical pages.
    """
    pages: list[int] = []
    for ref in refs:
        if ref.kind == "number":
            pages.extend(labels.get(str(ref.value), []))
            if 1 <= ref.value <= page_count:
                pages.append(ref.value - 1)
        elif ref.from_end:
            if ref.value <= page_count:
                pages.append(page_count - ref.value)
        elif ref.value <= page_count:
            pages.append(ref.value - 1)
    return list(dict.fromkeys(pages))
