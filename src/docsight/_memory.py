"""Memory: giving what is freed back to the operating system between large pieces of work, and
measuring what a process holds.

glibc's allocator keeps the memory a process frees inside its heaps, in holes between blocks
still in use, and returns only what is free at the very top of a heap. Ingestion allocates and
frees a file's document, chunks and rows, and Lance writes and compacts from many threads, each
with heaps of its own: a process storing and optimizing 2,000-chunk files one after another
grew by about 45 MiB a file, though it held nothing of the files afterwards. ``malloc_trim``
returns the free pages in those holes; with it the growth was about 18 MiB a file
(benchmarks/results/compaction.md).

Arrow's buffers come from mimalloc by default, which keeps what is freed for itself, out of
``malloc_trim``'s reach. Ingestion builds and frees megabytes of Arrow rows per file, so it
takes them from the C library's allocator instead (:func:`system_arrow_pool`), in the parent:
its peak on a 1,000-page report fell by 40 MiB (large_pdf.md). Not in the parse workers, whose
peak rose by 20 to 30 MiB with it.

Both leave the cause in place: glibc raises its mmap threshold each time a mapped block is
freed (up to 32 MiB), so that later blocks of that size come from the heaps instead, where they
fragment them. Lance's compaction allocates and frees buffers of several MiB from many threads:
storing and optimizing 2,000-chunk files one after another, the process's resting memory still
grew by about 20 MiB a file with ``malloc_trim``, and not at all with the threshold held where
glibc starts it (:func:`hold_mmap_threshold`; benchmarks/results/store_writes.md).

What a process holds is read from ``/proc`` (:func:`process_memory`): by the supervisor for its
workers' limits, and by ingestion for the peak of each file (:class:`PeakMemory`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from types import TracebackType
from typing import Any

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


@cache
def _libc() -> Any | None:
    if not sys.platform.startswith("linux"):
        return None  # macOS and Windows allocators return memory on their own terms
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc if hasattr(libc, "malloc_trim") else None  # musl has no malloc_trim
    except OSError:
        return None


#: glibc's initial mmap threshold: blocks of 128 KiB and more get mappings of their own, which
#: go back to the system as soon as they are freed.
MMAP_THRESHOLD = 128 * 1024
_M_MMAP_THRESHOLD = -3  # mallopt's parameter number (malloc.h)


@cache
def hold_mmap_threshold() -> bool:
    """Keep glibc's mmap threshold at :data:`MMAP_THRESHOLD` for the rest of the process (setting
    it turns glibc's raising of it off); ``False`` where the C library has no ``mallopt``.

    Process-wide: large blocks cost a system call and fresh pages each. Ingestion's parent
    holds it (no stage of it got slower, large_pdf.md); its parse workers do not, as parsing a
    PDF, which renders page bitmaps of several MiB, took about 16 % more CPU with it."""
    libc = _libc()
    if libc is None or not hasattr(libc, "mallopt"):
        return False
    return bool(libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD))


def release_freed_memory() -> bool:
    """Return the pages the allocator holds free to the system; ``False`` where it cannot."""
    libc = _libc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True


@contextmanager
def system_arrow_pool() -> Iterator[None]:
    """New Arrow buffers come from the C library's allocator while the block runs (freed, they
    go back to the system with :func:`release_freed_memory`); the previous pool after it."""
    import pyarrow as pa

    previous = pa.default_memory_pool()
    pa.set_memory_pool(pa.system_memory_pool())
    try:
        yield
    finally:
        pa.set_memory_pool(previous)


def process_memory(pid: int | str = "self") -> tuple[float, float] | None:
    """``(resident, virtual)`` memory of a process in MiB, from ``/proc/<pid>/statm``; ``None``
    where there is no such file (another system, or the process is gone)."""
    try:
        with open(f"/proc/{pid}/statm") as f:
            size, resident = f.read().split()[:2]
    except (OSError, ValueError):
        return None
    return int(resident) * _PAGE / 2**20, int(size) * _PAGE / 2**20


class PeakMemory:
    """The highest resident memory of this process while a block runs, in MiB: looked at when
    it starts and ends and every ``interval`` seconds between, on a thread of its own.

    The kernel's own peak (VmHWM) covers the process's whole life, and resetting it would take
    it from anyone else measuring; a look every 50 ms costs a read of ``/proc`` each. A peak
    shorter than the interval can be missed. ``peak_mb`` is ``None`` where ``/proc`` is absent.
    """

    def __init__(self, interval: float = 0.05) -> None:
        self.interval = interval
        self.peak_mb: float | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _look(self) -> None:
        memory = process_memory()
        if memory is not None:
            self.peak_mb = max(self.peak_mb or 0.0, memory[0])

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._look()

    def __enter__(self) -> PeakMemory:
        self._look()
        if self.peak_mb is not None:  # nothing to sample without /proc
            self._thread = threading.Thread(target=self._run, name="docsight-peak", daemon=True)
            self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self._look()
