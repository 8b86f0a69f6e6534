"""The on-disk response cache: keys, round trips, and safety across threads and processes."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

from docsight.llm.cache import ResponseCache, cache_key

REQUEST = {
    "messages": [{"role": "user", "content": "hi"}],
    "temperature": 0.0,
    "max_tokens": 16,
    "stop": None,
    "response_format": None,
}


def test_key_is_canonical_and_sensitive() -> None:
    reordered = dict(reversed(list(REQUEST.items())))
    assert cache_key("m", REQUEST) == cache_key("m", reordered)
    assert len(cache_key("m", REQUEST)) == 64
    assert cache_key("m", REQUEST) != cache_key("other", REQUEST)
    assert cache_key("m", REQUEST) != cache_key("m", {**REQUEST, "temperature": 0.5})
    assert cache_key("m", REQUEST) != cache_key("m", {**REQUEST, "response_format": "json_object"})
    assert cache_key("m", REQUEST) != cache_key("m", {**REQUEST, "stop": ["\n"]})


def test_round_trip_and_lazy_creation(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "llm.sqlite"
    cache = ResponseCache(path)
    assert not path.parent.exists()  # constructing must not touch the disk
    assert cache.get("missing") is None
    assert path.exists()
    cache.put("k", "m", {"text": "héllo", "usage": {"total_tokens": 3}})
    assert ResponseCache(path).get("k") == {"text": "héllo", "usage": {"total_tokens": 3}}
    cache.put("k", "m", {"text": "replaced"})
    assert cache.get("k") == {"text": "replaced"}
    assert len(cache) == 1
    cache.clear()
    assert len(cache) == 0


def test_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "llm.sqlite"
    ResponseCache(path).put("k", "m", {"text": "x"})
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_corrupt_entry_is_a_miss(tmp_path: Path) -> None:
    path = tmp_path / "llm.sqlite"
    cache = ResponseCache(path)
    cache.put("k", "m", {"text": "x"})
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE entries SET payload = 'not json' WHERE key = 'k'")
    assert cache.get("k") is None


def test_unusable_location_never_raises(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    cache = ResponseCache(blocker / "llm.sqlite")
    cache.put("k", "m", {"text": "x"})
    assert cache.get("k") is None


def test_many_threads(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "llm.sqlite")
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            for i in range(25):
                cache.put(f"{worker}-{i}", "m", {"text": str(i)})
                assert cache.get(f"{worker}-{i}") == {"text": str(i)}
        except BaseException as exc:  # surfaced below; a thread cannot fail the test itself
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(cache) == 200


def test_two_processes_share_the_file(tmp_path: Path) -> None:
    path = tmp_path / "llm.sqlite"
    script = textwrap.dedent(
        f"""
        from pathlib import Path
        from docsight.llm.cache import ResponseCache
        cache = ResponseCache(Path({str(path)!r}))
        for i in range(100):
            cache.put(f"child-{{i}}", "m", {{"text": str(i)}})
        """
    )
    child = subprocess.Popen([sys.executable, "-c", script])
    cache = ResponseCache(path)
    for i in range(100):
        cache.put(f"parent-{i}", "m", {"text": str(i)})
    assert child.wait(timeout=60) == 0
    assert len(cache) == 200
    assert cache.get("child-99") == {"text": "99"}
