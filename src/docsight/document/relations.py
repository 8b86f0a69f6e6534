"""The edges of the document map: captions bound to what they describe, references resolved.

Two kinds of relation are found for every document, whatever its format:

* ``caption_of``: a CAPTION element and the table or figure it describes — the nearest one on the
  same page, in reading order, of the kind its label names ("Table 3" → a table, "Figure 2" → a
  figure or chart), preferring the neighbour the caption is adjacent to.
* ``refers_to``: a passage mentioning "Table 3", "Fig. 2", "Section 4.1", "§2" or "page 12" and
  the table, figure, section or page meant. Tables and figures are found through their captions'
  numbers, sections through the numbers their headings start with, pages through printed labels.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

from docsight.document.captions import CAPTION_RE, caption_target
from docsight.document.model import Edge, EdgeKind, Element, ElementKind, Page, Section

_TABLE_KINDS = frozenset({ElementKind.TABLE})
_FIGURE_KINDS = frozenset({ElementKind.FIGURE, ElementKind.CHART})
_TEXT_KINDS = frozenset(
    {ElementKind.PARAGRAPH, ElementKind.LIST, ElementKind.CAPTION, ElementKind.NOTE}
)
_NUMBER = r"([0-9]+(?:\.[0-9]+)*[a-z]?|[IVXLC]+|[A-Z])"
_REFERENCE = re.compile(
    rf"\b(?P<kind>tables?|tab\.|figures?|figs?\.|charts?|exhibits?|sections?|sect?\.|§|pages?|pp?\.)"
    rf"\s*{_NUMBER}\b",
    re.IGNORECASE,
)
_SECTION_NUMBER = re.compile(
    r"^\s*(?:section\s+|chapter\s+|part\s+)?([0-9]+(?:\.[0-9]+)*)\.?\s", re.I
)
#: How far (in reading order) a caption may sit from what it describes.
_CAPTION_REACH = 4


def _caption_number(text: str) -> str | None:
    match = CAPTION_RE.match(text)
    return match.group("number").lower() if match else None


def bind_captions(elements: Sequence[Element]) -> list[Edge]:
    """One ``caption_of`` edge per caption that has a matching table or figure nearby."""
    edges: list[Edge] = []
    taken: set[str] = set()
    for i, element in enumerate(elements):
        if element.kind != ElementKind.CAPTION:
            continue
        # A caption without a label (a "Caption" style in Word) may describe either.
        wanted = {"table": _TABLE_KINDS, "figure": _FIGURE_KINDS}.get(
            caption_target(element.text) or "", _TABLE_KINDS | _FIGURE_KINDS
        )
        best: Element | None = None
        best_distance: float = _CAPTION_REACH + 1
        for j in range(max(0, i - _CAPTION_REACH), min(len(elements), i + _CAPTION_REACH + 1)):
            other = elements[j]
            if other.kind not in wanted or other.page != element.page or other.id in taken:
                continue
            # Tables are captioned above and figures below by convention: prefer that side
            # on a tie.
            distance = abs(j - i) + (0.5 if (j > i) == (other.kind in _FIGURE_KINDS) else 0.0)
            if distance < best_distance:
                best, best_distance = other, distance
        if best is not None:
            taken.add(best.id)
            edges.append(
                Edge(
                    kind=EdgeKind.CAPTION_OF,
                    source=element.id,
                    target=best.id,
                    text=element.text[:80],
                )
            )
    return edges


class Mention(NamedTuple):
    """A passage's words naming a table, figure, section or page ("see Table 3"), before
    they are resolved: the element, the word ("table"), the number ("3") and the words."""

    source: str
    word: str
    number: str
    text: str


def mentions(elements: Iterable[Element]) -> list[Mention]:
    """What the text elements of ``elements`` mention, in order: the half of resolving
    references that reads text (:func:`resolve_mentions` is the other), so a document can be
    linked without holding its elements (``docsight.document.stream``)."""
    found: list[Mention] = []
    for element in elements:
        if element.kind not in _TEXT_KINDS:
            continue
        own_caption = element.kind == ElementKind.CAPTION
        for match in _REFERENCE.finditer(element.text):
            if own_caption and match.start() == 0:
                continue  # a caption's own label is a binding, not a reference
            found.append(
                Mention(
                    element.id, match.group("kind").lower(), match.group(2).lower(), match.group(0)
                )
            )
    return found


def numbered_artifacts(
    captions: Sequence[Edge], caption_texts: Mapping[str, str]
) -> dict[tuple[str, str], str]:
    """``("table", "3") → the table's id`` from ``caption_of`` edges and their captions' texts
    (by caption id); the first table or figure of a number wins."""
    numbered: dict[tuple[str, str], str] = {}
    for edge in captions:
        text = caption_texts.get(edge.source)
        number = _caption_number(text) if text is not None else None
        if text is None or number is None or edge.target is None:
            continue
        kind = "table" if caption_target(text) == "table" else "figure"
        numbered.setdefault((kind, number), edge.target)
    return numbered


def resolve_mentions(
    found: Iterable[Mention],
    numbered: Mapping[tuple[str, str], str],
    sections: Sequence[Section],
    pages: Sequence[Page],
) -> list[Edge]:
    """``refers_to`` edges for the mentions that name something the document has."""
    section_numbers: dict[str, str] = {}
    for section in sections:
        match = _SECTION_NUMBER.match(section.title + " ")
        if match:
            section_numbers.setdefault(match.group(1).rstrip("."), section.id)
    page_labels: dict[str, int] = {}
    for page in pages:
        for label in page.labels:
            page_labels.setdefault(label.lower(), page.index)

    edges: list[Edge] = []
    seen: set[tuple[str, str | None, int | None]] = set()
    for mention in found:
        word, number = mention.word, mention.number
        target: str | None = None
        target_page: int | None = None
        if word.startswith("tab"):
            target = numbered.get(("table", number))
        elif word.startswith(("fig", "chart", "exhibit")):
            target = numbered.get(("figure", number))
        elif word.startswith(("sec", "§")):
            target = section_numbers.get(number)
        elif number.isdigit():
            target_page = page_labels.get(number)
            if target_page is None and 1 <= int(number) <= len(pages):
                target_page = int(number) - 1
        if target is None and target_page is None:
            continue
        key = (mention.source, target, target_page)
        if key in seen:
            continue
        seen.add(key)
        edges.append(
            Edge(
                kind=EdgeKind.REFERS_TO,
                source=mention.source,
                target=target,
                target_page=target_page,
                text=mention.text,
            )
        )
    return edges
