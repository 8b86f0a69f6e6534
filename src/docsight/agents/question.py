"""What kind of answer a question wants, read from its words.

"How many ...?" wants a count, "What percentage ...?" a number with its unit, "When ...?" a date,
"Who ...?" a name, "Is ...?" a yes or a no, "List ..." several items, "Which ... the highest
...?" the winner of a comparison. The extractive answerer prefers candidates that can hold the
wanted type; table lookups use the question's row and column terms and, for a comparison,
which way it ranks.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Literal

from docsight.document.text import FORM_EXAMPLE, STOPWORDS, content_terms

AnswerType = Literal["count", "number", "date", "entity", "yesno", "list", "comparison", "text"]

_COUNT = re.compile(r"\bhow many\b|\bnumber of\b|\bcount\b|\bhow often\b", re.I)
_AMOUNTS = (
    r"(?:percentage|percent|share|rate|ratio|amount|number|value|"
    r"total|sum|average|revenue|income|cost|price|size|score|growth|margin|gap|difference|pressure|"
    r"temperature|weight|height|length|width|depth|capacity|speed|voltage|power|frequency|"
    r"duration|distance|volume|area|population|age|salary|budget|profit|sales|earnings|"
    r"expenditure|spending|debt|assets|dividend|yield|ebit|ebitda|fee|balance|performance|"
    r"accuracy|f1)"
)
_NUMBER = re.compile(
    r"\bhow (?:much|long|far|big|large|old|high)\b|\bwhat(?:'s|’s| is| was| were| are) "
    rf"(?:the )?(?:[\w'’&-]+ ){{0,3}}{_AMOUNTS}\b|"
    # "What revenue did Northwind report?", "What price does the plan have?" ("What area does
    # it cover?" asks for a place)
    rf"^\s*what (?:[\w'’&-]+ ){{0,2}}(?!area\b){_AMOUNTS}\s+"
    r"(?:did|does|do|will|would|can|could|has|have|had)\b|"
    r"\bwhat percentage\b|\bwhat percent\b|\bhow much\b",
    re.I,
)
_DATE = re.compile(r"^\s*when\b|\bwhat (?:year|date|month|day|time)\b|\bin which year\b", re.I)
_ENTITY = re.compile(
    r"^\s*(?:who|whom|whose)\b|\bwhat is the name\b|\bwhich (?:company|person|organi[sz]ation|"
    r"country|city|model|team|author|university|state|brand|product|school|college)\b|"
    r"\bwhat (?:company|organi[sz]ation)\b",
    re.I,
)
_YESNO = re.compile(
    r"^\s*(?:is|are|was|were|does|do|did|can|could|has|have|had|will|would|should)\b", re.I
)
#: A yes/no question after a leading clause ("In the context of X, is market CA03 ...?"), or
#: one whose instructions ask for a yes or a no ("Answer 'yes' or 'no'.").
_YESNO_LATER = re.compile(
    r"^(?:(?!\b(?:which|what|who|whom|whose|how|where|when|why)\b)[^?,]){1,120},\s*"
    r"(?:is|are|was|were|does|do|did|can|could|has|have|had)\s",
    re.I,
)
_YESNO_TOLD = re.compile(r"\byes\b[^.?!]{0,12}\bno\b", re.I)
#: An identifier a question states: capitals then at least two digits ("AR01", "GS6883A"), not
#: a fiscal period ("FY2019", "Q3") nor a model's version ("GPT-4").
_STATED_CODE = re.compile(r"\b(?!(?:FY|F|Q|H)\d)[A-Z]{1,4}\d{2,6}[A-Z]?\b")


def find_code(text: str, code: str) -> re.Match[str] | None:
    """Where ``text`` first prints ``code`` as a whole: "AR01", not "AR011" nor "XAR01" nor
    "P-100" for "P-10"."""
    return re.search(rf"(?<![\w-]){re.escape(code)}(?![\w-])", text)


def prints_code(text: str, code: str) -> bool:
    """Whether ``text`` prints ``code`` as a whole (``find_code``)."""
    return find_code(text, code) is not None


_LIST = re.compile(
    r"^\s*(?:list|name|enumerate|give)\b|\bwhat are (?:the|all)\b|\bwhich (?:\w+ )?(?:are|were)\b|"
    r"\blist format\b|\ball (?:the )?\w+s\b",
    re.I,
)
_HIGHEST = re.compile(
    r"\b(?:highest|largest|biggest|greatest|most|maximum|max|best|leading|longest|"
    r"fastest|strongest|latest|more)\b|"
    # "the top performer", not "the top 10 reasons" (a set) or "the top of the page" (a place)
    r"\btop\b(?!\s*\d)(?!\s+(?:of|left|right|half|row|line|corner|section)\b)"
    r"(?<!on top)(?<!at the top)",
    re.I,
)
_LOWEST = re.compile(
    r"\b(?:lowest|smallest|least|fewest|minimum|min|worst|bottom|shortest|slowest|"
    r"weakest|earliest|less)\b",
    re.I,
)
_WHICH = re.compile(r"\bwhich\b|\bwhat\b|\bwho\b", re.I)
_YEAR = re.compile(r"\b(?:fy\s?)?((?:19|20)\d{2})\b", re.I)
_QUARTER = re.compile(r"\bq([1-4])\b|\b(first|second|third|fourth) quarter\b", re.I)
_UNIT = re.compile(
    r"(%|percent|per cent|\$|usd|dollars?|euros?|€|£|million|billion|thousand)", re.I
)
_NUMBERS = re.compile(r"\d+(?:[.,]\d+)*")
_SHARE = re.compile(
    r"%|\bper ?cent|\bpercentage|\bshare\b|\bproportion|\bfraction|\brate\b|\bratio\b|"
    r"\bmargin|\bgrowth|\bgrow|\bincreas|\bdecreas|\bdeclin|\bchange|\brise|\brose|\bfall|"
    r"\bfell|\bdrop|\byield|\breturn",
    re.I,
)
_DURATION = re.compile(r"\bduration\b|\bhow long\b|\btime (?:on|spent)\b", re.I)
#: A date's written form the question asks for ("Format the date as YYYY-MM-DD.").
_DATE_FORM = re.compile(r"\b(?:YYYY|DD|MM)(?:[-/.](?:YYYY|MM|DD)){1,2}\b", re.I)
_KIND_OF = re.compile(r"^\s*(?:what|which)\s+(?:type|kind|sort)s?\s+of\s+([a-z]+)\b", re.I)
_EMAIL_ASKED = re.compile(r"\be-?mail\b", re.I)
_PHONE_ASKED = re.compile(
    # A phone's number, not a phone: "the phone number of the desk", "the FAX No", but not
    # "seniors who own a cell phone" or "has a smartphone".
    r"\b(?:tele)?phone\s*(?:no\b\.?|numbers?|#)|\b(?:fax|tel)\b|"
    r"\bwhat(?:'s|’s| is| are)? (?:the |its |their )?(?:tele)?phones?\b|"
    r"\bnumbers?\b[^.?!]{0,40}\b(?:call|dial|ring)\b|\b(?:call|dial|ring)\b[^.?!]{0,40}\bnumber\b",
    re.I,
)
_CODE_ASKED = re.compile(
    r"\b(?:order|part|serial|model|reference|account|invoice|case|item|catalog(?:ue)?|product|"
    r"article|ticket|registration|license|licence)\s+(?:number|no\.?|code|id)\b|\b(?:code|id)\b",
    re.I,
)
_URL_ASKED = re.compile(r"\b(?:url|website|web site|web address|link)\b", re.I)


@dataclass(frozen=True)
class Intent:
    """What a question asks for."""

    type: AnswerType
    #: For comparisons: ``max`` or ``min``.
    direction: Literal["max", "min"] | None = None
    #: Years ("2021") and quarters ("q3") the answer must belong to.
    periods: tuple[str, ...] = ()
    #: Units the answer is expected in ("%", "$", "million").
    units: tuple[str, ...] = ()
    #: Numbers the question states (repeating them is not an answer).
    numbers: tuple[str, ...] = ()
    #: Stemmed content terms, in order.
    terms: tuple[str, ...] = field(default_factory=tuple)
    #: ``email``, ``phone``, ``url`` or ``code`` (an order number, a product code, an id)
    #: when the question asks for one.
    contact: Literal["email", "phone", "url", "code"] | None = None

    #: Whether the question asks for a share, a rate or a change (a percentage answers it).
    wants_share: bool = False
    #: Whether the question asks how long something lasts ("average session duration").
    wants_duration: bool = False
    #: Terms and numbers of the whole question, its instructions on the answer's form
    #: included: what the refusal's signals are measured on, as its model was calibrated on
    #: them (``benchmarks/fit_refusal.py``; leaving the instructions out did worse on held-out
    #: documents).
    question_terms: tuple[str, ...] = ()
    question_numbers: tuple[str, ...] = ()
    #: The question's words, lower-cased (a number word it uses is not an answer).
    question_words: frozenset[str] = frozenset()
    #: Identifiers the question states, as printed ("AR01", "GS6001"): what it asks about, so
    #: a candidate holding one is about the right thing, and repeating one answers nothing.
    codes: tuple[str, ...] = ()
    #: The form a date answer is to be written in ("YYYY-MM-DD"), upper-cased.
    date_format: str | None = None
    #: The noun of "what type of court ...?": the answer names a kind of it ("Superior Court").
    kind_of: str | None = None

    @property
    def numeric(self) -> bool:
        return self.type in ("count", "number")


#: A sentence that says how to write the answer, not what it is about: "Round your answer to
#: two decimal places.", "Please write the answer in list format.", "Give me an integer.".
_INSTRUCTION = re.compile(
    r"^(?:(?:please\s+)?(?:write|give me|round|represent|answer|express|output|present|provide)"
    r"|(?:your|the) (?:answer|output|result)s? (?:should|must|needs? to|is to))\b"
    r".*\b(?:answer|format|integer|int|float|decimals?|list|order|yes|no|units?|millions?|"
    r"billions?|thousands?|percent|percentage|usd|places?)\b",
    re.I,
)
_SENTENCE_END = re.compile(r"(?<=[.?!])\s+")
#: Instructions that ask for a figure: rounding, decimals, a unit of amount.
_NUMERIC_FORM = re.compile(
    r"\b(?:round|decimals?|integer|int|float|millions?|billions?|thousands?|percent|"
    r"percentage|usd|dollars?)\b",
    re.I,
)


def answer_instructions(question: str) -> tuple[str, str]:
    """``question`` split into what it asks and how it wants the answer written: sentences of
    instructions after the first ("Round your answer to two decimal places.") and quoted
    examples of the form (', e.g., ["1","2"]'). Their words are no evidence: "integer" is in no
    document, and the example's numbers are not ones the question states."""
    text = " ".join(question.split())
    examples = [m.group(0) for m in FORM_EXAMPLE.finditer(text)]
    body = FORM_EXAMPLE.sub("", text)
    sentences = _SENTENCE_END.split(body)
    kept = sentences[:1]
    told = examples
    for sentence in sentences[1:]:
        (told if _INSTRUCTION.search(sentence.strip()) else kept).append(sentence)
    return " ".join(kept).strip(), " ".join(told).strip()


