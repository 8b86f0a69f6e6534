"""Questions about the members of a group a document lists: "is it one of them?", "how many?".

Directories, market maps, course handbooks and product sheets list the members of named groups:
the markets of "San Francisco Bay Area" under that heading, each with its code (CA04 … CA11).
Three questions are asked of such lists, and none is answered by quoting one sentence:

* "Is market CA03 part of the San Francisco Bay Area?" A yes when the group's list holds the
  item; a no when the list holds others of the item's kind (codes of its shape, CA04 … CA11) and
  not the item itself.
* "How many market names are listed under Los Angeles Area?" The distinct members of the
  group's list: its codes of one shape (CA14 … CA26 make 13), or, where no codes tell them
  apart, the numbered or bulleted lines (or a table's rows) under the group's heading.
* "What are the three bad fonts?" The lines printed under a line that names the group, as
  many as the question says (a slide's "BAD FONTS", then "Times New Roman", "Arial", "Comic
  Sans"); the list ends early at a heading, a line in capitals like the group's ("BAD
  COLORS"), a long line or a picture's description, and then nothing is answered.

A group's list is a source whose section headings name the group (every content word of the
name), or the part of a source that follows the group's name where its text prints it (a map's
text, "Enrollment Planning Service — Los Angeles Area … CA14 …"). Members are identifiers
(letters and digits, of one shape: the same letters, as many digits), since those can be told
apart from the prose around them; anything else is left to the ordinary answerer, and so is a
"group" that only names the document ("Is AR01 in the report?").
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from docsight.agents.answer import Source
from docsight.agents.question import prints_code
from docsight.agents.tables import parse_tables
from docsight.document.text import NUMBER_WORDS, content_terms

#: "is <item> (considered) part of / in / among / under / one of <group>?", after an optional
#: leading clause ("In the context of the platform, is ...").
_IS_MEMBER = re.compile(
    r"(?:^|[,;:]\s+)(?:is|are|was|were)\s+(?P<item>[^,;?]+?)\s+"
    r"(?:(?:considered|counted|listed|included|classified|located|grouped)\s+(?:as\s+)?)?"
    r"(?:(?:a\s+)?part\s+of|one\s+of|(?:a\s+)?member\s+of|among|with(?:in)?|inside|under|in)\s+"
    r"(?P<group>[^?]+?)\s*(?:\?|$)",
    re.I,
)
#: "how many <what> are listed under / in / for <group>?"
_HOW_MANY_LISTED = re.compile(
    r"\bhow many\s+(?P<what>[^?]+?)\s+(?:are\s+|is\s+)?"
    r"(?:listed|named|included|shown|given|grouped)\s+(?:under|in|for|within)\s+"
    r"(?P<group>[^?]+?)\s*(?:\?|$)",
    re.I,
)
#: "what are the three bad fonts?", "list the 4 reasons ...": so many members of a named group.
_SO_MANY = re.compile(
    r"(?:^|[,;:]\s*)(?:what|which)\s+(?:are|were)\s+(?:the\s+)?(?P<n>\w+)\s+(?P<what>[^?,;.]+?)"
    r"\s*(?:\?|$|[,;.])|^\s*(?:list|name|give|enumerate)\s+(?:me\s+)?(?:the\s+)?(?P<n2>\w+)\s+"
    r"(?P<what2>[^?,;.]+?)\s*(?:\?|$|[,;.])",
    re.I,
)
#: A member printed on its own line: short, not a heading nor a picture's description.
_MAX_ITEM_WORDS = 8
#: An identifier: letters, then digits, sometimes a letter after ("CA03", "IL11", "GS6883A").
_CODE = re.compile(r"\b([A-Z]{1,4})-?(\d{1,5})([A-Z]?)\b")
#: Members of one kind a list must show before an item missing from it counts as a no.
MIN_MEMBERS = 2
PICTURE_KINDS = frozenset({"figure", "chart", "page_image"})
#: Words that describe a group's name rather than name it ("the ... area" keeps "area"), or that
#: name the document itself, which is no group.
_GROUP_FILLER = frozenset(
    "the this that these those document documents guide guidebook brochure report paper file "
    "pdf slides slide deck presentation manual handbook article text list".split()
)


@dataclass(frozen=True)
class GroupList:
    """A group's members as one source lists them."""

    group: str
    source: Source
    #: The members' letters, digit count and whether a letter follows.
    shape: tuple[str, int, bool]
    #: Members in the order first listed, as printed ("CA04").
    members: tuple[str, ...]

    def span(self) -> str:
        if len(self.members) <= 3:
            return ", ".join(self.members)
        return f"{self.members[0]} … {self.members[-1]}"


