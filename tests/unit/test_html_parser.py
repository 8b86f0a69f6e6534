from __future__ import annotations

import time
from pathlib import Path

import pytest

from docsight.document import ElementKind
from docsight.document.ids import bytes_sha256
from docsight.document.model import Document, Element, ParsedDocument
from docsight.errors import DocsightError, ParseError
from docsight.parsers import html as html_module
from docsight.parsers import parser_for
from docsight.parsers.base import SourceFile
from docsight.parsers.html import HtmlParser
from docsight.parsers.sniff import HTML, detect_media_type
from docsight.settings import ParseSettings
from fixtures.htmlgen import BLOG_INDEX, DOCS_PAGE, SAVED_REPORT

K = ElementKind


def _parse_full(data: str | bytes, name: str = "page.html") -> ParsedDocument:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    source = SourceFile(
        path=Path("/in") / name, data=raw, sha256=bytes_sha256(raw), media_type=HTML
    )
    return HtmlParser().parse(source, ParseSettings())


def _parse(data: str | bytes) -> Document:
    return _parse_full(data).document


def _body(fragment: str) -> Document:
    return _parse(f"<!doctype html><html><body>{fragment}</body></html>")


def _kinds(doc: Document) -> list[tuple[ElementKind, str]]:
    return [(e.kind, e.text) for e in doc.elements]


def _one(doc: Document, kind: ElementKind) -> Element:
    found = [e for e in doc.elements if e.kind == kind]
    assert len(found) == 1, _kinds(doc)
    return found[0]


def _all_text(doc: Document) -> str:
    return "\n".join(e.text for e in doc.elements) + "\n" + (doc.title or "")


# --- registration ----------------------------------------------------------------------------


def test_html_is_sniffed_and_registered() -> None:
    assert detect_media_type(b"  <!DOCTYPE html><html>", Path("x.txt")) == HTML
    parser = parser_for(HTML, Path("x.html"))
    assert isinstance(parser, HtmlParser)
    assert (parser.name, parser.version) == ("html", "2")


# --- structure -------------------------------------------------------------------------------


def test_headings_levels_sections_and_title() -> None:
    doc = _parse(
        "<html><head><title> Guide  | Site </title></head><body>"
        "<h1>Guide</h1><p>Intro.</p><h2>Install</h2><p>Run it.</p>"
        "<div role='heading' aria-level='3'>On Linux</div><p>apt.</p>"
        "<h2>Use</h2><p>Go.</p><h6>Deep</h6></body></html>"
    )
    assert doc.title == "Guide | Site"
    headings = [(e.text, e.level) for e in doc.elements if e.kind == K.HEADING]
    assert headings == [("Guide", 1), ("Install", 2), ("On Linux", 3), ("Use", 2), ("Deep", 6)]
    paths = {e.text: doc.section_path(e.section_id) for e in doc.elements if e.kind == K.PARAGRAPH}
    assert paths == {
        "Intro.": ["Guide"],
        "Run it.": ["Guide", "Install"],
        "apt.": ["Guide", "Install", "On Linux"],
        "Go.": ["Guide", "Use"],
    }
    # Without <title> the first h1 names the document.
    assert _body("<h2>Sub</h2><h1>Main title</h1><h1>Other</h1>").title == "Main title"


def test_paragraph_runs_keep_order_and_never_repeat_text() -> None:
    doc = _body(
        "<div>Loose <b>bold</b> and <a href='/x'>linked</a> text"
        "  <div><section><p>Nested   para\n with <em>inline</em> bits.</p></section>"
        "  trailing run</div>Line one<br>Line two</div><span>after</span>"
    )
    assert _kinds(doc) == [
        (K.PARAGRAPH, "Loose bold and linked text"),
        (K.PARAGRAPH, "Nested para with inline bits."),
        (K.PARAGRAPH, "trailing run"),
        (K.PARAGRAPH, "Line one\nLine two"),
        (K.PARAGRAPH, "after"),
    ]
    assert doc.elements[0].attrs["links"] == ["/x"]
    assert all(e.bbox is None and e.page == 0 for e in doc.elements)
    assert len(doc.pages) == 1


