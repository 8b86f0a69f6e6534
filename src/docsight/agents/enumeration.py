"""Questions about the position of an item in a list, and about how long a numbered list is.

Two questions are answered by where an item stands rather than by what it says:

* "What is the 2nd objective of Regulatory Efficiency?" The item the ordinal points at: in a
  table whose column is named by the question's noun ("Objective") and holds labels in
  sequence (A, B, C; 1, 2, 3; i, ii, iii), the row labelled second (B); in a column of the items
  themselves ("Code": E12, E31, E47), its second cell; in a list numbered or bulleted under a
  heading that names the noun ("Setup" for "the second setup step") or the group ("the third
  step of the setup"), its second entry. Headings printed inside a source's text count (a short
  section is often merged into the chunk before it); or in the list numbered right after the
  noun ("two simple guidelines: 1. Never, ever use vertical rules. 2. ..."). When the question
  says whose item it is ("of Regulatory Efficiency"), only a source whose headings, text or
  document name name that group is read, so the second objective of another priority is not
  taken for it.
* "How many key steps did the author divide causal inference into?" The length of the list
  numbered right after the noun is named ("the correct steps: 1) Parse the graph ... 6) Solve"):
  its markers must run from one up without a gap, in any order (a figure's text is read in
  columns, "1) ... 5) ... 2)"), and the list ends where the numbering starts again. Or the
  list numbered one entry to a line under a heading that names the noun.

Anything else (an ordinal of a period, "the second quarter"; a count nobody numbered) is left to
the ordinary answerer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from docsight.agents.answer import Source
from docsight.agents.membership import LIST_ENTRY, PICTURE_KINDS, Membership
from docsight.agents.tables import parse_tables
from docsight.document.text import content_terms

_ORDINAL_WORDS = {
    "first": 1,
    "second": 2,
    "third": 3,
    "fourth": 4,
    "fifth": 5,
    "sixth": 6,
    "seventh": 7,
    "eighth": 8,
    "ninth": 9,
    "tenth": 10,
}
#: "what is the 2nd objective of X?", "which is the third step?", "the last item in ...".
_NTH = re.compile(
    r"\b(?:what|which|who)\s+(?:is|was|are|were)\s+the\s+"
    r"(?P<ord>" + "|".join(_ORDINAL_WORDS) + r"|\d{1,2}(?:st|nd|rd|th)|last)\s+"
    r"(?P<noun>[a-z][\w-]*(?:\s+[a-z][\w-]*){0,2}?)"
    r"(?:\s+(?:of|in|under|for|from|listed in|listed under)\s+(?:the\s+)?(?P<group>[^?]+?))?"
    r"\s*(?:\?|$)",
    re.I,
)
#: Nouns an ordinal counts that are periods or places in the document, not items of a list.
_NOT_ITEMS = frozenset(
    "quarter half year month week day time page slide chapter section figure table line "
    "paragraph column row".split()
)
#: "how many key steps did ...", "how many stages are there ...".
_HOW_MANY = re.compile(
    r"\bhow many\s+(?P<what>(?:[a-z][\w-]*\s+){0,2}?[a-z][\w-]*?s)\s+"
    r"(?:are|is|were|was|did|do|does|have|has|had|can|will|should|there)\b",
    re.I,
)
#: A sequence label in a table cell: a capital letter, a number, a small roman numeral.
_LETTER = re.compile(r"[A-Z]")
_ROMAN = ("i", "ii", "iii", "iv", "v", "vi", "vii", "viii", "ix", "x")
#: A numbered item's marker inside running text: "1) Parse", "2. Classify" (a capital follows).
_MARKER = re.compile(r"(?<![\w.,)(])(\d{1,2})[.)]\s+(?=[A-Z])")
#: A numbered entry on its own line: "1. Charge the logger", "2) Pair it".
_NUMBERED_LINE = re.compile(r"^\s*(\d{1,2})[.)]\s+\S", re.M)
#: Words between the noun and the list's first marker, at most.
_LEAD_WORDS = 15
#: A count read off numbering needs at least this many items.
_MIN_NUMBERED = 3


def enumerated(question: str, sources: Sequence[Source]) -> Membership | None:
    """The answer to an ordinal or a numbered-count question, or ``None``."""
    text = " ".join(question.split())
    nth = _NTH.search(text)
    if nth is not None:
        position = _position(nth.group("ord"))
        noun = content_terms(nth.group("noun"))
        if position is not None and noun and noun[-1] not in _NOT_ITEMS:
            group = set(content_terms(nth.group("group") or ""))
            return _nth_item(position, noun, group, sources)
    many = _HOW_MANY.search(text)
    if many is not None:
        noun = content_terms(many.group("what"))
        if noun:
            return _numbered(noun, sources)
    return None


def _position(word: str) -> int | None:
    """1 for "first" or "1st", -1 for "last", ``None`` for anything else."""
    word = word.lower()
    if word == "last":
        return -1
    if word in _ORDINAL_WORDS:
        return _ORDINAL_WORDS[word]
    digits = re.match(r"\d+", word)
    return int(digits.group(0)) if digits else None


def _label_index(cell: str) -> int | None:
    """Where a sequence label stands: "B" is 2, "3" is 3, "iii" is 3; ``None`` for prose."""
    cell = cell.strip().rstrip(".)")
    if _LETTER.fullmatch(cell):
        return ord(cell) - ord("A") + 1
    if cell.isdigit() and len(cell) <= 2:
        return int(cell)
    if cell.lower() in _ROMAN and cell.islower():
        return _ROMAN.index(cell) + 1
    return None


def _names_group(source: Source, group: set[str]) -> bool:
    if not group:
        return True
    # The group may be the document itself ("the first guideline of booktabs").
    named = " ".join([*source.section_path, source.doc_name.rsplit(".", 1)[0], source.text])
    return group <= set(content_terms(named))


#: A heading printed inside a source's text (a short section merged into the chunk before it).
_HEADING = re.compile(r"^#{1,6}\s+(?P<title>\S.*)$", re.M)


def _blocks(source: Source) -> list[tuple[str, set[str], str]]:
    """The source's text cut at the headings it prints, each part with its heading (and that
    heading's words): the first part is under the source's own section."""
    title = source.section_path[-1] if source.section_path else ""
    out: list[tuple[str, set[str], str]] = []
    start = 0
    for heading in _HEADING.finditer(source.text):
        out.append((title, set(content_terms(title)), source.text[start : heading.start()]))
        title, start = heading.group("title").strip(), heading.end()
    out.append((title, set(content_terms(title)), source.text[start:]))
    return out


def _nth_item(
    position: int, noun: list[str], group: set[str], sources: Sequence[Source]
) -> Membership | None:
    for source in sources:
        if source.kind in PICTURE_KINDS or not _names_group(source, group):
            continue
        found = _nth_in_tables(position, noun[-1], source)
        if found is not None:
            return found
        for title, heading, text in _blocks(source):
            # A list is of the noun when its heading names it ("Setup steps", or "Setup" for
            # "the setup steps"), or is the group ("the third step of the setup" under "Setup").
            if heading & set(noun) or (heading and heading <= group):
                found = _nth_entry(position, title, text, source)
                if found is not None:
                    return found
        # Or the list numbered right after the noun ("two simple guidelines: 1. Never ...").
        listed = _list_after(noun[-1], source.text, 2)
        if listed is not None:
            word, items = listed
            at = max(items) if position == -1 else position
            if items.get(at):
                return Membership(
                    answer=items[at], quote=f"{word}: {at}. {items[at]}", source=source
                )
    return None


def _nth_in_tables(position: int, noun: str, source: Source) -> Membership | None:
    """In a column the noun names: the row its labels mark ``position``-th (its longest other
    cell answers), or, when the column holds the items themselves, its ``position``-th cell."""
    for table in parse_tables(source.text):
        for col, name in enumerate(table.columns):
            if noun not in content_terms(name):
                continue
            labelled = [
                (i, _label_index(row[col]))
                for i, row in enumerate(table.rows)
                if col < len(row) and row[col].strip()
            ]
            if len(labelled) < 2:
                continue
            if any(index is None for _, index in labelled):
                # The column holds the items themselves ("Code": E12, E31, E47): the n-th.
                if position > len(labelled):
                    continue
                row_at = labelled[-1 if position == -1 else position - 1][0]
                item = table.rows[row_at][col].strip()
                return Membership(
                    answer=item, quote=_row_quote(table.columns, table.rows[row_at]), source=source
                )
            if position == -1:
                row_at = labelled[-1][0]
            else:
                row_at = next((i for i, index in labelled if index == position), -1)
            if row_at < 0:
                continue
            row = table.rows[row_at]
            cells = [c for j, c in enumerate(row) if j != col and c.strip()]
            if not cells:
                continue
            item = max(cells, key=len)
            return Membership(
                answer=item,
                quote=f"{name} {row[col].strip()}: {item}",
                source=source,
            )
    return None


def _row_quote(columns: list[str], row: list[str]) -> str:
    """A table row as "Code: E12; Meaning: Sensor disconnected"."""
    return "; ".join(f"{c}: {v}" if c else v for c, v in zip(columns, row, strict=False) if v)


def _nth_entry(position: int, title: str, text: str, source: Source) -> Membership | None:
    """The ``position``-th line of the list ``text`` prints one entry to a line, quoted as
    printed under its heading ("Setup: 2. Install the app ...")."""
    entries = list(LIST_ENTRY.finditer(text))
    if len(entries) < 2 or position > len(entries):
        return None
    entry = entries[-1] if position == -1 else entries[position - 1]
    printed = entry.group(0).strip()
    return Membership(
        answer=entry.group("entry").strip(),
        quote=f"{title}: {printed}" if title else printed,
        source=source,
    )


def _numbered(noun: list[str], sources: Sequence[Source]) -> Membership | None:
    """How many items the list numbered right after a mention of the noun holds, or the list
    numbered one to a line under a heading that names it ("Setup" for "the setup steps")."""
    for source in sources:
        for title, heading, block in _blocks(source):
            if not heading & set(noun):
                continue
            numbers = [int(m.group(1)) for m in _NUMBERED_LINE.finditer(block)]
            if len(numbers) >= _MIN_NUMBERED and numbers == list(range(1, len(numbers) + 1)):
                return Membership(
                    answer=str(len(numbers)),
                    quote=f"{title}: numbered 1 to {len(numbers)}",
                    source=source,
                )
        found = _list_after(noun[-1], source.text, _MIN_NUMBERED)
        if found is not None:
            word, items = found
            return Membership(
                answer=str(len(items)),
                quote=f"{word}: numbered 1 to {len(items)}",
                source=source,
            )
    return None


def _list_after(noun: str, text: str, least: int) -> tuple[str, dict[int, str]] | None:
    """The list numbered right after a mention of ``noun`` in ``text`` (its first marker within
    ``_LEAD_WORDS`` words of it): the word as printed, and each item's text by its number. The
    numbers must run from one without a gap, at least ``least`` of them; the list ends where
    its numbering starts again, and an item where the next marker or its line does."""
    for word in re.finditer(r"[\w-]+", text):
        terms = content_terms(word.group(0))
        if not terms or terms[0] != noun:
            continue
        lead = text[word.end() :]
        first = next((m for m in _MARKER.finditer(lead) if m.group(1) == "1"), None)
        if first is None or len(lead[: first.start()].split()) > _LEAD_WORDS:
            continue
        markers: list[re.Match[str]] = []
        for marker in _MARKER.finditer(lead, first.start()):
            if any(m.group(1) == marker.group(1) for m in markers):
                break  # the numbering starts again: another list
            markers.append(marker)
        numbers = sorted(int(m.group(1)) for m in markers)
        if len(numbers) < least or numbers != list(range(1, len(numbers) + 1)):
            continue
        items: dict[int, str] = {}
        for k, marker in enumerate(markers):
            end = markers[k + 1].start() if k + 1 < len(markers) else len(lead)
            item = lead[marker.end() : end].split("\n", 1)[0].strip()
            items[int(marker.group(1))] = item
        return word.group(0), items
    return None
