"""Conversations kept in the collection: one JSON file per session under ``sessions/``.

A conversation is small, written a turn at a time and read whole, and it is nobody else's
business: a file per session, written to a temporary name and renamed, is whole after any
crash and needs no table or writer lock. The store only moves text; what a conversation holds
is ``agents.conversation``'s concern.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
from pathlib import Path

from docsight.errors import SessionNotFoundError, StoreError, UsageError

SESSIONS_DIR = "sessions"
_ID = re.compile(r"^[0-9a-f]{12}$")
#: A conversation file larger than this is refused rather than read (it was not written by us).
MAX_SESSION_BYTES = 16 * 2**20


def new_session_id() -> str:
    return secrets.token_hex(6)


class SessionStore:
    def __init__(self, collection: Path) -> None:
        self.root = collection / SESSIONS_DIR

    def _path(self, session_id: str) -> Path:
        if not _ID.match(session_id):
            raise UsageError(
                f"session id {session_id!r} is not one docsight gave out (12 hex digits)"
            )
        return self.root / f"{session_id}.json"

    def load(self, session_id: str) -> str:
        path = self._path(session_id)
        try:
            if path.stat().st_size > MAX_SESSION_BYTES:
                raise StoreError(f"conversation {session_id} ({path}) is too large to read")
            return path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise SessionNotFoundError(
                f"no conversation {session_id} in this collection"
                + (f"; there are {len(self.ids())}" if self.ids() else "")
            ) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise StoreError(f"cannot read conversation {session_id} ({path}): {exc}") from exc

    def save(self, session_id: str, text: str) -> None:
        path = self._path(session_id)
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".tmp-{path.name}-{os.getpid()}")
        try:
            with open(tmp, "w", encoding="utf-8") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise StoreError(f"cannot save conversation {session_id} ({path}): {exc}") from exc

    def ids(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(p.stem for p in self.root.glob("*.json") if _ID.match(p.stem))
