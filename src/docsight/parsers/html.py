"""Web pages and saved HTML reports, through lxml's libxml2 HTML parser.

lxml rather than an HTML5 tree builder (selectolax/Lexbor): on the hostile corpus Lexbor's tree
construction grows superlinearly with nesting depth (100k nested ``div``: 24 s), while libxml2 stops
at a fixed depth (256; 2048 on the retry below) in well under a millisecond, and lxml is already a
dependency. The price: content nested deeper than that is lost, with a warning.

Nothing is fetched or executed: the parser runs with ``no_network``, active content is removed
before the walk, and an HTML parser never expands DTD entities. Hidden content is removed too, so
text a reader never sees (a classic prompt-injection carrier) is never indexed.

Leaf blocks are emitted in document order: runs of inline text between block boundaries become
paragraphs, so text nested in several ``div`` levels appears exactly once.
"""

from __future__ import annotations

import codecs
import re
from itertools import islice
from typing import Any

from docsight.document.builder import DocumentBuilder
from docsight.document.captions import caption_target
from docsight.document.model import ElementKind, ParsedDocument
from docsight.document.tables import rows_to_markdown, rows_to_text
from docsight.errors import ParseError
from docsight.parsers.base import ParseContext, SourceFile
from docsight.parsers.textutil import clean_text, decode_text
from docsight.settings import ParseSettings

# Caps for pathological files, sized so the worst case stays within a second or two.
_MAX_INPUT_BYTES = 64 << 20
_MAX_INPUT_CHARS = 8_000_000
_MAX_NODES = 250_000  # DOM elements examined
_MAX_ELEMENTS = 20_000  # document elements emitted
_MAX_DEPTH = 200  # deeper subtrees are read as flat text, which keeps recursion bounded
_MAX_TABLE_CELLS = 100_000
_MAX_FURNITURE_CHARS = 2000

_BR = "\x00"  # hard line break marker; _CONTROL removes every NUL from the input
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_LISTS = frozenset("ul ol dl menu dir".split())
_CODE = frozenset("pre xmp listing plaintext".split())
_BLOCK = (
    frozenset(
        "address article aside blockquote body caption center dd details dialog div dt fieldset "
        "figcaption figure footer form header hgroup hr legend li main nav p section summary "
        "table tbody td tfoot th thead tr".split()
    )
    | _LISTS
    | _CODE
    | set(_HEADINGS)
)
#: Elements that are machinery (scripts, media, forms), never text to read.
ACTIVE_TAGS = frozenset(
    "script style noscript template svg iframe frame frameset object embed applet canvas audio "
    "video map input select textarea button option optgroup datalist meter progress head link "
    "meta title".split()
)
_SECTIONING = frozenset("article aside main nav section".split())
HIDDEN_STYLE = re.compile(
    r"display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0(?![.\d])", re.I
)
_META_CHARSET = re.compile(rb"<meta[^>]{0,512}?charset\s*=\s*[\"']?\s*([\w.:-]{1,40})", re.I)
_XML_CHARSET = re.compile(rb"^\s*<\?xml[^>]{0,200}?encoding\s*=\s*[\"']([\w.:-]{1,40})", re.I)
# An internal DTD subset is never HTML (entity bombs use it); browsers would show its tail as text.
_DOCTYPE_SUBSET = re.compile(r"^\s*<!doctype[^\[>]{0,500}\[.{0,200000}?\]\s*>", re.I | re.S)
# Saved pages ("Web page, complete") inline their images: megabytes of base64 each.
_DATA_URI = re.compile(r"data:[\w/+.-]{1,100};base64,[A-Za-z0-9+/=\s]{256,}")
_LANGUAGE = re.compile(r"(?:^|\s)(?:language|lang|highlight-source|highlight|brush:)-?([\w+#.]+)")
_FILE_NAME = re.compile(r"^[\w\-. ]+\.(?:png|jpe?g|gif|svg|webp|bmp)$", re.I)
_NOT_ALT = frozenset("image img photo picture icon logo spacer graphic".split())
_MIN_IMAGE_PX = 64  # smaller declared sizes are icons, bullets and tracking pixels
_BAD_HREF = ("#", "javascript:", "data:", "vbscript:")
# WHATWG decodes these labels as supersets; decoding strictly by the label fails on real pages.
_CHARSET_ALIASES = {
    "iso8859-1": "cp1252", "ascii": "cp1252", "shift_jis": "cp932", "x-sjis": "cp932",
    "gb2312": "gb18030", "gbk": "gb18030", "euc_kr": "cp949", "tis-620": "cp874",
    "iso8859-9": "cp1254", "utf-16": "utf-8", "utf-16-le": "utf-8", "utf-16-be": "utf-8",
}  # fmt: skip
_FURNITURE = {"header": ElementKind.HEADER, "banner": ElementKind.HEADER}
_FURNITURE |= {"footer": ElementKind.FOOTER, "contentinfo": ElementKind.FOOTER}
_META_KEYS = {"description": "description", "og:description": "description", "author": "author"}


