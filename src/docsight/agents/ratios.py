"""Financial ratios no sentence states, computed from the statement lines that do.

"What is Nike's current ratio in FY2021?" has no answer to quote: a filing states *Total current
assets* and *Total current liabilities*, and the ratio is their quotient. This module

* recognises a ratio question (:func:`read_ratio`): which ratio, which fiscal year, how to round;
* names the statement lines it needs, so the pipeline can search for them
  (:meth:`RatioQuestion.queries`);
* reads those lines from the sources, whether they arrived as Markdown table rows
  (``| Inventories | 6,854 | 7,367 |``), as lines with dot leaders (``Total assets ....... $ 11,726
  $ 10,382``) or as text read from a picture (``Property and equipment, net 253 282``), picks the
  column of the asked year from the years heading the statement, and computes the ratio
  (:func:`compute`).

Definitions follow one textbook convention (Investopedia's), stated in every answer: turnover
ratios divide by the average of the year's opening and closing balance; level ratios (current,
quick, cash) and returns (ROA, ROE) use the closing balance. When a line is missing, or its column
cannot be told, nothing is computed and the question is answered as any other: a derived number
is only shown with every input it was derived from.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from docsight.agents.answer import Source
from docsight.agents.tables import number_value

#: Statement lines as filings label them, most specific first. A label must be followed by the
#: line's numbers (at least two: statements always show a comparative year), so a sentence that
#: mentions "inventories" never passes for the line.
LINES: dict[str, tuple[str, ...]] = {
    "revenue": (
        "total net revenues",
        "total net revenue",
        "total revenues",
        "total revenue",
        "net revenues",
        "net revenue",
        "net sales",
        "revenues",
        "revenue",
    ),
    "cost of sales": (
        "total cost of revenues",
        "total cost of revenue",
        "cost of sales",
        "cost of revenues",
        "cost of revenue",
        "cost of goods sold",
    ),
    "inventories": ("inventories, net", "inventories", "inventory"),
    "accounts receivable": (
        "accounts receivable, net",
        "trade receivables, net",
        "accounts receivable",
        "trade receivables",
        "receivables, net",
    ),
    "accounts payable": ("accounts payable", "trade payables"),
    "total current assets": ("total current assets",),
    "total current liabilities": ("total current liabilities",),
    "cash": ("cash and cash equivalents", "cash and equivalents"),
    "short-term investments": ("short-term investments", "marketable securities"),
    "total assets": ("total assets",),
    "total liabilities": ("total liabilities",),
    "net income": ("net income",),
    "property and equipment": (
        "property, plant and equipment, net",
        "property and equipment, net",
        "property, plant and equipment",
    ),
    "operating income": ("operating income", "income from operations"),
    "interest expense": ("interest expense, net", "interest expense"),
    # Debt: the part due within a year (absent when nothing is due) and the rest.
    "short-term debt": (
        "current portion of long-term debt",
        "current portion of debt and capital lease obligations",
        "current portion of debt",
        "short-term debt",
        "short-term borrowings",
        "notes payable",
    ),
    "long-term debt": (
        "long-term debt, net",
        "long-term debt",
        "debt and capital lease obligations",
        "long-term borrowings",
    ),
    "operating cash flow": (
        "net cash provided by operating activities",
        "net cash provided by (used in) operating activities",
        "cash provided (used) by operations",
        "cash provided by operations",
    ),
    "shareholders' equity": (
        "total stockholders' equity",
        "total shareholders' equity",
        "total stockholders’ equity",
        "total shareholders’ equity",
        "total equity",
    ),
    "research and development": ("research and development", "product development"),
    "gross profit": ("gross profit", "gross margin"),
}

#: Lines whose label a note may continue with what the line comprises, in lower case before
#: its figures ("Interest expense from debt and amortization of debt discount: 90; 140"): read
#: so only when no source has the plain label.
_LOOSE = frozenset({"interest expense"})

#: Which statement a line is on: the words a search for it adds.
_STATEMENT = {
    "revenue": "income",
    "cost of sales": "income",
    "net income": "income",
    "operating income": "income",
    "interest expense": "income",
    "research and development": "income",
    "gross profit": "income",
    "operating cash flow": "cash flows",
}
#: Lines every statement of its kind has: searched with the wanted lines, they pull retrieval
#: towards the statement ("accounts receivable" alone finds the notes about receivables).
_ANCHORS = {
    "balance": ("total current assets", "total current liabilities"),
    "income": ("revenues", "cost of sales", "operating income", "net income"),
    "cash flows": ("net cash provided by operating activities",),
}
_SEARCH_WORDS = {
    "operating cash flow": "net cash provided by operating activities",
    "cash": "cash and cash equivalents",
}

_STATEMENT_NAMES = {
    "balance": re.compile(r"(?<!off-)balance sheets?|statements? of financial position", re.I),
    "income": re.compile(r"statements? of (?:income|operations|earnings)", re.I),
    "cash flows": re.compile(r"statements? of cash flows", re.I),
}

#: A statement's title on a line of its own, as it heads the statement's page (optionally with
#: its unit in brackets): "CONSOLIDATED STATEMENTS OF OPERATIONS (Amounts in millions)". A note
#: that mentions the statement does so inside a sentence.
_TITLES = {
    kind: re.compile(
        rf"^[ \t]*(?:consolidated[ \t]+)?(?:{pattern.pattern})[ \t]*(?:\([^)\n]*\))?[ \t]*$",
        re.I | re.M,
    )
    for kind, pattern in _STATEMENT_NAMES.items()
}
#: How filings title each statement; income statements go by two names.
_TITLE_QUERIES = {
    "balance": ("consolidated balance sheets",),
    "income": ("consolidated statements of operations", "consolidated statements of income"),
    "cash flows": ("consolidated statements of cash flows",),
}


@dataclass(frozen=True)
class Ratio:
    name: str
    numerator: tuple[str, ...]
    denominator: tuple[str, ...]
    #: Divide by the average of the opening and closing balance (turnover ratios).
    average: bool = False
    percent: bool = False
    #: Lines of a sum that a company may not report (no short-term investments): counted as 0.
    optional: frozenset[str] = frozenset()
    #: A sum of days instead of a quotient: each term is ``sign`` x 365 x the average balance
    #: over the year's flow, as (balance line, flow line, sign); the cash conversion cycle is
    #: days of inventory plus days of receivables minus days of payables.
    days: tuple[tuple[str, str, int], ...] = ()


_RATIOS: tuple[tuple[re.Pattern[str], Ratio], ...] = tuple(
    # A space in a pattern stands for any run of whitespace ("payables  turnover").
    (re.compile(pattern.replace(" ", r"\s+"), re.I), ratio)
    for pattern, ratio in (
        (
            r"\bcurrent ratio\b",
            Ratio("current ratio", ("total current assets",), ("total current liabilities",)),
        ),
        (
            r"\b(?:quick|acid[- ]test) ratio\b",
            Ratio(
                "quick ratio",
                ("cash", "short-term investments", "accounts receivable"),
                ("total current liabilities",),
                optional=frozenset({"short-term investments"}),
            ),
        ),
        (r"\bcash[ _]ratio\b", Ratio("cash ratio", ("cash",), ("total current liabilities",))),
        (
            r"\binventory turnover\b",
            Ratio("inventory turnover", ("cost of sales",), ("inventories",), average=True),
        ),
        (
            r"\b(?:accounts )?receiv\w* turnover\b",
            Ratio("receivables turnover", ("revenue",), ("accounts receivable",), average=True),
        ),
        (
            r"\b(?:accounts )?payables? turnover\b",
            Ratio("payables turnover", ("cost of sales",), ("accounts payable",), average=True),
        ),
        (
            r"\bfixed[- ]asset turnover\b",
            Ratio("fixed asset turnover", ("revenue",), ("property and equipment",), average=True),
        ),
        (
            r"\b(?:total )?asset turnover\b",
            Ratio("asset turnover", ("revenue",), ("total assets",), average=True),
        ),
        (
            r"\b(?:roa|return on (?:total )?assets)\b",
            Ratio("return on assets", ("net income",), ("total assets",)),
        ),
        (
            r"\b(?:roe|return on (?:shareholders'?|stockholders'?|common )?equity)\b",
            Ratio("return on equity", ("net income",), ("shareholders' equity",)),
        ),
        (
            r"\binterest coverage\b",
            Ratio("interest coverage ratio", ("operating income",), ("interest expense",)),
        ),
        (
            r"\boperating cash flow ratio\b",
            Ratio(
                "operating cash flow ratio",
                ("operating cash flow",),
                ("total current liabilities",),
            ),
        ),
        (
            r"\b(?:operating )?cash flow to (?:total )?debt\b",
            Ratio(
                "cash flow to debt ratio",
                ("operating cash flow",),
                ("short-term debt", "long-term debt"),
                optional=frozenset({"short-term debt"}),
            ),
        ),
        (
            r"\bdebt[- ]to[- ]equity\b",
            Ratio("debt-to-equity ratio", ("total liabilities",), ("shareholders' equity",)),
        ),
        (
            r"\bgross (?:profit )?margin\b",
            Ratio("gross margin", ("gross profit",), ("revenue",), percent=True),
        ),
        (
            r"\boperating (?:profit )?margin\b",
            Ratio("operating margin", ("operating income",), ("revenue",), percent=True),
        ),
        (
            r"\bnet (?:profit )?margin\b",
            Ratio("net profit margin", ("net income",), ("revenue",), percent=True),
        ),
        (
            r"\bcash conversion cycle\b",
            Ratio(
                "cash conversion cycle",
                ("cost of sales", "revenue"),
                ("inventories", "accounts receivable", "accounts payable"),
                average=True,
                days=(
                    ("inventories", "cost of sales", 1),
                    ("accounts receivable", "revenue", 1),
                    ("accounts payable", "cost of sales", -1),
                ),
            ),
        ),
        (
            r"\b(?:r&d|research and development) to (?:total )?assets? ratio\b",
            Ratio(
                "R&D to assets ratio",
                ("research and development",),
                ("total assets",),
                percent=True,
            ),
        ),
    )
)

_YEAR = re.compile(r"\b(?:fy|f|fiscal(?: year)?\s*)?\s*'?((?:19|20)\d{2})\b", re.I)
_NOT_A_LEVEL = re.compile(
    r"\b(?:chang\w*|expan\w*|increas\w*|decreas\w*|basis points?|grow\w*|compar\w*|"
    r"differ\w*|trend\w*|between|versus|vs\.?|higher|lower|improv\w*|declin\w*)\b",
    re.I,
)
_DECIMALS = {"one": 1, "two": 2, "three": 3, "four": 4, "1": 1, "2": 2, "3": 3, "4": 4}
_ROUND = re.compile(r"(\w+) decimal places?", re.I)


@dataclass(frozen=True)
class RatioQuestion:
    ratio: Ratio
    #: The fiscal year asked for, ``None`` for the latest the statement shows.
    year: int | None
    decimals: int | None
    percent: bool

    def lines(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.ratio.numerator + self.ratio.denominator))

    def queries(self) -> list[str]:
        """One search per statement the lines are on: the lines' names with lines every such
        statement has, whose words lead retrieval to the statement rather than to notes."""
        by_statement: dict[str, list[str]] = {}
        for line in self.lines():
            statement = _STATEMENT.get(line, "balance")
            by_statement.setdefault(statement, []).append(_SEARCH_WORDS.get(line, line))
        return [
            " ".join(dict.fromkeys([*words, *_ANCHORS[statement]]))
            for statement, words in by_statement.items()
        ]


def read_ratio(question: str) -> RatioQuestion | None:
    """The ratio a question asks for, or ``None``."""
    if _NOT_A_LEVEL.search(question):
        return None  # a change, a comparison or a trend is not one ratio's value
    for pattern, ratio in _RATIOS:
        if pattern.search(question):
            year = _YEAR.search(question)
            rounding = _ROUND.search(question)
            decimals = _DECIMALS.get(rounding.group(1).lower()) if rounding else None
            percent = ratio.percent or bool(re.search(r"percent|%", question, re.I))
            return RatioQuestion(ratio, int(year.group(1)) if year else None, decimals, percent)
    return None


@dataclass(frozen=True)
class LineValue:
    """A statement line as read: its label, the numbers in its year columns, where it was."""

    line: str
    label: str
    values: tuple[float, ...]
    years: tuple[int, ...]
    source: Source

    def at(self, year: int | None, previous: bool = False) -> float | None:
        """The value of ``year`` (the newest shown when ``None``), or of the year before it."""
        if self.years:
            wanted = (year if year is not None else max(self.years)) - int(previous)
            if wanted not in self.years:
                return None
            index = self.years.index(wanted)
        elif year is not None:
            return None  # the columns' years are unknown: the asked one cannot be told
        else:
            index = int(previous)  # filings put the newest year first
        return self.values[index] if index < len(self.values) else None


@dataclass(frozen=True)
class Input:
    """One line a ratio was computed from: its closing value and, for an average, its opening."""

    reading: LineValue
    closing: float
    opening: float | None = None

    @property
    def value(self) -> float:
        return self.closing if self.opening is None else (self.closing + self.opening) / 2

    def quote(self) -> str:
        """The line as read: its label and the values used."""
        if self.opening is None:
            return f"{self.reading.label} {_plain(self.closing)}"
        return f"{self.reading.label} {_plain(self.closing)} and {_plain(self.opening)}"

    def shown(self) -> str:
        n = self.reading.source.n
        if self.opening is None:
            return f"{self.quote()} [{n}]"
        return f"{self.quote()} [{n}], averaged {_plain(self.value)}"


@dataclass(frozen=True)
class Derived:
    """A computed ratio and everything it was computed from."""

    question: RatioQuestion
    value: float
    inputs: tuple[Input, ...]
    year: int | None

    def text(self) -> str:
        value = self.value * 100 if self.question.percent else self.value
        decimals = self.question.decimals
        if decimals is None:
            decimals = 2 if abs(value) >= 0.1 else 3
        unit = " days" if self.question.ratio.days else ""
        return f"{value:,.{decimals}f}" + ("%" if self.question.percent else unit)

    def working(self) -> str:
        """The formula with the numbers put in, each cited."""
        ratio = self.question.ratio

        def side(names: tuple[str, ...]) -> str:
            # An optional line the statements do not have is left out.
            return " + ".join(i.shown() for i in self.inputs if i.reading.line in names)

        period = f"fiscal {self.year}" if self.year else "the latest year shown"
        basis = "average balances" if ratio.average else "closing balances"
        if ratio.days:
            shown = {i.reading.line: i.shown() for i in self.inputs}
            terms = " ".join(
                f"{'+' if sign > 0 else '-'} 365 x ({shown[balance]}) / ({shown[flow]})"
                for balance, flow, sign in ratio.days
            ).removeprefix("+ ")
            return (
                f"{ratio.name[0].upper()}{ratio.name[1:]}, {period} = {terms}; {basis}, "
                "in days, as Investopedia defines it"
            )
        return (
            f"{ratio.name[0].upper()}{ratio.name[1:]}, {period} = ({side(ratio.numerator)}) / "
            f"({side(ratio.denominator)}); {basis}, as Investopedia defines the ratio"
        )


def _plain(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}"


# --- reading statement lines --------------------------------------------------------------------

_NUM = r"\(?-?\$?\s?\d[\d,]*(?:\.\d+)?\)?|—|-(?=\s)"
_FILL = r"[\s|:;$.·…_]*(?:\(\d\)\s*)?[\s|:;$.·…_]*"
_HEADER_YEARS = re.compile(r"\b(?:19|20)\d{2}\b")


def _label(label: str) -> str:
    """A line's label as a regex: capitalised as filings print it, any whitespace between its
    words, either apostrophe."""
    first, rest = label[0], label[1:]
    words = r"\s+".join(re.escape(w) for w in rest.split(" "))
    words = words.replace("'", "['’]").replace("’", "['’]")
    return rf"(?-i:{re.escape(first.upper())})(?i:{words})"


def _line_pattern(label: str, loose: bool = False) -> re.Pattern[str]:
    # A line's label starts a line, a table cell or follows the previous line's numbers (text
    # read from a picture runs lines together), and filings capitalise it: "decrease in
    # inventories 507 (1,854)" on a cash-flow statement is not the Inventories line. A loose
    # label may go on in lower-case words, wrapped onto the next row of a table (a capital
    # starts the next line's label).
    more = r"(?-i:[ \t,]+[a-z(][a-z\s|,.()'’&/\-]{0,160}?)?" if loose else ""
    return re.compile(
        rf"(?:^|(?<=[\n|])|(?<=[\d)—:]\s))\s*{_label(label)}{more}"
        rf"{_FILL}((?:{_NUM})(?:[\s|;$]+(?:{_NUM})){{1,3}})(?![\w%])",
        re.I | re.M,
    )


_PATTERNS = {line: [_line_pattern(label) for label in labels] for line, labels in LINES.items()}
_LOOSE_PATTERNS = {
    line: [_line_pattern(label, loose=True) for label in LINES[line]] for line in _LOOSE
}


def _trailing_pattern(label: str) -> re.Pattern[str]:
    """A total line whose label text read from a picture puts after its figures ("Goodwill
    9,764 9,762 $ 19,845 $ 17,890 Total assets"): the label right after a run of dollar-marked
    numbers and ending the line, a sentence or the text (it heads nothing that follows)."""
    dollar = r"\$\s?\(?-?\d[\d,]*(?:\.\d+)?\)?"
    return re.compile(
        rf"((?:{dollar})(?:\s+(?:{dollar})){{1,3}})\s+{_label(label)}"
        rf"(?=\s*(?:[.;]|$|\s+(?-i:[A-Z])))",
        re.I | re.M,
    )


_TRAILING = {line: [_trailing_pattern(label) for label in labels] for line, labels in LINES.items()}


def _numbers(run: str) -> tuple[float, ...]:
    """The figures of a line's run of numbers; a dash is a zero."""
    values = [0.0 if t.strip() in ("—", "-") else number_value(t) for t in re.findall(_NUM, run)]
    return tuple(v for v in values if v is not None)


def _years(text: str) -> tuple[int, ...]:
    """The years heading a statement's columns: the first run of consecutive years, newest or
    oldest first ("2021 2020", "At December 31, 2019 At December 31, 2018")."""
    found = [int(y) for y in _HEADER_YEARS.findall(text)]
    deduped = [y for i, y in enumerate(found) if i == 0 or y != found[i - 1]]
    for i in range(len(deduped) - 1):
        step = deduped[i + 1] - deduped[i]
        if step in (-1, 1):
            run = [deduped[i], deduped[i + 1]]
            for y in deduped[i + 2 :]:
                if y - run[-1] != step:
                    break
                run.append(y)
            return tuple(run)
    return ()


def read_lines(line: str, sources: Sequence[Source]) -> list[LineValue]:
    """Every reading of statement ``line`` in ``sources``, with the years of its columns (from
    the source's text before it, else from the other sources of its page)."""
    page_text: dict[tuple[str, int], str] = {}
    for source in sources:
        key = (source.doc_name, source.page)
        page_text[key] = page_text.get(key, "") + "\n" + source.text
    found: list[LineValue] = []
    # The statement itself before a note or a segment table that repeats a line's label.
    statement = _STATEMENT_NAMES[_STATEMENT.get(line, "balance")]

    def on_statement(source: Source) -> bool:
        where = " ".join(source.section_path) + " " + page_text[(source.doc_name, source.page)]
        return bool(statement.search(where))

    ordered = sorted(sources, key=lambda s: not on_statement(s))
    for source in ordered:
        reading = _read_line(line, source, page_text[(source.doc_name, source.page)])
        if reading is not None:
            found.append(reading)
    if not found and line in _LOOSE:
        for source in ordered:
            key = (source.doc_name, source.page)
            reading = _read_line(line, source, page_text[key], _LOOSE_PATTERNS[line])
            if reading is not None:
                found.append(reading)
    return found


def _read_line(
    line: str,
    source: Source,
    page_text: str,
    patterns: Sequence[re.Pattern[str]] | None = None,
) -> LineValue | None:
    """The first reading of ``line`` in ``source``: label then figures, else (text read from a
    picture) a dollar-marked total's figures then its label."""
    for pattern in _PATTERNS[line] if patterns is None else patterns:
        match = pattern.search(source.text)
        if match is None:
            continue
        values = _numbers(match.group(1))
        years = _years(source.text[: match.start()]) or _years(page_text)
        label = " ".join(source.text[match.start() : match.start(1)].split()).rstrip(" |:;$.")
        label = re.sub(r"[.·…_]{2,}.*$", "", label).strip()
        label = re.sub(r"\s*\|[\s|]*", " ", label)  # a label wrapped over two table rows
        return LineValue(line, label, values, years, source)
    for pattern in _TRAILING[line] if patterns is None else ():
        match = pattern.search(source.text)
        if match is None:
            continue
        years = _years(source.text[: match.start()]) or _years(page_text)
        # The run may hold the line before's figures too: a total has one per year column.
        values = _numbers(match.group(1))[-(len(years) or 2) :]
        label = " ".join(source.text[match.end(1) : match.end()].split())
        return LineValue(line, label, values, years, source)
    return None


def unread_lines(question: RatioQuestion, sources: Sequence[Source]) -> tuple[str, ...]:
    """The lines of ``question``'s ratio that no source reads."""
    return tuple(line for line in question.lines() if not read_lines(line, sources))


def _statements(lines: Sequence[str]) -> list[str]:
    """The statements ``lines`` are on, each once, in the lines' order."""
    return list(dict.fromkeys(_STATEMENT.get(line, "balance") for line in lines))


def title_queries(lines: Sequence[str]) -> list[str]:
    """Searches for the titles of the statements ``lines`` are on: when a search by the lines'
    names found notes and segment tables instead, the title still finds the statement's page."""
    return [query for kind in _statements(lines) for query in _TITLE_QUERIES[kind]]


def statement_sources(lines: Sequence[str], sources: Sequence[Source]) -> list[Source]:
    """One source a page from the statements ``lines`` are on: those under a heading naming
    the statement first, then those whose text names it (a note may mention "the balance
    sheet"). The places to read around for a line retrieval missed."""
    kinds = _statements(lines)
    names = [_STATEMENT_NAMES[kind] for kind in kinds]
    titles = [_TITLES[kind] for kind in kinds]
    ranked: list[tuple[int, int, Source]] = []
    for i, source in enumerate(sources):
        if any(n.search(source.section_path[-1]) for n in names if source.section_path):
            ranked.append((0, i, source))
        elif any(t.search(source.text) for t in titles):
            ranked.append((1, i, source))
        elif any(n.search(source.text) for n in names):
            ranked.append((2, i, source))
    pages: dict[tuple[str, int], Source] = {}
    for _, _, source in sorted(ranked, key=lambda r: r[:2]):
        pages.setdefault((source.doc_name, source.page), source)
    return list(pages.values())


def compute(question: RatioQuestion, sources: Sequence[Source]) -> Derived | None:
    """The ratio from the sources' statement lines, or ``None`` when a line is missing or its
    year's column cannot be told."""
    ratio = question.ratio
    inputs: list[Input] = []

    def value(name: str) -> Input | None:
        # A dash in the asked year's column where another reading of the line has a figure
        # is most often a namesake line (a balance sheet may list "Debt" among current and
        # among long-term liabilities): the figure is taken.
        dashed: Input | None = None
        for reading in read_lines(name, sources):
            if question.year is not None and question.year not in reading.years:
                continue
            closing = reading.at(question.year)
            if closing is None:
                continue
            got: Input | None = Input(reading, closing)
            if ratio.average and name in ratio.denominator:
                opening = reading.at(question.year, previous=True)
                got = Input(reading, closing, opening) if opening is not None else None
            if got is not None and got.value:
                return got
            dashed = dashed or got
        return dashed

    def total(names: tuple[str, ...]) -> float | None:
        parts = 0.0
        for name in names:
            got = value(name)
            if got is None:
                if name in ratio.optional:
                    continue
                return None
            inputs.append(got)
            parts += got.value
        return parts

    if ratio.days:
        read: dict[str, Input] = {}
        for name in question.lines():
            got = value(name)
            if got is None or not got.value:
                return None
            read[name] = got
        inputs = list(read.values())
        result = sum(
            sign * 365 * read[balance].value / read[flow].value
            for balance, flow, sign in ratio.days
        )
    else:
        numerator = total(ratio.numerator)
        denominator = total(ratio.denominator) if numerator is not None else None
        if numerator is None or not denominator:
            return None
        result = numerator / denominator
    years = next((i.reading.years for i in inputs if i.reading.years), ())
    year = question.year or (years[0] if years else None)
    return Derived(question, result, tuple(inputs), year)


__all__ = [
    "LINES",
    "Derived",
    "Input",
    "LineValue",
    "Ratio",
    "RatioQuestion",
    "compute",
    "read_lines",
    "read_ratio",
    "statement_sources",
    "title_queries",
    "unread_lines",
]
