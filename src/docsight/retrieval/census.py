"""Counting a document's parts (DMAP's document map): "How many figures are in this paper from
page 3 to page 10?", "How many tables are there in the whole slides?", "How many appendices
appear in the document?".

Such a question is about the document's structure, not about a passage: no sentence says how
many tables there are, and a search brings a few of them at best. The answer is counted from
the reference index the content graph records at ingestion: the numbered captions ("Table 3",
"Figure 2b"), the lettered appendices, and the tables, figures and charts in reading order.

A question is read as a census only when, past "how many <parts>", it says nothing but where
to count ("in the report", "from page 3 to page 10", "in total"): "How many figures teach
two-finger scrolling?" asks which figures show something, and is left to the answerer.

The mentions of a name are a census too: "How many times is Exhibit P-10 mentioned?", "On which
pages is the T-200 mentioned?" are counted over the document's text, each page once however
many chunks repeat it, and answered with the count or the pages.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from docsight.graph.model import Reference
from docsight.index.base import Store
from docsight.retrieval.pages import page_references, resolve

#: The parts that can be counted, by the noun a question uses.
_NOUNS = {
    "tables": "table",
    "figures": "figure",
    "charts": "chart",
    "graphs": "chart",
    "plots": "chart",
    "diagrams": "figure",
    "images": "figure",
    "pictures": "figure",
    "photos": "figure",
    "appendices": "appendix",
    "appendixes": "appendix",
    "pages": "page",
    "slides": "page",
}
_ASKED = re.compile(rf"\bhow many\s+(?P<noun>{'|'.join(_NOUNS)})\b", re.I)
#: Words that only say where or how to count ("... are there in the whole slides?").
_SCOPE_WORDS = frozenset(
    "are is were was there do does did it this that these the a an in on of from to and or "
    "between within across inside throughout whole entire full main body all total "
    "altogether overall appear appears appeared shown show shows included include includes "
    "contain contains contained present have has had used document documents paper papers "
    "report reports slides slide deck presentation file pdf brochure guide guidebook book "
    "handbook manual article study contract agreement filing page pages p pp section sections "
    "chapter part number numbers numbered please answer write integer format int "
    # What kind of document it is ("in the annual report", "in this user guide").
    "annual quarterly interim financial technical research user users owner owners "
    "sustainability white policy brief k q".split()  # "10-K": the number is skipped
)
_WORD = re.compile(r"[a-z]+|\d+", re.I)
#: Any other plural counted where the text names its members by label ("How many exhibits are
#: mentioned?" of a pleading that cites "Exhibit P-3" and "Exhibits P-10 and P-11").
_ASKED_LABELLED = re.compile(r"\bhow many\s+(?P<noun>[a-z]{3,}s)\b", re.I)
_MENTION_WORDS = frozenset(
    "mentioned mention mentions referenced reference references cited cite cites named "
    "listed attached filed produced".split()
)


#: "How many times is Exhibit P-10 mentioned?", "On which pages is the T-200 mentioned?":
#: the mentions of a name, counted and placed on their pages (``mention``).
_ASKED_TIMES = re.compile(
    r"\bhow (?:many times|often)\s+(?:is|was|are|were|does|do|did|has|have)\s+"
    r"(?P<what>[^?]+?)\s+(?:been\s+)?(?:mentioned|cited|referenced|named|mention|cite|"
    r"appears?|appeared|occurs?|occurred)\b",
    re.I,
)
_ASKED_WHERE = re.compile(
    r"\b(?:on |in )?(?:which|what) pages?\s+(?:is|are|was|were|does|do)\s+(?P<what>[^?]+?)\s+"
    r"(?:mentioned|cited|referenced|named|appears?|occurs?)\b|"
    r"\b(?:which|what) pages?\s+(?:mention|cite|reference|name)s?\s+(?P<what2>[^?]+?)\s*(?:\?|$)",
    re.I,
)
#: A name whose mentions are counted has at most this many words ("Exhibit P-10").
_MENTION_WORDS_MAX = 6


@dataclass(frozen=True)
class CensusQuestion:
    """What a census question counts (``table``, ``figure``, ``chart``, ``appendix``,
    ``page``), as the question names it, and in which pages."""

    part: str
    noun: str
    #: Whether the question names the pages to count in ("from page 3 to page 10").
    scoped: bool = False


@dataclass(frozen=True)
class Census:
    """How many of a part one document holds, and which: ``items`` as (name, 0-based page)."""

    doc_id: str
    part: str
    noun: str
    count: int
    items: list[tuple[str, int]] = field(default_factory=list)
    #: 0-based pages counted in (all of them when the question named none).
    pages: list[int] = field(default_factory=list)
    #: ``captions`` (numbered captions), ``layout`` (parts found on the pages), ``sections``
    #: (appendix titles and the appendices the text names), ``labels`` (members the text
    #: names by label, "Exhibit P-3"), ``pages``, or ``mentions`` (a name's mentions, ``count``
    #: of them, on the pages of ``items``).
    basis: str = "layout"
    #: Whether the question named the pages to count in.
    scoped: bool = False


def read_census(question: str) -> CensusQuestion | None:
    """The part ``question`` counts, or ``None`` when it is not a census of the document.

    A part of the document's layout (tables, figures, appendices, pages) is counted from the
    content graph; any other plural whose question asks only how many are mentioned is
    counted by the labels the text gives them (``labelled``), if it gives any."""
    mention = _ASKED_TIMES.search(question) or _ASKED_WHERE.search(question)
    if mention is not None:
        what = re.sub(
            r"^(?:the|a|an)\s+",
            "",
            (mention.group("what") or mention.group("what2") or ""),
            flags=re.I,
        )
        what = what.strip(" '\"“”‘’")
        if what and len(what.split()) <= _MENTION_WORDS_MAX:
            return CensusQuestion("mention", what, scoped=bool(page_references(question)))
    match = _ASKED.search(question)
    labelled = match is None
    if labelled:
        match = _ASKED_LABELLED.search(question)
        if match is None:
            return None
    noun = match.group("noun").lower()
    rest = question[match.end() :]
    # Every word after the part counted only says where or how to count (numbers are pages).
    words = [w.lower() for w in _WORD.findall(rest) if not w.isdigit()]
    allowed = _SCOPE_WORDS | _MENTION_WORDS if labelled else _SCOPE_WORDS
    if any(w not in allowed for w in words):
        return None
    if labelled and not _MENTION_WORDS & set(words):
        return None  # "How many employees are there?" asks a figure, not a count of labels
    part = "labelled" if labelled else _NOUNS[noun]
    return CensusQuestion(part, noun, scoped=bool(page_references(question)))


def take_census(question: str, store: Store, doc_ids: Sequence[str]) -> Census | None:
    """The census ``question`` asks of the first of ``doc_ids`` (the document the question is
    about), or ``None`` when it asks none or the pages it names are not in the document."""
    asked = read_census(question)
    if asked is None or not doc_ids:
        return None
    doc_id = doc_ids[0]
    index = next(iter(store.page_index([doc_id])), None)
    if index is None:
        return None
    pages = list(range(index.page_count))
    if asked.scoped:
        pages = sorted(resolve(page_references(question), index.page_count, index.labels))
        if not pages:
            return None
    within = set(pages)
    if asked.part == "page":
        items = [(f"page {p + 1}", p) for p in pages]
        return Census(doc_id, "page", asked.noun, len(items), items, pages, "pages", asked.scoped)
    if asked.part == "mention":
        on_pages = {p: n for p, n in _mentions(store, doc_id, asked.noun).items() if p in within}
        if not on_pages:
            return None  # never mentioned: not a count of zero, the answerer (or refusal) decides
        items = [(asked.noun, p) for p in sorted(on_pages)]
        total = sum(on_pages.values())
        return Census(doc_id, "mention", asked.noun, total, items, pages, "mentions", asked.scoped)
    if asked.part == "labelled":
        named = [(n, p) for n, p in _mentioned_labels(store, doc_id, asked.noun) if p in within]
        if not named:
            return None  # the text names none by label: not a census, the answerer decides
        return Census(
            doc_id, "labelled", asked.noun, len(named), named, pages, "labels", asked.scoped
        )
    refs = next(iter(store.graph_references([doc_id])), None)
    if refs is None:
        return None
    if asked.part == "appendix":
        first: dict[str, int] = {}
        for key, targets in refs.references.items():
            if key.startswith("appendix ") and targets:
                first[f"Appendix {key.split()[1].upper()}"] = min(r.page for r in targets)
        # Appendices are named in the text ("see Appendix C") more reliably than their titles
        # are recognised (a title set as a picture, a heading the layout missed).
        for name, page in _mentioned_appendices(store, doc_id):
            first[name] = min(page, first.get(name, page))
        items = sorted(
            ((n, p) for n, p in first.items() if p in within), key=lambda i: (i[1], i[0])
        )
        return Census(
            doc_id, "appendix", asked.noun, len(items), items, pages, "sections", asked.scoped
        )
    if asked.part in ("table", "figure") and asked.noun in ("tables", "figures"):
        # A document that numbers its tables (or figures) numbers every one: count the names,
        # each once however many captions repeat it ("Figure 3a", "Figure 3b" are Figure 3).
        numbered = _numbered(refs.references, asked.part)
        if numbered:
            items = [(name, page) for name, page in numbered if page in within]
            return Census(
                doc_id, asked.part, asked.noun, len(items), items, pages, "captions", asked.scoped
            )
    listed = refs.artifacts.get(asked.part, [])
    items = [(f"{asked.part} on page {r.page + 1}", r.page) for r in listed if r.page in within]
    return Census(doc_id, asked.part, asked.noun, len(items), items, pages, "layout", asked.scoped)


_APPENDIX_NAME = re.compile(r"\bappendix\s+(?P<name>(?-i:[A-Z])|\d{1,2})\b", re.I)
#: Chunks read for appendix names at most (a bound on the work; reports name theirs in far fewer).
_MENTIONS_READ = 200


def _first_pages(
    store: Store, doc_id: str, word: str, names: Callable[[str], Iterable[str]]
) -> dict[str, int]:
    """The ``names`` found in the chunks of ``doc_id`` that the full-text index finds for
    ``word`` (at most ``_MENTIONS_READ``), each with the first page naming it, in the order
    first found."""
    hits = store.text_search(word, _MENTIONS_READ, [doc_id])
    found: dict[str, int] = {}
    for chunk in store.get_chunks([h.chunk_id for h in hits if h.chunk_id]):
        for name in names(chunk.text):
            found[name] = min(chunk.page, found.get(name, chunk.page))
    return found


#: Chunk kinds that may repeat text another chunk of the page holds (a page's image, a
#: picture's words): read only for pages where no other chunk prints the name.
_REPEATS = frozenset({"page_image", "figure", "chart"})


def _mentions(store: Store, doc_id: str, name: str) -> dict[int, int]:
    """How often ``name`` is printed on each page of ``doc_id`` (0-based page -> count): every
    occurrence of the name as a whole ("P-10", not "P-100"), in any case, its first word also
    in the plural, in the chunks the full-text index finds for it (at most ``_MENTIONS_READ``),
    each distinct text once. A page's image and its pictures' words count only on a page whose
    text does not print the name (a slide whose words were read by OCR), and then the one of
    them that prints it most, since each may repeat the others."""
    words = name.split()
    if len(words) > 1 and re.search(r"\d", words[-1]):
        # "Exhibit P-10" is P-10 wherever it is printed: "Exhibits P-10 and P-11" names it too.
        words = words[-1:]
    body = r"\s+".join([re.escape(words[0]) + "s?", *(re.escape(w) for w in words[1:])])
    pattern = re.compile(r"(?<![\w-])" + body + r"(?![\w-])", re.I)
    hits = store.text_search(name, _MENTIONS_READ, [doc_id])
    counts: dict[int, int] = {}
    pictured: dict[int, int] = {}
    seen: set[tuple[int, str]] = set()
    for chunk in store.get_chunks([h.chunk_id for h in hits if h.chunk_id]):
        if (chunk.page, chunk.text) in seen:
            continue
        seen.add((chunk.page, chunk.text))
        found = len(pattern.findall(chunk.text))
        if not found:
            continue
        if chunk.kind in _REPEATS:
            pictured[chunk.page] = max(found, pictured.get(chunk.page, 0))
        else:
            counts[chunk.page] = counts.get(chunk.page, 0) + found
    for page, found in pictured.items():
        counts.setdefault(page, found)
    return dict(sorted(counts.items()))


def mention_text(census: Census, where: str) -> str:
    """A mention census as a source's text: the count first, then the pages."""
    pages = [p + 1 for _, p in census.items]
    times = "mention" if census.count == 1 else "mentions"
    listed = ", ".join(str(p) for p in pages)
    on = f"page {listed}" if len(pages) == 1 else f"pages {listed}"
    return f"{census.count} {times} of “{census.noun}” in {where}, on {on}."