def _numbers(text: str) -> tuple[str, ...]:
    """The numbers ``text`` states, thousands separators dropped."""
    return tuple(n.replace(",", "") for n in _NUMBERS.findall(text))


def read_intent(question: str) -> Intent:
    """The answer type, periods, units and terms of ``question``; the terms and numbers of
    what it asks, without its instructions on the answer's form (``answer_instructions``)."""
    text = " ".join(question.split())
    asked, told = answer_instructions(text)
    direction: Literal["max", "min"] | None = None
    high, low = _HIGHEST.search(text), _LOWEST.search(text)
    if (high or low) and _WHICH.search(text) and not _COUNT.search(text):
        direction = "max" if high and (not low or high.start() < low.start()) else "min"
    number = _NUMBER.search(text)
    first = min(m.start() for m in (high, low) if m is not None) if direction else 0
    kind: AnswerType
    if direction is not None and number is not None and number.start() < first:
        # "What percentage of the party with the highest ... ?" asks for a figure; the
        # superlative only says which one.
        kind = "number"
    elif direction is not None:
        kind = "comparison"
    elif _COUNT.search(text):
        kind = "count"
    elif _DATE.search(text):
        kind = "date"
    elif number is not None:
        kind = "number"
    elif _ENTITY.search(text):
        kind = "entity"
    elif _YESNO.search(text) or _YESNO_TOLD.search(told) or _YESNO_LATER.search(asked):
        kind = "yesno"
    elif _LIST.search(text):
        kind = "list"
    elif _NUMERIC_FORM.search(told):
        kind = "number"  # "Round your answer to two decimal places." wants a figure
    else:
        kind = "text"
    periods = [m.group(1) for m in _YEAR.finditer(text)]
    periods += [
        f"q{m.group(1) or _ORDINAL_QUARTER[m.group(2).lower()]}" for m in _QUARTER.finditer(text)
    ]
    contact: Literal["email", "phone", "url", "code"] | None = None
    # "email id" asks for an address, whatever "id" says elsewhere.
    if _EMAIL_ASKED.search(text):
        contact = "email"
    elif _CODE_ASKED.search(text):
        contact = "code"
    elif _PHONE_ASKED.search(text):
        contact = "phone"
    elif _URL_ASKED.search(text):
        contact = "url"
    if contact is not None and kind in ("text", "number", "count"):
        kind = "entity"
    date_form = _DATE_FORM.search(text)
    kind_of = _KIND_OF.search(asked) if kind in ("text", "entity") else None
    if date_form is not None and kind in ("text", "number", "entity", "list"):
        kind = "date"  # "Format the date mentioned on page 14 as YYYY-MM-DD."
    # A code offered as one of the choices ("CA19 or Covina and West Covina?") is a possible
    # answer, not what the question is about.
    offered = options(text)
    codes = tuple(
        c for c in dict.fromkeys(_STATED_CODE.findall(asked)) if not any(c in o for o in offered)
    )
    if codes and contact == "code" and re.search(r"\bnames?\b", asked, re.I):
        contact = None  # "the market name for EPS Code AR01" states its code, it asks a name
    return Intent(
        wants_share=bool(_SHARE.search(text)),
        contact=contact,
        type=kind,
        direction=direction,
        periods=tuple(dict.fromkeys(periods)),
        units=tuple(dict.fromkeys(u.lower() for u in _UNIT.findall(text))),
        numbers=_numbers(asked),
        terms=tuple(content_terms(asked)),
        wants_duration=bool(_DURATION.search(text)),
        question_terms=tuple(content_terms(text)),
        question_numbers=_numbers(text),
        question_words=frozenset(w.lower() for w in re.findall(r"[A-Za-z]+", text)),
        codes=codes,
        date_format=date_form.group(0).upper() if date_form is not None else None,
        kind_of=kind_of.group(1).lower() if kind_of is not None else None,
    )


