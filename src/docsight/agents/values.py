"""Pulling the value a question asks for out of a sentence: a number with its unit, a date, a
name, the items of a list.

The extractive answerer quotes whole sentences; a reader wants the answer first. These rules
find the span of the wanted type in the chosen sentence, preferring the one nearest to the
question's own words; when none fits, the sentence itself is the answer.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from docsight.agents.question import Intent, find_code
from docsight.document.text import NUMBER_WORDS, STOPWORDS, content_terms

_NUMBER = re.compile(
    r"(?<![\w.])(?P<pre>[$€£¥]\s?)?(?P<num>-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?)"
    r"(?P<post>\s?(?:%|percent\b|per cent\b|(?:million|billion|thousand|trillion|bn|m)\b)"
    r"(?:\s(?:dollars|euros|pounds|usd|people|users|adults|respondents))?)?"
    r"(?P<unit>\s[a-zA-Z°µ/]{1,12}\b)?",
    re.I,
)
#: Signs that make a figure a tolerance or an approximation, kept with it.
_TOLERANCE = "±~≈"
_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|jun(?:e)?|jul(?:y)?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_DATE = re.compile(
    rf"\b{_MONTH}\s+\d{{1,2}},?\s+\d{{4}}\b|\b\d{{1,2}}\s+{_MONTH}\s+\d{{4}}\b|"
    rf"\b{_MONTH}\s+\d{{4}}\b|\b\d{{4}}-\d{{2}}-\d{{2}}\b|\b\d{{1,2}}/\d{{1,2}}/\d{{2,4}}\b|"
    r"\b(?:19|20)\d{2}\b",
    re.I,
)
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")


def _date_parts(date: str) -> tuple[int, int | None, int | None] | None:
    """(year, month, day) of a date as ``_DATE`` finds it; ``None`` parts are not printed.
    Slashed dates are read month first, as US documents write them."""
    iso = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})", date)
    if iso:
        return int(iso.group(1)), int(iso.group(2)), int(iso.group(3))
    slashed = re.fullmatch(r"(\d{1,2})/(\d{1,2})/(\d{2,4})", date)
    if slashed:
        short = int(slashed.group(3))
        return (
            (short + 2000 if short < 100 else short),
            int(slashed.group(1)),
            int(slashed.group(2)),
        )
    year = re.search(r"\d{4}", date)
    if year is None:
        return None
    month = next((i + 1 for i, m in enumerate(_MONTHS) if re.search(rf"\b{m}", date, re.I)), None)
    day = re.search(r"\b(\d{1,2})\b", date)
    return int(year.group(0)), month, int(day.group(1)) if day and month else None


def written_as(date: str, form: str) -> str:
    """``date`` ("February 8, 2021") written in ``form`` ("YYYY-MM-DD" → "2021-02-08"); as
    printed when it lacks a part the form needs (a month and year for a day's form)."""
    parts = _date_parts(date)
    if parts is None:
        return date
    year, month, day = parts
    fields = {"YYYY": f"{year:04d}", "MM": f"{month:02d}" if month else None}
    fields["DD"] = f"{day:02d}" if day else None
    out = form
    for key, value in fields.items():
        if key in form:
            if value is None:
                return date
            out = out.replace(key, value)
    return out


_NAME = re.compile(
    r"(?:[A-Z][\w&'’.-]*|[A-Z]{2,})(?:\s+(?:of|and|&|for|the|de|van|von)?\s*"
    r"(?:[A-Z][\w&'’.-]*|[A-Z]{2,}))*"
)
#: Words after which a year-like number is a period ("fiscal 2020", "in 2019"), never a label's
#: value, even when the question uses the word too.
_PERIOD_WORDS = frozenset(
    "fiscal fy year years in since from to by of for and or during until through compared "
    "vs versus between".split()
)
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.]+")
#: A duration on a clock face ("00:04:14", "3:05"), as analytics reports print session lengths.
_CLOCK = re.compile(r"(?<![\d:])\d{1,3}:[0-5]\d(?::[0-5]\d)?(?![\d:])")

