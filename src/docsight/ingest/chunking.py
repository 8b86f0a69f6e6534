"""Element-aware chunking.

Chunks are built from whole elements in reading order: they never split a table, never cross a
page, and start afresh at every heading once they hold enough text. A caption travels with the
table or figure it sits next to. Each chunk is prefixed with its section path, which helps both
BM25 and dense retrieval, and points back to its elements and pages.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Protocol

from docsight._registry import Registry
from docsight.document.chunk import Chunk
from docsight.document.model import BBox, Document, Element, ElementKind
from docsight.settings import ChunkSettings

_ATTACHABLE = (ElementKind.TABLE, ElementKind.FIGURE, ElementKind.CHART)


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


CHUNKERS: Registry[Chunker] = Registry("chunkers")
CHUNKERS.register("element", "docsight.ingest.chunking:ElementChunker")


def create_chunker(settings: ChunkSettings) -> Chunker:
    chunker: Chunker = CHUNKERS.create(settings.strategy, settings)
    return chunker


def word_count(text: str) -> int:
    return len(text.split())


@lru_cache(maxsize=1)
def _segmenter() -> Any:
    import pysbd

    return pysbd.Segmenter(language="en", clean=False)


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` (pysbd's rules handle abbreviations, decimals and initials)."""
    text = text.strip()
    if not text:
        return []
    try:
        sentences = _segmenter().segment(text)
    except Exception:  # pysbd fails on rare inputs; a chunker must not
        sentences = [text]
    return [s.strip() for s in sentences if s.strip()]


def split_long_text(text: str, max_words: int) -> list[str]:
    """Pack sentences into pieces of at most ``max_words`` words (a longer sentence is cut)."""
    pieces: list[str] = []
    current: list[str] = []
    count = 0
    for sentence in split_sentences(text):
        words = sentence.split()
        while len(words) > max_words:  # a run-on "sentence" (lists, tables flattened to text)
            if current:
                pieces.append(" ".join(current))
                current, count = [], 0
            pieces.append(" ".join(words[:max_words]))
            words = words[max_words:]
        if count + len(words) > max_words and current:
            pieces.append(" ".join(current))
            current, count = [], 0
        if words:
            current.append(" ".join(words))
            count += len(words)
    if current:
        pieces.append(" ".join(current))
    return pieces


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

    @property
    def has_content(self) -> bool:
        return any(not _is_heading(e) for e, _ in self.items)

    def add(self, element: Element, text: str) -> None:
        self.items.append((element, text))
        if not _is_heading(element):
            self.words += word_count(text)


def _units(elements: Iterable[Element]) -> list[list[Element]]:
    """Group elements into units: a table or figure takes an adjacent caption on its page."""
    items = list(elements)
    taken: set[int] = set()
    units: list[list[Element]] = []
    for i, element in enumerate(items):
        if i in taken:
            continue
        if element.kind in _ATTACHABLE:
            unit = [element]
            prev_, next_ = i - 1, i + 1
            if (
                next_ < len(items)
                and items[next_].kind == ElementKind.CAPTION
                and items[next_].page == element.page
            ):
                unit.append(items[next_])
                taken.add(next_)
            elif (
                units
                and prev_ >= 0
                and prev_ not in taken
                and items[prev_].kind == ElementKind.CAPTION
                and items[prev_].page == element.page
                and units[-1] == [items[prev_]]
            ):
                unit.insert(0, units.pop()[0])
            units.append(unit)
        else:
            units.append([element])
    return units


