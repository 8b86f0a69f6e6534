"""Recognising captions ("Table 3: ...", "Fig. 2.", "Figure 4 –") in any format."""

from __future__ import annotations

import re

CAPTION_RE = re.compile(
    r"^\s*(?P<label>table|tab\.|figure|fig\.|chart|exhibit|listing)\s*"
    r"(?P<number>[0-9]+(?:[.\-][0-9]+)*|[IVXLC]+|[A-Z])\s*(?:[:.\-–—]|\s)",
    re.IGNORECASE,
)


def caption_target(text: str) -> str | None:
    """``"table"`` or ``"figure"`` if ``text`` starts like a caption, else ``None``."""
    match = CAPTION_RE.match(text)
    if not match:
        return None
    label = match.group("label").lower()
    return "table" if label.startswith("tab") else "figure"