_YEARLIKE = re.compile(r"^(?:19|20)\d{2}$")
#: A bracketed reference marker of a paper: "[66]", "[3, 12]", "[4-6]".
_CITATION = re.compile(r"\[\d{1,3}(?:\s*[,;–-]\s*\d{1,3})*\]")
#: A count written as a word, with the noun after it when there is one ("six subskills"); not
#: "one", which is as often a pronoun ("one of the ...") as a count.
_COUNT_WORD = re.compile(
    r"\b("
    + "|".join(w for w, n in NUMBER_WORDS.items() if n > 1)
    + r")\b(?:\s(?!(?:of|and|or|the|to|in|on|for|are|were|is|was)\b)[a-zA-Z-]{2,20}\b)?",
    re.I,
)


def _near(text: str, start: int, anchors: list[int], end: int | None = None) -> int:
    """Characters between a span (``start`` to ``end``) and the closest anchor."""
    end = start if end is None else end
    return min((min(abs(start - a), abs(end - a)) for a in anchors), default=0)


def _row_value(values: list[re.Match[str]], anchors: list[tuple[str, int]]) -> str | None:
    """In a table read row by row ("... Duration 00:03:51 ... desktop 15,390,335 (80.37%)
    00:04:14 ..."), the header comes before the first value and a row's label before its
    values: a question word first printed after the first value names a row, and the row's
    value is the first one after it. ``None`` in a sentence (no question word before the first
    value) or when every question word is in the header. ``anchors`` are ``_anchors``'s."""
    first_value = values[0].start()
    first_seen: dict[str, int] = {}
    for term, at in anchors:
        first_seen.setdefault(term, at)
    if not first_seen or min(first_seen.values()) > first_value:
        return None
    labels = [at for at in first_seen.values() if at > first_value]
    if not labels:
        return None
    after = [m for m in values if m.start() > min(labels)]
    return after[0].group(0) if after else None


def _anchors(text: str, intent: Intent) -> list[tuple[str, int]]:
    """The words of ``text`` the question also uses: each one's stemmed term and position."""
    wanted = set(intent.terms)
    out = []
    for match in re.finditer(r"\w+", text):
        terms = content_terms(match.group(0))
        if terms and terms[0] in wanted:
            out.append((terms[0], match.start()))
    return out


def _counted(text: str, start: int, end: int, intent: Intent) -> int:
    """How a number is bound to what the question counts: 0 when the word right before it is
    that (a label, "Employees 1914"), 1 when one of the two words after it is ("1,914
    employees"), 2 otherwise."""
    # Periods say when, not what is counted ("$44.5 billion in fiscal 2021").
    wanted = set(intent.terms) - set(intent.periods) - _PERIOD_WORDS
    # A number the question states is no label either: "May 1, 2018" puts "1" before 2018.
    wanted = {t for t in wanted if not t.replace(".", "").replace(",", "").isdigit()}
    before = text[:start].split()[-1:]
    if before and set(content_terms(before[0])) & wanted:
        return 0
    if set(content_terms(" ".join(text[end:].split()[:2]))) & wanted:
        return 1
    return 2


def _label_match(text: str, start: int, intent: Intent) -> int:
    """In a row rendered "label: value; label: value", how many of the question's words the
    label of the value at ``start`` holds (0 outside such a row): "Rated pressure: 380 kPa" and
    "Flow rate: 18 l/min" both follow a question word, but only one label is what was asked."""
    segment = re.split(r"[;|\n]", text[:start])[-1]
    if ":" not in segment:
        return 0
    label = segment.rsplit(":", 1)[0]
    return len(set(content_terms(label)) & set(intent.terms))


#: A run of labels numbered from one number to another: "15 through 18", "14-26", "3 to 7".
_RANGE_END = re.compile(r"\s*(?P<word>through|thru|to|[-–—])\s*(?P<end>\d{1,3})(?![\d.,%]|\s?%)")
#: Runs longer than this are not lists of labels.
_MAX_RUN = 200