#: Words that open or frame a question, capitalised or not ("According to ...", "I'm a ...").
_FRAME = frozenset(
    "what which who whom whose when where why how is are was were does do did can could has "
    "have had will would should according among in on the list name enumerate give tell i i'm "
    "please write answer round format".split()
)
_WORD = re.compile(r"[A-Za-z][\w&'’.-]*|\d{4}")
_PERIOD_YEAR = re.compile(r"(?:fy|f|q[1-4]|h[12])?((?:19|20)\d{2})", re.I)


def named_words(question: str) -> tuple[str, ...]:
    """The names and years ``question`` is about, lower-cased, a name of several words as one
    ("english channel"): runs of capitalised words past its first ("Thinkpad", "HAQ Executive
    Leadership"), acronyms ("AR03") and years, "FY2019" read as 2019.

    A document that never mentions one of them is unlikely to answer the question (a camera of
    a laptop the manual is not about, a survey year the report does not cover), which is what
    the refusal's ``absent_names`` signal measures; a name of several words counts as mentioned
    when any of its words is (a map may print "English Channel" where the text says "the
    Channel"), unless one of its codes is missing (``absent_names``). Capitals say nothing in
    a question written in capitals, so there only years count; a hyphenated all-capitals word
    ("YYYY-MM-DD") is a format to answer in, not a name."""
    words = _WORD.findall(question)
    shouting = sum(1 for w in words if w.isupper() and len(w) > 1) > len(words) / 2
    out: list[str] = []
    run: list[str] = []

    def close() -> None:
        while run and run[-1] in _JOINERS:
            run.pop()
        if run:
            out.append(" ".join(run))
        run.clear()

    for i, raw in enumerate(words):
        word = raw.strip(".'’")
        for suffix in ("'s", "’s"):
            word = word.removesuffix(suffix)
        lower = word.lower()
        year = _PERIOD_YEAR.fullmatch(word)
        if year:
            close()
            out.append(year.group(1))
            continue
        if not word or shouting or lower in _FRAME or lower in ("fy", "q"):
            close()
            continue
        if lower in STOPWORDS:
            if run and lower in _JOINERS:
                run.append(lower)  # "Department of Health"
            else:
                close()
            continue
        capitals = sum(1 for c in word if c.isupper())
        if ("-" in word and word.isupper()) or not (capitals >= 2 or (word[0].isupper() and i > 0)):
            close()
            continue
        run.append(lower)
    close()
    return tuple(dict.fromkeys(out))


