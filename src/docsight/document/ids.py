"""Content-hash identifiers.

Every id in docsight is derived from content, so re-running any step on the same input produces the
same ids, and a store can replace a document's rows instead of duplicating them.
"""

from __future__ import annotations

import hashlib

ID_HEX_CHARS = 32  # 128 bits: collisions are not a practical concern at any collection size.
_SEP = "\x1f"  # unit separator: cannot appear in the numeric parts and is rare in text.


def content_id(*parts: object) -> str:
    """A stable id for a tuple of values (strings, numbers, None)."""
    h = hashlib.sha256()
    for i, part in enumerate(parts):
        if i:
            h.update(_SEP.encode())
        h.update(("" if part is None else str(part)).encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:ID_HEX_CHARS]


def bytes_sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def document_id_from_sha256(sha256_hex: str) -> str:
    """A document's id is its file's content hash, shortened like every other id."""
    return sha256_hex[:ID_HEX_CHARS]