def test_inline_element_holding_blocks_is_walked_as_a_container() -> None:
    doc = _body("<a href='/card'><div><h3>Card</h3><p>Body text</p></div></a><p>Next</p>")
    assert _kinds(doc) == [(K.HEADING, "Card"), (K.PARAGRAPH, "Body text"), (K.PARAGRAPH, "Next")]


def test_blockquote_and_captions_in_paragraphs() -> None:
    doc = _body("<blockquote><p>Quoted words.</p></blockquote><p>Table 4: Costs by year</p>")
    assert _kinds(doc) == [(K.PARAGRAPH, "Quoted words."), (K.CAPTION, "Table 4: Costs by year")]


def test_lists_render_nested_markdown() -> None:
    doc = _body(
        "<ol start='3'><li>Third <b>step</b><ul><li>detail a</li><li>detail b"
        "<ol><li>deep</li></ol></li></ul></li><li value='7'>Seventh</li><li>Eighth</li></ol>"
    )
    element = _one(doc, K.LIST)
    assert element.markdown == (
        "3. Third step\n   - detail a\n   - detail b\n     1. deep\n7. Seventh\n8. Eighth"
    )
    assert element.text.split("\n") == ["Third step", "detail a", "detail b", "deep", "Seventh",
                                         "Eighth"]  # fmt: skip
    assert element.attrs["ordered"] is True


def test_definition_lists() -> None:
    doc = _body("<dl><dt>HOME</dt><dd>Where files go.</dd><dt>TOKEN</dt><dd>Secret.</dd></dl>")
    assert _one(doc, K.LIST).markdown == "- **HOME**: Where files go.\n- **TOKEN**: Secret."


def test_table_header_spans_caption_and_nested_tables() -> None:
    doc = _body(
        "<table><caption>Table 1: Prices</caption>"
        "<tfoot><tr><td>Total</td><td colspan='2'>9</td></tr></tfoot>"
        "<thead><tr><th>Item</th><th>Size</th><th>Price</th></tr></thead>"
        "<tbody><tr><td rowspan='2'>Tea</td><td>S</td><td>1</td></tr>"
        "<tr><td>L</td><td>2</td></tr>"
        "<tr><td>Cake</td><td colspan='2'><table><tr><td>one</td><td>slice</td></tr>"
        "<tr><td>6</td><td>each</td></tr></table></td></tr></tbody></table>"
    )
    assert [e.kind for e in doc.elements] == [K.CAPTION, K.TABLE]
    assert doc.elements[0].text == "Table 1: Prices"
    table = doc.elements[1]
    assert table.markdown == (
        "| Item | Size | Price |\n| --- | --- | --- |\n| Tea | S | 1 |\n| Tea | L | 2 |\n"
        "| Cake | one slice 6 each | one slice 6 each |\n| Total | 9 | 9 |"
    )
    assert table.attrs == {"rows": 5, "cols": 3, "header": True}
    assert table.text.startswith("Item | Size | Price\nTea | S | 1")


def test_layout_tables_are_read_as_flow() -> None:
    doc = _body(
        "<table><tr><td><h1>Report</h1></td></tr><tr><td><p>First.</p><p>Second.</p></td></tr>"
        "</table><table role='presentation'><tr><td>Left text</td><td>Right text</td></tr></table>"
        "<table><tr><td><h2>Side</h2></td><td><p>Main column</p></td></tr></table>"
    )
    assert _kinds(doc) == [
        (K.HEADING, "Report"),
        (K.PARAGRAPH, "First."),
        (K.PARAGRAPH, "Second."),
        (K.PARAGRAPH, "Left text"),
        (K.PARAGRAPH, "Right text"),
        (K.HEADING, "Side"),
        (K.PARAGRAPH, "Main column"),
    ]


