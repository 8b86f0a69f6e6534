"""Server-sent events, written by hand: a StreamingResponse of ``event:``/``data:`` frames.

Every ``data`` is one line of JSON (``json.dumps`` escapes newlines inside strings), so a frame
can never be split or forged by text from a document.
"""

from __future__ import annotations

import json
from typing import Any

#: No caching, and no buffering by a reverse proxy (nginx honours ``X-Accel-Buffering``).
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def sse(event: str, data: Any) -> bytes:
    payload = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return f"event: {event}\ndata: {payload}\n\n".encode()


def comment(text: str) -> bytes:
    """A comment frame: clients ignore it; it keeps idle connections and proxies open."""
    return f": {text}\n\n".encode()


__all__ = ["SSE_HEADERS", "comment", "sse"]
