"""Giving freed memory back to the operating system between large pieces of work.

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
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any


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