def _charset(label: bytes) -> str | None:
    name = label.decode("ascii", "replace").strip().lower()
    try:
        name = codecs.lookup(_CHARSET_ALIASES.get(name, name)).name
    except LookupError:
        return None
    return _CHARSET_ALIASES.get(name, name)


def decode_html(data: bytes) -> str:
    """BOM, then UTF-8, then the declared charset (XML declaration or ``<meta>``), then detection.

    Valid UTF-8 wins over a declaration because pages re-saved as UTF-8 keep their old ``<meta>``,
    and legacy non-ASCII text that happens to be valid UTF-8 is vanishingly rare.
    """
    if data.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")):
        return decode_text(data)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    match = _XML_CHARSET.search(data[:4096]) or _META_CHARSET.search(data[:4096])
    declared = _charset(match.group(1)) if match else None
    if declared is not None and declared != "utf-8":
        try:
            return data.decode(declared)
        except UnicodeDecodeError:
            pass
    from charset_normalizer import from_bytes

    matches = from_bytes(data)
    best = matches.best()
    if best is None:
        return decode_text(data)
    # Short texts often tie between code pages; browsers then default to windows-1252.
    for m in matches:
        if m.encoding == "cp1252" and m.chaos <= best.chaos and m.coherence >= best.coherence:
            return str(m)
    return str(best)


def _squash(text: str) -> str:
    """HTML whitespace collapsing; hard breaks become newlines."""
    lines = (" ".join(part.split()) for part in text.split(_BR))
    return "\n".join(line for line in lines if line)


def _int(value: str | None, default: int, low: int, high: int) -> int:
    if value and value.strip().lstrip("+-").isdecimal():  # no exceptions on the hot path
        return min(high, max(low, int(value)))
    return default


def _role(el: Any) -> str:
    role = el.get("role")
    return role.strip().lower() if role else ""


def is_hidden(el: Any) -> bool:
    """Whether a browser would not show ``el`` (hidden, or active content never shown as text)."""
    return (
        el.tag in ACTIVE_TAGS
        or el.get("hidden") is not None
        or (el.tag == "dialog" and el.get("open") is None)
        # Modal libraries set aria-hidden on the whole page behind a dialog; saved pages keep it.
        or (
            (el.get("aria-hidden") or "").strip().lower() == "true"
            and next(el.iter("main", "article", "h1"), None) is None
        )
        or bool(HIDDEN_STYLE.search(el.get("style") or ""))
    )


def _heading_level(el: Any) -> int | None:
    if el.tag in _HEADINGS:
        return _HEADINGS[el.tag]
    return _int(el.get("aria-level"), 2, 1, 6) if _role(el) == "heading" else None


