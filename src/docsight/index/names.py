"""Finding a document by what a user types: an id, a name, a path, or something close to them.

Names are matched from the strictest reading to the loosest, and the first reading that picks
exactly one document wins; a reading that picks several is an error listing them, never a
guess. A miss names the closest names, so a typo costs one more try, not a trip to ``docs``.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence
from pathlib import Path, PurePath

from docsight.errors import AmbiguousDocumentError, DocumentNotFoundError
from docsight.index.base import DocumentInfo

#: Shortest id prefix and shortest name prefix accepted (shorter ones match too much by chance).
MIN_ID_PREFIX = 6
MIN_NAME_PREFIX = 2
_SUGGESTIONS = 3


def _stem(name: str) -> str:
    return PurePath(name).stem.lower() if PurePath(name).suffix else name.lower()


def _readings(ref: str) -> list[tuple[str, Callable[[DocumentInfo], bool]]]:
    lowered = ref.lower()
    resolved = str(Path(ref).resolve()) if ref else ""
    return [
        ("id", lambda d: d.id == ref),
        ("name", lambda d: d.name == ref),
        ("path", lambda d: d.source == ref or d.source == resolved),
        ("name", lambda d: d.name.lower() == lowered),
        ("id prefix", lambda d: len(ref) >= MIN_ID_PREFIX and d.id.startswith(lowered)),
        ("name without extension", lambda d: _stem(d.name) == _stem(ref)),
        (
            "name prefix",
            lambda d: len(ref) >= MIN_NAME_PREFIX and d.name.lower().startswith(lowered),
        ),
    ]


def resolve_document(ref: str, docs: Sequence[DocumentInfo], collection: Path) -> DocumentInfo:
    """The one document ``ref`` names among ``docs``.

    Raises :class:`AmbiguousDocumentError` listing the candidates when a reading matches several,
    and :class:`DocumentNotFoundError` naming the closest names when nothing matches.
    """
    ref = ref.strip()
    for reading, match in _readings(ref):
        found = [d for d in docs if match(d)]
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            names = ", ".join(f"{d.name} ({d.id[:10]})" for d in found[:10])
            more = f" and {len(found) - 10} more" if len(found) > 10 else ""
            raise AmbiguousDocumentError(
                f"{ref!r} matches several documents by {reading}: {names}{more}; "
                "give more of the name, or the id"
            )
    close = suggestions(ref, docs)
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    listing = "" if docs else " (the collection is empty)"
    raise DocumentNotFoundError(
        f"no document {ref!r} in {collection}{listing}{hint} (`docsight docs` lists them)"
    )


def suggestions(ref: str, docs: Sequence[DocumentInfo], n: int = _SUGGESTIONS) -> list[str]:
    """Names of the documents closest to ``ref``, best first: spelled alike as a whole, at
    their start or in one of their words ("northwnd" finds "northwind-annual-report.pdf")."""
    scored = [(_closeness(ref.lower(), d.name), d.name) for d in docs]
    close = sorted((s for s in scored if s[0] >= 0.75), key=lambda s: (-s[0], s[1]))
    return list(dict.fromkeys(name for _, name in close))[:n]


def _closeness(ref: str, name: str) -> float:
    if not ref:
        return 0.0
    lowered = name.lower()
    words = [w for w in re.split(r"[^0-9a-z]+", lowered) if len(w) >= 3]
    candidates = [lowered, _stem(name), lowered[: len(ref)], *words]
    if len(ref) >= 3 and ref in lowered:
        return 0.9
    return max(difflib.SequenceMatcher(None, ref, c).ratio() for c in candidates)
