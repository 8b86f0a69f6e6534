"""Markdown through markdown-it-py (CommonMark plus GFM tables).

Block tokens map one-to-one onto elements; source line ranges are kept in ``attrs["lines"]`` so a
citation can point back into the file. Raw HTML is reduced to its text and links and images are
never fetched.
"""

from __future__ import annotations

import re
from typing import Any

from docsight.document.captions import caption_target
from docsight.document.model import ElementKind, ParsedDocument
from docsight.document.tables import rows_to_markdown, rows_to_text
from docsight.errors import ParseError
from docsight.parsers.base import ParseContext, SourceFile
from docsight.parsers.textutil import clean_text, decode_text
from docsight.settings import ParseSettings

_TAG = re.compile(r"<[^>]{0,2000}>")


def _inline_text(token: Any) -> str:
    parts: list[str] = []
    for child in token.children or []:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type == "softbreak":
            parts.append(" ")
        elif child.type == "hardbreak":
            parts.append("\n")
        elif child.type == "image":
            alt = "".join(c.content for c in child.children or []) or child.content
            parts.append(alt)
        elif child.type == "html_inline":
            continue
    return "".join(parts).strip()


def _close_index(tokens: list[Any], start: int) -> int:
    """Index of the token that closes the container opened at ``start``."""
    depth = 0
    for i in range(start, len(tokens)):
        depth += tokens[i].nesting
        if depth == 0:
            return i
    return len(tokens) - 1


class MarkdownParser:
    name = "markdown"
    version = "1"

    def parse(
        self, source: SourceFile, settings: ParseSettings, context: ParseContext | None = None
    ) -> ParsedDocument:
        from markdown_it import MarkdownIt

        text = clean_text(decode_text(source.data))
        lines = text.split("\n")
        md = MarkdownIt("commonmark", {"html": True}).enable("table")
        try:
            tokens = md.parse(text)
        except Exception as exc:  # markdown-it raises plain exceptions on pathological input
            raise ParseError(source.path, f"invalid Markdown: {exc}") from exc

        builder = source.builder(f"{self.name}/{self.version}")
        builder.add_page()
        title: str | None = None

        def source_slice(token: Any) -> str:
            if not token.map:
                return ""
            a, b = token.map
            return "\n".join(lines[a:b]).strip()

        def line_attrs(token: Any) -> dict[str, Any]:
            return {"lines": list(token.map)} if token.map else {}

        i = 0
        while i < len(tokens):
            tok = tokens[i]
            if tok.type == "heading_open":
                level = int(tok.tag[1])
                heading = _inline_text(tokens[i + 1])
                if heading:
                    builder.add(
                        ElementKind.HEADING, heading, page=0, level=level, attrs=line_attrs(tok)
                    )
                    if title is None and level == 1:
                        title = heading
                i = _close_index(tokens, i) + 1
            elif tok.type == "paragraph_open":
                inline = tokens[i + 1]
                content = _inline_text(inline)
                children = [c for c in inline.children or [] if c.type != "softbreak"]
                if len(children) == 1 and children[0].type == "image":
                    builder.add(
                        ElementKind.FIGURE,
                        content,
                        page=0,
                        attrs={**line_attrs(tok), "src": children[0].attrs.get("src", "")},
                    )
                elif content.startswith("$$") and content.endswith("$$") and len(content) > 4:
                    builder.add(
                        ElementKind.EQUATION,
                        content.strip("$").strip(),
                        page=0,
                        attrs=line_attrs(tok),
                    )
                elif content:
                    kind = ElementKind.CAPTION if caption_target(content) else ElementKind.PARAGRAPH
                    builder.add(kind, content, page=0, attrs=line_attrs(tok))
                i = _close_index(tokens, i) + 1
            elif tok.type in ("bullet_list_open", "ordered_list_open"):
                end = _close_index(tokens, i)
                items = [
                    _inline_text(t) for t in tokens[i:end] if t.type == "inline" and t.children
                ]
                items = [x for x in items if x]
                if items:
                    builder.add(
                        ElementKind.LIST,
                        "\n".join(items),
                        page=0,
                        markdown=source_slice(tok),
                        attrs={**line_attrs(tok), "items": len(items)},
                    )
                i = end + 1
            elif tok.type == "table_open":
                end = _close_index(tokens, i)
                rows: list[list[str]] = []
                for t in tokens[i:end]:
                    if t.type == "tr_open":
                        rows.append([])
                    elif t.type == "inline" and rows:
                        rows[-1].append(_inline_text(t))
                if rows:
                    builder.add(
                        ElementKind.TABLE,
                        rows_to_text(rows),
                        page=0,
                        markdown=rows_to_markdown(rows),
                        attrs={**line_attrs(tok), "rows": len(rows), "cols": len(rows[0])},
                    )
                i = end + 1
            elif tok.type in ("fence", "code_block"):
                code = tok.content.rstrip("\n")
                if code.strip():
                    language = (tok.info or "").strip().split(" ")[0]
                    builder.add(
                        ElementKind.CODE,
                        code,
                        page=0,
                        markdown=f"```{language}\n{code}\n```",
                        attrs={**line_attrs(tok), "language": language},
                    )
                i += 1
            elif tok.type == "html_block":
                stripped = " ".join(_TAG.sub(" ", tok.content).split())
                if stripped:
                    builder.add(ElementKind.PARAGRAPH, stripped, page=0, attrs=line_attrs(tok))
                i += 1
            else:
                # Containers such as blockquotes are walked into; their paragraphs become
                # elements of their own.
                i += 1
        if not builder.elements:
            builder.warn("no text")
        return builder.build(title=title)
