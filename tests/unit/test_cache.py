from __future__ import annotations

import threading
from pathlib import Path

from docsight.cache import JsonCache, content_key


def test_namespaces_memo_count_and_clear(tmp_path: Path) -> None:
    cache = JsonCache(tmp_path / "c" / "artifacts.sqlite")
    calls = []

    def compute() -> dict[str, object]:
        calls.append(1)
        return {"lines": [["text", [0, 0, 10, 10], 0.9]]}

    key = content_key(b"image bytes", {"dpi": 200})
    first = cache.memo("ocr/v1", key, compute)
    second = cache.memo("ocr/v1", key, compute)
    assert first == second and len(calls) == 1
    # another version of the producer never sees the old entry
    cache.memo("ocr/v2", key, compute)
    assert len(calls) == 2
    assert cache.count() == 2 and cache.count("ocr/v1") == 1
    cache.clear("ocr/v1")
    assert cache.get("ocr/v1", key) is None and cache.get("ocr/v2", key) is not None


def test_content_key_is_stable_and_hashes_bytes() -> None:
    assert content_key(b"x", {"b": 1, "a": 2}) == content_key(b"x", {"a": 2, "b": 1})
    assert content_key(b"x") != content_key(b"y")
    assert len(content_key("anything")) == 64


def test_unserialisable_values_and_concurrent_writers(tmp_path: Path) -> None:
    cache = JsonCache(tmp_path / "a.sqlite")
    cache.put("ns", "k", {1, 2})  # not JSON: dropped, no error
    assert cache.get("ns", "k") is None

    def write(i: int) -> None:
        for j in range(20):
            cache.put("ns", f"{i}-{j}", j)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert cache.count("ns") == 80
