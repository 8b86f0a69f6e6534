"""Query expansion for derived financial metrics.

"What is the FY2021 inventory turnover ratio?" names nothing that is printed in a filing: the
answer is computed from lines of the income statement and the balance sheet. Matching words
finds the notes that mention "inventory", not the statements that hold the figures. The
expansion adds the line items and statements a metric is computed from, following the textbook
definitions (cost of sales over average inventories for inventory turnover, current assets over
current liabilities for the current ratio, and so on).

The lexicon is general accounting vocabulary, written from the standard definitions, not from
any evaluation set: it applies to any filing, annual report or statement that a user asks such
a question about. A question that names no metric is left unchanged.
"""

from __future__ import annotations

import re
from functools import lru_cache

_INCOME = "consolidated statements of income operations"
_BALANCE = "consolidated balance sheets"
_CASH = "consolidated statements of cash flows"

#: Metric (as people write it) → the line items and statements it is computed from.
METRICS: dict[str, str] = {
    # Liquidity
    "current ratio": f"total current assets total current liabilities {_BALANCE}",
    "quick ratio": "cash and equivalents short-term investments accounts receivable "
    f"total current liabilities {_BALANCE}",
    "acid test ratio": "cash short-term investments accounts receivable total current "
    f"liabilities {_BALANCE}",
    "cash ratio": f"cash and cash equivalents total current liabilities {_BALANCE}",
    "working capital": f"total current assets total current liabilities {_BALANCE}",
    "operating cash flow ratio": "net cash provided by operating activities total current "
    f"liabilities {_CASH} {_BALANCE}",
    # Activity
    "inventory turnover": f"cost of sales inventories {_INCOME} {_BALANCE}",
    "days inventory outstanding": f"inventories cost of sales {_INCOME} {_BALANCE}",
    "days sales of inventory": f"inventories cost of sales {_INCOME} {_BALANCE}",
    "receivables turnover": f"revenues accounts receivable net {_INCOME} {_BALANCE}",
    "receivable turnover": f"revenues accounts receivable net {_INCOME} {_BALANCE}",
    "days sales outstanding": f"accounts receivable revenues {_INCOME} {_BALANCE}",
    "payables turnover": f"cost of sales accounts payable {_INCOME} {_BALANCE}",
    "payable turnover": f"cost of sales accounts payable {_INCOME} {_BALANCE}",
    "days payable outstanding": f"accounts payable cost of sales {_INCOME} {_BALANCE}",
    "cash conversion cycle": "inventories accounts receivable accounts payable cost of sales "
    f"revenues {_INCOME} {_BALANCE}",
    "asset turnover": f"revenues total assets {_INCOME} {_BALANCE}",
    "fixed asset turnover": f"revenues property and equipment net {_INCOME} {_BALANCE}",
    # Leverage and coverage
    "debt to equity": f"total debt long-term debt total stockholders equity {_BALANCE}",
    "debt-to-equity": f"total debt long-term debt total stockholders equity {_BALANCE}",
    "debt ratio": f"total liabilities total assets {_BALANCE}",
    "debt to assets": f"total debt total assets {_BALANCE}",
    "equity multiplier": f"total assets total stockholders equity {_BALANCE}",
    "interest coverage": f"operating income interest expense {_INCOME}",
    "times interest earned": f"operating income interest expense {_INCOME}",
    "cash flow to total debt": f"net cash provided by operating activities total debt {_CASH}",
    "net debt": f"long-term debt short-term borrowings cash and equivalents {_BALANCE}",
    # Profitability
    "gross margin": f"gross profit revenues cost of sales {_INCOME}",
    "gross profit margin": f"gross profit revenues cost of sales {_INCOME}",
    "operating margin": f"operating income revenues {_INCOME}",
    "operating profit margin": f"operating income revenues {_INCOME}",
    "ebit margin": f"earnings before interest and taxes revenues {_INCOME}",
    "ebitda margin": f"operating income depreciation amortization revenues {_INCOME} {_CASH}",
    "ebitda": f"operating income depreciation amortization {_INCOME} {_CASH}",
    "net margin": f"net income revenues {_INCOME}",
    "net profit margin": f"net income revenues {_INCOME}",
    "return on assets": f"net income total assets {_INCOME} {_BALANCE}",
    "roa": f"return on assets net income total assets {_INCOME} {_BALANCE}",
    "return on equity": f"net income total stockholders equity {_INCOME} {_BALANCE}",
    "roe": f"return on equity net income total stockholders equity {_INCOME} {_BALANCE}",
    "return on invested capital": "operating income income taxes long-term debt "
    f"stockholders equity {_INCOME} {_BALANCE}",
    "roic": "return on invested capital operating income long-term debt stockholders equity "
    f"{_INCOME} {_BALANCE}",
    "effective tax rate": f"provision for income taxes income before income taxes {_INCOME}",
    "dividend payout ratio": f"dividends declared net income {_INCOME} {_CASH}",
    "payout ratio": f"dividends net income {_INCOME} {_CASH}",
    "earnings per share": f"net income per share basic diluted {_INCOME}",
    "eps": f"earnings per share net income per share diluted {_INCOME}",
    # Cash flow
    "free cash flow": "net cash provided by operating activities purchases of property and "
    f"equipment capital expenditures {_CASH}",
    "capex": f"capital expenditures purchases of property and equipment {_CASH}",
    "capital expenditure": f"purchases of property and equipment {_CASH}",
}

