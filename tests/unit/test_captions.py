"""The caption rule shared by every parser (``docsight.document.captions``)."""

from __future__ import annotations

import pytest

from docsight.document.captions import CAPTION_RE, caption_target


@pytest.mark.parametrize(
    ("text", "target"),
    [
        ("Table 3: Revenue by region", "table"),
        ("Tab. 2 Results", "table"),
        ("Table 2 Revenue", "table"),  # a capital after the number, no separator
        ("Table 2", "table"),  # the whole text
        ("Table IV. Results by quarter", "table"),
        ("Table iv: results", "table"),
        ("Table A: Definitions", "table"),
        ("Table 2-1 Sales", "table"),
        ("Table2: compact", "table"),
        ("TABLE 5 | Segments", "table"),
        ("Figure 2.1: Architecture", "figure"),
        ("Figure 4 – Overview", "figure"),
        ("Figure 1a: Detail", "figure"),
        ("Fig. 2. Results", "figure"),
        ("Fig 3", "figure"),
        ("Fig.3 shows the trend", "figure"),
        ("  Figure 3: leading space", "figure"),
        ("Chart 1: Growth", "figure"),
        ("Exhibit 99.1", "figure"),
        ("Listing 1: Hello world", "figure"),
    ],
)
def test_captions(text: str, target: str) -> None:
    assert caption_target(text) == target


@pytest.mark.parametrize(
    "text",
    [
        "Table of Contents",
        "Figures show that revenue grew",
        "Tables are useful",
        "Table in the appendix lists the sources",
        "Chart a course to growth",
        "Figure it out",
        "Figs. 3 and 4 show the trend",
        "Exhibition 2020",
        "Tablespoon 2",
        "The table 3 shows",
        "Table",
        "Fig",
        "",
    ],
)
def test_not_captions(text: str) -> None:
    assert caption_target(text) is None


def test_caption_parts() -> None:
    match = CAPTION_RE.match("Table IV: Results")
    assert match is not None
    assert (match.group("label"), match.group("number")) == ("Table", "IV")
    match = CAPTION_RE.match("Fig. 2.1 Results")
    assert match is not None
    assert (match.group("label"), match.group("number")) == ("Fig.", "2.1")