_JOINERS = frozenset(("of", "and", "for"))


#: A code: letters and digits in one word ("ar03", "gs5002", "t200"), not a year.
_CODE_WORD = re.compile(r"(?=[a-z]*\d)(?=\d*[a-z])[a-z0-9]+")


def absent_names(names: Sequence[str], absent_words: Collection[str]) -> list[str]:
    """The names (``named_words``) a document does not mention, given the words it does not
    (``absent_words``): none of their words, or one of their codes.

    The other words of a name may be paraphrased or printed only in a picture ("English
    Channel" where the text says "the Channel"), but a code is an identifier, matched exactly
    or not at all: a manual that never prints "AR03" does not describe market "EPS Code AR03",
    however often it says "code"."""
    return [
        n
        for n in names
        if all(w in absent_words for w in n.split() if w not in _JOINERS)
        or any(_CODE_WORD.fullmatch(w) and w in absent_words for w in n.split())
    ]


#: What only the pictures show: colours, typefaces, what people wear or do, logos.
_LOOKS = (
    r"\b(?:colou?rs?|red|green|blue|yellow|orange|grey|gray|purple|pink|brown|"
    r"underlined|italic|bold(?:face)?|logos?|wearing|wears?|(?:sun\s?)?glass(?:es|ess)|scarf|"
    r"hats?|smiling|standing|sitting|holding|background)\b"
)
#: Counts of people, animals or things in a picture.
_PICTURE_COUNT = (
    r"\bhow many\s+(?:\w+\s+){0,2}(?:people|persons?|men|women|male|female|children|kids|"
    r"students|cats?|dogs?|animals?|cars?|bikes?|birds?)\b[^?]*\b(?:pictures?|photo\w*|images?|"
    r"figures?|cover|page)\b"
)
_APPEARANCE = re.compile(_LOOKS + "|" + _PICTURE_COUNT, re.I)
_LOOKS_RE = re.compile(_LOOKS, re.I)


