"""Crops' bytes kept on disk while a document is parsed, read back by the element stream.

A PDF's figure crops are made in the parse's first pass and read again only when their elements
are described (picture OCR, the picture's kind, a vision model), one batch of pages at a time
(:mod:`docsight.document.stream`). An ingestion whose store keeps the source file stores a crop
as its recipe, not its bytes, so once described the bytes are of no further use. Held in memory
until the end of the parse they grew with the document: 4 MiB for a generated 1,000-page report
with a table's crop on every fourth page, and 170 MiB for one with a photograph on every
page. :class:`PixelFile` keeps them in an unnamed temporary file instead, and
:class:`AssetsWithPixels` gives them back to the readers of each batch.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Iterator, Mapping
from typing import BinaryIO

from docsight.document.model import Asset


class PixelFile:
    """Bytes by key in an unnamed temporary file of the system's temporary directory
    (``TMPDIR``); the file goes when it is closed or the process ends."""

    def __init__(self, directory: str | None = None) -> None:
        self._file: BinaryIO | None = tempfile.TemporaryFile(dir=directory)  # noqa: SIM115
        self._where: dict[str, tuple[int, int]] = {}
        self._end = 0

    def put(self, key: str, data: bytes) -> None:
        """Keep ``data`` under ``key`` (a key kept already keeps its first bytes). Raises
        ``OSError`` when the file cannot take them; nothing is kept then."""
        if key in self._where:
            return
        assert self._file is not None, "the pixel file is closed"
        self._file.seek(self._end)
        try:
            self._file.write(data)
            self._file.flush()
        except OSError:
            self._file.truncate(self._end)  # what was written of it is not used
            raise
        self._where[key] = (self._end, len(data))
        self._end += len(data)

    def get(self, key: str) -> bytes:
        """The bytes kept under ``key``; ``KeyError`` when none are."""
        offset, length = self._where[key]
        assert self._file is not None, "the pixel file is closed"
        self._file.seek(offset)
        data = self._file.read(length)
        if len(data) != length:
            raise OSError(f"the temporary file ended after {len(data)} of {length} bytes")
        return data

    def __contains__(self, key: object) -> bool:
        return key in self._where

    def __len__(self) -> int:
        return len(self._where)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class AssetsWithPixels(Mapping[str, Asset]):
    """``assets`` (records by id) with the bytes kept in ``pixels`` put back into each asset
    asked for; the others as they are."""

    def __init__(self, assets: Mapping[str, Asset], pixels: PixelFile) -> None:
        self._assets = assets
        self._pixels = pixels

    def __getitem__(self, key: str) -> Asset:
        asset = self._assets[key]
        if key in self._pixels:
            return dataclasses.replace(asset, data=self._pixels.get(key))
        return asset

    def __contains__(self, key: object) -> bool:
        return key in self._assets  # without reading the bytes

    def __iter__(self) -> Iterator[str]:
        return iter(self._assets)

    def __len__(self) -> int:
        return len(self._assets)
