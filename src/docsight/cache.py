"""A persistent JSON cache in one SQLite file (stdlib only), shared by every component.

Model outputs that are expensive and deterministic (chat completions, OCR, layout detection, table
structure, descriptions) are stored under a *namespace* that names the producer and its version
("ocr/rapidocr-3.10/ppocrv6", "llm") and a *key* derived from the content. Changing a producer's
version changes its namespace, so stale entries are never read.

Each operation opens its own short-lived connection: safe across threads without sharing one, and
WAL mode plus a busy timeout let several processes use the same file. A cache failure is never an
error for the caller: lookups miss and writes are dropped, with a debug log line.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

logger = logging.getLogger(__name__)

_SCHEMA_VERSION = 1
_BUSY_TIMEOUT_S = 30.0

T = TypeVar("T")


def content_key(*parts: object) -> str:
    """sha256 of the parts as canonical JSON (sorted keys, no whitespace); bytes are hashed."""
    normalised = [hashlib.sha256(p).hexdigest() if isinstance(p, bytes) else p for p in parts]
    canonical = json.dumps(normalised, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class JsonCache:
    """(namespace, key) → JSON value. The file is created on first use."""

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
                # WAL is a property of the file: set once, it serves every later connection and
                # lets readers proceed while another process writes.
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS entries ("
                    " namespace TEXT NOT NULL,"
                    " key TEXT NOT NULL,"
                    " created REAL NOT NULL,"
                    " payload TEXT NOT NULL,"
                    " PRIMARY KEY (namespace, key))"
                )
                conn.execute(f"PRAGMA user_version={_SCHEMA_VERSION}")
            finally:
                conn.close()
            self._ready = True

    def get(self, namespace: str, key: str) -> Any | None:
        try:
            with self._connect() as conn:
                row = conn.execute(
                    "SELECT payload FROM entries WHERE namespace = ? AND key = ?", (namespace, key)
                ).fetchone()
        except (sqlite3.Error, OSError) as exc:
            logger.debug("cache read failed (%s): %s", self.path, exc)
            return None
        if row is None:
            return None
        try:
            return json.loads(row[0])
        except ValueError:
            logger.debug("cache entry %s/%s is corrupt; ignoring it", namespace, key[:12])
            return None

    def put(self, namespace: str, key: str, value: Any) -> None:
        try:
            data = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
            with self._connect() as conn:
                conn.execute(
                    "INSERT OR REPLACE INTO entries (namespace, key, created, payload)"
                    " VALUES (?, ?, ?, ?)",
                    (namespace, key, time.time(), data),
                )
        except (sqlite3.Error, OSError, TypeError, ValueError) as exc:
            logger.debug("cache write failed (%s): %s", self.path, exc)

    def memo(self, namespace: str, key: str, compute: Callable[[], T]) -> T:
        """The cached value, or ``compute()`` stored and returned (it must be JSON-serialisable)."""
        cached = self.get(namespace, key)
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        value = compute()
        self.put(namespace, key, value)
        return value

    def count(self, namespace: str | None = None) -> int:
        query, args = "SELECT COUNT(*) FROM entries", ()  # type: tuple[str, tuple[str, ...]]
        if namespace is not None:
            query, args = query + " WHERE namespace = ?", (namespace,)
        try:
            with self._connect() as conn:
                (n,) = conn.execute(query, args).fetchone()
        except (sqlite3.Error, OSError):
            return 0
        return int(n)

    def clear(self, namespace: str | None = None) -> None:
        with self._connect() as conn:
            if namespace is None:
                conn.execute("DELETE FROM entries")
            else:
                conn.execute("DELETE FROM entries WHERE namespace = ?", (namespace,))
