"""Tables as tables: the cell where a question's row terms meet its column terms.

"What was revenue in fiscal 2021?" names a row ("Revenues") and a column ("2021"); the answer is
the cell where they cross, quoted with both headers. "Which region had the highest Q2 sales?"
names a column and a direction; the answer is the row whose cell in that column is the largest.
Markdown tables come from the parsers (and from charts whose data was read, offline or by a
vision model), header rows first; a second header row that the parser left in the body (empty
first cell, no numbers) is folded into the column names. A chart whose data nobody extracted still
has the words read off it, labels next to their figures ("Direct 62.67% Organic Search 40.12%"):
``chart_pairs`` reads those as a table of two columns, loose enough only for "which has most?".
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property

from docsight.agents.question import Intent
from docsight.document.artifacts import DESCRIPTION_CONTEXT, DESCRIPTION_TEXT
from docsight.document.tables import is_number
from docsight.document.text import content_terms, idf_weights

_YEAR = re.compile(r"\b(?:19|20)\d{2}\b")
#: A row or column needs at least this share of the question's (weighted) terms to count.
MIN_MATCH = 0.15
#: A column of changes ("Change in ...", "% change", "Growth"), when no change is asked.
_CHANGE = re.compile(r"\bchange|\bgrowth\b|\bincrease|\bdecrease", re.I)
CHANGE_PENALTY = 0.15


@dataclass(frozen=True)
class Table:
    caption: str
    columns: list[str]
    rows: list[list[str]]

    def label(self, row: int) -> str:
        cells = self.rows[row]
        if self.groups:
            cells = cells[1:]  # the first column names groups of rows, not this row
        return next((c for c in cells if c and not is_number(c)), cells[0] if cells else "")

    def row_name(self, row: int) -> str:
        """The row's label with its group's name, when rows are grouped."""
        groups = self.groups
        label = self.label(row)
        return f"{groups[row]}, {label}" if groups and groups[row] != label else label

    @cached_property
    def groups(self) -> list[str]:
        """Each row's group, when the first column names groups of rows (one name per group,
        printed on one of its rows, often the middle one: "Vicuna-13B-PT" beside six settings
        of it), else ``[]``.

        A group runs from its name's row back as many rows as the first group starts before
        its name, up to the next group's start: names set at the same place in every group."""
        first = [r[0] if r else "" for r in self.rows]
        named = [i for i, c in enumerate(first) if c]
        width = min((len(r) for r in self.rows), default=0)
        if len(named) < 2 or len(named) > len(self.rows) / 2 or width < 3:
            return []
        if any(not self.rows[i][1] for i in range(len(self.rows))):
            return []  # rows without their own label: a layout this does not read
        starts = [i - named[0] for i in named]
        ends = [*starts[1:], len(self.rows)]
        if any(end <= start for start, end in zip(starts, ends, strict=True)):
            return []
        return [
            first[i]
            for i, start, end in zip(named, starts, ends, strict=True)
            for _ in range(start, end)
        ]


@dataclass(frozen=True)
class CellAnswer:
    """A table's answer to a question: the value, the headers that locate it, and how well the
    question's terms matched them."""

    value: str
    row: str
    column: str
    score: float
    row_match: float
    column_match: float
    caption: str = ""

    @property
    def quote(self) -> str:
        where = f"{self.row} — {self.column}" if self.column else self.row
        return f"{where}: {self.value}"


def number_value(cell: str) -> float | None:
    text = cell.strip().replace(",", "").replace("−", "-").replace("–", "-")
    negative = text.startswith("(") and text.endswith(")")
    digits = re.sub(r"[^\d.\-]", "", text)
    try:
        value = float(digits)
    except ValueError:
        return None
    return -abs(value) if negative else value


def parse_tables(text: str) -> list[Table]:
    """Every Markdown table in ``text``, with the line before it as its caption."""
    tables: list[Table] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if not _is_row(lines[i]):
            i += 1
            continue
        caption = lines[i - 1].strip() if i > 0 and not _is_row(lines[i - 1]) else ""
        block = []
        while i < len(lines) and _is_row(lines[i]):
            block.append(_cells(lines[i]))
            i += 1
        block = [r for r in block if not all(set(c) <= set("-: ") for c in r)]
        if len(block) >= 2:
            tables.append(_table(caption, block))
    return tables


