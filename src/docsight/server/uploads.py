"""Uploads streamed straight to disk, under a cap per file, with names that cannot escape.

Starlette's form parser spools every file to a temporary file first and applies no size cap to
files; an upload would be whole on the server's disk before a single check ran. Here the body
is parsed as it arrives (``python-multipart``'s streaming parser) and each file part goes to
its final place in the job's directory: the name and type are checked from the part's headers
before a byte is written, and a file over ``server.max_upload_mb`` stops the request as soon as
it crosses the cap.

A client's file name is only a hint. :func:`safe_name` keeps its last path component, without
control or format characters (bidi overrides included), reserved characters or leading dots, so
no name can climb out of the directory (``../``), hide (``.bashrc``) or be empty; files are
opened with ``O_EXCL`` inside a directory the job owns.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser, MultipartState, parse_options_header
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request

from docsight.errors import LimitExceededError, UnsupportedFormatError, UsageError

#: The form field that carries the files.
FIELD = "files"
#: Longest kept name, in UTF-8 bytes (most file systems allow 255).
_MAX_NAME_BYTES = 200
_RESERVED = re.compile(r'[<>:"/\\|?*]')


def supported_suffixes() -> frozenset[str]:
    """Extensions of the file types ingestion reads (what a folder walk picks up)."""
    from docsight.ingest.pipeline import DOCUMENT_SUFFIXES

    return DOCUMENT_SUFFIXES


def safe_name(raw: str) -> str | None:
    """A base name safe to create in a directory of ours, or ``None`` when nothing is left."""
    name = raw.replace("\\", "/").rsplit("/", 1)[-1]
    name = unicodedata.normalize("NFC", name)
    # Control (Cc), format (Cf: bidi overrides, zero-width), surrogate and private-use chars.
    name = "".join(ch for ch in name if unicodedata.category(ch)[0] != "C")
    name = _RESERVED.sub("_", name)
    name = name.strip().lstrip(".").strip().rstrip(". ")
    if len(name.encode()) > _MAX_NAME_BYTES:
        suffix = Path(name).suffix if len(Path(name).suffix) <= 16 else ""
        stem = name[: len(name) - len(suffix)]
        while len((stem + suffix).encode()) > _MAX_NAME_BYTES:
            stem = stem[:-1]
        name = stem.rstrip(". ") + suffix
    return name or None


@dataclass
class ReceivedFile:
    name: str
    path: Path
    size: int = 0


@dataclass
class _Part:
    headers: dict[bytes, bytes] = field(default_factory=dict)
    file: ReceivedFile | None = None
    handle: IO[bytes] | None = None


class _Receiver:
    """The parser's callbacks: decide per part, queue the file operations they imply.

    Callbacks run synchronously inside ``parser.write``; the writes they queue run afterwards
    in a worker thread, so the event loop never waits on the disk.
    """

    def __init__(self, dest: Path, max_files: int, max_file_bytes: int) -> None:
        self.dest = dest
        self.max_files = max_files
        self.max_file_bytes = max_file_bytes
        self.files: list[ReceivedFile] = []
        self.ops: list[Callable[[], Any]] = []
        self.open: list[IO[bytes]] = []
        self._part = _Part()
        self._name = b""
        self._value = b""
        self._suffixes = supported_suffixes()

    def callbacks(self) -> dict[str, Any]:
        return {
            "on_part_begin": self.part_begin,
            "on_header_field": self.header_field,
            "on_header_value": self.header_value,
            "on_header_end": self.header_end,
            "on_headers_finished": self.headers_finished,
            "on_part_data": self.part_data,
            "on_part_end": self.part_end,
        }

    def part_begin(self) -> None:
        self._part = _Part()

    def header_field(self, data: bytes, start: int, end: int) -> None:
        self._name += data[start:end]

    def header_value(self, data: bytes, start: int, end: int) -> None:
        self._value += data[start:end]

    def header_end(self) -> None:
        self._part.headers[self._name.strip().lower()] = self._value.strip()
        self._name = self._value = b""

    def headers_finished(self) -> None:
        _, options = parse_options_header(self._part.headers.get(b"content-disposition"))
        field_name = options.get(b"name", b"").decode("utf-8", "replace")
        if field_name != FIELD:
            raise UsageError(
                f"unexpected form field {field_name[:40]!r}: send the files in the field '{FIELD}'"
            )
        if b"filename" not in options:
            raise UsageError(f"the field '{FIELD}' must hold files, with their names")
        if len(self.files) >= self.max_files:
            raise LimitExceededError(
                "upload", f"more than {self.max_files} files in one request (server.max_files)"
            )
        raw = options[b"filename"].decode("utf-8", "replace")
        name = safe_name(raw)
        if name is None:
            raise UsageError(f"the file name {raw[:60]!r} has nothing usable left once cleaned")
        suffix = Path(name).suffix.lower()
        if suffix not in self._suffixes:
            readable = ", ".join(sorted(self._suffixes))
            raise UnsupportedFormatError(
                name,
                f"{suffix or 'a file without an extension'} is not a type docsight reads "
                f"(it reads {readable})",
            )
        if any(f.name == name for f in self.files):
            raise UsageError(f"two files named {name!r} in one upload")
        received = ReceivedFile(name=name, path=self.dest / name)
        self._part.file = received
        self.files.append(received)
        part = self._part

        def create() -> None:
            # "xb": never follow or replace anything already there, whatever the name.
            part.handle = open(received.path, "xb")  # noqa: SIM115 (closed by part_end)
            self.open.append(part.handle)

        self.ops.append(create)

    def part_data(self, data: bytes, start: int, end: int) -> None:
        part = self._part
        if part.file is None:
            return
        chunk = bytes(data[start:end])
        part.file.size += len(chunk)
        if part.file.size > self.max_file_bytes:
            raise LimitExceededError(
                part.file.name,
                f"larger than the upload limit of {self.max_file_bytes / 2**20:g} MiB "
                "(server.max_upload_mb)",
            )
        self.ops.append(lambda: part.handle.write(chunk) if part.handle else None)

    def part_end(self) -> None:
        part = self._part

        def close() -> None:
            if part.handle is not None:
                part.handle.close()
                self.open.remove(part.handle)

        self.ops.append(close)

    def run_ops(self) -> None:
        ops, self.ops = self.ops, []
        for op in ops:
            op()

    def close_all(self) -> None:
        for handle in self.open:
            handle.close()
        self.open.clear()


async def receive_files(
    request: Request, dest: Path, *, max_files: int, max_file_bytes: int
) -> list[ReceivedFile]:
    """Stream the multipart body's ``files`` into ``dest`` (which must exist and be empty).

    Raises a docsight error (the caller removes ``dest``): 415 for a body that is not
    multipart or a file type docsight cannot read, 413 over a cap, 422 for a bad field or
    name, and 400 (``HTTPException``) for a malformed body.
    """
    content_type, params = parse_options_header(request.headers.get("content-type"))
    if content_type != b"multipart/form-data":
        raise UnsupportedFormatError(
            "request", f"send the files as multipart/form-data in the field '{FIELD}'"
        )
    boundary = params.get(b"boundary")
    if not boundary:
        raise HTTPException(400, "the multipart body has no boundary")
    receiver = _Receiver(dest, max_files, max_file_bytes)
    parser = MultipartParser(boundary, receiver.callbacks())  # type: ignore[arg-type]
    try:
        async for chunk in request.stream():
            if chunk:
                parser.write(chunk)
            if receiver.ops:
                await run_in_threadpool(receiver.run_ops)
        parser.finalize()
        if parser.state != MultipartState.END:
            raise HTTPException(400, "the multipart body ended before its closing boundary")
    except MultipartParseError as exc:
        raise HTTPException(400, f"malformed multipart body ({exc})") from None
    except ClientDisconnect:
        raise HTTPException(400, "the client went away during the upload") from None
    finally:
        receiver.close_all()
    if not receiver.files:
        raise UsageError(f"no files in the upload (send them in the field '{FIELD}')")
    return receiver.files


__all__ = ["FIELD", "ReceivedFile", "receive_files", "safe_name", "supported_suffixes"]
