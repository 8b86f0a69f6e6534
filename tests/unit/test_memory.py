"""Freed memory goes back to the system between files."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from docsight import _memory


def _anon_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no RssAnon in /proc/self/status")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc and glibc")
def test_holes_left_by_freed_blocks_are_returned() -> None:
    if _memory._libc() is None:
        pytest.skip("this C library has no malloc_trim")
    # Blocks below glibc's mmap threshold come from the heap; keeping every tenth leaves the
    # freed ones as holes the allocator does not give back by itself.
    blocks = [bytearray(60_000) for _ in range(2000)]
    kept = blocks[::10]
    del blocks
    held = _anon_mib()
    assert _memory.release_freed_memory() is True
    assert held - _anon_mib() > 50, "the freed 100 MiB stayed resident"
    assert len(kept) == 200


def test_without_malloc_trim_nothing_is_done(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_memory, "_libc", lambda: None)
    assert _memory.release_freed_memory() is False


def test_arrow_uses_the_system_allocator_inside_the_block_only() -> None:
    import pyarrow as pa

    system = pa.system_memory_pool()
    before = pa.default_memory_pool().backend_name
    with _memory.system_arrow_pool():
        assert pa.default_memory_pool().backend_name == "system"
        held = system.bytes_allocated()
        inside = pa.array(range(100_000), type=pa.int64())
        assert system.bytes_allocated() - held >= inside.nbytes
    assert pa.default_memory_pool().backend_name == before
    if before != "system":
        held = system.bytes_allocated()
        outside = pa.array(range(100_000), type=pa.int64())
        assert system.bytes_allocated() - held < outside.nbytes


_PROBE = """
import ctypes, sys
from docsight import _memory

class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]

libc = _memory._libc()
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
libc.mallinfo2.restype = Info
if sys.argv[1] == "hold":
    assert _memory.hold_mmap_threshold()
libc.free(libc.malloc(24 << 20))  # glibc's own rule: the threshold rises to 24 MiB here
before = libc.mallinfo2().arena
block = libc.malloc(16 << 20)
print((libc.mallinfo2().arena - before) >> 20)
libc.free(block)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
@pytest.mark.parametrize("hold", [False, True])
def test_held_threshold_keeps_large_blocks_out_of_the_heap(hold: bool) -> None:
    """Once a 24 MiB block was freed, glibc serves a 16 MiB one from its heap (which fragments),
    unless the threshold is held: then the block is mapped apart, and unmapped when freed."""
    import subprocess

    libc = _memory._libc()
    if libc is None or not hasattr(libc, "mallinfo2"):
        pytest.skip("not glibc 2.33 or later")
    mode = "hold" if hold else "default"
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, mode], capture_output=True, text=True, check=True
    )
    grown_mib = int(out.stdout.strip())
    assert (grown_mib == 0) if hold else (grown_mib >= 8), (mode, grown_mib)


def test_without_mallopt_the_threshold_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_memory, "_libc", lambda: None)
    _memory.hold_mmap_threshold.cache_clear()
    try:
        assert _memory.hold_mmap_threshold() is False
    finally:
        _memory.hold_mmap_threshold.cache_clear()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_peak_held_only_inside_the_block_is_seen() -> None:
    resident, virtual = _memory.process_memory() or (0.0, 0.0)
    assert 0 < resident <= virtual
    with _memory.PeakMemory(interval=0.02) as peak:
        block = bytearray(b"x") * (96 * 2**20)  # written, so every page is resident
        time.sleep(0.3)  # several looks of the sampler while it is held
        del block
        after = _memory.process_memory()
    assert after is not None and peak.peak_mb is not None
    # Freed before the block ended: only the thread's looks can have seen it.
    assert peak.peak_mb - after[0] > 80, (peak.peak_mb, after)


def test_without_proc_there_is_no_peak(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_memory, "process_memory", lambda pid="self": None)
    with _memory.PeakMemory() as peak:
        pass
    assert peak.peak_mb is None and peak._thread is None


def test_a_process_that_is_gone_has_no_memory() -> None:
    assert _memory.process_memory(2**22 + 7) is None  # beyond the kernel's largest pid
