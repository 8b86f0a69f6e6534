"""Text decoding and clean-up shared by the text-based parsers."""

from __future__ import annotations

import re
import unicodedata

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")
_SPACES = re.compile(r"[ \t\u00a0]+")


def decode_text(data: bytes) -> str:
    """Decode bytes of unknown encoding: BOMs first, then strict UTF-8, then detection."""
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8", errors="replace")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    best = from_bytes(data).best()
    if best is not None:
        return str(best)
    return data.decode("latin-1")


def clean_text(text: str) -> str:
    """Normalise newlines, drop control and bidi-override characters, apply NFKC.

    NFKC folds ligatures (ﬁ → fi) and full-width forms, which PDFs and office files are full of;
    bidi overrides are dropped because they can make displayed text differ from indexed text.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROL.sub("", text)
    text = _BIDI.sub("", text)
    return unicodedata.normalize("NFKC", text)


def squash_spaces(text: str) -> str:
    return _SPACES.sub(" ", text).strip()
