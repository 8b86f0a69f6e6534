"""Workers' results on disk (``ingest.spool``): written value by value, read back one at a
time, and deleted when they are used up or their process is gone."""

from __future__ import annotations

import os
import pickle
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from docsight.errors import IngestError
from docsight.ingest.spool import (
    STALE_S,
    RowSpool,
    Spool,
    Spooled,
    SpoolWriter,
    load_bytes,
    spool_bytes,
)


def test_values_are_read_back_where_the_writer_put_them(tmp_path: Path) -> None:
    with SpoolWriter(str(tmp_path), ".windows") as writer:
        first = writer.put(b"first value")
        empty = writer.put(b"")
        second = writer.put(b"x" * 100_000)
    assert (first.offset, first.length, empty.length, second.offset) == (0, 11, 0, 11)
    assert load_bytes(second) == b"x" * 100_000 and load_bytes(first) == b"first value"
    assert load_bytes(empty) == b"" and load_bytes(b"as is") == b"as is"
    assert Path(first.path).parent == tmp_path and first.path.endswith(".windows")
    # A value whose file was cut short is an error, never a short value.
    os.truncate(first.path, 50)
    with pytest.raises(IngestError, match=r"temporary file .*\(39 bytes at 11, not 100000\)"):
        second.read()
    os.unlink(first.path)
    with pytest.raises(IngestError, match="No such file or directory"):
        first.read()


class _Unpicklable:
    def __reduce__(self) -> tuple[object, ...]:
        raise pickle.PicklingError("not this one")


def test_values_are_pickled_into_the_file_and_unpickled_out_of_it(tmp_path: Path) -> None:
    big = {"rows": list(range(200_000)), "text": "x" * 300_000}
    with SpoolWriter(str(tmp_path), ".windows") as writer:
        first = writer.dump(["a", 1])
        with pytest.raises(pickle.PicklingError):
            writer.dump(["half written", "y" * 100_000, _Unpicklable()])
        second = writer.dump(big)
        third = writer.put(b"raw")
    # The failed value left nothing: the next one starts where the first ended.
    assert second.offset == first.offset + first.length
    assert third.offset == second.offset + second.length
    assert first.unpickle() == ["a", 1] and second.unpickle() == big
    assert load_bytes(third) == b"raw"
    assert os.path.getsize(first.path) == third.offset + 3
    # A value whose file was cut short is an error naming the file, never a part of it.
    os.truncate(first.path, second.offset + 1000)
    with pytest.raises(IngestError, match=r"temporary file .*cut short"):
        second.unpickle()
    assert first.unpickle() == ["a", 1]
    os.unlink(first.path)
    with pytest.raises(IngestError, match="No such file or directory"):
        first.unpickle()


def test_a_failed_write_leaves_no_file(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), SpoolWriter(str(tmp_path), ".windows") as writer:
        writer.put(b"half of it")
        raise RuntimeError("the pickling failed")
    assert list(tmp_path.iterdir()) == []


def test_bytes_that_cannot_be_spooled_travel_as_they_are(tmp_path: Path) -> None:
    spooled = spool_bytes(b"a part", str(tmp_path), ".part")
    assert isinstance(spooled, Spooled) and load_bytes(spooled) == b"a part"
    assert spool_bytes(spooled, str(tmp_path), ".part") is spooled
    # The directory is gone (a cleaner emptied the temporary directory): sent, not lost.
    assert spool_bytes(b"a part", str(tmp_path / "gone"), ".part") == b"a part"


def test_a_spool_is_private_made_on_use_and_removed_on_close(tmp_path: Path) -> None:
    spool = Spool(str(tmp_path))
    assert list(tmp_path.iterdir()) == []
    path = Path(spool.path)
    assert path.parent == tmp_path and path.name.startswith(f"docsight-spool-{os.getpid()}-")
    assert stat.S_IMODE(path.stat().st_mode) == 0o700
    assert spool.path == str(path)  # one directory for the supervisor's life
    spool_bytes(b"left over", str(path), ".windows")
    spool.close()
    assert not path.exists()
    spool.close()  # twice is harmless


def test_the_spools_of_processes_that_are_gone_are_swept(tmp_path: Path) -> None:
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    dead = tmp_path / f"docsight-spool-{int(gone.stdout)}-abc"
    recent = tmp_path / f"docsight-spool-{int(gone.stdout)}-xyz"
    alive = tmp_path / f"docsight-spool-{os.getppid()}-def"
    other = tmp_path / "docsight-spool-notapid"
    old = time.time() - 2 * STALE_S
    for folder in (dead, recent, alive, other):
        folder.mkdir()
        (folder / "x.windows").write_bytes(b"old")
        if folder is not recent:
            os.utime(folder, (old, old))
    # A link named like a gone process's spool is left alone, and so is what it points to.
    target = tmp_path / "precious"
    target.mkdir()
    (target / "keep.txt").write_text("keep")
    os.utime(target, (old, old))
    link = tmp_path / f"docsight-spool-{int(gone.stdout)}-lnk"
    link.symlink_to(target)
    os.utime(link, (old, old), follow_symlinks=False)
    spool = Spool(str(tmp_path))
    made = Path(spool.path)
    assert not dead.exists() and made.is_dir()
    assert link.is_symlink() and (target / "keep.txt").read_text() == "keep"
    # A process still running, a name that is not a spool's, and a spool changed lately (its
    # process may be alive where this one cannot see it) stay.
    assert alive.is_dir() and other.is_dir() and recent.is_dir()
    spool.close()


def test_a_file_that_cannot_be_put_right_takes_no_more_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = SpoolWriter(str(tmp_path), ".windows")
    writer.dump("kept")

    def full(*_: object) -> None:
        raise OSError(28, "No space left on device")

    assert writer._file is not None
    monkeypatch.setattr(writer._file, "truncate", full, raising=False)
    with pytest.raises(pickle.PicklingError):
        writer.dump(_Unpicklable())
    # The pickling error is the one raised; the file is gone and takes nothing more.
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(AssertionError, match="closed"):
        writer.dump("more")


def test_rows_written_block_by_block_read_back_whole_and_leave_no_file(tmp_path: Path) -> None:
    import numpy as np

    rng = np.random.default_rng(3)
    blocks = [rng.standard_normal((n, 5)).astype(np.float32) for n in (4, 0, 7, 1)]
    with RowSpool(5, str(tmp_path)) as rows:
        for block in blocks:
            rows.add(block)
        rows.add(np.ones((2, 5)))  # float64 is stored as float32
        got = rows.read()
        assert rows.read().tolist() == got.tolist()  # read as often as asked
        # The file has no name: nothing is left behind even by a killed process.
        assert list(tmp_path.iterdir()) == []
        with pytest.raises(ValueError, match="rows of 5 numbers"):
            rows.add(np.ones((2, 4)))
    expected = np.concatenate([*blocks, np.ones((2, 5), np.float32)])
    assert got.dtype == np.float32 and got.shape == (14, 5)
    assert np.array_equal(got, expected)  # bit for bit
    empty = RowSpool(3, str(tmp_path))
    assert empty.read().shape == (0, 3)
    empty.close()
    empty.close()


def test_rows_whose_file_was_cut_short_are_an_error(tmp_path: Path) -> None:
    import numpy as np

    rows = RowSpool(4, str(tmp_path))
    rows.add(np.ones((3, 4)))
    assert rows._file is not None
    rows._file.flush()
    os.ftruncate(rows._file.fileno(), 20)
    with pytest.raises(OSError, match="ended after 20 of 48 bytes"):
        rows.read()
    rows.close()