@dataclass(frozen=True)
class Membership:
    """A yes or no to "is the item in the group?", or a count of the group's members."""

    answer: str
    quote: str
    source: Source


def _shape(code: re.Match[str]) -> tuple[str, int, bool]:
    return code.group(1), len(code.group(2)), bool(code.group(3))


def _display(group: str) -> str:
    """The group's name as the question writes it, without a leading article."""
    return re.sub(r"^(?:the|a|an)\s+", "", group.strip(), flags=re.I)


def _group_terms(group: str) -> set[str]:
    words = [w for w in re.findall(r"[\w'’-]+", group) if w.lower() not in _GROUP_FILLER]
    return set(content_terms(" ".join(words)))


def _phrase(terms: list[str]) -> re.Pattern[str]:
    """The group's name as printed: its words in order, anything but a full stop between."""
    return re.compile(r"\b" + r"\w*[^.\w]{1,4}".join(re.escape(t) for t in terms), re.I)


def _headed(source: Source, terms: set[str]) -> bool:
    """Whether the source's section headings hold every word of the group's name."""
    return terms <= set(content_terms(" ".join(source.section_path)))


def _listed(source: Source, group: str) -> str | None:
    """The part of the source that lists the group: all of it when its headings name the group
    (every word of the name), else what follows the name where the text prints it (a map's text,
    "Enrollment Planning Service — Los Angeles Area … CA14 …"), else ``None``."""
    terms = _group_terms(group)
    if not terms:
        return None
    if _headed(source, terms):
        return source.text
    ordered = list(dict.fromkeys(content_terms(group)))
    ordered = [t for t in ordered if t in terms]
    found = _phrase(ordered).search(source.text)
    return source.text[found.end() :] if found else None


def group_lists(group: str, sources: Sequence[Source]) -> list[GroupList]:
    """The lists ``sources`` give for ``group``: in each source that names it, the codes of its
    commonest shape (at least ``MIN_MEMBERS`` of them), in the order first printed."""
    out: list[GroupList] = []
    for source in sources:
        text = _listed(source, group)
        if text is None:
            continue
        codes = list(_CODE.finditer(text))
        shapes = Counter(_shape(c) for c in codes)
        if not shapes:
            continue
        shape, count = shapes.most_common(1)[0]
        if count < MIN_MEMBERS:
            continue
        members = dict.fromkeys(c.group(0) for c in codes if _shape(c) == shape)
        out.append(
            GroupList(group=_display(group), source=source, shape=shape, members=tuple(members))
        )
    return out


def membership(question: str, sources: Sequence[Source]) -> Membership | None:
    """The answer to a membership question of a listed group, or ``None`` when ``question`` asks
    none or no source lists the group with members of the asked item's kind."""
    text = " ".join(question.split())
    asked = _IS_MEMBER.search(text)
    if asked is not None:
        return _is_member(asked.group("item"), asked.group("group"), sources)
    counted = _HOW_MANY_LISTED.search(text)
    if counted is not None:
        return _how_many(counted.group("group"), sources)
    so_many = _SO_MANY.search(text)
    if so_many is not None:
        n = so_many.group("n") or so_many.group("n2")
        what = so_many.group("what") or so_many.group("what2")
        count = int(n) if n.isdigit() else NUMBER_WORDS.get(n.lower(), 0)
        if MIN_MEMBERS <= count <= 12:
            return _so_many(count, what, sources)
    return None


def _capitals(line: str) -> bool:
    letters = [ch for ch in line if ch.isalpha()]
    return len(letters) >= 3 and all(ch.isupper() for ch in letters)


