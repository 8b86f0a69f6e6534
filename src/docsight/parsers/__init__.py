"""One parser per format, looked up by media type. Modules import lazily."""

from __future__ import annotations

from pathlib import Path

from docsight._registry import Registry
from docsight.errors import UnsupportedFormatError
from docsight.parsers import sniff
from docsight.parsers.base import Parser, SourceFile

PARSERS: Registry[Parser] = Registry("parsers")
PARSERS.register(sniff.PDF, "docsight.parsers.pdf:PdfParser", description="born-digital PDF")
PARSERS.register(sniff.MARKDOWN, "docsight.parsers.markdown:MarkdownParser", description="Markdown")
PARSERS.register(sniff.TEXT, "docsight.parsers.text:TextParser", description="plain text")
PARSERS.register(sniff.HTML, "docsight.parsers.html:HtmlParser", description="HTML")
PARSERS.register(sniff.DOCX, "docsight.parsers.docx:DocxParser", description="Word (DOCX)")
PARSERS.register(sniff.PPTX, "docsight.parsers.pptx:PptxParser", description="PowerPoint (PPTX)")
PARSERS.register(sniff.XLSX, "docsight.parsers.xlsx:XlsxParser", description="Excel (XLSX)")
for _image in (sniff.PNG, sniff.JPEG, sniff.TIFF):
    PARSERS.register(
        _image, "docsight.parsers.image:ImageParser", extra="ocr", description="images (OCR)"
    )


def parser_for(media_type: str, path: Path) -> Parser:
    if media_type not in PARSERS.names():
        raise UnsupportedFormatError(path, f"{media_type} files are not supported")
    parser: Parser = PARSERS.create(media_type)
    return parser


__all__ = ["PARSERS", "Parser", "SourceFile", "parser_for"]
