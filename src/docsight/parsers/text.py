"""Plain text: paragraphs separated by blank lines, with the headings plain text can express."""

from __future__ import annotations

import re

from docsight.document.model import ElementKind, ParsedDocument
from docsight.parsers.base import ParseContext, SourceFile
from docsight.parsers.textutil import clean_text, decode_text
from docsight.settings import ParseSettings

_UNDERLINE = re.compile(r"^(=+|-+)\s*$")
_BULLET = re.compile(r"^\s*(?:[-*•▪◦‣]|\d{1,3}[.)])\s+")


def _is_caps_heading(block: list[str]) -> bool:
    if len(block) != 1:
        return False
    line = block[0].strip()
    words = line.split()
    letters = [c for c in line if c.isalpha()]
    return (
        0 < len(words) <= 10
        and len(letters) >= 3
        and all(c.isupper() for c in letters)
        and not line.endswith((".", ",", ";"))
    )


class TextParser:
    name = "text"
    version = "1"

    def parse(
        self, source: SourceFile, settings: ParseSettings, context: ParseContext | None = None
    ) -> ParsedDocument:
        text = clean_text(decode_text(source.data))
        builder = source.builder(f"{self.name}/{self.version}")
        builder.add_page()
        blocks: list[list[str]] = []
        current: list[str] = []
        for line in text.split("\n"):
            if line.strip():
                current.append(line.rstrip())
            elif current:
                blocks.append(current)
                current = []
        if current:
            blocks.append(current)

        for block in blocks:
            if len(block) == 2 and _UNDERLINE.match(block[1]) and block[0].strip():
                level = 1 if block[1].lstrip().startswith("=") else 2
                builder.add(ElementKind.HEADING, block[0].strip(), page=0, level=level)
            elif _is_caps_heading(block):
                builder.add(ElementKind.HEADING, block[0].strip(), page=0, level=1)
            elif all(_BULLET.match(line) for line in block):
                builder.add(
                    ElementKind.LIST,
                    "\n".join(line.strip() for line in block),
                    page=0,
                    markdown="\n".join(block),
                )
            else:
                builder.add(ElementKind.PARAGRAPH, " ".join(s.strip() for s in block), page=0)
        if not builder.elements:
            builder.warn("no text")
        return builder.build(title=None)
