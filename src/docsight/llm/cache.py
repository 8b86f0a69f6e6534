"""On-disk cache of chat completions (SQLite, stdlib only).

Keyed by the sha256 of the model name and the canonical JSON of the request, so a repeated
question over the same sources costs nothing. Each operation opens its own short-lived connection:
that is safe across threads without sharing a connection, and WAL mode plus a busy timeout lets
several processes (CLI, server, tests) read and write the same file. A cache failure is never an
error for the caller: lookups miss and writes are dropped, with a debug log line.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

_SCHEMA_VERSION = 1
_BUSY_TIMEOUT_S = 30.0


def cache_key(model: str, request: dict[str, Any]) -> str:
    """sha256 of the model and the request as canonical JSON (sorted keys, no whitespace)."""
    canonical = json.dumps(
        {"model": model, "request": request},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class ResponseCache:
    """A key → JSON-object store in one SQLite file. Opening is deferred to the first use."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._ready = False
        self._init_lock = threading.Lock()

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        self._ensure_schema()
        conn = sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_S, isolation_level=None)
        try:
            yield conn
        finally:
            conn.close()

    def _ensure_schema(self) -> None:
        if self._ready:
            return
        with self._init_lock:
            if self._ready:
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_S, isolation_level=None)
            try:
                # WAL is a property of the file, so setting it once serves every later connection
                # and lets readers proceed while another process writes.
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS responses ("
                    " key TEXT PRIMARY KEY,"
                    " model TEXT NOT NULL,"
                    " created REAL NOT NULL,"
                    " payload TEXT NOT NULL)"
                )
                conn.execute(f"PRAGMA user_version={_SCHEMA_VERSION}")
            finally:
                conn.close()
            self._ready = True

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            with self._connect() as conn:
                row = conn.execute("SELECT payload FROM responses WHERE key = ?", (key,)).fetchone()
        except (sqlite3.Error, OSError) as exc:
            logger.debug("LLM cache read failed (%s): %s", self.path, exc)
            return None
        if row is None:
            return None
        try:
            value = json.loads(row[0])
        except ValueError:
            logger.debug("LLM cache entry %s is corrupt; ignoring it", key[:12])
            return None
        return value if isinstance(value, dict) else None

    def put(self, key: str, model: str, payload: dict[str, Any]) -> None:
        data = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
        try:
            with self._connect() as conn:
                conn.execute(
                    "INSERT OR REPLACE INTO responses (key, model, created, payload)"
                    " VALUES (?, ?, ?, ?)",
                    (key, model, time.time(), data),
                )
        except (sqlite3.Error, OSError) as exc:
            logger.debug("LLM cache write failed (%s): %s", self.path, exc)

    def __len__(self) -> int:
        try:
            with self._connect() as conn:
                (count,) = conn.execute("SELECT COUNT(*) FROM responses").fetchone()
        except (sqlite3.Error, OSError):
            return 0
        return int(count)

    def clear(self) -> None:
        with self._connect() as conn:
            conn.execute("DELETE FROM responses")
