"""Ratios computed from statement lines (agents.ratios): which ratio a question asks, reading a
line in each form it arrives in, the asked year's column, and nothing computed without every
input."""

from __future__ import annotations

import pytest

from docsight.agents.answer import Source
from docsight.agents.ratios import compute, read_lines, read_ratio


def _source(text: str, n: int = 1, page: int = 0) -> Source:
    return Source(n=n, doc_id="d" * 16, doc_name="filing.pdf", page=page, text=text)


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
