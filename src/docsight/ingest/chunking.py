"""Chunking strategies (MM-BizRAG), selectable per collection, and what they share.

* ``element``: linear text chunks that respect sentences and sections, with a placeholder where a
  table or picture stood, plus a standalone chunk per table and picture (its description for
  retrieval, its Markdown for reading);
* ``interleaved``: the same text chunks with tables and pictures kept inline at their place;
* ``page``: one chunk per page, the page render attached (slide decks);
* ``auto`` (default): ``element`` for vertical documents, ``page`` for horizontal ones.

Placeholders (``document.artifacts``) stand where a table or picture was; whoever shows a chunk
to a reader replaces them with the table or picture when the answer needs it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Protocol, runtime_checkable

from docsight._registry import Registry
from docsight.document.artifacts import strip_placeholders
from docsight.document.chunk import Chunk
from docsight.document.model import BBox, Document, Element
from docsight.document.text import word_count
from docsight.settings import ChunkSettings


class Chunker(Protocol):
    """Splits a parsed document into chunks.

    Contract: deterministic (same document and settings, same chunk ids); every chunk's
    ``element_ids`` and ``pages`` point into the document; page furniture is never included.
    ``version`` changes whenever the output for the same document changes, so collections
    re-chunk what they hold.
    """

    strategy: str
    version: str

    def chunk(self, document: Document) -> list[Chunk]: ...


@runtime_checkable
class StreamingChunker(Chunker, Protocol):
    """A chunker that can read a document's elements one at a time, as they are loaded back
    window by window (a long document's worker lets them go first, ``ingest.worker``).

    Contract: for a document it ``streams``, ``chunk_elements(document, its indexable elements
    in reading order, bound_captions(document))`` yields exactly the chunks of
    ``chunk(document)``, in order, reading only the sections and names of ``document`` itself,
    and the elements only as far as it needs to finish each chunk it yields."""

    def streams(self, document: Document) -> bool: ...

    def chunk_elements(
        self, document: Document, elements: Iterable[Element], captions: Mapping[str, Element]
    ) -> Iterator[Chunk]: ...


CHUNKERS: Registry[Chunker] = Registry("chunkers")
CHUNKERS.register("element", "docsight.ingest.element_chunker:ElementChunker")
CHUNKERS.register("interleaved", "docsight.ingest.element_chunker:InterleavedChunker")
CHUNKERS.register("page", "docsight.ingest.page_chunker:PageChunker")
CHUNKERS.register("auto", "docsight.ingest.page_chunker:AutoChunker")


def create_chunker(settings: ChunkSettings) -> Chunker:
    chunker: Chunker = CHUNKERS.create(settings.strategy, settings)
    return chunker


# --- building chunks ---------------------------------------------------------------------------


def make_chunk(
    document: Document,
    strategy: str,
    order: int,
    *,
    elements: Sequence[Element],
    body: str,
    index_text: str,
    page: int,
    kind: str,
    section_path: list[str],
    prefix: bool,
    image_ids: Iterable[str] = (),
) -> Chunk:
    text = strip_placeholders(index_text)
    if prefix and section_path:
        text = f"{' > '.join(section_path)}\n{text}"
    bbox: BBox | None = None
    for e in elements:
        if e.bbox is not None and e.page == page:
            bbox = e.bbox if bbox is None else bbox.union(e.bbox)
    return Chunk(
        id=Chunk.make_id(document.id, strategy, order, text + "\x1e" + body),
        doc_id=document.id,
        doc_name=document.name,
        text=text,
        body=body,
        kind=kind,
        strategy=strategy,
        section_path=section_path,
        element_ids=[e.id for e in elements],
        pages=sorted({e.page for e in elements} | {page}),
        page=page,
        bbox=bbox,
        order=order,
        n_words=word_count(strip_placeholders(body)),
        image_ids=list(dict.fromkeys(image_ids)),
    )


def common_prefix(paths: list[list[str]]) -> list[str]:
    if not paths:
        return []
    prefix = paths[0]
    for path in paths[1:]:
        n = 0
        while n < min(len(prefix), len(path)) and prefix[n] == path[n]:
            n += 1
        prefix = prefix[:n]
    return list(prefix)
