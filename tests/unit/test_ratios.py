"""Ratios computed from statement lines (agents.ratios): which ratio a question asks, reading a
line in each form it arrives in, the asked year's column, and nothing computed without every
input."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import pytest

from docsight.agents.answer import Source
from docsight.agents.pipeline import Ports, with_statements
from docsight.agents.ratios import compute, read_lines, read_ratio, statement_sources


def _source(text: str, n: int = 1, page: int = 0) -> Source:
    return Source(n=n, doc_id="d" * 16, doc_name="filing.pdf", page=page, text=text)


def _ports(
    retrieve: Callable[[str], list[Source]], walk: Callable[[Sequence[Source]], list[Source]]
) -> Ports:
    """Retrieval and reading around as a test scripts them; no model, no pages missing."""
    return Ports(
        retrieve=retrieve,
        pages_missing=lambda q, s: False,
        encoder=lambda: None,
        chat=lambda: None,
        walk=walk,
    )


@pytest.mark.parametrize(
    ("question", "name", "year", "decimals"),
    [
        (
            "What is current ratio in FY2021 for Nike? Round to two decimal places.",
            "current ratio",
            2021,
            2,
        ),
        ("What is payables  turnover in FY2021 for Nike?", "payables turnover", 2021, None),
        ("what is roa for ADBE in FY 2015?", "return on assets", 2015, None),
        ("What is the acid-test ratio?", "quick ratio", None, None),
        ("What is receive turnover in fiscal 2021?", "receivables turnover", 2021, None),
    ],
)
def test_ratio_questions(question: str, name: str, year: int | None, decimals: int | None) -> None:
    asked = read_ratio(question)
    assert asked is not None
    assert (asked.ratio.name, asked.year, asked.decimals) == (name, year, decimals)


@pytest.mark.parametrize(
    "question",
    [
        "What was Nike's revenue in fiscal 2021?",
        "How much did the gross margin expand in fiscal 2021?",
        "Which year had the higher current ratio?",
    ],
)
def test_questions_that_ask_no_single_ratio(question: str) -> None:
    assert read_ratio(question) is None


def test_lines_read_from_tables_leaders_and_picture_text() -> None:
    table = _source(
        "| (In millions) | MAY 31, 2021 | 2020 |\n| --- | --- | --- |\n"
        "| Inventories | 6,854 | 7,367 |"
    )
    leaders = _source(
        "November 27, 2015 November 28, 2014\n"
        "Total assets.......................... $ 11,726,472 $ 10,785,829"
    )
    picture = _source(
        "At December 31, 2019 At December 31, 2018 Assets Other 5 6 "
        "Property and equipment, net 253 282 Goodwill 9 9"
    )
    assert [(r.label, r.values, r.years) for r in read_lines("inventories", [table])] == [
        ("Inventories", (6854.0, 7367.0), (2021, 2020))
    ]
    got = read_lines("total assets", [leaders])[0]
    assert (got.label, got.values, got.years) == (
        "Total assets",
        (11726472.0, 10785829.0),
        (2015, 2014),
    )
    got = read_lines("property and equipment", [picture])[0]
    assert (got.values, got.years) == ((253.0, 282.0), (2019, 2018))


def test_a_sentence_about_a_line_is_not_the_line() -> None:
    cash_flow = _source("2021 2020 2019 (Increase) decrease in inventories 507 (1,854) (490)")
    assert read_lines("inventories", [cash_flow]) == []


def test_average_balances_and_the_asked_years_column() -> None:
    # Oldest year first here: the column is found by its year, not by position.
    balance = _source(
        "| | 2022 | 2023 | 2024 |\n| --- | --- | --- | --- |\n"
        "| Inventories | 1,000 | 1,300 | 1,500 |"
    )
    income = _source(
        "Statements of income 2024 2023 2022\nCost of sales 7,000 6,100 5,000", n=2, page=1
    )
    asked = read_ratio("What is the inventory turnover in fiscal 2024?")
    assert asked is not None
    derived = compute(asked, [balance, income])
    assert derived is not None
    assert derived.text() == "5.00"  # 7,000 / ((1,500 + 1,300) / 2)
    assert "Cost of sales 7,000 [2]" in derived.working()
    assert "Inventories 1,500 and 1,300 [1]" in derived.working()
    earlier = read_ratio("What is the inventory turnover in fiscal 2023?")
    assert earlier is not None
    assert compute(earlier, [balance, income]).text() == "5.30"  # type: ignore[union-attr]


def test_nothing_is_computed_without_every_line() -> None:
    asked = read_ratio("What is the current ratio in 2024?")
    assert asked is not None
    only_assets = _source("2024 2023\nTotal current assets 3,500 2,900")
    assert compute(asked, [only_assets]) is None
    other_years = _source(
        "2022 2021\nTotal current assets 3,500 2,900\nTotal current liabilities 1,400 1,250"
    )
    assert compute(asked, [other_years]) is None


def test_a_total_whose_label_follows_its_figures_in_picture_text() -> None:
    # Text read from a picture of a balance sheet puts the totals' labels after their figures.
    picture = _source(
        "Text in it: At December 31, 2019 At December 31, 2018 Assets Goodwill 9,764 9,762 "
        "$ 19,845 $ 17,890 Total assets Liabilities and Shareholders' Equity"
    )
    [reading] = read_lines("total assets", [picture])
    assert reading.values == (19845.0, 17890.0) and reading.years == (2019, 2018)
    assert reading.label == "Total assets"
    # Figures without a dollar sign, or a label that runs on into a sentence, are not a total.
    assert (
        read_lines("total assets", [_source("2019 2018 Goodwill 9,764 9,762 Total assets")]) == []
    )
    prose = _source("2019 2018 it held $ 19,845 $ 17,890 total assets were up")
    assert read_lines("total assets", [prose]) == []


def test_statement_pages_to_read_around_put_the_statement_heading_first() -> None:
    note = Source(
        n=1,
        doc_id="d" * 16,
        doc_name="f.pdf",
        page=70,
        text="as the balance sheet shows, 3 4",
        section_path=["Notes"],
    )
    off = Source(
        n=2,
        doc_id="d" * 16,
        doc_name="f.pdf",
        page=40,
        text="commitments 1 2",
        section_path=["Off-Balance Sheet Arrangements"],
    )
    sheet = [
        Source(
            n=n,
            doc_id="d" * 16,
            doc_name="f.pdf",
            page=58,
            text=f"part {n} 1 2",
            section_path=["Item 8", "CONSOLIDATED BALANCE SHEETS"],
        )
        for n in (3, 4)
    ]
    found = statement_sources(["total current liabilities"], [note, off, *sheet])
    assert [(s.page, s.n) for s in found] == [(58, 3), (70, 1)]
    assert statement_sources(["revenue"], [note, off, *sheet]) == []


def test_a_line_search_missed_is_read_around_the_statement_found() -> None:
    # The balance sheet is two chunks; searches find only the second, which lacks the line.
    cash_flows = _source(
        "CONSOLIDATED STATEMENTS OF CASH FLOWS\n2015 2014\n"
        "Net cash provided by operating activities 1,469,502 1,287,482",
        page=62,
    )
    first, second = (
        Source(
            n=n,
            doc_id="d" * 16,
            doc_name="filing.pdf",
            page=58,
            text=text,
            section_path=["CONSOLIDATED BALANCE SHEETS"],
        )
        for n, text in (
            (
                8,
                "2015 2014\nTotal current assets 4,821,892 4,602,328\n"
                "Total current liabilities 2,213,556 2,494,435",
            ),
            (9, "2015 2014\nTotal liabilities 4,724,892 4,009,924"),
        )
    )
    walked: list[list[int]] = []

    def walk(sources: Sequence[Source]) -> list[Source]:
        walked.append([s.page for s in sources])
        return [first, second] if any(s.page == 58 for s in sources) else list(sources)

    def retrieve(query: str) -> list[Source]:
        return [cash_flows] if "cash" in query.lower() else [second]

    ports = _ports(retrieve, walk)
    question = "What is the FY2015 operating cash flow ratio?"
    asked = read_ratio(question)
    assert asked is not None
    sources = with_statements(question, ports).retrieve(question)
    assert walked == [[58]]
    derived = compute(asked, sources)
    assert derived is not None and derived.text() == "0.66"
    # Without a way to read around, the line stays missing and nothing is computed.
    alone = with_statements(question, replace(ports, walk=None)).retrieve(question)
    assert compute(asked, alone) is None


def test_the_cash_conversion_cycle_sums_days_of_each_balance() -> None:
    balance = _source(
        "Consolidated balance sheets 2024 2023\n"
        "| | 2024 | 2023 |\n| --- | --- | --- |\n"
        "| Accounts receivable, net | 1,100 | 900 |\n"
        "| Inventories | 1,500 | 1,300 |\n"
        "| Accounts payable | 700 | 500 |"
    )
    income = _source(
        "Statements of income 2024 2023\nRevenues 12,000 10,000\nCost of sales 7,000 6,100",
        n=2,
        page=1,
    )
    asked = read_ratio("What is the cash conversion cycle in FY2024? Round to two decimal places.")
    assert asked is not None and asked.ratio.name == "cash conversion cycle"
    derived = compute(asked, [balance, income])
    assert derived is not None
    # 365 x 1,400 / 7,000 + 365 x 1,000 / 12,000 - 365 x 600 / 7,000 = 73 + 30.42 - 31.29
    assert derived.text() == "72.13 days"
    working = derived.working()
    assert working.count("365 x") == 3 and "- 365 x (Accounts payable 700 and 500 [1]" in working
    assert compute(asked, [income]) is None  # no balances, no cycle


def test_interest_expense_described_in_a_note_over_two_rows() -> None:
    # The note's line names what the expense comprises, wrapped over two table rows; the
    # income statement has no "Interest expense" line of its own.
    note = _source(
        "|  | 2019 |  | 2018 |\n| --- | --- | --- | --- |\n"
        "| Interest income | $ | (79) | $ | (65) |\n"
        "| Interest expense from debt and amortization of debt discount and deferred "
        "|  |  |  |  |\n"
        "| financing costs |  | 90 |  | 140 |\n"
        "| Other expense (income), net |  | 1 |  | (4) |",
        page=113,
    )
    income = _source(
        "Statements of operations 2019 2018\nOperating income 1,607 1,988\n"
        "Interest and other expense (income), net (26) 71",
        n=2,
        page=69,
    )
    asked = read_ratio("What is the interest coverage ratio for FY2019?")
    assert asked is not None
    (reading,) = read_lines("interest expense", [note, income])
    assert reading.values == (90.0, 140.0) and reading.label == (
        "Interest expense from debt and amortization of debt discount and deferred financing costs"
    )
    derived = compute(asked, [note, income])
    assert derived is not None and derived.text() == "17.86"
    # A line of its own is read before any described one.
    plain = _source("2019 2018\nInterest expense 120 110", n=3, page=70)
    assert [r.values for r in read_lines("interest expense", [note, plain])] == [(120.0, 110.0)]
    # Capitals start the next line: "Interest expense" followed by another label is not read
    # with that label's figures.
    other = _source("2019 2018\n| Interest expense |  |\n| Other expense | 1 | 4 |", n=4)
    assert read_lines("interest expense", [other]) == []


def test_cash_flow_to_debt_skips_a_namesake_dash() -> None:
    # The balance sheet lists "Debt and capital lease obligations" among current liabilities
    # (nothing due this year) and again among long-term ones.
    current = _source(
        "CONSOLIDATED BALANCE SHEETS 2015 2014\n"
        "Accrued expenses 678,364 683,866\nDebt and capital lease obligations — 603,229",
        page=58,
    )
    long_term = _source(
        "2015 2014\nDebt and capital lease obligations 1,907,231 911,086", n=2, page=58
    )
    flows = _source(
        "2015 2014\nNet cash provided by operating activities 1,469,502 1,287,482", n=3, page=62
    )
    asked = read_ratio("What is Cash Flow to Total Debt Ratio for ADBE In FY2015?")
    assert asked is not None and asked.ratio.name == "cash flow to debt ratio"
    derived = compute(asked, [current, long_term, flows])
    assert derived is not None and derived.text() == "0.77"
    assert "Debt and capital lease obligations 1,907,231" in derived.working()
    # With current debt due, both parts count.
    due = _source("2015 2014\nCurrent portion of long-term debt 500,000 —", n=4, page=58)
    derived = compute(asked, [due, long_term, flows])
    assert derived is not None and derived.text() == f"{1469502 / 2407231:.2f}"


def test_a_statement_the_line_searches_missed_is_found_by_its_title() -> None:
    # Searches by the lines' names find a segment table and a note naming the statement in a
    # sentence; the statement's page is found only by its title, and read whole.
    segments = _source("Segment operating income 1,000 900", page=40)
    note = _source(
        "as the consolidated statements of operations show, interest is small", n=2, page=61
    )
    heading = _source(
        "CONSOLIDATED STATEMENTS OF OPERATIONS (Amounts in millions)\n[Table: Table on page 70]",
        n=3,
        page=69,
    )
    statement = _source(
        "2019 2018\nOperating income 1,607 1,988\nInterest expense 90 140", n=4, page=69
    )
    queries: list[str] = []

    def retrieve(query: str) -> list[Source]:
        queries.append(query)
        return [note, heading] if "statements of operations" in query else [segments, note]

    def walk(sources: Sequence[Source]) -> list[Source]:
        return [*sources, statement] if any(s.page == 69 for s in sources) else list(sources)

    ports = _ports(retrieve, walk)
    question = "What is the interest coverage ratio in FY2019?"
    sources = with_statements(question, ports).retrieve(question)
    assert "consolidated statements of operations" in queries
    asked = read_ratio(question)
    assert asked is not None
    derived = compute(asked, sources)
    assert derived is not None and derived.text() == "17.86"
    # The title on a line of its own ranks before a sentence that mentions it.
    assert [s.page for s in statement_sources(["operating income"], [note, heading])] == [69, 61]