#: A label and its figure as a chart's text runs them together: capitalised words (joined by
#: "&" or "/"), an optional colon, a number ("Organic Search 40.12%", "Referral: 3.26%").
_PAIR = re.compile(
    r"(?<![\w&/])(?P<label>[A-Z][\w'’.-]*(?:\s+(?:[&/]|[A-Z][\w'’.-]*)){0,5}):?\s+"
    # not a measurement in prose ("10 hours of service"): a chart's figure stands alone
    r"(?P<value>-?\d[\d,]*(?:\.\d+)?%?)(?![\w.]*\d)(?!\s+[a-z])"
)
#: Fewest labelled figures that make a chart's text a table.
MIN_PAIRS = 3
_HEADER_WORDS = 12


def chart_pairs(text: str) -> list[Table]:
    """The text read off each chart in ``text`` (an offline description's "Text in it: ...")
    as a table of labels and figures, when it holds at least ``MIN_PAIRS`` labelled figures of
    one kind (all percentages, or none): "% of total Channel conversions Direct 62.67% Organic
    Search 40.12% ..." is a column named by the words before its first figure. Unlabelled
    figures, and a label's run-on from the previous figure's unit, are the reading's noise."""
    tables: list[Table] = []
    start = text.find(DESCRIPTION_TEXT)
    while start >= 0:
        body_start = start + len(DESCRIPTION_TEXT)
        end = text.find(DESCRIPTION_CONTEXT, body_start)
        line_end = text.find("\n", body_start)
        stops = [i for i in (end, line_end) if i >= 0]
        body = text[body_start : min(stops) if stops else len(text)]
        pairs = list(_PAIR.finditer(body))
        shares = [p for p in pairs if p.group("value").endswith("%")]
        plain = [p for p in pairs if not p.group("value").endswith("%")]
        kept = shares if len(shares) >= len(plain) else plain
        if len(kept) >= MIN_PAIRS:
            header = " ".join(body[: kept[0].start()].split()[-_HEADER_WORDS:])
            rows = [[p.group("label").strip(), p.group("value")] for p in kept]
            tables.append(Table(caption="", columns=["", header], rows=rows))
        start = text.find(DESCRIPTION_TEXT, body_start)
    return tables


def _is_row(line: str) -> bool:
    stripped = line.strip()
    return len(stripped) > 1 and stripped.startswith("|") and stripped.endswith("|")


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _table(caption: str, block: list[list[str]]) -> Table:
    width = max(len(r) for r in block)
    block = [r + [""] * (width - len(r)) for r in block]
    header, body = block[0], block[1:]
    # Header continuation rows hold no number (years count as words here) and either leave the
    # first cell empty, or follow a title row: a header with empty or repeated cells (a title
    # spanning the table, "| Structured Markup | Structured Markup | | |", over the real names).
    # A third kind: a row of words over such a continuation, the header printed on three lines
    # ("% of seniors who own a …" over "| | Cell phone | Smartphone |").
    while (
        body
        and _words_only(body[0])
        and _names_only(body[0])
        and (not body[0][0] or _spanning(header) or _over_continuation(body))
    ):
        header = [f"{h} {c}".strip() for h, c in zip(_spread(header), body[0], strict=True)]
        body = body[1:]
    return Table(caption=caption, columns=header, rows=body)


def _words_only(row: list[str]) -> bool:
    return not any(_figure(c) is not None and not _YEAR.fullmatch(c) for c in row)


#: A cell with more words than this is a sentence of the table's body, not a column's name.
_NAME_WORDS = 12


def _names_only(row: list[str]) -> bool:
    """Whether a row's cells are short enough to name columns: an objective's sentence ("By
    December 31, 2018, reduce ...") under a header with blank cells is a row, not more header."""
    return all(len(c.split()) <= _NAME_WORDS for c in row)