def _labels_counted(text: str, match: re.Match[str], intent: Intent) -> str | None:
    """How many labels a numbered run holds when ``match`` opens one that the question's words
    name right before it ("How many markets in Greater Houston?" of "Greater Houston: 15 through
    18" is 4), or ``None``. "through" marks a run of labels; a dash or "to" counts only after a
    label, since "15 to 20 people" is an estimate, not a list."""
    if match.group("pre") or match.group("post") or "," in match.group("num"):
        return None
    start = match.group("num")
    if not start.isdigit() or _YEARLIKE.match(start):
        return None
    run = _RANGE_END.match(text, match.end("num"))
    if run is None:
        return None
    first, last = int(start), int(run.group("end"))
    if not first < last <= first + _MAX_RUN:
        return None
    if _counted(text, match.start(), match.end("num"), intent) != 0:
        return None  # the run is not of what the question names
    return str(last - first + 1)


#: Words whose number names a part of the document ("listed in Table 2", "see page 14"): a
#: label, never the amount or count asked for.
_REFERENCE_WORDS = frozenset(
    "table tables figure figures fig fig. section sections chapter chapters appendix page pages "
    "p. pp. exhibit exhibits footnote note listing listings equation eq. eqs.".split()
)


#: What may stand between a reference word and a later label of the same run: "Tables 1 and 2",
#: "pages 3, 4 or 5", "Figures 2a-2c".
_LABEL_RUN = re.compile(r"^(?:\d+[a-z]?|and|or|to|&|[-–])$", re.I)


def _after_reference_word(text: str, match: re.Match[str]) -> bool:
    """Whether the number at ``match`` labels a part of the document: right after a reference
    word ("Table 2") or later in a run of labels it starts ("Listings 1 and 2")."""
    for word in reversed(text[: match.start()].split()[-6:]):
        word = word.lower().strip("(,")
        if word in _REFERENCE_WORDS:
            return True
        if not _LABEL_RUN.match(word):
            return False
    return False


#: A table row as the answerer reads it: "Revenue ($ million); 2023: 412.0; 2024: 468.5".
_YEAR_CELL = re.compile(
    r"(?:^|;\s*)(?:FY\s?)?((?:19|20)\d{2}):\s*([-−(]?[$€£]?\d[\d,.]*%?\)?)(?=;|$)"
)


def _latest_in_row(text: str) -> str | None:
    """The latest year's figure of a row with a column per year, when the question names no
    year: a report's current figure, as ``tables`` reads a cell without a period asked."""
    cells = {year: value for year, value in _YEAR_CELL.findall(text)}
    return cells[max(cells)] if len(cells) >= 2 else None


#: Capitalised words that point at a thing rather than say which kind it is ("This Court").
_NOT_KINDS = frozenset(
    "a an the this that these those our your its their his her my any each".split()
)


def _kind_named(noun: str, text: str, asked: Collection[str] = ()) -> str | None:
    """The kind of ``noun`` that ``text`` names, as printed: "What type of court ...?" over
    "SUPERIOR COURT" or "the Superior Court of Québec" is "SUPERIOR COURT" or "Superior Court";
    capitalised words right before the noun (or its plural), pointing words left out, and so
    are the question's own words ("the MacBook Air battery" names no kind of battery when the
    question asks about the MacBook Air's)."""
    forms = "|".join(re.escape(f) for f in (noun, noun.capitalize(), noun.upper()))
    for found in re.finditer(rf"\b((?:[A-Z][\w'’-]*\s+){{1,3}})((?:{forms})[sS]?)\b", text):
        words: list[str] = []
        for word in reversed(found.group(1).split()):
            if len(word) < 2 or word.lower() in _NOT_KINDS or word.lower() in asked:
                break  # "C A N A D A SUPERIOR COURT", "this Honourable Court"
            words.insert(0, word)
        if words:
            return " ".join([*words, found.group(2)])
    return None


#: What ends right before the year of a written date: "September 30, ", "May 1, ", "May ".
_IN_DATE = re.compile(rf"\b{_MONTH}\.?(?:\s+\d{{1,2}})?,?\s+$", re.I)


def _after_period_word(text: str, match: re.Match[str]) -> bool:
    before = text[: match.start()].split()[-1:]
    return bool(before) and before[0].lower().strip("(,") in _PERIOD_WORDS


