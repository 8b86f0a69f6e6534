"""Results of the workers on disk, so that the ingesting process does not hold them in memory.

A worker's output waits in the parent: a long PDF's page ranges until the last range is in, a
parsed document until its turn to be embedded and stored. Kept as bytes, that is 15 to 18 MiB
for each 1,000 pages of a report, twice over while a message is unpickled, and it grows with the
file. So the supervisor gives its workers a private directory (:class:`Spool`), a worker writes
what it returns there, one pickled value after another (:class:`SpoolWriter`), and the message
carries only where each value lies (:class:`Spooled`). The reader loads one value at a time,
unpickled as it is read.

The files are the supervisor's: it deletes a file once its file's turn is over and the whole
directory when it closes. A parent killed before that leaves its directory behind; the next
supervisor on the machine removes directories whose process is gone, an hour after their last
change. Only the supervisor's process and its workers use the directory (mode 0700).
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from docsight.errors import IngestError

log = logging.getLogger(__name__)

#: Spool directories are named ``<prefix><pid>-<random>`` in the system's temporary directory.
_PREFIX = "docsight-spool-"


@dataclass(frozen=True)
class Spooled:
    """Where one value lies: ``length`` bytes at ``offset`` of the file ``path``."""

    path: str
    offset: int
    length: int

    def read(self) -> bytes:
        """The value's bytes. Raises :class:`IngestError` when the file is gone or short (a
        cleaner emptied the temporary directory during the ingest)."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read(self.length)
        except OSError as exc:
            raise self._lost(exc.strerror or str(exc)) from exc
        if len(data) != self.length:
            raise self._lost(f"{len(data)} bytes at {self.offset}, not {self.length}")
        return data

    def unpickle(self) -> Any:
        """The value, unpickled as it is read from its file (:meth:`SpoolWriter.dump`): its
        bytes are never all held beside the objects made of them (a 5,000-page report's graph
        skeleton is 12 MiB pickled). Raises :class:`IngestError` as :meth:`read` does."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                value = pickle.load(f)  # our own workers' output
                end = f.tell()
        except OSError as exc:
            raise self._lost(exc.strerror or str(exc)) from exc
        except (EOFError, pickle.UnpicklingError) as exc:
            raise self._lost(f"cut short at {self.offset}: {exc}") from exc
        if end != self.offset + self.length:
            raise self._lost(f"{end - self.offset} bytes at {self.offset}, not {self.length}")
        return value

    def _lost(self, why: str) -> IngestError:
        return IngestError(
            self.path,
            f"the parse result could not be read back from the temporary file {self.path} "
            f"({why}); ingest the file again",
        )


def load_bytes(value: bytes | Spooled) -> bytes:
    """The bytes of ``value``, read from its file when it is spooled."""
    return value.read() if isinstance(value, Spooled) else value


def read_once(values: Sequence[bytes | Spooled]) -> Iterator[bytes]:
    """Each value's bytes in turn, read from its file if it is spooled. A list is emptied as it
    is read, so that a value is let go once its reader has taken it in."""
    for k in range(len(values)):
        value = values[k]
        if isinstance(values, list):
            values[k] = b""
        yield load_bytes(value)
        del value


class SpoolWriter:
    """One file of a spool directory, written value after value (by a worker)."""

    def __init__(self, directory: str, suffix: str) -> None:
        fd, self.path = tempfile.mkstemp(dir=directory, suffix=suffix)
        self._file: BinaryIO | None = os.fdopen(fd, "wb")
        self._offset = 0

    def put(self, data: bytes) -> Spooled:
        """Append ``data``; where it lies."""
        assert self._file is not None, "the spool file is closed"
        self._file.write(data)
        spooled = Spooled(self.path, self._offset, len(data))
        self._offset += len(data)
        return spooled

    def dump(self, value: Any) -> Spooled:
        """Append ``value`` pickled, written as it is pickled (no bytes of it all at once);
        where it lies, for :meth:`Spooled.unpickle`."""
        assert self._file is not None, "the spool file is closed"
        try:
            pickle.dump(value, self._file, protocol=pickle.HIGHEST_PROTOCOL)
        except BaseException:
            # What was written of it goes, so that the next value starts where it is noted; a
            # file that cannot be put right (a full disk) takes no more values.
            try:
                self._file.seek(self._offset)
                self._file.truncate()
            except OSError:
                self.discard()
            raise
        end = self._file.tell()
        spooled = Spooled(self.path, self._offset, end - self._offset)
        self._offset = end
        return spooled

    def flush(self) -> None:
        """Make what is written so far readable (from another handle) while the file stays
        open for more values."""
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        """Flush and close; the values can be read from here on."""
        if self._file is not None:
            self._file.close()
            self._file = None

    def discard(self) -> None:
        """Close and delete the file (a write failed: nothing of it will be read)."""
        with contextlib.suppress(OSError):
            self.close()
        with contextlib.suppress(OSError):
            os.unlink(self.path)

    def __enter__(self) -> SpoolWriter:
        return self

    def __exit__(self, exc_type: Any, *exc: object) -> None:
        if exc_type is None:
            self.close()
        else:
            self.discard()


class RowSpool:
    """Rows of float32 vectors written block by block to an unnamed temporary file, read back
    whole once all are in: a long document's chunk vectors wait there while it is embedded,
    until its graph's evolution needs them together. In memory they grew with the document
    (1.5 KiB a chunk) under the embedding's own working memory; read back, they are held only
    for the graph, whose peak is lower for all but the longest documents.

    The file is in the system's temporary directory (``TMPDIR``) and goes when it is closed or
    the process ends. Raises ``OSError`` when it cannot be written or read back."""

    def __init__(self, dim: int, directory: str | None = None) -> None:
        self.dim = dim
        self.rows = 0
        # Open across the document's windows; closed by close() (or with the object).
        self._file: BinaryIO | None = tempfile.TemporaryFile(dir=directory)  # noqa: SIM115

    def add(self, vectors: Any) -> None:
        """Append ``vectors`` (rows of ``dim`` numbers)."""
        import numpy as np

        block = np.ascontiguousarray(vectors, dtype=np.float32)
        if block.ndim != 2 or block.shape[1] != self.dim:
            raise ValueError(f"rows of {self.dim} numbers expected, not {block.shape}")
        assert self._file is not None, "the row spool is closed"
        if not len(block):
            return  # (a view of no bytes cannot be cast)
        self._file.write(block.data.cast("B"))
        self.rows += len(block)

    def read(self) -> Any:
        """Every row written, as one new ``(rows, dim)`` float32 array."""
        import numpy as np

        assert self._file is not None, "the row spool is closed"
        out = np.empty((self.rows, self.dim), dtype=np.float32)
        if not self.rows:
            return out
        self._file.flush()
        self._file.seek(0)
        view = out.data.cast("B")
        done = 0
        while done < view.nbytes:
            got = self._file.readinto(view[done:])  # type: ignore[attr-defined]
            if not got:
                raise OSError(f"the temporary file ended after {done} of {view.nbytes} bytes")
            done += got
        return out

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> RowSpool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def spool_bytes(data: bytes | Spooled, directory: str, suffix: str) -> bytes | Spooled:
    """``data`` written to a new file of ``directory``; ``data`` itself when that fails (a
    full or vanished temporary directory: the value then travels in the message)."""
    if isinstance(data, Spooled):
        return data
    try:
        with SpoolWriter(directory, suffix) as writer:
            return writer.put(data)
    except OSError as exc:
        log.warning("could not spool %d bytes to %s (%s); sending them", len(data), directory, exc)
        return data


def remove_file(path: str | None) -> None:
    """Delete one spool file, if it is still there."""
    if path:
        with contextlib.suppress(OSError):
            os.unlink(path)


class Spool:
    """The private directory a supervisor's workers write their results into.

    Made on first use in the system's temporary directory (``TMPDIR``); :meth:`close` removes
    it with whatever is left in it."""

    def __init__(self, root: str | None = None) -> None:
        self._root = root
        self._path: str | None = None

    @property
    def path(self) -> str:
        if self._path is None:
            root = self._root or tempfile.gettempdir()
            _sweep(root)
            self._path = tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-", dir=root)
        return self._path

    def close(self) -> None:
        if self._path is not None:
            shutil.rmtree(self._path, ignore_errors=True)
            self._path = None


#: A spool directory left this long unchanged by a process that is gone is removed. The wait
#: spares the spool of a live process that this one cannot see (another PID namespace sharing
#: the temporary directory): a running ingest changes its spool as each file is parsed.
STALE_S = 3600.0


def _sweep(root: str) -> None:
    """Remove the spool directories of processes that are gone (killed before they closed)."""
    try:
        entries = list(Path(root).glob(f"{_PREFIX}*"))
    except OSError:
        return
    for entry in entries:
        pid_text = entry.name[len(_PREFIX) :].split("-", 1)[0]
        if not pid_text.isdigit() or _alive(int(pid_text)):
            continue
        with contextlib.suppress(OSError):
            info = entry.lstat()  # a link is never followed, nor removed
            stale = time.time() - info.st_mtime > STALE_S
            if stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and stale:
                log.debug("removing the spool of a process that is gone: %s", entry)
                shutil.rmtree(entry, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True
