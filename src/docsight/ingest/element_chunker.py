"""Element-aware chunks: whole elements in reading order, sections respected, artifacts kept whole.

Text chunks never cross a page and start afresh at a heading once they hold enough text; a long
paragraph is split on sentence boundaries. Headings appear in the body as Markdown, except those
already named by the chunk's section-path prefix. A chunk spanning sections belongs to their
common ancestor.

Tables and pictures (with the caption the map bound to them) are never split. In the ``element``
strategy each becomes a standalone chunk — retrieved by its description, read as its Markdown —
and leaves a placeholder in the text flow; in ``interleaved`` they stay inline instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from docsight.document.artifacts import (
    ARTIFACT_KINDS,
    artifact_index_text,
    artifact_reading,
    bound_captions,
    is_skipped_picture,
    placeholder,
)
from docsight.document.chunk import Chunk
from docsight.document.model import Document, Element, ElementKind
from docsight.document.text import split_long_text, word_count
from docsight.ingest.chunking import common_prefix, make_chunk
from docsight.settings import ChunkSettings

_MARKDOWN_KINDS = (ElementKind.CODE, ElementKind.LIST)


def _is_heading(element: Element) -> bool:
    return element.kind in (ElementKind.HEADING, ElementKind.TITLE)


@dataclass
class _Draft:
    page: int
    kind: str = "text"
    #: (element, its text in this chunk), in reading order; headings included.
    items: list[tuple[Element, str]] = field(default_factory=list)
    #: Words of content (headings excluded): what the size limits apply to.
    words: int = 0
    #: Set for artifact chunks, which are retrieved by something other than what is read.
    index_text: str | None = None
    image_ids: list[str] = field(default_factory=list)

    @property
    def has_content(self) -> bool:
        return any(not _is_heading(e) for e, _ in self.items)

    def add(self, element: Element, text: str) -> None:
        self.items.append((element, text))
        if not _is_heading(element):
            self.words += word_count(text)


def _section(draft: _Draft, *, last: bool) -> str | None:
    content = [e for e, _ in draft.items if not _is_heading(e)]
    if not content:
        return None
    return (content[-1] if last else content[0]).section_id


def _level(levels: dict[str, int], draft: _Draft) -> int:
    """The heading level of the section the draft's text belongs to (0: before any heading)."""
    return levels.get(_section(draft, last=True) or "", 0)


class _Finished:
    """The chunker's drafts: only the last may still change (a short text draft joins the one
    before it), so each earlier one is finished into its chunk as the next is appended."""

    def __init__(self, finish: Callable[[int, _Draft], Chunk]) -> None:
        self._finish = finish
        self.chunks: list[Chunk] = []
        self.last: _Draft | None = None
        #: Chunks finished so far (the next one's order).
        self.count = 0

    def append(self, draft: _Draft) -> None:
        if self.last is not None:
            self._add(self.last)
        self.last = draft

    def close(self) -> None:
        if self.last is not None:
            self._add(self.last)
            self.last = None

    def ready(self) -> list[Chunk]:
        """The chunks finished since the last call (the caller takes them over)."""
        chunks, self.chunks = self.chunks, []
        return chunks

    def _add(self, draft: _Draft) -> None:
        self.chunks.append(self._finish(self.count, draft))
        self.count += 1


