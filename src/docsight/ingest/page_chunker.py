"""Page chunks for slide-like documents, and the ``auto`` strategy that picks per document.

MM-BizRAG's horizontal treatment: a slide is understood as a whole. Each page gives a text chunk
(its words, tables as Markdown) and, when the page has a description (a slide deck, or any page a
vision model described), a page-image chunk: the render, retrieved through what it shows. Both
point at the same page, so page-level fusion combines them, and context assembly shows them as
one source.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from docsight.document.artifacts import (
    ARTIFACT_KINDS,
    artifact_reading,
    bound_captions,
    is_skipped_picture,
)
from docsight.document.chunk import Chunk
from docsight.document.model import Document, Element, ElementKind
from docsight.ingest.chunking import common_prefix, make_chunk
from docsight.ingest.element_chunker import ElementChunker
from docsight.settings import ChunkSettings


class PageChunker:
    strategy = "page"
    version = "2"  # 2: a page-image chunk beside the page text chunk

    def __init__(self, settings: ChunkSettings | None = None) -> None:
        self.settings = settings or ChunkSettings()

    def chunk(self, document: Document) -> list[Chunk]:
        captions = bound_captions(document)
        caption_ids = {c.id for c in captions.values()}
        per_page: dict[int, list[Element]] = {}
        for element in document.indexable_elements():
            per_page.setdefault(element.page, []).append(element)
        chunks: list[Chunk] = []
        for page in document.pages:
            elements = [
                e
                for e in per_page.get(page.index, [])
                if not (e.kind in ARTIFACT_KINDS and is_skipped_picture(e))
            ]
            parts = []
            for e in elements:
                if e.id in caption_ids:
                    continue
                if e.kind in ARTIFACT_KINDS:
                    parts.append(artifact_reading(e, captions.get(e.id)))
                elif e.kind in (ElementKind.HEADING, ElementKind.TITLE):
                    parts.append(f"{'#' * min(e.level or 1, 6)} {e.text.strip()}")
                else:
                    parts.append((e.markdown if e.kind == ElementKind.LIST else None) or e.text)
            body = "\n".join(p.strip() for p in parts if p.strip())
            images = [page.image_id] if page.image_id else []
            path = common_prefix([document.section_path(e.section_id) for e in elements])
            units = [("page", body)] if body else []
            if page.image_id and page.description and page.description != body:
                # Only a rendered page has an image to find (PPTX slides are not rendered).
                units.append(("page_image", page.description))
            for kind, text in units:
                chunks.append(
                    make_chunk(
                        document,
                        self.strategy,
                        len(chunks),
                        elements=elements,
                        body=text,
                        index_text=text,
                        page=page.index,
                        kind=kind,
                        section_path=path,
                        prefix=False,  # a page is its own context; its title leads the text
                        image_ids=images,
                    )
                )
        return chunks


class AutoChunker:
    """``element`` chunks for vertical documents, ``page`` chunks for horizontal ones."""

    strategy = "auto"

    def __init__(self, settings: ChunkSettings | None = None) -> None:
        self.settings = settings or ChunkSettings()
        self._element = ElementChunker(self.settings)
        self._page = PageChunker(self.settings)
        self.version = f"{self._element.version}.{self._page.version}"

    def chunk(self, document: Document) -> list[Chunk]:
        if document.layout == "horizontal":
            return self._page.chunk(document)
        return self._element.chunk(document)

    def streams(self, document: Document) -> bool:
        """Whether :meth:`chunk_elements` chunks ``document``: page chunks need it whole."""
        return document.layout != "horizontal"

    def chunk_elements(
        self, document: Document, elements: Iterable[Element], captions: Mapping[str, Element]
    ) -> Iterator[Chunk]:
        """:meth:`ElementChunker.chunk_elements`, for a document that :meth:`streams`."""
        if not self.streams(document):
            raise ValueError("a horizontal document is chunked by page, whole")
        return self._element.chunk_elements(document, elements, captions)