def asks_appearance(question: str) -> bool:
    """Whether ``question`` asks what a picture shows rather than what a text says ("What is
    the colour of the bike in the picture?", "How many people with glasses are on page 5?"):
    without a vision model such a question is answered from text, which rarely holds it."""
    return bool(_APPEARANCE.search(question))


_COLOURS = frozenset(
    "red green blue yellow orange grey gray purple pink brown black white silver gold".split()
)
_COLOUR_RE = re.compile(r"\b(?:" + "|".join(sorted(_COLOURS)) + r")\b", re.I)


#: Words that say where a picture is, not what is in it (stemmed).
_WHERE_SHOWN = frozenset(content_terms("page pages picture pictures image images photo figure"))


def _colour_stated(question: str, texts: Sequence[str]) -> bool:
    """Whether a sentence of ``texts`` gives a colour to something the question names: "What
    colour is the housing?" is answered by "The housing is painted red", not by a "green" in
    a sentence about something else."""
    about = {
        t
        for t in content_terms(_LOOKS_RE.sub(" ", question))
        if not t.isdigit() and t not in _WHERE_SHOWN
    }
    for text in texts:
        for sentence in re.split(r"(?<=[.!?])\s+|\n", text):
            if _COLOUR_RE.search(sentence) and about & set(content_terms(sentence)):
                return True
    return False