class ElementChunker:
    strategy = "element"
    version = "2"  # 2: Markdown headings and lists in bodies, common-ancestor section paths

    def __init__(self, settings: ChunkSettings | None = None) -> None:
        self.settings = settings or ChunkSettings()

    def chunk(self, document: Document) -> list[Chunk]:
        s = self.settings
        drafts: list[_Draft] = []
        current: _Draft | None = None

        def flush() -> None:
            nonlocal current
            if current is None or not any(text for _, text in current.items):
                current = None
                return
            previous = drafts[-1] if drafts else None
            if (
                current.kind == "text"
                and current.words < s.min_words
                and previous is not None
                and previous.kind == "text"
                and previous.page == current.page
                and previous.words + current.words <= s.max_words + s.min_words
            ):
                previous.items.extend(current.items)
                previous.words += current.words
            else:
                drafts.append(current)
            current = None

        for unit in _units(document.indexable_elements()):
            head = unit[0]
            if _is_heading(head):
                # A new section starts a new chunk once the current one holds enough text.
                if (
                    current is not None
                    and current.has_content
                    and (current.words >= s.min_words or current.page != head.page)
                ):
                    flush()
                if current is None:
                    current = _Draft(page=head.page)
                # Markdown heading syntax keeps the structure visible to readers and models.
                current.add(head, f"{'#' * min(head.level or 1, 6)} {head.text.strip()}")
                continue

            attachable = next((e for e in unit if e.kind in _ATTACHABLE), None)
            if attachable is not None:
                # Headings waiting for content go with the table or figure they announce.
                carried = current.items if current is not None and not current.has_content else []
                if not carried:
                    flush()
                current = None
                draft = _Draft(page=attachable.page, kind=str(attachable.kind), items=list(carried))
                for e in unit:
                    text = (e.markdown or e.text) if e.kind == ElementKind.TABLE else e.text
                    draft.add(e, text.strip())
                if draft.words:
                    drafts.append(draft)
                continue

            # Lists and code keep their Markdown: bullets and indentation carry meaning.
            markdown_kinds = (ElementKind.CODE, ElementKind.LIST)
            text = head.markdown if head.kind in markdown_kinds and head.markdown else head.text
            text = text.strip()
            if not text:
                continue
            if current is not None and current.page != head.page:
                if current.has_content:
                    flush()
                else:
                    current.page = head.page  # headings at a page bottom lead the next page
            pieces = (
                split_long_text(text, s.max_words)
                if word_count(text) > s.max_words and head.kind not in markdown_kinds
                else [text]
            )
            for piece in pieces:
                n = word_count(piece)
                if current is not None and current.has_content and current.words + n > s.max_words:
                    flush()
                if current is None:
                    current = _Draft(page=head.page)
                current.add(head, piece)
        flush()
        return [self._finish(document, i, d) for i, d in enumerate(drafts)]

    def _finish(self, document: Document, order: int, draft: _Draft) -> Chunk:
        elements = list({e.id: e for e, _ in draft.items}.values())
        content = [e for e in elements if not _is_heading(e)]
        # A chunk that spans sections belongs to their common ancestor.
        paths = [document.section_path(e.section_id) for e in content or elements]
        path = _common_prefix(paths)
        kept = []
        for element, text in draft.items:
            if not text:
                continue
            if self.settings.section_prefix and content and _is_heading(element):
                own = document.section_path(element.section_id)
                if own and own == path[: len(own)]:
                    continue  # already in the prefix
            kept.append(text)
        body = "\n".join(kept)
        text = f"{' > '.join(path)}\n{body}" if self.settings.section_prefix and path else body
        bbox: BBox | None = None
        for e in elements:
            if e.bbox is not None and e.page == draft.page:
                bbox = e.bbox if bbox is None else bbox.union(e.bbox)
        return Chunk(
            id=Chunk.make_id(document.id, self.strategy, order, text),
            doc_id=document.id,
            doc_name=document.name,
            text=text,
            body=body,
            kind=draft.kind,
            strategy=self.strategy,
            section_path=path,
            element_ids=[e.id for e in elements],
            pages=sorted({e.page for e in elements}),
            page=draft.page,
            bbox=bbox,
            order=order,
            n_words=draft.words,
        )


def _common_prefix(paths: list[list[str]]) -> list[str]:
    if not paths:
        return []
    prefix = paths[0]
    for path in paths[1:]:
        n = 0
        while n < min(len(prefix), len(path)) and prefix[n] == path[n]:
            n += 1
        prefix = prefix[:n]
    return list(prefix)