def _is_figure_image(el: Any) -> bool:
    if el.tag != "img":
        return False
    width = _int(el.get("width"), _MIN_IMAGE_PX, 0, 100_000)
    return min(width, _int(el.get("height"), _MIN_IMAGE_PX, 0, 100_000)) >= _MIN_IMAGE_PX


def _meaningful_alt(alt: str) -> bool:
    return bool(alt) and alt.lower() not in _NOT_ALT and not _FILE_NAME.match(alt)


def _blockish(el: Any) -> bool:
    """Block-level whatever the context (code elements are decided in context)."""
    tag = el.tag
    if tag in _BLOCK:
        return True
    if tag == "img":
        return _is_figure_image(el)
    if tag == "math":
        return (el.get("display") or "").lower() == "block"
    return _role(el) in ("heading", "navigation")


def _language(el: Any) -> str:
    for node in (el, el.find("code"), el.getparent()):
        if node is not None and node.get("data-lang"):
            return str(node.get("data-lang")).strip()
        match = _LANGUAGE.search(node.get("class") or "") if node is not None else None
        if match:
            return match.group(1).lower()
    return ""


def _mark_ancestors(el: Any, marked: set[Any]) -> None:
    parent = el.getparent()
    while parent is not None and parent not in marked:
        marked.add(parent)
        parent = parent.getparent()


def _drop(el: Any) -> None:
    """Remove ``el`` but keep the text that follows it (lxml moves a tail with its element)."""
    parent = el.getparent()
    if parent is None:
        return
    if el.tail:
        prev = el.getprevious()
        if prev is not None:
            prev.tail = (prev.tail or "") + el.tail
        else:
            parent.text = (parent.text or "") + el.tail
    parent.remove(el)


def _parse_tree(data: bytes, source: SourceFile, builder: DocumentBuilder) -> Any:
    from lxml import etree

    # etree's parser, not lxml.html's: its per-element class lookup in Python doubles walk time.
    for huge in (False, True):
        parser = etree.HTMLParser(
            encoding="utf-8", no_network=True, remove_comments=True, remove_pis=True,
            default_doctype=False, huge_tree=huge,
        )  # fmt: skip
        try:
            root = etree.fromstring(data, parser)
        except (etree.LxmlError, ValueError) as exc:
            raise ParseError(source.path, f"invalid HTML: {exc}") from exc
        if root is None:
            raise ParseError(source.path, "invalid HTML: no document element")
        if not any(e.type_name == "ERR_RESOURCE_LIMIT" for e in parser.error_log):
            return root
    builder.warn("HTML nested too deeply; content past the nesting limit was dropped")
    return root