def test_code_blocks_with_language() -> None:
    doc = _body(
        "<p>Use <code>pip</code> first.</p>"
        '<pre><code class="language-python">def f():\n    return "```"\n</code></pre>'
        "<div class='highlight-bash'><pre>echo hi</pre></div>"
        "<div><code>a = 1\nb = 2</code></div>"
    )
    assert [e.kind for e in doc.elements] == [K.PARAGRAPH, K.CODE, K.CODE, K.CODE]
    assert doc.elements[0].text == "Use pip first."
    python = doc.elements[1]
    assert python.text == 'def f():\n    return "```"'
    assert python.attrs["language"] == "python"
    assert python.markdown == '````python\ndef f():\n    return "```"\n````'
    assert doc.elements[2].attrs["language"] == "bash"
    assert doc.elements[3].text == "a = 1\nb = 2"
    assert doc.elements[3].attrs["language"] == ""


def test_figures_captions_and_images() -> None:
    doc = _body(
        "<figure><figcaption>Figure 2: Growth</figcaption>"
        "<img src='growth.png' alt='Revenue chart' width='600' height='400'></figure>"
        "<p>Text <img src='i.png' alt='icon' width='16' height='16'> here</p>"
        "<img src='https://t.example/p.gif' width='1' height='1' alt='tracker'>"
        "<img src='deco.png' alt=''><img src='photo.jpg' alt='IMG_0042.jpg'>"
        "<img src='team.jpg' alt='The team at the 2023 offsite'>"
        "<figure><table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>"
        "<figcaption>Table 9: Inside a figure</figcaption></figure>"
    )
    assert _kinds(doc) == [
        (K.FIGURE, "Revenue chart"),
        (K.CAPTION, "Figure 2: Growth"),
        (K.PARAGRAPH, "Text here"),
        (K.FIGURE, "The team at the 2023 offsite"),
        (K.CAPTION, "Table 9: Inside a figure"),
        (K.TABLE, "a | b\n1 | 2"),
    ]
    assert doc.elements[0].attrs["src"] == "growth.png"
    assert doc.elements[3].attrs == {"src": "team.jpg"}


def test_math_becomes_equation_unless_inline_in_prose() -> None:
    doc = _body(
        "<math display='block'><mi>E</mi><mo>=</mo><mi>m</mi><msup><mi>c</mi><mn>2</mn></msup>"
        "</math><p><math><mi>a</mi><mo>+</mo><mi>b</mi></math></p>"
        "<p>where <math><mi>x</mi></math> is small</p>"
    )
    assert _kinds(doc) == [
        (K.EQUATION, "E=mc2"),
        (K.EQUATION, "a+b"),
        (K.PARAGRAPH, "where x is small"),
    ]


def test_hidden_and_active_content_is_removed() -> None:
    doc = _parse(
        "<html><head><style>p{}</style><script>var secret1 = 1</script></head><body>"
        "<p>before <script>secret2()</script>after</p>"
        "<noscript>secret3</noscript><template><p>secret4</p></template>"
        "<svg><text>secret5</text></svg><iframe src='x'>secret6</iframe>"
        "<form><label>Name</label><input value='secret7'><select><option>secret8</option>"
        "</select><textarea>secret9</textarea><button>secret10</button></form>"
        "<div hidden>secret11</div><span aria-hidden='true'>secret12</span>"
        "<div style='color: red; display : none'>secret13</div>"
        "<p style='visibility:hidden'>secret14</p><dialog>secret15</dialog>"
        "<p>end</p></body></html>"
    )
    assert _kinds(doc) == [
        (K.PARAGRAPH, "before after"),
        (K.PARAGRAPH, "Name"),
        (K.PARAGRAPH, "end"),
    ]
    assert "secret" not in _all_text(doc)