def _over_continuation(body: list[list[str]]) -> bool:
    """Whether the first body row names columns (two cells or more) above a row that continues
    the header (empty first cell, two names or more, no figures)."""
    if len(body) < 2 or sum(1 for c in body[0] if c) < 2:
        return False
    below = body[1]
    return not below[0] and sum(1 for c in below if c) >= 2 and _words_only(below)


_LEADING_FIGURE = re.compile(r"^[-+−±(~≈]?\s?[$€£]?\d")


def _figure_led(cell: str) -> bool:
    """A number, or a cell that opens with one ("15.3 (+1.5%)", "12 weeks"): data, not a name."""
    return is_number(cell) or bool(_LEADING_FIGURE.match(cell.strip()))


def _spread(header: list[str]) -> list[str]:
    """Group names over the blank cells to their right: "MAVEN-ERE" spans the "Micro-F1" and
    "LI" columns below it, and "Causal-TimeBank" the next two. Only when two or more names head
    such a run (groups set side by side); a single name over blanks may be centred over its
    columns ("HOVER" over 2-, 3- and 4-hop), a title repeated over the table ("| Markup |
    Markup | | |") names no group, and the first column's blank stays blank."""
    named = [h for h in header if h]
    heading = [k for k, h in enumerate(header[:-1]) if h and not header[k + 1] and k > 0]
    if len(set(named)) < len(named) or len(heading) < 2:
        return header
    out: list[str] = []
    for k, name in enumerate(header):
        out.append(name or (out[-1] if k > 1 and out[-1] else ""))
    return out


def _spanning(header: list[str]) -> bool:
    """A header row that is a title over the columns rather than their names."""
    named = [h for h in header if h]
    return len(header) > 2 and (len(named) < len(header) or len(set(named)) < len(named))


def _match(terms: set[str], weights: dict[str, float], text: str) -> float:
    total = sum(weights.values()) or 1.0
    present = set(content_terms(text))
    return sum(w for t, w in weights.items() if t in present) / total if terms else 0.0


#: Words term matching ignores as question scaffolding that may still name a column.
_SCAFFOLD_COLUMNS = frozenset(
    "page pages section sections report reports paper papers document documents".split()
)


def lookup(intent: Intent, table: Table, corpus: Sequence[set[str]]) -> CellAnswer | None:
    """The cell of ``table`` that answers ``intent`` best, or ``None`` when neither a row nor a
    column matches. ``corpus`` (term sets of every candidate) weighs rare terms up."""
    terms = set(intent.terms)
    if not terms or not table.rows:
        return None
    weights = idf_weights(list(corpus) or [terms], terms)
    periods = set(intent.periods)
    col_scores = []
    for k, name in enumerate(table.columns):
        score = _match(terms, weights, name)
        years = set(_YEAR.findall(name))
        # The period decides between columns that name it and ones of another year, but it
        # does not make a column about something else the answer.
        if periods and years & periods:
            score += 0.2 if score > 0 else 0.1
        elif periods and years and not years & periods:
            score -= 0.3  # another year's column: the wrong period
        if score <= 0 and name.strip().lower() in _SCAFFOLD_COLUMNS & intent.question_words:
            # Matching drops "pages" as a question's scaffolding ("on page 5"), but a column
            # named by the very word ("How many pages for hatom?" over "Pages") is the one asked.
            score = 1.0 / (len(terms) + 1)
        if score > 0 and not intent.wants_share and _CHANGE.search(name):
            # "Change in capacity" beside "Capacity": a question that asks no change, share or
            # rate asks for the level, whichever of the two names the question's year.
            score -= CHANGE_PENALTY
        col_scores.append(score if k or not _label_column(table) else -1.0)
    if intent.type == "comparison":
        return _compare(intent, table, col_scores, weights)
    best: CellAnswer | None = None
    best_row = -1
    label_col = 0 if _label_column(table) else -1
    groups = table.groups
    for r, row in enumerate(table.rows):
        row_text = " ".join(c for k, c in enumerate(row) if not is_number(c) or k == label_col)
        if groups:
            row_text += f" {groups[r]}"  # a grouped row is named by its group too
        row_score = _match(terms, weights, row_text)
        if row_score < MIN_MATCH and len(table.rows) > 1:
            continue
        for k, cell in enumerate(row):
            if not cell or k == label_col or col_scores[k] < 0:
                continue
            if intent.numeric and not _figure_led(cell):
                continue  # "±0.1 °C", "12 weeks": a figure with its unit answers too
            score = row_score + col_scores[k]
            if best is None or score > best.score:
                best_row = r
                best = CellAnswer(
                    value=cell,
                    row=table.row_name(r),
                    column=table.columns[k],
                    score=score,
                    row_match=row_score,
                    column_match=col_scores[k],
                    caption=table.caption,
                )
    if best is None or (best.column_match <= 0 and len(table.columns) > 2 and not periods):
        latest = _latest_period(table, best, best_row, intent) if best is not None else None
        if latest is not None:
            return latest
        # Several value columns and nothing says which: no single cell answers.
        return None if best is None or len(table.columns) > 2 else best
    return best