def _so_many(count: int, group: str, sources: Sequence[Source]) -> Membership | None:
    """ "What are the three bad fonts?": the ``count`` lines printed under a line that names
    the group ("BAD FONTS", then "Times New Roman", "Arial", "Comic Sans"), as slides and
    brochures list them; the question's number says where the list ends."""
    terms = _group_terms(group)
    if not terms:
        return None
    for source in sources:
        if source.kind in PICTURE_KINDS:
            continue
        lines = [ln.strip() for ln in source.text.splitlines()]
        for i, line in enumerate(lines):
            heading = line.lstrip("# ")
            if set(content_terms(heading)) != terms:
                continue
            capitals = _capitals(heading)
            items: list[str] = []
            for following in lines[i + 1 :]:
                if not following:
                    continue
                entry = LIST_ENTRY.match(following)
                item = entry.group("entry").strip() if entry else following
                if following.startswith("#") or len(item.split()) > _MAX_ITEM_WORDS:
                    break
                if item.lower().startswith(("page image:", "[figure", "[table")):
                    break
                if capitals and _capitals(item):
                    break  # the next group's heading, set like this one ("BAD COLORS")
                items.append(item)
                if len(items) == count:
                    return Membership(
                        answer="; ".join(items),
                        quote=f"{heading}: {'; '.join(items)}",
                        source=source,
                    )
    return None


def _is_member(item: str, group: str, sources: Sequence[Source]) -> Membership | None:
    code = _CODE.search(item)
    if code is None:
        return None
    wanted = _shape(code)
    found = group_lists(group, sources)
    lists = [g for g in found if g.shape == wanted]
    if not lists:
        # Codes of the same form under other letters ("NR01 … NR03" for the Northern Region,
        # SR03 asked): a no, when the item is printed elsewhere, so it is a member of something.
        lists = [g for g in found if _form(g.shape) == _form(wanted)]
        elsewhere = any(
            prints_code(s.text, code.group(0))
            for s in sources
            if all(s is not g.source for g in lists)
        )
        if not lists or not elsewhere:
            return None
    key = code.group(0).replace("-", "").upper()
    best = _preferred(lists)
    if any(m.replace("-", "").upper() == key for m in best.members):
        return Membership(
            answer="Yes",
            quote=f"{best.group}: {best.span()} ({len(best.members)} listed), "
            f"{code.group(0)} among them",
            source=best.source,
        )
    return Membership(
        answer="No",
        quote=f"{best.group}: {best.span()} ({len(best.members)} listed), not {code.group(0)}",
        source=best.source,
    )


def _form(shape: tuple[str, int, bool]) -> tuple[int, int, bool]:
    return len(shape[0]), shape[1], shape[2]


def _preferred(lists: list[GroupList]) -> GroupList:
    """The list to read when several sources list the group (a map and its legend): one in
    running text before one in a figure's text (a map's labels carry the section they were
    printed in, which may be the neighbouring group's), then the fullest."""
    return min(lists, key=lambda g: (g.source.kind in PICTURE_KINDS, -len(g.members)))


#: An entry of a list printed one to a line: "1. Sandford", "2) Bay Point", "- Westgate".
LIST_ENTRY = re.compile(r"^\s*(?:\d{1,3}[.)]|[-*•▪])\s+(?P<entry>\S.*)$", re.M)


def _entries(group: str, sources: Sequence[Source]) -> GroupList | None:
    """The list printed one entry to a line under a heading that names the group, when no codes
    tell its members apart: its numbered or bulleted lines, or the rows of the one table there,
    in running text only (not a picture's words)."""
    terms = _group_terms(group)
    for source in sources:
        if source.kind in PICTURE_KINDS or not terms or not _headed(source, terms):
            continue
        entries = [m.group("entry").strip() for m in LIST_ENTRY.finditer(source.text)]
        tables = parse_tables(source.text)
        if len(entries) < MIN_MEMBERS and len(tables) == 1:
            # A table under the heading lists one member a row, named by its label.
            entries = [tables[0].label(i) for i in range(len(tables[0].rows))]
        if len(entries) >= MIN_MEMBERS:
            return GroupList(_display(group), source, ("", 0, False), tuple(entries))
    return None


def _how_many(group: str, sources: Sequence[Source]) -> Membership | None:
    lists = group_lists(group, sources)
    if not lists:
        entries = _entries(group, sources)
        if entries is None:
            return None
        lists = [entries]
    best = _preferred(lists)
    return Membership(
        answer=str(len(best.members)),
        quote=f"{best.group}: {', '.join(best.members)} ({len(best.members)} listed)",
        source=best.source,
    )