def test_site_furniture_without_main() -> None:
    doc = _body(
        "<header><a href='/'>Acme</a> <nav><a href='/a'>A</a> <a href='/b'>B</a></nav></header>"
        "<section><header><h2>Section title</h2></header><p>Section body.</p></section>"
        "<nav>Prev | Next</nav><footer>© Acme</footer>"
    )
    assert _kinds(doc) == [
        (K.HEADER, "Acme\nA B"),
        (K.HEADING, "Section title"),
        (K.PARAGRAPH, "Section body."),
        (K.HEADER, "Prev | Next"),
        (K.FOOTER, "© Acme"),
    ]
    assert all(e.section_id is None for e in doc.elements if e.is_furniture)
    assert [e.text for e in doc.indexable_elements()] == ["Section title", "Section body."]


def test_main_is_preferred_and_the_rest_is_furniture() -> None:
    doc = _body(
        "<div class='top'>Banner text</div><aside>Sidebar links</aside>"
        "<div class='wrap'><main><header><p>Article header</p></header><h1>Body</h1>"
        "<p>Main text.</p><footer>Article footer</footer></main>"
        "<aside>Related</aside></div><p>Loose footer text</p>"
    )
    assert _kinds(doc) == [
        (K.HEADER, "Banner text"),
        (K.HEADER, "Sidebar links"),
        (K.PARAGRAPH, "Article header"),
        (K.HEADING, "Body"),
        (K.PARAGRAPH, "Main text."),
        (K.PARAGRAPH, "Article footer"),
        (K.FOOTER, "Related"),
        (K.FOOTER, "Loose footer text"),
    ]


def test_empty_main_shell_is_ignored() -> None:
    doc = _body("<main id='app'></main><div><h1>Server rendered</h1><p>Content.</p></div>")
    assert _kinds(doc) == [(K.HEADING, "Server rendered"), (K.PARAGRAPH, "Content.")]


def test_metadata_and_links() -> None:
    doc = _parse(
        "<html lang='de'><head><meta name='description' content=' Eine  Seite '>"
        "<meta name='author' content='Ada'><link rel='canonical' href='https://x.example/a'>"
        "</head><body><p><a href='https://x.example/b'>B</a> <a href='javascript:alert(1)'>J</a>"
        " <a href='#top'>T</a> <a href=' JavaScript:x'>U</a> <a name='n'>V</a></p></body></html>"
    )
    assert doc.metadata == {
        "language": "de",
        "description": "Eine Seite",
        "author": "Ada",
        "canonical": "https://x.example/a",
    }
    assert doc.elements[0].text == "B J T U V"
    assert doc.elements[0].attrs["links"] == ["https://x.example/b"]


# --- encodings -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ('<html><head><meta charset="shift_jis"></head><body><p>日本語のテキスト'.encode("cp932"),
         "日本語のテキスト"),
        ('<html><head><meta http-equiv="Content-Type" content="text/html; charset=windows-1251">'
         "</head><body><p>Привет, мир</p>".encode("cp1251"), "Привет, мир"),
        ('<?xml version="1.0" encoding="ISO-8859-1"?><html><body><p>Grüße – €</p>'.encode("cp1252"),
         "Grüße – €"),
        ("<html><body><p>Café naïve – “quotes” €</p></body></html>".encode("cp1252"),
         "Café naïve – “quotes” €"),
        ("\ufeff<html><body><p>Ελληνικά</p>".encode("utf-16-le"), "Ελληνικά"),
        ("\ufeff<html><body><p>déjà vu</p>".encode(), "déjà vu"),
        # A page re-saved as UTF-8 that kept its old declaration.
        ('<html><head><meta charset="iso-8859-1"></head><body><p>Zoë</p>'.encode(), "Zoë"),
    ],
)  # fmt: skip
def test_encodings(data: bytes, expected: str) -> None:
    assert [e.text for e in _parse(data).elements] == [expected]


def test_shared_encoding_samples(shared_data: Path) -> None:
    folder = shared_data / "badfiles" / "generated" / "text"
    if not folder.is_dir():
        pytest.skip("badfiles corpus not present")
    assert (
        _parse((folder / "html_sjis_meta.html").read_bytes()).elements[0].text == "日本語のテキスト"
    )
    cp1252 = _parse((folder / "html_cp1252_no_charset.html").read_bytes())
    assert cp1252.elements[0].text == "Café naïve – “quotes” €"


