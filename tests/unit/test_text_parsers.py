from __future__ import annotations

from pathlib import Path

import pytest

from docsight.document import ElementKind
from docsight.document.ids import bytes_sha256
from docsight.errors import UnsupportedFormatError
from docsight.parsers import parser_for
from docsight.parsers.base import SourceFile
from docsight.parsers.sniff import MARKDOWN, PDF, PNG, TEXT, detect_media_type
from docsight.parsers.textutil import decode_text
from docsight.settings import ParseSettings


def _source(name: str, data: bytes) -> SourceFile:
    path = Path("/in") / name
    return SourceFile(
        path=path, data=data, sha256=bytes_sha256(data), media_type=detect_media_type(data, path)
    )


def _parse(name: str, data: bytes):  # type: ignore[no-untyped-def]
    source = _source(name, data)
    return parser_for(source.media_type, source.path).parse(source, ParseSettings()).document


def test_sniffing_uses_content_not_names() -> None:
    assert detect_media_type(b"junk\n%PDF-1.7\n...", Path("a.txt")) == PDF
    assert detect_media_type(b"\x89PNG\r\n\x1a\n....", Path("a.pdf")) == PNG
    assert detect_media_type(b"# Title\n\nText", Path("notes.md")) == MARKDOWN
    assert detect_media_type(b"# Title\n\nText", Path("notes.txt")) == TEXT
    assert detect_media_type("hé".encode("utf-16"), Path("u.txt")) == TEXT
    with pytest.raises(UnsupportedFormatError, match=r"/x.pdf.*binary"):
        detect_media_type(bytes(range(256)) * 4, Path("/x.pdf"))


def test_unsupported_type_error_names_the_file() -> None:
    with pytest.raises(UnsupportedFormatError, match=r"anim\.gif"):
        parser_for("image/gif", Path("anim.gif"))


def test_decode_handles_boms_and_legacy_encodings() -> None:
    assert decode_text("naïve".encode("utf-16")) == "naïve"
    assert decode_text(b"\xef\xbb\xbfhello") == "hello"
    french = "Le café crème était brûlé, mais la tarte à la crème était délicieuse. Ça dépend."
    assert decode_text(french.encode("cp1252")) == french


def test_markdown_structure() -> None:
    md = b"""# Guide

Intro paragraph with **bold** and a [link](http://example.com).

## Install

- step one
- step two

```bash
pip install thing
```

| a | b |
|---|---|
| 1 | 2 |

Table 1: Numbers.

![A chart of sales](chart.png)

<div>raw <b>html</b></div>
"""
    doc = _parse("guide.md", md)
    kinds = [e.kind for e in doc.elements]
    assert kinds == [
        ElementKind.HEADING,
        ElementKind.PARAGRAPH,
        ElementKind.HEADING,
        ElementKind.LIST,
        ElementKind.CODE,
        ElementKind.TABLE,
        ElementKind.CAPTION,
        ElementKind.FIGURE,
        ElementKind.PARAGRAPH,
    ]
    assert doc.title == "Guide"
    assert doc.elements[1].text == "Intro paragraph with bold and a link."
    table = doc.elements[5]
    assert table.markdown == "| a | b |\n| --- | --- |\n| 1 | 2 |"
    assert doc.section_path(table.section_id) == ["Guide", "Install"]
    assert doc.elements[4].attrs["language"] == "bash"
    assert doc.elements[7].attrs["src"] == "chart.png"
    assert doc.elements[8].text == "raw html"
    assert doc.elements[3].attrs["lines"][0] == 6


def test_text_headings_lists_and_paragraphs() -> None:
    text = (
        b"USER MANUAL\n\nSetup\n=====\n\nPlug it in.\nThen wait.\n\n"
        b"- one\n- two\n\nNotes\n-----\n\nDone."
    )
    doc = _parse("manual.txt", text)
    summary = [(e.kind, e.text) for e in doc.elements]
    assert summary == [
        (ElementKind.HEADING, "USER MANUAL"),
        (ElementKind.HEADING, "Setup"),
        (ElementKind.PARAGRAPH, "Plug it in. Then wait."),
        (ElementKind.LIST, "- one\n- two"),
        (ElementKind.HEADING, "Notes"),
        (ElementKind.PARAGRAPH, "Done."),
    ]
    done = doc.elements[-1]
    # "=" underlines are level 1 like the capitalised heading; "-" underlines are level 2.
    assert doc.section_path(done.section_id) == ["Setup", "Notes"]


def test_control_characters_and_bidi_overrides_are_removed() -> None:
    doc = _parse("evil.txt", "safe\u202etxt.exe\x00 text\x07".encode())
    assert doc.elements[0].text == "safetxt.exe text"
