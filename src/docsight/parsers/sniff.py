"""Detect a file's type from its content, not its name."""

from __future__ import annotations

from pathlib import Path

from docsight.errors import ContentMismatchError, EncryptedDocumentError, UnsupportedFormatError

PDF = "application/pdf"
MARKDOWN = "text/markdown"
TEXT = "text/plain"
HTML = "text/html"
PNG = "image/png"
JPEG = "image/jpeg"
TIFF = "image/tiff"
ZIP = "application/zip"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
OLE = "application/x-ole-storage"

_MAGIC: list[tuple[bytes, str]] = [
    (b"\x89PNG\r\n\x1a\n", PNG),
    (b"\xff\xd8\xff", JPEG),
    (b"II*\x00", TIFF),
    (b"MM\x00*", TIFF),
    (b"PK\x03\x04", ZIP),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", OLE),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
]
_MARKDOWN_SUFFIXES = {".md", ".markdown", ".mdown", ".mkd"}
_HTML_MARKERS = (b"<!doctype html", b"<html", b"<head", b"<body")


def _looks_binary(head: bytes) -> bool:
    if not head:
        return False
    if head.startswith((b"\xff\xfe", b"\xfe\xff", b"\xef\xbb\xbf")):
        return False  # byte-order marks of UTF-16/UTF-8 text
    # A stray NUL or bell does not make a text file binary; a high share of control bytes does.
    controls = sum(1 for b in head if b < 32 and b not in (9, 10, 12, 13, 27))
    return controls / len(head) > 0.1


def detect_media_type(data: bytes, path: Path) -> str:
    """The media type of ``data``; the file name only separates Markdown from plain text."""
    head = data[:2048]
    # PDF readers accept the header anywhere in the first kilobyte, and real files use that.
    if b"%PDF-" in head[:1024]:
        return PDF
    for magic, media_type in _MAGIC:
        if head.startswith(magic):
            if media_type == ZIP:
                # Word, PowerPoint and Excel files are ZIP archives, told apart by their main part.
                from docsight.parsers.ooxml import ooxml_media_type

                return ooxml_media_type(data) or ZIP
            return media_type
    if _looks_binary(head):
        raise UnsupportedFormatError(path, "binary content of an unrecognised format")
    lowered = head.lower().lstrip()
    if lowered.startswith(_HTML_MARKERS):
        return HTML
    if path.suffix.lower() in _MARKDOWN_SUFFIXES:
        return MARKDOWN
    return TEXT


_IMAGES = frozenset({PNG, JPEG, TIFF})
_TEXTS = frozenset({TEXT, MARKDOWN, HTML})
#: What a file's extension promises. Extensions not listed promise nothing.
_EXPECTED: dict[str, frozenset[str]] = {
    ".pdf": frozenset({PDF}),
    ".docx": frozenset({DOCX}),
    ".docm": frozenset({DOCX}),
    ".pptx": frozenset({PPTX}),
    ".pptm": frozenset({PPTX}),
    ".xlsx": frozenset({XLSX}),
    ".xlsm": frozenset({XLSX}),
    **dict.fromkeys((".png", ".jpg", ".jpeg", ".tif", ".tiff"), _IMAGES),
    **dict.fromkeys((".md", ".markdown", ".txt", ".text", ".html", ".htm"), _TEXTS),
}
_NAMES = {
    PDF: "a PDF",
    MARKDOWN: "Markdown",
    TEXT: "plain text",
    HTML: "HTML",
    PNG: "a PNG image",
    JPEG: "a JPEG image",
    TIFF: "a TIFF image",
    ZIP: "a ZIP archive that is no Office file",
    DOCX: "a Word document",
    PPTX: "a PowerPoint presentation",
    XLSX: "an Excel workbook",
    OLE: "an OLE compound file (a password-protected Office file or a legacy .doc/.ppt/.xls)",
    "image/gif": "a GIF image",
}


#: The stream an encrypted Office Open XML file keeps in its OLE container (UTF-16 name).
_ENCRYPTION_INFO = "EncryptionInfo".encode("utf-16-le")


def check_name(media_type: str, path: Path, data: bytes = b"") -> str | None:
    """Refuse content that contradicts the file's extension (a PNG named ``.pdf``).

    A misnamed file is more often junk or a disguise than a document, and parsing it as what it
    is would surprise whoever named it. Image formats are interchangeable enough to only warn:
    returns the warning, or ``None``. Raises :class:`ContentMismatchError`, or
    :class:`EncryptedDocumentError` for a password-protected Word, PowerPoint or Excel file
    (which Office stores in an OLE container).
    """
    suffix = path.suffix.lower()
    expected = _EXPECTED.get(suffix)
    if expected is None or media_type in expected:
        return None
    if media_type == OLE and expected & {DOCX, PPTX, XLSX} and _ENCRYPTION_INFO in data:
        raise EncryptedDocumentError(path, "password protected (an encrypted Office file)")
    what = _NAMES.get(media_type, media_type)
    if expected is _IMAGES and media_type in _IMAGES:
        return f"named {suffix}, but the content is {what}; read as what it is"
    raise ContentMismatchError(
        path, f"named {suffix}, but the content is {what}; rename the file to match its content"
    )