# --- limits and hostile input ----------------------------------------------------------------


def test_unparseable_input_raises_parse_error_naming_the_file() -> None:
    with pytest.raises(ParseError, match=r"broken\.html"):
        _parse_full(b"   ", name="broken.html")


def test_entity_doctype_is_neither_expanded_nor_shown() -> None:
    bomb = '<!DOCTYPE x [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;">]><p>&b;</p>'
    assert _kinds(_parse(bomb)) == [(K.PARAGRAPH, "&b;")]


def test_deep_nesting_is_bounded_and_warned() -> None:
    result = _parse_full("<html><body><p>start</p>" + "<div>" * 5000 + "deep" + "</div>" * 5000)
    assert result.document.elements[0].text == "start"
    assert any("nested too deeply" in w for w in result.warnings)
    # Deeper than the walk's own limit but within libxml2's: read as flat text.
    result = _parse_full("<p>start</p>" + "<span><div>" * 600 + "deep" + "</div></span>" * 600)
    assert [e.text for e in result.document.elements] == ["start", "deep"]


def test_element_and_table_caps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(html_module, "_MAX_ELEMENTS", 50)
    result = _parse_full("<html><body>" + "<p>para</p>" * 200)
    assert len(result.document.elements) == 50
    assert "document too large; the rest was not read" in result.warnings

    monkeypatch.setattr(html_module, "_MAX_TABLE_CELLS", 1000)
    bomb = "<table>" + "<tr><td colspan=1000 rowspan=65534>x</td><td>y</td></tr>" * 50 + "</table>"
    started = time.perf_counter()
    result = _parse_full("<html><body><p>before</p>" + bomb + "<p>after</p>")
    assert time.perf_counter() - started < 2
    assert any("table cut" in w for w in result.warnings)
    before, table, after = result.document.elements
    assert (before.text, after.text) == ("before", "after")
    assert table.kind == K.TABLE and table.attrs["cols"] <= 1000


def test_oversized_input_is_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(html_module, "_MAX_INPUT_CHARS", 200_000)
    result = _parse_full("<html><body><p>" + "word " * 100_000 + "</p><p>lost</p>")
    assert "lost" not in _all_text(result.document)
    assert result.document.elements[0].text.startswith("word word")
    assert any("first 200000 characters" in w for w in result.warnings)


def test_data_uris_are_not_kept() -> None:
    image = "data:image/png;base64," + "iVBORw0KGgo" * 100_000
    doc = _body(f"<figure><img src='{image}' alt='Chart of sales'></figure>")
    assert _one(doc, K.FIGURE).attrs["src"] == "data:"


@pytest.mark.shared_data
def test_hostile_corpus(shared_data: Path) -> None:
    folder = shared_data / "badfiles" / "generated" / "text"
    files = sorted(folder.glob("html_*.html"))
    if not files:
        pytest.skip("badfiles corpus not present")
    texts: dict[str, str] = {}
    for path in files:
        data = path.read_bytes()
        source = SourceFile(path=path, data=data, sha256=bytes_sha256(data), media_type=HTML)
        started = time.perf_counter()
        try:
            result = HtmlParser().parse(source, ParseSettings())
        except DocsightError:
            continue
        finally:
            assert time.perf_counter() - started < 2.0, path.name
        texts[path.name] = _all_text(result.document)
    scripts = texts["html_scripts.html"]
    assert "Visible heading" in scripts and "Visible paragraph." in scripts
    for bad in ("API_KEY", "IGNORE ALL", "template text", "noscript text", "alert", "passwd"):
        assert bad not in scripts
    assert "lol" not in texts["html_entity_doctype.html"].replace("&lol9;", "")
    assert texts["html_huge_attribute_2MB.html"].strip() == "x"


# --- realistic pages ---------------------------------------------------------------------------


