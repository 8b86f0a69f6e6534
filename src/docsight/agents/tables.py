"""Tables as tables: the cell where a question's row terms meet its column terms.

"What was revenue in fiscal 2021?" names a row ("Revenues") and a column ("2021"); the answer is
the cell where they cross, quoted with both headers. "Which region had the highest Q2 sales?"
names a column and a direction; the answer is the row whose cell in that column is the largest.
Markdown tables come from the parsers (and from charts whose data was read, offline or by a
vision model), header rows first; a second header row that the parser left in the body (empty
first cell, no numbers) is folded into the column names.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from docsight.agents.question import Intent
from docsight.document.tables import is_number
from docsight.document.text import content_terms, idf_weights

_YEAR = re.compile(r"\b(?:19|20)\d{2}\b")
#: A row or column needs at least this share of the question's (weighted) terms to count.
MIN_MATCH = 0.15


@dataclass(frozen=True)
class Table:
    caption: str
    columns: list[str]
    rows: list[list[str]]

    def label(self, row: int) -> str:
        cells = self.rows[row]
        return next((c for c in cells if c and not is_number(c)), cells[0] if cells else "")


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
    while (
        body
        and not any(is_number(c) and not _YEAR.fullmatch(c) for c in body[0])
        and (not body[0][0] or _spanning(header))
    ):
        header = [f"{h} {c}".strip() for h, c in zip(header, body[0], strict=True)]
        body = body[1:]
    return Table(caption=caption, columns=header, rows=body)


def _spanning(header: list[str]) -> bool:
    """A header row that is a title over the columns rather than their names."""
    named = [h for h in header if h]
    return len(header) > 2 and (len(named) < len(header) or len(set(named)) < len(named))


def _match(terms: set[str], weights: dict[str, float], text: str) -> float:
    total = sum(weights.values()) or 1.0
    present = set(content_terms(text))
    return sum(w for t, w in weights.items() if t in present) / total if terms else 0.0


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
        col_scores.append(score if k or not _label_column(table) else -1.0)
    if intent.type == "comparison":
        return _compare(intent, table, col_scores)
    best: CellAnswer | None = None
    best_row = -1
    label_col = 0 if _label_column(table) else -1
    for r, row in enumerate(table.rows):
        row_text = " ".join(c for k, c in enumerate(row) if not is_number(c) or k == label_col)
        row_score = _match(terms, weights, row_text)
        if row_score < MIN_MATCH and len(table.rows) > 1:
            continue
        for k, cell in enumerate(row):
            if not cell or k == label_col or col_scores[k] < 0:
                continue
            if intent.numeric and not is_number(cell):
                continue
            score = row_score + col_scores[k]
            if best is None or score > best.score:
                best_row = r
                best = CellAnswer(
                    value=cell,
                    row=table.label(r),
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


def _compare(intent: Intent, table: Table, col_scores: list[float]) -> CellAnswer | None:
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
    pick = max(values) if intent.direction == "max" else min(values)
    row = pick[1]
    return CellAnswer(
        value=table.label(row),
        row=table.label(row),
        column=f"{table.columns[k]} = {table.rows[row][k]}",
        score=max(col_scores[k], 0.0) + 0.5,
        row_match=0.0,
        column_match=col_scores[k],
        caption=table.caption,
    )


def _figure(cell: str) -> float | None:
    return number_value(cell) if is_number(cell) else None


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
