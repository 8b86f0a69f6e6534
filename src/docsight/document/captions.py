"""Recognising captions ("Table 3: ...", "Fig. 2.", "Figure 4 –") in any format.

One rule for every parser. A caption starts with a label (Figure, Fig., Fig, Table, Tab., Chart,
Exhibit, Listing) and a number: arabic with sub-numbers and an optional letter ("2", "2.1",
"2-1", "3b"), roman ("IV", "iv") or a single capital letter ("A"). Then comes a separator
(``: . - – — |``), whitespace ("Table 2 Revenue") or the end of the text ("Fig 3").

Roman numerals and letters must be set off from the label by a space, so words that merely begin
with a label are not captions: "Figures show that...", "Tables are...", "Table of Contents",
"Table in the appendix", "Chart a course".
"""

from __future__ import annotations

import re

CAPTION_RE = re.compile(
    r"^\s*(?P<label>figure\.?|fig\.?|table|tab\.|chart|exhibit|listing)"
    # Arabic numbers may follow the label directly ("Fig.3", "Table2"); others need a space.
    r"(?:\s*(?=[0-9])|\s+)"
    r"(?P<number>[0-9]+(?:[.\-][0-9]+)*[a-z]?|[IVXLC]+|(?-i:[A-Z]))"
    r"(?=\s*[:.|\-–—]|\s*$|\s)",
    re.IGNORECASE,
)


def caption_target(text: str) -> str | None:
    """``"table"`` or ``"figure"`` if ``text`` starts like a caption, else ``None``."""
    match = CAPTION_RE.match(text)
    if not match:
        return None
    label = match.group("label").lower()
    return "table" if label.startswith("tab") else "figure"