def _latest_period(table: Table, best: CellAnswer, row: int, intent: Intent) -> CellAnswer | None:
    """With columns of years and no year asked, the latest year's cell of the best row: a
    report's current figure ("How many employees does it have?" asks of the latest year)."""
    years = {
        k: max(int(y) for y in _YEAR.findall(name))
        for k, name in enumerate(table.columns)
        if _YEAR.findall(name)
    }
    if len(years) < 2:
        return None
    k = max(years, key=lambda c: years[c])
    cell = table.rows[row][k] if k < len(table.rows[row]) else ""
    if not cell or (intent.numeric and not is_number(cell)):
        return None
    return replace(best, value=cell, column=table.columns[k])


def _label_column(table: Table) -> bool:
    """Whether the first column holds row labels (mostly text) rather than values."""
    first = [r[0] for r in table.rows if r and r[0]]
    return bool(first) and sum(not is_number(c) for c in first) >= len(first) / 2


def _compare(
    intent: Intent, table: Table, col_scores: list[float], weights: dict[str, float]
) -> CellAnswer | None:
    """The row whose value in the best-matching column is the largest (or smallest): a column
    of figures, of durations ("7 months" against "17 weeks", compared in days) or of dates
    ("19 Mar 2024"), the cells of one column all read the same way."""
    readers = (_figure, _duration, _date)
    comparable: dict[int, list[tuple[float, int]]] = {}
    for k in range(len(table.columns)):
        for read in readers:
            values = [(read(r[k]), i) for i, r in enumerate(table.rows) if k < len(r) and r[k]]
            read_ok = [(v, i) for v, i in values if v is not None]
            if len(read_ok) >= max(2, len(table.rows) // 2):
                comparable[k] = read_ok
                break
    if not comparable:
        return None
    k = max(comparable, key=lambda c: (col_scores[c], -c))
    if col_scores[k] <= 0:
        # No column is what the question compares ("grew fastest" over a table of levels):
        # the largest number of some column would be an answer to another question.
        return None
    values = comparable[k]
    within, row_match = _rows_named(intent, table, table.columns[k], weights)
    if within:
        values = [(v, i) for v, i in values if i in within] or values
    pick = max(values) if intent.direction == "max" else min(values)
    row = pick[1]
    # Rows that tie for the top all answer ("which programmes run longest?": two at 3 years).
    tied = [i for v, i in values if v == pick[0]]
    return CellAnswer(
        value="; ".join(dict.fromkeys(table.label(i) for i in tied)),
        row="; ".join(dict.fromkeys(table.row_name(i) for i in tied)),
        column=f"{table.columns[k]} = {table.rows[row][k]}",
        score=max(col_scores[k], 0.0) + 0.5 + row_match,
        row_match=row_match,
        column_match=col_scores[k],
        caption=table.caption,
    )


def _rows_named(
    intent: Intent, table: Table, column: str, weights: dict[str, float]
) -> tuple[set[int], float]:
    """The rows a comparison is among when the question names some of them ("which setting
    did Vicuna do best in" of a table of several models' settings): those whose label or group
    holds the question's words that the compared column does not, and how much of the question
    they match; nothing when every row or none does."""
    column_terms = set(content_terms(column))
    wanted = {t: w for t, w in weights.items() if t not in column_terms}
    if not wanted:
        return set(), 0.0
    groups = table.groups
    matches: dict[int, float] = {}
    for i, row in enumerate(table.rows):
        labels = " ".join(c for c in row if c and not _figure_led(c))
        if groups:
            labels += f" {groups[i]}"
        match = _match(set(wanted), weights, labels)
        if match > 0:
            matches[i] = match
    best = max(matches.values(), default=0.0)
    chosen = {i for i, m in matches.items() if m == best}
    if not chosen or len(chosen) == len(table.rows):
        return set(), 0.0
    return chosen, best


#: A figure with its change beside it in brackets: "18.0 (+3.1%)" reads as 18.0.
_FIGURE_WITH_ASIDE = re.compile(r"^([-+−]?[$€£]?\d[\d,]*(?:\.\d+)?%?)\s*\([^()]*\)$")


def _figure(cell: str) -> float | None:
    if is_number(cell):
        return number_value(cell)
    aside = _FIGURE_WITH_ASIDE.match(cell.strip())
    return number_value(aside.group(1)) if aside else None


#: Days in a unit of time; a month and a year as their calendar averages.
_DAYS = {"year": 365.25, "month": 30.44, "week": 7.0, "day": 1.0, "hour": 1 / 24}
_DURATION_CELL = re.compile(
    r"^(?:about |approx\.? |up to |max(?:imum)?\.? )?"
    r"(\d+(?:\.\d+)?)(?:\s*(?:-|–|to)\s*(\d+(?:\.\d+)?))?\s*"
    r"(years?|yrs?|months?|mths?|weeks?|wks?|days?|hours?|hrs?)\b",
    re.I,
)
_UNIT_OF = {"yr": "year", "mth": "month", "wk": "week", "hr": "hour"}


def _duration(cell: str) -> float | None:
    """A length of time in days: "7 months", "17 weeks", "2-3 years" (its upper end)."""
    m = _DURATION_CELL.match(cell.strip())
    if not m:
        return None
    unit = m.group(3).lower().rstrip("s")
    unit = _UNIT_OF.get(unit, unit)
    return float(m.group(2) or m.group(1)) * _DAYS[unit]


_MONTHS = {
    name[:3]: i
    for i, name in enumerate(
        "january february march april may june july august september october november "
        "december".split(),
        start=1,
    )
}
#: A month by its name or its usual abbreviation ("Mar", "Sept."), not any word that
#: begins like one ("Mayor").
_MONTH = (
    r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_DATE_CELLS = (
    # 19 Mar 2024, 19 March 2024
    (re.compile(rf"^(\d{{1,2}})\s+{_MONTH},?\s+(\d{{4}})$", re.I), ("d", "m", "y")),
    # March 19, 2024
    (re.compile(rf"^{_MONTH}\s+(\d{{1,2}}),?\s+(\d{{4}})$", re.I), ("m", "d", "y")),
    # March 2024
    (re.compile(rf"^{_MONTH},?\s+(\d{{4}})$", re.I), ("m", "y")),
    # 2024-03-19
    (re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})$"), ("y", "m", "d")),
)


def _date(cell: str) -> float | None:
    """A calendar date as a sortable number (year, month, day); a month without a day is its
    first. Day-first and month-first numeric forms ("03/04/2024") are ambiguous and not read."""
    text = cell.strip()
    for pattern, order in _DATE_CELLS:
        m = pattern.match(text)
        if not m:
            continue
        parts = dict(zip(order, m.groups(), strict=True))
        month = parts["m"]
        month_no = int(month) if month.isdigit() else _MONTHS.get(month[:3].lower())
        day = int(parts.get("d", 1))
        if not month_no or not 1 <= month_no <= 12 or not 1 <= day <= 31:
            return None
        return int(parts["y"]) * 10_000 + month_no * 100 + day
    return None
