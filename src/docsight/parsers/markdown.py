"""Markdown through markdown-it-py (CommonMark plus GFM tables).

Block tokens map one-to-one onto elements; source line ranges are kept in ``attrs["lines"]`` so a
citation can point back into the file. Raw HTML is reduced to its text and links and images are
never fetched; text inside raw HTML a browser would not show (``display:none``, ``hidden``) follows
its block as a flagged element, and scripts and comments are dropped.
"""

from __future__ import annotations

import re
from typing import Any

from docsight.document.captions import caption_target
from docsight.document.model import ElementKind, Hidden, ParsedDocument
from docsight.document.tables import rows_to_markdown, rows_to_text
from docsight.errors import ParseError
from docsight.parsers.base import ParseContext, SourceFile
from docsight.parsers.textutil import clean_text, decode_text
from docsight.settings import ParseSettings

_TAG = re.compile(r"<[^>]{0,2000}>")
_DOUBLE_SPACE = re.compile(r"(?<=\S)  +(?=\S)")
_OPEN_TAG = re.compile(r"<([A-Za-z][A-Za-z0-9-]{0,30})\b")
_CLOSE_TAG = re.compile(r"</([A-Za-z][A-Za-z0-9-]{0,30})\s*>")
_HIDDEN_ATTR = re.compile(r"\shidden(?:\s|=|/?>)", re.I)
_VOID = re.compile(r"^(?:br|img|hr|input|wbr|meta|link|source|area|col|embed)$", re.I)


def _inline_text(token: Any, hidden: list[str]) -> str:
    """The text a reader sees; text inside hidden inline HTML goes to ``hidden`` instead."""
    parts: list[str] = []
    concealed: list[str] = []
    # Tags opened hidden (``<span style="display:none">``) and not yet closed, innermost last.
    open_hidden: list[str] = []
    for child in token.children or []:
        out = concealed if open_hidden else parts
        if child.type in ("text", "code_inline"):
            out.append(child.content)
        elif child.type == "softbreak":
            out.append(" ")
        elif child.type == "hardbreak":
            out.append("\n")
        elif child.type == "image":
            alt = "".join(c.content for c in child.children or []) or child.content
            out.append(alt)
        elif child.type == "html_inline":
            tag = _OPEN_TAG.match(child.content)
            if tag and tag[1].lower() == "br":
                out.append("\n")
            elif tag and (open_hidden or _hidden_tag(child.content)) and not _VOID.match(tag[1]):
                open_hidden.append(tag[1].lower())
            else:
                closing = _CLOSE_TAG.match(child.content)
                if closing and open_hidden and closing[1].lower() == open_hidden[-1]:
                    open_hidden.pop()
    text = " ".join("".join(concealed).split())
    if text:
        hidden.append(text)
    # Dropped tags leave doubled spaces behind ("Hello <span hidden>x</span> world").
    return _DOUBLE_SPACE.sub(" ", "".join(parts)).strip()


def _hidden_tag(tag: str) -> bool:
    from docsight.parsers.html import HIDDEN_STYLE

    return bool(HIDDEN_STYLE.search(tag) or _HIDDEN_ATTR.search(tag))


def _html_block(content: str) -> tuple[str, str]:
    """``(visible text, hidden text)`` of a raw HTML block; scripts and comments are dropped."""
    import lxml.html
    from lxml import etree

    from docsight.parsers.html import ACTIVE_TAGS, is_hidden

    try:
        root = lxml.html.fragment_fromstring(content, create_parent="div")
    except (etree.ParserError, ValueError):
        return " ".join(_TAG.sub(" ", content).split()), ""
    hidden: list[str] = []
    # Parents come before children in document order, so a dropped subtree is known at once
    # (asking each element for its ancestors would be quadratic on deep nesting).
    gone: set[Any] = set()
    for el in list(root.iter()):
        if el is root:
            continue
        if el.getparent() in gone:
            gone.add(el)
            continue
        if not isinstance(el.tag, str) or el.tag in ACTIVE_TAGS:
            gone.add(el)  # comments, scripts, form machinery: never text
            el.drop_tree()
        elif is_hidden(el):
            gone.add(el)
            hidden.append(el.text_content())
            el.drop_tree()
    visible = " ".join(root.text_content().split())
    if not visible and not hidden and not gone:
        # libxml2 gives up past 256 levels of nesting and returns nothing; keep the words.
        return " ".join(_TAG.sub(" ", content).split()), ""
    return visible, " ".join(" ".join(hidden).split())


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
    # 2: hidden raw HTML flagged, scripts and comments dropped
    version = "2"

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

        hidden: list[str] = []

        def flush_hidden() -> None:
            """Hidden text found in the block just read follows it as an element of its own."""
            if hidden:
                flag = [Hidden.MARKED] if settings.flag_hidden_text else []
                builder.add(ElementKind.PARAGRAPH, "\n".join(hidden), page=0, hidden=flag)
                hidden.clear()

        i = 0
        while i < len(tokens):
            flush_hidden()
            tok = tokens[i]
            if tok.type == "heading_open":
                level = int(tok.tag[1])
                heading = _inline_text(tokens[i + 1], hidden)
                if heading:
                    builder.add(
                        ElementKind.HEADING, heading, page=0, level=level, attrs=line_attrs(tok)
                    )
                    if title is None and level == 1:
                        title = heading
                i = _close_index(tokens, i) + 1
            elif tok.type == "paragraph_open":
                inline = tokens[i + 1]
                content = _inline_text(inline, hidden)
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
                    _inline_text(t, hidden)
                    for t in tokens[i:end]
                    if t.type == "inline" and t.children
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
                        rows[-1].append(_inline_text(t, hidden))
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
                stripped, concealed = _html_block(tok.content)
                if stripped:
                    builder.add(ElementKind.PARAGRAPH, stripped, page=0, attrs=line_attrs(tok))
                if concealed:
                    hidden.append(concealed)
                i += 1
            else:
                # Containers such as blockquotes are walked into; their paragraphs become
                # elements of their own.
                i += 1
        flush_hidden()
        if not builder.elements:
            builder.warn("no text")
        return builder.build(title=title)