#: Line items that ratios are built from ("capex to revenue ratio", "R&D to assets"): each side
#: of an "X to Y" ratio is expanded on its own.
LINE_ITEMS: dict[str, str] = {
    "revenue": f"total revenues net sales {_INCOME}",
    "revenues": f"total revenues net sales {_INCOME}",
    "sales": f"net sales revenues {_INCOME}",
    "assets": f"total assets {_BALANCE}",
    "asset": f"total assets {_BALANCE}",
    "total assets": f"total assets {_BALANCE}",
    "equity": f"total stockholders equity {_BALANCE}",
    "liabilities": f"total liabilities {_BALANCE}",
    "debt": f"long-term debt short-term borrowings {_BALANCE}",
    "capex": f"capital expenditures purchases of property and equipment {_CASH}",
    "capital expenditure": f"purchases of property and equipment {_CASH}",
    "capital expenditures": f"purchases of property and equipment {_CASH}",
    "r&d": f"research and development {_INCOME}",
    "research and development": f"research and development {_INCOME}",
    "sg&a": f"selling general and administrative expense {_INCOME}",
    "net income": f"net income {_INCOME}",
    "operating income": f"operating income {_INCOME}",
    "cash flow": f"net cash provided by operating activities {_CASH}",
    "operating cash flow": f"net cash provided by operating activities {_CASH}",
    "inventory": f"inventories {_BALANCE}",
    "inventories": f"inventories {_BALANCE}",
    "dividends": f"dividends declared paid {_CASH}",
    "interest expense": f"interest expense {_INCOME}",
}
_RATIO = re.compile(
    r"\b(?P<x>[a-z&][a-z&\s-]{1,40}?)\s+(?:to|over|/)\s+(?P<y>[a-z&][a-z&\s-]{1,40}?)"
    r"(?:\s+ratio|\s+margin|[?.,]|\s+(?:in|for|of)\b)",
    re.IGNORECASE,
)


@lru_cache(maxsize=1)
def _matcher() -> re.Pattern[str]:
    names = sorted(METRICS, key=len, reverse=True)
    alternatives = "|".join(re.escape(n).replace(r"\ ", r"[\s_-]+") for n in names)
    return re.compile(rf"(?<![\w&-])(?:{alternatives})(?![\w&]|-\w)", re.IGNORECASE)


def _line_item(words: str) -> str | None:
    """The expansion of the longest known line item that ``words`` ends with."""
    tokens = words.lower().split()
    for start in range(len(tokens)):
        item = " ".join(tokens[start:])
        if item in LINE_ITEMS:
            return LINE_ITEMS[item]
    return None


def expansion(question: str) -> str:
    """The words a question's financial metrics are computed from ("" when it names none)."""
    found: dict[str, None] = {}
    for match in _matcher().finditer(question):
        key = re.sub(r"[\s_-]+", " ", match.group(0).lower())
        key = key if key in METRICS else key.replace(" ", "-")
        if key in METRICS:
            found.setdefault(METRICS[key], None)
    for match in _RATIO.finditer(question):
        x, y = _line_item(match.group("x")), _line_item(match.group("y"))
        if x and y:
            found.setdefault(x, None)
            found.setdefault(y, None)
    return " ".join(found)


def expand(question: str) -> str:
    """``question`` followed by its expansion, or ``question`` itself when there is none."""
    extra = expansion(question)
    return f"{question} {extra}" if extra else question
