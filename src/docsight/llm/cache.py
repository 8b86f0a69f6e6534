"""The on-disk cache of chat completions.

Keyed by the sha256 of the model name and the canonical JSON of the request, so a repeated
question over the same sources costs nothing. Storage is the shared
:class:`docsight.cache.JsonCache` under the ``llm`` namespace; a cache failure is never an error
for the caller.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from docsight.cache import JsonCache, content_key

_NAMESPACE = "llm"


def cache_key(model: str, request: dict[str, Any]) -> str:
    """sha256 of the model and the request as canonical JSON (sorted keys, no whitespace)."""
    return content_key({"model": model, "request": request})


class ResponseCache:
    """Chat responses (JSON objects) by request key. Opening is deferred to the first use."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._store = JsonCache(self.path)

    def get(self, key: str) -> dict[str, Any] | None:
        value = self._store.get(_NAMESPACE, key)
        return value if isinstance(value, dict) else None

    def put(self, key: str, model: str, payload: dict[str, Any]) -> None:
        # The model is part of the key already; it is not stored separately.
        self._store.put(_NAMESPACE, key, payload)

    def __len__(self) -> int:
        return self._store.count(_NAMESPACE)

    def clear(self) -> None:
        self._store.clear(_NAMESPACE)
