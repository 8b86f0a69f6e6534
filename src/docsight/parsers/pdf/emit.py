"""Emission: every page's furniture, blocks and atoms, in reading order, through the builder.

Running headers come first on a page and footers last; consecutive list blocks of one column
become one LIST element; a table or figure takes the caption next to it into
``attrs["caption"]`` (the CAPTION element is emitted as well). Text read by OCR carries
``attrs["ocr"]`` and its mean ``attrs["confidence"]``. Text a reader would not see ends each page's
body as flagged paragraphs, one per set of reasons.
"""

from __future__ import annotations

import re
from typing import Any

from docsight.document.builder import DocumentBuilder
from docsight.document.captions import caption_target
from docsight.document.model import ElementKind, Font
from docsight.parsers.pdf.layout import Line, font_style
from docsight.parsers.pdf.page import Atom, Page
from docsight.parsers.pdf.reading import Block, starts_with_bullet
from docsight.parsers.pdf.roles import Role
from docsight.parsers.pdf.visibility import HiddenText
from docsight.parsers.textutil import clean_text, squash_spaces


def _ocr_attrs(page: Page, lines: list[Line]) -> dict[str, Any]:
    scores = [page.ocr_scores[id(ln)] for ln in lines if id(ln) in page.ocr_scores]
    if not scores:
        return {}
    return {"ocr": True, "confidence": round(sum(scores) / len(scores), 3)}


def _font(block: Block, ocr: bool = False) -> Font:
    name, size = block.dominant_font()
    style = font_style(name)
    return Font(
        # OCR knows no font: its size is estimated and its name would be made up.
        name=(name or None) if not ocr else None,
        size=round(size, 1),
        bold=style.bold,
        italic=style.italic,
        monospace=style.monospace,
    )


def _code_text(block: Block) -> str:
    """Code keeps its line breaks and, roughly, its indentation."""
    x0 = block.x0
    out = []
    for ln in block.lines:
        char_w = max(1.0, sum(w.x1 - w.x0 for w in ln.words) / max(1, ln.n_chars))
        out.append(" " * round((ln.x0 - x0) / char_w) + clean_text(ln.text))
    return "\n".join(out)


def _list_item(text: str) -> tuple[str, str]:
    """``(marker for Markdown, item text)``; bullet glyphs become ``-``."""
    m = re.match(r"^(\(?[0-9a-zA-Z]{1,4}[.)])\s+(.*)$", text)
    if m and not starts_with_bullet(text[:1] + " "):
        return m.group(1), m.group(2)
    return "-", text[1:].strip() if starts_with_bullet(text) else text


def emit(pages: list[Page], roles: dict[int, Role], builder: DocumentBuilder) -> None:
    for page in pages:
        furniture = sorted(
            page.furniture.items(), key=lambda kv: (page.lines[kv[0]].top, page.lines[kv[0]].x0)
        )
        for idx, zone in furniture:
            if zone == "header":
                _emit_furniture(page, page.lines[idx], ElementKind.HEADER, builder)
        units = page.units
        i = 0
        while i < len(units):
            unit = units[i]
            if isinstance(unit, Atom):
                _emit_atom(page, unit, units, i, roles, builder)
                i += 1
                continue
            role = roles.get(id(unit), Role(ElementKind.PARAGRAPH))
            if role.kind == ElementKind.LIST:
                items = [unit]
                while i + 1 < len(units):
                    nxt = units[i + 1]
                    if not (
                        isinstance(nxt, Block)
                        and roles.get(id(nxt)) == role
                        and nxt.column == unit.column
                    ):
                        break
                    items.append(nxt)
                    i += 1
                _emit_list(page, items, builder)
            else:
                _emit_block(page, unit, role, builder)
            i += 1
        for text in page.hidden:
            _emit_hidden(page, text, builder)
        for idx, zone in furniture:
            if zone == "footer":
                _emit_furniture(page, page.lines[idx], ElementKind.FOOTER, builder)


def _emit_furniture(page: Page, line: Line, kind: ElementKind, builder: DocumentBuilder) -> None:
    text = squash_spaces(clean_text(line.text))
    if text:
        builder.add(
            kind,
            text,
            page=page.index,
            bbox=page.bbox(line.x0, line.top, line.x1, line.bottom),
            attrs=_ocr_attrs(page, [line]),
        )


def _emit_hidden(page: Page, hidden: HiddenText, builder: DocumentBuilder) -> None:
    """All of a page's text hidden for the same reasons, as one flagged paragraph."""
    lines = hidden.lines
    text = "\n".join(t for t in (squash_spaces(clean_text(ln.text)) for ln in lines) if t)
    if not text:
        return
    builder.add(
        ElementKind.PARAGRAPH,
        text,
        page=page.index,
        bbox=page.bbox(
            min(ln.x0 for ln in lines),
            min(ln.top for ln in lines),
            max(ln.x1 for ln in lines),
            max(ln.bottom for ln in lines),
        ),
        attrs={"lines": len(lines)},
        hidden=hidden.reasons,
    )


def _emit_block(page: Page, block: Block, role: Role, builder: DocumentBuilder) -> None:
    kind = role.kind
    markdown = None
    if kind == ElementKind.CODE:
        text = _code_text(block)
        markdown = f"```\n{text}\n```"
    else:
        text = squash_spaces(clean_text(block.text))
    if not text.strip():
        return
    attrs = _ocr_attrs(page, block.lines)
    builder.add(
        kind,
        text,
        page=page.index,
        level=role.level,
        bbox=page.bbox(block.x0, block.top, block.x1, block.bottom),
        font=_font(block, bool(attrs)),
        markdown=markdown,
        attrs=attrs,
    )


def _emit_list(page: Page, blocks: list[Block], builder: DocumentBuilder) -> None:
    items = [_list_item(squash_spaces(clean_text(b.text))) for b in blocks]
    items = [(m, t) for m, t in items if t]
    if not items:
        return
    box = (
        min(b.x0 for b in blocks),
        min(b.top for b in blocks),
        max(b.x1 for b in blocks),
        max(b.bottom for b in blocks),
    )
    ocr = _ocr_attrs(page, [ln for b in blocks for ln in b.lines])
    builder.add(
        ElementKind.LIST,
        "\n".join(t for _, t in items),
        page=page.index,
        bbox=page.bbox(*box),
        font=_font(blocks[0], bool(ocr)),
        markdown="\n".join(f"{_markdown_marker(m)} {t}" for m, t in items),
        attrs={"items": len(items), **ocr},
    )


def _markdown_marker(marker: str) -> str:
    """Enumerators ("3.", "b)") stay; bullet glyphs of any shape become Markdown's "-"."""
    return marker if marker[:1].isalnum() else "-"


def _emit_atom(
    page: Page,
    atom: Atom,
    units: list[Block | Atom],
    i: int,
    roles: dict[int, Role],
    builder: DocumentBuilder,
) -> None:
    attrs = dict(atom.attrs)
    want = "table" if atom.kind == ElementKind.TABLE else "figure"
    for j in (i - 1, i + 1):
        if 0 <= j < len(units):
            other = units[j]
            if (
                isinstance(other, Block)
                and roles.get(id(other)) is not None
                and roles[id(other)].kind == ElementKind.CAPTION
            ):
                caption = squash_spaces(clean_text(other.text))
                if caption_target(caption) == want:
                    attrs["caption"] = caption
                    break
    builder.add(
        atom.kind,
        atom.text,
        page=page.index,
        bbox=page.bbox(atom.x0, atom.top, atom.x1, atom.bottom),
        markdown=atom.markdown,
        image_id=atom.image_id,
        attrs=attrs,
    )