def test_documentation_page() -> None:
    result = _parse_full(DOCS_PAGE)
    doc = result.document
    assert result.warnings == []
    assert doc.title == "Installing Acme CLI | Acme Docs"
    assert doc.metadata["canonical"] == "https://docs.acme.example/install/"
    kinds = [e.kind for e in doc.elements]
    # Site header, sidebar and breadcrumbs first; the ToC sidebar and site footer last.
    assert kinds[:4] == [K.HEADER] * 4 and kinds[-2:] == [K.FOOTER] * 2
    body = list(doc.indexable_elements())
    assert [e.kind for e in body] == [
        K.HEADING, K.PARAGRAPH, K.PARAGRAPH, K.PARAGRAPH,  # h1, lead, note title, note
        K.HEADING, K.CAPTION, K.TABLE,
        K.HEADING, K.PARAGRAPH, K.LIST,
        K.HEADING, K.CODE, K.FIGURE, K.CAPTION,
        K.HEADING, K.LIST, K.PARAGRAPH, K.PARAGRAPH,
    ]  # fmt: skip
    by_kind = {e.kind: e for e in body}
    assert by_kind[K.TABLE].markdown.splitlines()[-1] == (
        "| Windows | not supported yet | not supported yet |"
    )
    assert doc.section_path(by_kind[K.CODE].section_id) == [
        "Installing Acme CLI",
        "Install",
        "Verify the installation",
    ]
    assert by_kind[K.CODE].attrs["language"] == "console"
    assert by_kind[K.FIGURE].text == "Terminal showing the first run of acme"
    steps = next(e for e in body if e.kind == K.LIST)
    assert steps.markdown is not None and steps.markdown.startswith("1. With pip:")
    assert "   - download the archive" in steps.markdown
    text = _all_text(doc)
    assert "cookies" not in text and "dataLayer" not in text and "Search docs" not in text
    assert "Last updated on 3 March 2024." in [e.text for e in body]


def test_saved_report_in_windows_1252() -> None:
    doc = _parse(SAVED_REPORT.encode("cp1252"))
    assert doc.title == "Quarterly report Q3"
    table = _one(doc, K.TABLE)
    assert table.markdown is not None
    assert "| North | Q3 | 11.4 |" in table.markdown
    assert "| Zürich | Q3 | 2.5 € |" in table.markdown
    kinds = _kinds(doc)
    assert kinds[kinds.index((K.TABLE, table.text)) - 1] == (
        K.CAPTION,
        "Table 2: Revenue by region (EUR million)",
    )
    assert (K.PARAGRAPH, "Revenue grew by 12 % compared with Q2.\nCosts were flat.") in kinds
    assert (K.HEADING, "2.1 Outlook") in kinds and (K.EQUATION, "g=0.12") in kinds
    outlook = next(e for e in doc.elements if e.text == "The outlook for Q4 is stable.")
    assert doc.section_path(outlook.section_id) == ["2. Results by region", "2.1 Outlook"]


def test_blog_index_uses_its_articles() -> None:
    doc = _parse(BLOG_INDEX)
    assert doc.title == "Acme blog"
    assert [e.text for e in doc.indexable_elements()] == [
        "Release 2.1",
        "Faster installs and a new doctor command.",
        "Meet us at PyCon",
        "Find us at booth 12.",
    ]
    assert [e.kind for e in doc.elements if e.is_furniture] == [K.HEADER, K.FOOTER, K.FOOTER]


def test_page_behind_a_modal_is_not_hidden() -> None:
    doc = _body(
        "<div id='root' aria-hidden='true'><main><h1>Saved page</h1><p>Text.</p></main></div>"
        "<div role='dialog'><p>Accept cookies?</p></div>"
    )
    assert [e.text for e in doc.indexable_elements()] == ["Saved page", "Text."]


def test_text_is_normalised_after_parsing_not_before() -> None:
    # NFKC folds full-width brackets to "<" and ">": applied to markup they would become tags.
    doc = _body("<p>＜注意＞ ﬁle\u202e</p><pre>a\r\nb</pre>")
    assert _kinds(doc) == [(K.PARAGRAPH, "<注意> file"), (K.CODE, "a\nb")]
