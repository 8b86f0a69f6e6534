"""The parser contract."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from docsight.cache import JsonCache
from docsight.document.builder import DocumentBuilder
from docsight.document.ids import document_id_from_sha256
from docsight.document.model import ParsedDocument
from docsight.document.stream import ElementSink
from docsight.settings import ParseSettings


@dataclass(frozen=True)
class SourceFile:
    """One input file, read once: its bytes, content hash and sniffed media type."""

    path: Path
    data: bytes = field(repr=False)
    sha256: str
    media_type: str
    #: ``False``: the document's page renders keep their ids and recipes but not their pixels
    #: (for an ingestion whose store keeps recipes and which shows no page to a model; see
    #: :meth:`DocumentBuilder.add_asset`).
    page_pixels: bool = True
    #: ``False``: the crops that carry a recipe keep their bytes in a temporary file while
    #: parsing, for the readers of the element stream (``ParseContext.elements``) alone; the
    #: document comes with their ids and recipes (see :meth:`DocumentBuilder.keep_asset`).
    #: A parse that does not stream gets the bytes back with its document.
    crop_pixels: bool = True

    @property
    def doc_id(self) -> str:
        return document_id_from_sha256(self.sha256)

    @property
    def name(self) -> str:
        return self.path.name

    def builder(self, parser: str) -> DocumentBuilder:
        return DocumentBuilder(
            doc_id=self.doc_id,
            name=self.name,
            source=str(self.path),
            media_type=self.media_type,
            sha256=self.sha256,
            parser=parser,
            size_bytes=len(self.data),
            keep_page_pixels=self.page_pixels,
            keep_crop_pixels=self.crop_pixels,
        )


@dataclass
class ParseContext:
    """What a parser may use besides the file and the settings.

    ``cache`` stores expensive, deterministic model outputs (OCR, layout, table structure,
    descriptions) keyed by content and producer version, so re-ingestion after a code change
    redoes only what changed. ``vlm`` is a vision-capable chat model when one is configured.
    """

    cache: JsonCache | None = None
    vlm: Any = None
    #: ``progress(stage, done, total)``: parsers of paged formats report each page they finish
    #: (``"parse"``, pages done, pages), so a long file does not look stalled.
    progress: Callable[[str, int, int], None] | None = None
    #: Where the elements go as pages are done (see :mod:`docsight.document.stream`), for a
    #: parser whose ``streams_elements`` is true: it then returns the document without its
    #: elements, the sink having had them all. Other parsers ignore it.
    elements: ElementSink | None = None

    def report(self, stage: str, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress(stage, done, total)


@runtime_checkable
class Parser(Protocol):
    """Turns one file into a :class:`ParsedDocument`.

    Contract: a pure function of the file and the settings (no store, no network unless a model
    endpoint is configured); emits elements in reading order through a :class:`DocumentBuilder`
    so ids are content hashes; respects the limits in :class:`ParseSettings`; raises an
    :class:`~docsight.errors.IngestError` subclass naming the file and the reason, never a bare
    library exception. ``name`` and ``version`` key every cache of the parser's output.
    """

    name: str
    version: str

    def parse(
        self, source: SourceFile, settings: ParseSettings, context: ParseContext | None = None
    ) -> ParsedDocument: ...


@runtime_checkable
class PagedParser(Parser, Protocol):
    """A parser that can read a long file in parts, so its pages are spread over workers.

    Contract: ``parse_parts`` over the outputs of ``extract_part`` for consecutive page ranges
    covering the file, in order, returns exactly what ``parse`` returns (same elements, ids,
    assets and warnings). ``extract_part`` does the per-page work (the expensive part) and may
    run in another process than ``parse_parts``; its bytes are the parser's own format.
    ``parse_parts`` reads its parts once, in order (they may be loaded as they are asked for).
    """

    def extract_part(
        self,
        source: SourceFile,
        settings: ParseSettings,
        context: ParseContext | None,
        start: int,
        stop: int,
    ) -> bytes: ...

    def parse_parts(
        self,
        source: SourceFile,
        settings: ParseSettings,
        context: ParseContext | None,
        parts: Iterable[bytes],
    ) -> ParsedDocument: ...