def extract_value(intent: Intent, text: str) -> str | None:
    """The span of ``text`` holding the answer type ``intent`` wants, or ``None``."""
    words_at = _anchors(text, intent)
    anchors = [at for _, at in words_at]
    asked = set(intent.numbers)
    if intent.type == "number" and intent.wants_duration:
        clocks = list(_CLOCK.finditer(text))
        if clocks:
            # "Avg. Session Duration 00:04:14": read as digits, "04" would be the nearest number.
            row = _row_value(clocks, words_at)
            if row is not None:
                return row
            return min(clocks, key=lambda m: _near(text, m.start(), anchors)).group(0)
    if intent.type in ("count", "number") and not intent.periods:
        latest = _latest_in_row(text)
        if latest is not None:
            return latest
    if intent.type in ("count", "number"):
        best: tuple[int, int, int, int, str] | None = None
        cited = [c.span() for c in _CITATION.finditer(text)]
        for m in _NUMBER.finditer(text):
            digits = m.group("num").replace(",", "")
            if digits in asked:
                continue  # repeated from the question
            if any(a <= m.start() < b for a, b in cited):
                continue  # a reference marker ("[66]", "[3, 12]"), not a quantity
            if not m.group("pre") and _after_reference_word(text, m):
                continue  # "Table 2", "page 14": a part of the document, not a quantity
            core_end = m.end("post") if m.group("post") else m.end("num")
            counted = _counted(text, m.start(), core_end, intent)
            plain = not m.group("post") and not m.group("pre")
            if _YEARLIKE.match(digits) and plain and (counted == 2 or _after_period_word(text, m)):
                continue  # a year is a period, not an amount (unless it is labelled as one)
            if _YEARLIKE.match(digits) and plain and _IN_DATE.search(text, 0, m.start()):
                continue  # "September 30, 2013 tracking survey": a date's year, whatever follows
            if intent.type == "count" and "." in digits:
                continue
            span = _labels_counted(text, m, intent) if intent.type == "count" else None
            if span is not None:
                # A run of numbered labels ("Greater Houston: 15 through 18") counts its labels.
                return span
            wants_unit = bool(intent.units)
            unit_miss = 0 if not plain or not wants_unit else 1
            # A share answers a question about a share; "revenue" asks for an amount, and the
            # growth rate printed next to it ("increased 19% to $44.5 billion") is not one.
            post = (m.group("post") or "").lower()
            share = "%" in post or "percent" in post
            if share and not intent.wants_share:
                unit_miss += 1
            elif not share and {"%", "percent", "per cent"} & set(intent.units):
                unit_miss += 1  # a percentage was asked for
            unit = (m.group("unit") or "").strip()
            # A word after "billion" or "%" is the sentence going on ("$44.5 billion compared
            # with ..."), not a unit; after a bare number it may be one ("380 kPa").
            value = m.group(0)
            if unit and (unit.lower() in STOPWORDS or m.group("post")):
                value = value[: m.start("unit") - m.start()]
            if m.start() and text[m.start() - 1] in _TOLERANCE:
                value = text[m.start() - 1] + value  # "±0.1 °C" is a tolerance, not 0.1 °C
            key = (
                -_label_match(text, m.start(), intent),
                counted,
                unit_miss,
                _near(text, m.start(), anchors),
                value.strip(),
            )
            if best is None or key[:4] < best[:4]:
                best = key
        if intent.type == "count":
            for w in _COUNT_WORD.finditer(text):
                if w.group(1).lower() in intent.question_words:
                    continue  # repeated from the question ("between two events")
                # "We identify six subskills": counts in prose are often words.
                key = (
                    -_label_match(text, w.start(), intent),
                    _counted(text, w.start(), w.end(1), intent),
                    1 if intent.units else 0,
                    _near(text, w.start(), anchors),
                    w.group(0).strip(),
                )
                if best is None or key[:4] < best[:4]:
                    best = key
        return best[4] if best else None
    if intent.type == "date":
        dates = [m for m in _DATE.finditer(text) if m.group(0) not in asked]
        if not dates:
            return None
        found = min(dates, key=lambda m: _near(text, m.start(), anchors)).group(0)
        return written_as(found, intent.date_format) if intent.date_format else found
    asks_name = bool({"name", "names"} & intent.question_words)
    if intent.codes and asks_name and intent.type in ("entity", "text"):
        named = _named_by_code(intent.codes, text)
        if named is not None:
            return named
    if intent.contact:
        return _contact(intent, text, anchors)
    if intent.kind_of:
        kind = _kind_named(intent.kind_of, text, intent.question_words)
        if kind is not None:
            return kind
    if intent.type == "entity":
        question_words = set(intent.terms)
        names: list[tuple[int, str]] = []
        for m in _NAME.finditer(text):
            if m.start() == 0 and len(m.group(0).split()) == 1:
                continue  # a sentence's first word alone is capitalised anyway
            # Words of the question split a span: "Rick Scott GOVERNOR Celeste Philip" holds
            # two names around the word asked about.
            offset = m.start()
            for piece in _split_at(m.group(0), question_words):
                if intent.codes and _CODE.fullmatch(piece.strip(" .,")):
                    continue  # asked the name for a code: another code is not it
                if piece and not set(content_terms(piece)) <= question_words:
                    names.append((offset + m.group(0).find(piece), piece))
        if not names:
            return None
        return min(names, key=lambda n: _near(text, n[0], anchors, n[0] + len(n[1])))[1].strip(
            " .,"
        )
    if intent.type == "list":
        return inline_list(text)
    if intent.type == "text":
        return listed_item(intent, text)
    return None


