"""Locating by reference (DMAP): "Table 3", "Figure 2b", "Section 4.1", "Appendix B",
"page 14", "the last page", "the first chart".

A question that names a part of the document is answered by going there, not by matching
words. Page references resolve against printed page labels and physical page numbers
(:mod:`.pages`); named parts resolve through each document's reference index, which the content
graph records at ingestion (captions' numbers, numbered and lettered section titles, and the
tables, figures and charts in reading order).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from docsight.index.base import ChannelHit, Store
from docsight.retrieval.pages import PageRef, page_references, resolve

# Arabic numbers may follow the word directly ("Fig.3"); roman numerals and letters need a
# space and a capital ("Appendix E", "Part II"), so "sections discuss" names nothing.
_NUMBER = r"(?:\s*(?P<num>[0-9]+(?:\.[0-9]+)*[a-z]?)\b|\s+(?P<name>(?-i:[IVXLC]+|[A-Z]))\b)"
_NAMED = re.compile(
    rf"\b(?P<kind>tables?|tab\.|figures?|figs?\.|charts?|exhibits?|sections?|sect?\.|§"
    rf"|appendix|appendices|annex|chapters?|part|schedule){_NUMBER}",
    re.IGNORECASE,
)
_ORDINALS = {
    "first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4,
    "fifth": 5, "5th": 5, "last": -1, "final": -1,
}  # fmt: skip
_ORDINAL = re.compile(
    r"\b(?P<ord>" + "|".join(_ORDINALS) + r")\s+(?:(?P<last>last)\s+)?"
    r"(?P<kind>tables?|figures?|charts?|graphs?|plots?|diagrams?|images?|pictures?|photos?)\b",
    re.IGNORECASE,
)
_FIGURE_WORDS = ("fig", "chart", "exhibit")
_SECTION_WORDS = ("sec", "§")


@dataclass(frozen=True)
class NamedRef:
    """A part of a document named in a question: ``key`` as the reference index spells it
    ("table 3", "appendix b"), or an ordinal over the tables, figures or charts."""

    kind: Literal["named", "ordinal"]
    key: str
    #: 1-based position for ordinals, negative from the end (-1: the last).
    position: int = 0


def named_references(question: str) -> list[NamedRef]:
    """Named parts and ordinals in ``question``, in order of appearance (pages excluded)."""
    found: list[tuple[int, NamedRef]] = []
    for m in _NAMED.finditer(question):
        word = m.group("kind").lower()
        number = (m.group("num") or m.group("name")).lower().rstrip(".")
        if word.startswith("tab"):
            key = f"table {number}"
        elif word.startswith(_FIGURE_WORDS):
            key = f"figure {number}"
        elif word.startswith(_SECTION_WORDS):
            key = f"section {number}"
        elif word.startswith("append"):
            key = f"appendix {number}"
        elif word.startswith("chapter"):
            key = f"chapter {number}"
        else:
            key = f"{word} {number}"
        found.append((m.start(), NamedRef("named", key)))
    for m in _ORDINAL.finditer(question):
        position = _ORDINALS[m.group("ord").lower()]
        if m.group("last"):
            position = -position if position > 0 else position  # "second last"
        noun = m.group("kind").lower()
        group = (
            "table"
            if noun.startswith("table")
            else "chart"
            if noun.startswith(("chart", "graph", "plot"))
            else "figure"
        )
        found.append((m.start(), NamedRef("ordinal", group, position)))
    return list(dict.fromkeys(ref for _, ref in sorted(found, key=lambda x: x[0])))


def mentions_location(question: str) -> bool:
    """Whether the question names a page or a part of a document at all (cheap pre-check)."""
    return bool(page_references(question) or named_references(question))


class LocateRetriever:
    """The pages a question names, by number, position or the part they hold.

    A scoped page-level channel: it looks within the document filter or the documents the other
    channels found. Named parts are looked up in the documents' reference indexes, which are
    read only when the question names one.
    """

    name = "locate"
    level: Literal["chunk", "page"] = "page"
    scoped = True
    #: Whether named parts ("Table 3", "Appendix B") count, or page references only.
    named_parts = True

    def __init__(self, store: Store) -> None:
        self.store = store

    def retrieve(
        self, query: str, limit: int, doc_ids: Sequence[str] | None = None
    ) -> list[ChannelHit]:
        if not doc_ids:
            return []
        pages = page_references(query)
        named = named_references(query) if self.named_parts else []
        if not pages and not named:
            return []
        found: dict[tuple[str, int], float] = {}

        def add(doc_id: str, page: int, rank: int) -> None:
            key = (doc_id, page)
            found[key] = max(found.get(key, 0.0), 1.0 / (1 + rank))

        if pages:
            for doc_id, resolved in _resolved(pages, self.store, doc_ids).items():
                for rank, page in enumerate(resolved):
                    add(doc_id, page, rank)
        if named:
            for refs in self.store.graph_references(doc_ids):
                rank = 0
                for ref in named:
                    if ref.kind == "named":
                        targets = refs.references.get(ref.key, [])
                    else:
                        listed = refs.artifacts.get(ref.key, [])
                        i = ref.position - 1 if ref.position > 0 else len(listed) + ref.position
                        targets = [listed[i]] if 0 <= i < len(listed) else []
                    for target in targets:
                        add(refs.doc_id, target.page, rank)
                        rank += 1
        hits = [ChannelHit(None, d, p, s) for (d, p), s in found.items()]
        # Interleave documents by rank so the first pages of every document come first.
        hits.sort(key=lambda h: -h.score)
        return hits[:limit]


class PageReferenceRetriever(LocateRetriever):
    """Pages the question names by number or position only ("on page 14", "the cover", "pages
    3 to 10"): the locator without named parts, kept as the ``page_ref`` channel."""

    name = "page_ref"
    named_parts = False


def pages_missing(question: str, store: Store, doc_ids: Sequence[str]) -> bool:
    """Whether ``question`` names page numbers that none of ``doc_ids`` has ("pages 100-110"
    of a 53-page deck): strong evidence that it cannot be answered from them."""
    numbered = [r for r in page_references(question) if r.kind == "number"]
    if not numbered or not doc_ids:
        return False
    return not _resolved(numbered, store, doc_ids)


def named_pages(question: str, store: Store, doc_ids: Sequence[str]) -> dict[str, list[int]]:
    """The 0-based pages of each of ``doc_ids`` that ``question`` names by number or position
    ("on page 14", "the cover"), resolved as the locator resolves them; documents with none of
    them are left out."""
    refs = page_references(question)
    if not refs or not doc_ids:
        return {}
    return _resolved(refs, store, doc_ids)


def _resolved(refs: list[PageRef], store: Store, doc_ids: Sequence[str]) -> dict[str, list[int]]:
    """Each of ``doc_ids``'s 0-based pages that ``refs`` point at, best first (printed labels,
    then physical numbers: ``pages.resolve``); documents with none of them are left out."""
    found: dict[str, list[int]] = {}
    for index in store.page_index(doc_ids):
        pages = resolve(refs, index.page_count, index.labels)
        if pages:
            found[index.doc_id] = pages
    return found


_WORD_PARTS = re.compile(r"[a-z0-9]+")


def words_absent(words: Sequence[str], store: Store, doc_ids: Sequence[str]) -> list[str]:
    """Those of ``words`` that no chunk of ``doc_ids`` contains, by the full-text index (so a
    word is matched as search matches it: case, plural and possessive aside).

    One index probe per word part, each a few milliseconds whatever the document's size; a word
    whose every part is a single character ("U.S.") counts as present."""
    if not doc_ids:
        return []
    seen: dict[str, bool] = {}
    absent = []
    for word in words:
        parts = [p for p in _WORD_PARTS.findall(word.lower()) if len(p) > 1]
        for part in parts:
            if part not in seen:
                seen[part] = bool(store.text_search(part, 1, list(doc_ids)))
        if any(not seen[p] for p in parts):
            absent.append(word)
    return absent