def unseen_appearance(question: str, texts: Sequence[str]) -> str | None:
    """The looks ``question`` asks about ("scarf", "yellow", "underlined") when none of
    ``texts`` prints them, or ``None``. Offline only text is read, so "the yellow words" or "the
    people wearing sunglasses" cannot be found in the evidence; a look that a text does state
    ("the housing is painted red") can. A count of people or things in a picture that names no
    look ("How many people are on the cover?") is left to the answerer: a caption may count
    them ("three students in the lab"), and the answer says it was read from text."""
    looks = {m.group(0).lower() for m in _LOOKS_RE.finditer(question)}
    if not looks:
        return None
    printed = re.compile(r"\b(?:" + "|".join(re.escape(w) for w in looks) + r")\b", re.I)
    if any(printed.search(t) for t in texts):
        return None
    if looks & {"color", "colors", "colour", "colours"} and _colour_stated(question, texts):
        return None
    return "“" + "”, “".join(sorted(looks)) + "”, which only a picture would show"


#: "Which ..., A or B, ...?" / "Which is larger: A or B?": the choices the question offers.
_OPTIONS = re.compile(
    r"\b(?:which|who)\b[^?]*?[,:]\s*([^,?:;]+?)\s+or\s+([^,?:;]+?)\s*(?:[,?]|$)", re.I
)


#: "Answer 'left' or 'right'.": choices the question quotes.
_QUOTED_OPTIONS = re.compile(
    r"['\"‘“]([^'\"‘’“”?]{1,40})['\"’”]\s*,?\s+or\s+['\"‘“]([^'\"‘’“”?]{1,40})['\"’”]"
)
#: Quoted choices that a yes/no reading already answers.
_BINARY = ({"yes", "no"}, {"true", "false"})


def options(question: str) -> tuple[str, ...]:
    """The choices a question offers its answer between ("which of the two, CA19 or Covina
    and West Covina, is larger?" offers "CA19" and "Covina and West Covina"; "Answer 'left'
    or 'right'." offers "left" and "right"), else ``()``. Each is a short name as the
    question writes it."""
    quoted = _QUOTED_OPTIONS.search(question)
    if quoted is not None:
        found = tuple(g.strip() for g in quoted.groups())
        if all(found) and {f.lower() for f in found} not in _BINARY:
            return found
    match = _OPTIONS.search(question)
    if match is None:
        return ()
    parts = [p for m in match.groups() for p in re.split(r"\s+or\s+", m)]
    found = tuple(re.sub(r"^the\s+", "", p.strip(" '\"‘’“”"), flags=re.I) for p in parts)
    if any(not f or len(f.split()) > 6 for f in found):
        return ()
    return found


_ORDINAL_QUARTER = {"first": "1", "second": "2", "third": "3", "fourth": "4"}


#: "Who produced the document ...?", "the company that created this presentation": the maker
#: the question asks for, by the verb it uses.
_MAKER_ASKED = re.compile(
    r"\b(?:who|(?:company|organi[sz]ation|agency|firm|person|author)\s+(?:that|which|who))\s+"
    r"(?P<verb>[a-z]+ed|wrote|written|made)\b",
    re.I,
)


def maker_label(question: str) -> re.Pattern[str] | None:
    """A pattern for the label a document prints its maker under, when ``question`` asks who
    made it ("Who produced ...?" reads "Produced by: Florida Department of Health"), else
    ``None``. Such a label answers the question wherever its words fall short of the rest of
    the question (a revision date printed only on the cover)."""
    match = _MAKER_ASKED.search(question)
    if match is None:
        return None
    verb = match.group("verb").lower()
    forms = {"wrote": "written", "made": "made"}.get(verb, verb)
    # The verb in any case ("PRODUCED BY"), the maker's name with a capital.
    return re.compile(rf"\b(?i:{re.escape(forms)}\s+by)\s*:?\s+[A-Z]")