class ElementChunker:
    strategy = "element"
    version = "3"  # 3: artifact descriptions, placeholders, captions from the map, no logos
    #: Keep tables and pictures inline instead of in chunks of their own.
    inline_artifacts = False

    def __init__(self, settings: ChunkSettings | None = None) -> None:
        self.settings = settings or ChunkSettings()

    def chunk(self, document: Document) -> list[Chunk]:
        captions = bound_captions(document)
        return list(self.chunk_elements(document, document.indexable_elements(), captions))

    def streams(self, document: Document) -> bool:
        """Whether :meth:`chunk_elements` chunks ``document`` (always, for this strategy)."""
        return True

    def chunk_elements(
        self,
        document: Document,
        elements: Iterable[Element],
        captions: Mapping[str, Element],
    ) -> Iterator[Chunk]:
        """The chunks of ``document`` from its indexable ``elements`` in reading order (read as
        they come, so they may be loaded window by window) and its ``captions``
        (``bound_captions``); of ``document`` itself only the sections and names are read. A
        chunk is finished, and yielded, as soon as no later element can join it, so the
        elements it holds are let go as the reading goes on, and the chunks may be too."""
        s = self.settings
        caption_ids = {c.id for c in captions.values()}
        levels = {s.id: s.level for s in document.sections}
        drafts = _Finished(lambda order, draft: self._finish(document, order, draft))
        current: _Draft | None = None

        def flush() -> None:
            nonlocal current
            if current is None or not current.has_content:
                return  # nothing to emit; headings waiting for content stay for what follows
            previous = drafts.last
            if (
                current.kind == "text"
                and current.words < s.min_words
                and previous is not None
                and previous.kind == "text"
                and previous.page == current.page
                and previous.words + current.words <= s.max_words + s.min_words
                and _section(previous, last=True) == _section(current, last=False)
            ):
                previous.items.extend(current.items)
                previous.words += current.words
                previous.image_ids.extend(current.image_ids)
            else:
                drafts.append(current)
            current = None

        def text_draft(page: int) -> _Draft:
            nonlocal current
            if current is not None and current.page != page:
                if current.has_content:
                    flush()
                else:
                    current.page = page  # headings at a page bottom lead the next page
            if current is None:
                current = _Draft(page=page)
            return current

        for element in elements:
            yield from drafts.ready()
            if element.id in caption_ids:
                continue  # travels with its table or picture
            if _is_heading(element):
                # A sibling or higher section always starts a new chunk, so a chunk's section path
                # says where its text is; a subsection may join its parent's short introduction.
                if (
                    current is not None
                    and current.has_content
                    and (
                        current.words >= s.min_words
                        or current.page != element.page
                        or (element.level or 1) <= _level(levels, current)
                    )
                ):
                    flush()
                level = element.level or 1
                text_draft(element.page).add(
                    element, f"{'#' * min(level, 6)} {element.text.strip()}"
                )
                continue

            if element.kind in ARTIFACT_KINDS:
                if is_skipped_picture(element):
                    continue
                caption = captions.get(element.id)
                reading = artifact_reading(element, caption)
                if not reading:
                    continue
                members = [element] + ([caption] if caption is not None else [])
                images = (
                    [element.image_id]
                    if element.image_id and element.kind != ElementKind.TABLE
                    else []
                )
                if self.inline_artifacts:
                    draft = text_draft(element.page)
                    if draft.has_content and draft.words + word_count(reading) > s.max_words:
                        flush()
                        draft = text_draft(element.page)
                    for member in members:
                        draft.add(member, reading if member is element else "")
                    draft.image_ids.extend(images)
                    continue
                artifact = _Draft(
                    page=element.page,
                    kind=str(element.kind),
                    index_text=artifact_index_text(element, caption),
                    image_ids=images,
                )
                if current is not None and not current.has_content:
                    # Headings waiting for content go with the table or picture they announce.
                    artifact.items.extend(current.items)
                    current = None
                elif current is not None and current.page == element.page:
                    current.add(element, placeholder(element, caption))
                for member in members:
                    artifact.add(member, reading if member is element else "")
                drafts.append(artifact)
                continue

            text = element.text
            if element.kind in _MARKDOWN_KINDS and element.markdown:
                text = element.markdown  # bullets and indentation carry meaning
            text = text.strip()
            if not text:
                continue
            draft = text_draft(element.page)
            pieces = (
                split_long_text(text, s.max_words)
                if word_count(text) > s.max_words and element.kind not in _MARKDOWN_KINDS
                else [text]
            )
            for piece in pieces:
                if draft.has_content and draft.words + word_count(piece) > s.max_words:
                    flush()
                    draft = text_draft(element.page)
                draft.add(element, piece)
        flush()
        if current is not None and current.items:  # a document of headings only
            drafts.append(current)
        drafts.close()
        yield from drafts.ready()

    def _finish(self, document: Document, order: int, draft: _Draft) -> Chunk:
        elements = list({e.id: e for e, _ in draft.items}.values())
        content = [e for e in elements if not _is_heading(e)]
        paths = [document.section_path(e.section_id) for e in content or elements]
        path = common_prefix(paths)
        prefix = self.settings.section_prefix
        kept = []
        for element, text in draft.items:
            if not text:
                continue
            if prefix and content and _is_heading(element):
                own = document.section_path(element.section_id)
                if own and own == path[: len(own)]:
                    continue  # already in the prefix
            kept.append(text)
        body = "\n".join(kept)
        if draft.index_text is not None:
            heading_lines = [t for e, t in draft.items if _is_heading(e) and t in kept]
            index_text = "\n".join([*heading_lines, draft.index_text])
        else:
            index_text = body
        return make_chunk(
            document,
            self.strategy,
            order,
            elements=elements,
            body=body,
            index_text=index_text,
            page=draft.page,
            kind=draft.kind,
            section_path=path,
            prefix=prefix,
            image_ids=draft.image_ids,
        )


class InterleavedChunker(ElementChunker):
    """Text with its tables and pictures inline, in document order (multimodal units)."""

    strategy = "interleaved"
    inline_artifacts = True