#: What introduces the items of a list written inline: a colon, "such as", "including", ...
_INTRODUCER = re.compile(r":|\b(?:such as|including|includes?|namely|consists? of|comprises?)\b")
_ITEM_SEPARATOR = re.compile(r"\s*(?:,|;)\s*(?:(?:and|or)\s+)?|\s+(?:and|or)\s+")
#: Items longer than this are clauses of prose, not the entries of a list.
_ITEM_WORDS = 8


def inline_list(text: str) -> str | None:
    """The items a sentence lists after an introducer ("six key categories: Running, NIKE
    Basketball, ... and Sportswear"), joined by semicolons, or ``None`` when it lists fewer than
    three short items (two joined by "and" count when both are short names)."""
    for intro in _INTRODUCER.finditer(text):
        tail = text[intro.end() :].strip().rstrip(" .;")
        # Split where the text without its bracketed asides has a separator (same offsets).
        cuts = list(_ITEM_SEPARATOR.finditer(_without_brackets(tail)))
        bounds = [0, *(i for m in cuts for i in (m.start(), m.end())), len(tail)]
        items = [tail[a:b].strip() for a, b in zip(bounds[::2], bounds[1::2], strict=True)]
        items = [i for i in items if i]
        if len(items) < 2 or any(len(i.split()) > _ITEM_WORDS for i in items):
            continue
        if len(items) == 2 and any(len(i.split()) > 3 for i in items):
            continue
        return "; ".join(items)
    return None


#: A list's own numbering before an item ("4 semantic parsing", "4) semantic parsing").
_ITEM_NUMBER = re.compile(r"^\(?\d{1,2}[.)]?\s+")
#: Where an item goes on to say what it is for ("semantic parsing to compile the data").
_ITEM_PURPOSE = re.compile(r"\s+(?:to|for|that|which|in order to|used to)\s+", re.I)


def listed_item(intent: Intent, text: str) -> str | None:
    """The one item of a list ``text`` announces that a "what/which <noun> ...?" question asks
    for: the list's introducer names the noun ("the following six subskills: 1 causal graph
    extraction; ... 4 semantic parsing to compile the available data; ..."), and exactly one
    item holds the most of the question's other words. The item is given without its number,
    and without the clause that restates the question ("to compile the available data")."""
    terms = set(intent.terms)
    for intro in _INTRODUCER.finditer(text):
        named = terms & set(content_terms(text[: intro.start()]))
        if not named:
            continue
        tail = text[intro.end() :].strip().rstrip(" .;")
        if ";" not in tail:
            continue  # a numbered list of clauses is set off by semicolons; commas are prose
        items = [i.strip() for i in re.split(r"\s*;\s*(?:and\s+)?", tail) if i.strip()]
        if len(items) < 3:
            continue
        rest = terms - named
        overlap = [len(rest & set(content_terms(i))) for i in items]
        best = max(overlap)
        if best == 0 or overlap.count(best) > 1:
            continue
        item = _ITEM_NUMBER.sub("", items[overlap.index(best)])
        purpose = _ITEM_PURPOSE.search(item)
        if purpose and rest & set(content_terms(item[purpose.end() :])):
            item = item[: purpose.start()]
        item = item.split(",")[0].strip()  # the item, not the sentence going on after it
        if item and len(item.split()) <= _ITEM_WORDS:
            return item
    return None