_MENTION_PAGES = re.compile(r" mentions? of “[^”]*” in .*, on pages? (?P<pages>\d+(?:, \d+)*)\.$")


def mentioned_pages(text: str) -> list[str]:
    """The pages a mention census's text (``mention_text``) lists, 1-based, or ``[]``."""
    match = _MENTION_PAGES.search(text)
    return match.group("pages").split(", ") if match else []


def _mentioned_appendices(store: Store, doc_id: str) -> list[tuple[str, int]]:
    """The appendices the text of ``doc_id`` names, with the first page naming each."""

    def names(text: str) -> Iterator[str]:
        for m in _APPENDIX_NAME.finditer(text):
            yield f"Appendix {m.group('name').upper()}"

    return list(_first_pages(store, doc_id, "appendix", names).items())


#: A member's label: "P-10", "A-3", "12", "4.2", "7b", or a single capital ("Exhibit A").
_LABEL = r"(?:[A-Z]{1,3}-\d{1,4}[A-Za-z]?|\d{1,4}(?:\.\d{1,3})*[A-Za-z]?|[A-Z])(?![\w-])"
_JOIN = r"(?:\s*,\s*(?:and\s+)?|\s+(?:and|&)\s+)"


def _mentioned_labels(store: Store, doc_id: str, noun: str) -> list[tuple[str, int]]:
    """The members of ``noun`` (a plural) the text of ``doc_id`` names by label, each with the
    first page naming it: "Exhibit P-3", and both of "Exhibits P-10 and P-11". The name is
    capitalised as a title is ("Exhibit", "EXHIBIT"), so "the exhibit 3 shows" is no label."""
    if noun.endswith("ies"):
        stem = noun[:-3] + "y"  # "parties": "Party A"
    elif re.search(r"(?:x|ch|sh|ss)es$", noun):
        stem = noun[:-2]
    else:
        stem = noun[:-1]
    forms = [f(w) for w in (noun, stem) for f in (str.capitalize, str.upper)]
    title = "(?:" + "|".join(re.escape(f) for f in forms) + ")"
    pattern = re.compile(rf"\b{title}\s+(?P<labels>{_LABEL}(?:{_JOIN}{_LABEL})*)")

    def names(text: str) -> Iterator[str]:
        for m in pattern.finditer(text):
            for label in re.findall(_LABEL, m.group("labels")):
                yield f"{stem.capitalize()} {label.upper()}"

    found = _first_pages(store, doc_id, stem, names)
    return sorted(found.items(), key=lambda item: (item[1], _natural(item[0])))


def _natural(name: str) -> list[object]:
    """A sort key reading the numbers in a name as numbers ("P-2" before "P-10")."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


_SUBPART = re.compile(r"^(?P<base>\d+(?:[.\-]\d+)*)[a-z]$")


def _numbered(references: Mapping[str, Sequence[Reference]], part: str) -> list[tuple[str, int]]:
    """The numbered captions of ``part`` ("table 3" -> ("Table 3", page)), sub-parts merged."""
    first: dict[str, int] = {}
    for key, targets in references.items():
        kind, _, number = key.partition(" ")
        if kind != part or not targets:
            continue
        sub = _SUBPART.match(number)
        base = sub.group("base") if sub else number
        page = min(t.page for t in targets)
        name = f"{part.title()} {base.upper() if base.isalpha() else base}"
        first[name] = min(page, first.get(name, page))
    return sorted(first.items(), key=lambda item: (item[1], item[0]))