class _Walker:
    """Turns the cleaned DOM into elements in reading order."""

    def __init__(self, builder: DocumentBuilder, body: Any) -> None:
        self.b = builder
        # Inline elements holding blocks are walked as containers; cells holding headings
        # belong to layout tables.
        self.roots, self.holds_block, self.holds_heading = _scan(body)
        self.around_roots: set[Any] = set()
        for root in self.roots:
            _mark_ancestors(root, self.around_roots)
        self.budget, self.truncated, self.in_figure = _MAX_NODES, False, 0
        self.buf: list[str] = []
        self.links: list[str] = []
        self.maths: list[str] = []
        self.seen_content = False
        self.first_h1: str | None = None

    def tick(self) -> bool:
        self.budget -= 1
        self.truncated = self.truncated or self.budget < 0
        return self.budget >= 0

    def emit(self, kind: ElementKind, text: str, **kwargs: Any) -> None:
        links, self.links = list(dict.fromkeys(self.links))[:50], []
        if len(self.b.elements) >= _MAX_ELEMENTS:
            self.truncated, self.budget = True, 0  # nothing more can be kept: stop walking
            return
        attrs: dict[str, Any] = kwargs.pop("attrs", None) or {}
        if links and kind not in (ElementKind.HEADER, ElementKind.FOOTER):
            attrs["links"] = links
        if kwargs.get("markdown"):
            kwargs["markdown"] = clean_text(kwargs["markdown"])
        self.b.add(kind, clean_text(text), page=0, attrs=attrs, **kwargs)

    def flush(self) -> None:
        text = _squash("".join(self.buf))
        maths, self.maths, self.buf = self.maths, [], []
        if not text:
            self.links = []
        elif len(maths) == 1 and text == _squash(maths[0]):
            self.emit(ElementKind.EQUATION, text)
        elif len(text) <= 300 and caption_target(text):
            self.emit(ElementKind.CAPTION, text)
        else:
            self.emit(ElementKind.PARAGRAPH, text)

    # --- text ------------------------------------------------------------------------------

    def gather(self, el: Any, out: list[str], depth: int, nested: list[Any] | None = None) -> None:
        """Append the text of ``el``, blocks and ``br`` as breaks; lists go to ``nested``."""
        if not self.tick():
            return
        if depth > _MAX_DEPTH:
            out.append(" ".join(el.itertext()))
            return
        tag = el.tag
        href = (el.get("href") or "").strip() if tag == "a" else ""
        if href and not href.lower().startswith(_BAD_HREF):
            self.links.append(href[:2000])
        out.append(_BR if tag in _BLOCK or tag == "br" else "")
        out.append(el.text or "")
        for child in el:
            if isinstance(child.tag, str):
                if nested is not None and child.tag in _LISTS:
                    nested.append(child)
                else:
                    self.gather(child, out, depth + 1, nested)
            out.append(child.tail or "")
        out.append(_BR if tag in _BLOCK else "")

    def text_of(self, el: Any, depth: int, nested: list[Any] | None = None) -> str:
        out: list[str] = []
        self.gather(el, out, depth, nested)
        return _squash("".join(out))

    def raw_text(self, el: Any, out: list[str], depth: int) -> None:
        if not self.tick() or depth > _MAX_DEPTH:
            out.append(" ".join(el.itertext()) if depth > _MAX_DEPTH else "")
            return
        out.append("\n" if el.tag == "br" else el.text or "")
        for child in el:
            if isinstance(child.tag, str):
                self.raw_text(child, out, depth + 1)
            out.append(child.tail or "")

    # --- structure -------------------------------------------------------------------------

    def outside(self, el: Any, depth: int) -> None:
        """Walk an ancestor of the main content: whatever does not lead to it is furniture."""
        for child in el:
            if not isinstance(child.tag, str) or not self.tick():
                continue
            if child in self.roots:
                self.flow(child, depth + 1)
                self.flush()
                self.seen_content = True
            elif child in self.around_roots:
                self.outside(child, depth + 1)
            else:
                self.furniture(child, depth + 1)

    def furniture(self, el: Any, depth: int) -> None:
        text = self.text_of(el, depth)[:_MAX_FURNITURE_CHARS]
        by_position = ElementKind.FOOTER if self.seen_content else ElementKind.HEADER
        kind = _FURNITURE.get(el.tag) or _FURNITURE.get(_role(el)) or by_position
        if text:
            self.emit(kind, text, attrs={"tag": el.tag})

    def flow(self, el: Any, depth: int) -> None:
        """Inline content joins the current run of text; every block ends it."""
        self.buf.append(el.text or "")
        for child in el:
            if not isinstance(child.tag, str) or not self.tick():
                pass
            elif depth > _MAX_DEPTH:
                self.buf.append(" ".join(child.itertext()))
            elif _blockish(child) or self.is_code_block(child):
                self.flush()
                self.block(child, depth + 1)
            elif child.tag == "math":
                self.maths.append(self.text_of(child, depth + 1))
                self.buf.append(f" {self.maths[-1]} ")
            elif child in self.holds_block:
                self.flow(child, depth + 1)
            else:
                self.gather(child, self.buf, depth + 1)
            self.buf.append(child.tail or "")

    def is_code_block(self, el: Any) -> bool:
        """A ``code`` element standing alone in its block, multi-line or with a language."""
        if el.tag != "code" or (el.tail or "").strip() or "".join(self.buf).strip():
            return False
        return "\n" in "".join(el.itertext()).strip() or bool(
            _LANGUAGE.search(el.get("class") or "")
        )

    def block(self, el: Any, depth: int) -> None:
        tag = el.tag
        level = _heading_level(el)
        if level:
            text = self.text_of(el, depth).replace("\n", " ")
            if text:
                self.emit(ElementKind.HEADING, text, level=level)
                self.first_h1 = self.first_h1 or (text if level == 1 else None)
        elif tag == "nav" or _role(el) == "navigation" or self.is_site_furniture(el):
            self.furniture(el, depth)
        elif tag in _LISTS:
            md: list[str] = []
            items: list[str] = []
            self.list_lines(el, depth, "", md, items)
            if items:
                attrs = {"items": len(items), "ordered": tag == "ol"}
                self.emit(ElementKind.LIST, "\n".join(items), markdown="\n".join(md), attrs=attrs)
        elif tag == "table":
            self.table(el, depth)
        elif tag in _CODE or tag == "code":
            self.code(el, depth)
        elif tag == "figure":
            self.figure(el, depth)
        elif tag == "img":
            self.image(el)
        elif tag in ("math", "figcaption", "caption"):
            text = self.text_of(el, depth)
            kind = ElementKind.EQUATION if tag == "math" else ElementKind.CAPTION
            if text:
                self.emit(kind, text)
        elif tag != "hr":
            self.flow(el, depth)
            self.flush()

    def is_site_furniture(self, el: Any) -> bool:
        """A page-wide header or footer: one outside sectioning content, when there is no main."""
        if self.roots or (el.tag not in _FURNITURE and _role(el) not in _FURNITURE):
            return False
        return not any(a.tag in _SECTIONING for a in el.iterancestors())

    def list_lines(self, el: Any, depth: int, indent: str, md: list[str], items: list[str]) -> None:
        number = _int(el.get("start"), 1, -(10**9), 10**9)
        term = False
        for child in el:
            if not isinstance(child.tag, str) or not self.tick():
                continue
            if child.tag in _LISTS and depth <= _MAX_DEPTH:
                self.list_lines(child, depth + 1, indent + "  ", md, items)
                continue
            nested: list[Any] = []
            text = self.text_of(child, depth + 1, nested).replace("\n", " ")
            marker = "-"
            if text and child.tag == "dd" and term:
                md[-1] += f": {text}"
            elif text:
                if el.tag == "ol":
                    number = _int(child.get("value"), number, -(10**9), 10**9)
                    marker, number = f"{number}.", number + 1
                md.append(f"{indent}{marker} {f'**{text}**' if child.tag == 'dt' else text}")
            items.extend([text] if text else [])
            term = child.tag == "dt"
            for sub in nested:
                # Indented to the content column of the item, as CommonMark wants.
                self.list_lines(sub, depth + 1, indent + " " * (len(marker) + 1), md, items)

    def table(self, el: Any, depth: int) -> None:
        sections: dict[str, list[Any]] = {"thead": [], "tbody": [], "tfoot": []}
        captions = [c for c in el if c.tag == "caption"]
        for child in el:
            if child.tag == "tr":
                sections["tbody"].append(child)
            elif child.tag in sections:
                sections[child.tag].extend(r for r in child if r.tag == "tr")
        # Browsers render <tfoot> last wherever it appears in the source.
        trs = sections["thead"] + sections["tbody"] + sections["tfoot"]
        cells = [[c for c in tr if c.tag in ("td", "th")] for tr in trs]
        width = max((sum(_int(c.get("colspan"), 1, 1, 1000) for c in r) for r in cells), default=0)
        for caption in captions[:1]:
            self.block(caption, depth + 1)
        if (
            _role(el) in ("presentation", "none")
            or width == 1
            or any(c in self.holds_heading for row in cells for c in row)
        ):
            # A layout table: its cells are ordinary flow.
            for cell in (c for row in cells for c in row):
                self.flow(cell, depth + 2)
                self.flush()
            return
        grid: dict[tuple[int, int], str] = {}
        cut = False
        for r, row in enumerate(cells):
            c = 0
            for cell in row[: _MAX_TABLE_CELLS - len(grid)]:
                while (r, c) in grid:
                    c += 1
                colspan = _int(cell.get("colspan"), 1, 1, 1000)
                rowspan = _int(cell.get("rowspan"), 1, 0, 65534) or len(trs) - r  # 0: to the end
                rowspan = min(rowspan, len(trs) - r)
                if len(grid) + colspan * rowspan > _MAX_TABLE_CELLS:
                    colspan, rowspan, cut = 1, 1, True  # a span bomb: keep the text only
                text = self.text_of(cell, depth + 2).replace("\n", " ")
                grid.update({(r + i, c + j): text for i in range(rowspan) for j in range(colspan)})
                c += colspan
        n_rows = 1 + max((r for r, _ in grid), default=-1)
        n_cols = 1 + max((c for _, c in grid), default=-1)
        if n_rows * n_cols > _MAX_TABLE_CELLS:  # a few wide rows must not make a huge rectangle
            n_cols, cut = max(1, _MAX_TABLE_CELLS // n_rows), True
        if cut or len(grid) >= _MAX_TABLE_CELLS:
            self.b.warn(f"table cut at {_MAX_TABLE_CELLS} cells")
        rows = [[grid.get((r, c), "") for c in range(n_cols)] for r in range(n_rows)]
        header = bool(sections["thead"]) or bool(
            cells and cells[0] and all(c.tag == "th" for c in cells[0])
        )
        markdown = rows_to_markdown(rows)
        if markdown:
            attrs = {"rows": n_rows, "cols": n_cols, "header": header}
            self.emit(ElementKind.TABLE, rows_to_text(rows), markdown=markdown, attrs=attrs)

    def code(self, el: Any, depth: int) -> None:
        out: list[str] = []
        self.raw_text(el, out, depth)
        code = "".join(out)
        code = (code[1:] if code.startswith("\n") else code).rstrip()  # HTML drops that newline
        if code.strip():
            language = _language(el)
            fence = "`" * max(3, 1 + max((len(m) for m in re.findall(r"`+", code)), default=0))
            markdown = f"{fence}{language}\n{code}\n{fence}"
            self.emit(ElementKind.CODE, code, markdown=markdown, attrs={"language": language})

    def image(self, el: Any) -> None:
        alt = " ".join((el.get("alt") or "").split())
        if _meaningful_alt(alt) or self.in_figure:
            src = (el.get("src") or "").strip()
            attrs = {"src": "data:" if src.startswith("data:") else src[:2000]}
            attrs.update({k: el.get(k) for k in ("width", "height", "title") if el.get(k)})
            self.emit(ElementKind.FIGURE, alt if _meaningful_alt(alt) else "", attrs=attrs)

    def figure(self, el: Any, depth: int) -> None:
        captions = [c for c in el if c.tag == "figcaption"]
        text = " ".join(self.text_of(c, depth + 1) for c in captions).strip()
        for caption in captions:
            _drop(caption)
        # A table's caption goes above it, like <caption>; an image's below.
        above = el.find(".//table") is not None
        if text and above:
            self.emit(ElementKind.CAPTION, text)
        self.in_figure += 1
        self.flow(el, depth)
        self.flush()
        self.in_figure -= 1
        if text and not above:
            self.emit(ElementKind.CAPTION, text)


def _metadata(root: Any) -> dict[str, str]:
    meta = {"language": root.get("lang").strip()[:50]} if root.get("lang") else {}
    for el in islice(root.iter("meta"), 200):
        key = _META_KEYS.get((el.get("name") or el.get("property") or "").strip().lower())
        content = " ".join((el.get("content") or "").split())
        if key and content and key not in meta:
            meta[key] = content[:500]
    for el in islice(root.iter("link"), 200):
        if (el.get("rel") or "").lower() == "canonical" and el.get("href"):
            meta["canonical"] = el.get("href").strip()[:2000]
            break
    return meta


def _scan(body: Any) -> tuple[set[Any], set[Any], set[Any]]:
    """Drop hidden and active content; find ``main`` (else ``article``) and the block holders."""
    doomed: list[Any] = []
    mains: list[Any] = []
    articles: list[Any] = []
    holds_block: set[Any] = set()
    holds_heading: set[Any] = set()
    for el in islice(body.iter(), _MAX_NODES):
        if not isinstance(el.tag, str) or el is body:
            continue
        if is_hidden(el):
            doomed.append(el)
            continue
        if el.tag == "main" or _role(el) == "main":
            mains.append(el)
        elif el.tag == "article":
            articles.append(el)
        if _blockish(el):
            _mark_ancestors(el, holds_block)
        if _heading_level(el):
            _mark_ancestors(el, holds_heading)
    for el in doomed:
        _drop(el)
    candidates = set(mains or articles[:1000])
    roots = set()
    for el in candidates:
        ancestors = list(el.iterancestors())
        # Outermost only, still attached after the drop, shallow enough for the walk, not an
        # empty shell (a page rendered by script).
        if (
            not candidates.intersection(ancestors)
            and body in ancestors
            and len(ancestors) < _MAX_DEPTH
            and "".join(el.itertext()).strip()
        ):
            roots.add(el)
    return roots, holds_block, holds_heading


class HtmlParser:
    name = "html"
    # 2: text styled to zero size is dropped like other hidden text
    version = "2"

    def parse(
        self, source: SourceFile, settings: ParseSettings, context: ParseContext | None = None
    ) -> ParsedDocument:
        builder = source.builder(f"{self.name}/{self.version}")
        data = source.data
        if len(data) > _MAX_INPUT_BYTES:
            cut = data.rfind(b"<", _MAX_INPUT_BYTES - (1 << 20), _MAX_INPUT_BYTES)
            data = data[: cut if cut > 0 else _MAX_INPUT_BYTES]
            builder.warn(f"only the first {_MAX_INPUT_BYTES >> 20} MB were read")
        # clean_text (NFKC) runs on extracted text only: on markup it would turn full-width
        # brackets in CJK prose into tags.
        text = _DATA_URI.sub("data:,", _CONTROL.sub("", decode_html(data)))
        text = _DOCTYPE_SUBSET.sub("<!DOCTYPE html>", text, count=1)
        if len(text) > _MAX_INPUT_CHARS:
            # Cut before a tag where one is near, so no tag is cut in half.
            cut = text.rfind("<", _MAX_INPUT_CHARS - 100_000, _MAX_INPUT_CHARS)
            text = text[: cut if cut > 0 else _MAX_INPUT_CHARS]
            builder.warn(f"only the first {_MAX_INPUT_CHARS} characters were read")
        root = _parse_tree(text.encode("utf-8", "replace"), source, builder)
        title_el = root.find(".//title")
        title = " ".join(title_el.itertext()).split() if title_el is not None else []
        metadata = _metadata(root)
        body = root.find("body")
        body = root if body is None else body
        builder.add_page()
        walker = _Walker(builder, body)
        try:
            if walker.roots:
                walker.outside(body, 0)
            else:
                walker.flow(body, 0)
                walker.flush()
        except RecursionError as exc:  # a safety net only: the walk bounds its own depth
            raise ParseError(source.path, "HTML nested too deeply") from exc
        if walker.truncated:
            builder.warn("document too large; the rest was not read")
        if not builder.elements:
            builder.warn("no text")
        title_text = clean_text(" ".join(title) or walker.first_h1 or "")
        return builder.build(title=title_text or None, metadata=metadata)