def _without_brackets(text: str) -> str:
    """``text`` with bracketed asides masked (same length), so their commas do not split an item."""
    return re.sub(r"\([^()]*\)", lambda m: "_" * len(m.group(0)), text)


def _split_at(span: str, words: set[str]) -> list[str]:
    pieces: list[list[str]] = [[]]
    for word in span.split():
        terms = content_terms(word)
        if terms and terms[0] in words:
            pieces.append([])
        else:
            pieces[-1].append(word)
    return [" ".join(p) for p in pieces if p]


_PHONE = re.compile(r"(?:\+?\(?\d[\d\s().-]{6,}\d)")
#: A run of figures that only looks dialable: decimals among spaced numbers ("2024 212.4",
#: "12.5 17.3 19.4"; a dotted phone number has no spaces: "01.23.45.67.89"), or years side by
#: side ("2023 2024").
_DECIMAL = re.compile(r"\d\.\d{1,2}(?:\s|$)")
_YEARS = re.compile(r"^\s*(?:(?:19|20)\d{2}\s+)+(?:19|20)\d{2}\s*$")


def _dialable(number: str) -> bool:
    """Whether a phone pattern's match can be a phone or fax number: seven digits at least, and
    not a row of a table's figures."""
    if sum(ch.isdigit() for ch in number) < 7 or _YEARS.match(number):
        return False
    return not (" " in number.strip() and _DECIMAL.search(number))


#: An identifier: letters and digits, often joined by dashes or slashes (NW-D-017, AR01, P-10).
_CODE = re.compile(r"\b(?=[\w/-]*\d)(?=[\w/-]*[A-Za-z])[A-Za-z0-9]+(?:[-/][A-Za-z0-9]+)*\b")
_URL = re.compile(r"https?://\S+|www\.\S+")


#: Where the name before a code starts: a list's number ("17. "), a line, a cell or another code.
_NAME_START = re.compile(r"(?:^|\n|\|\s|\b\d{1,3}[.)]\s|\b[A-Z]{1,4}\d{2,6}[A-Z]?\b)")
_NAME_WORDS = 8


def _named_by_code(codes: tuple[str, ...], text: str) -> str | None:
    """The name printed just before a code the question states ("What's the market name for
    AR01?" over "1. Little Rock AR01"), or ``None`` when the text does not print the code after
    a short name."""
    for code in codes:
        at = find_code(text, code)
        if at is None:
            continue
        head = text[: at.start()]
        if head.rstrip().endswith(":"):
            continue  # "Markets: AR01, AR02" introduces codes, it names none of them
        starts = [m.end() for m in _NAME_START.finditer(head)]
        name = head[max(starts, default=0) :].strip(" .,:;-—–\t")
        if name and re.search(r"[A-Za-z]", name) and len(name.split()) <= _NAME_WORDS:
            return name
    return None


def _contact(intent: Intent, text: str, anchors: list[int]) -> str | None:
    """An e-mail address, phone or fax number or web address, the one whose words (or whose
    position) are closest to what the question names."""
    kind = intent.contact
    pattern = {"email": _EMAIL, "phone": _PHONE, "url": _URL, "code": _CODE}[kind or "email"]
    asked = {n.lower() for n in (*intent.numbers, *intent.codes)}
    found = [m for m in pattern.finditer(text) if m.group(0).lower() not in asked]
    if kind == "phone":
        found = [m for m in found if _dialable(m.group(0))]
    if not found:
        return None
    terms = set(intent.terms)

    def key(m: re.Match[str]) -> tuple[int, int]:
        local = m.group(0).split("@")[0].lower()
        named = any(len(t) > 3 and t[:5] in local for t in terms)
        return (0 if named else 1, _near(text, m.start(), anchors))

    return min(found, key=key).group(0).strip(" .,;")
