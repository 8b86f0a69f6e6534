"""Chunking strategies (MM-BizRAG), selectable per collection, and what they share.

* ``element``: linear text chunks that respect sentences and sections, with a placeholder where a
  table or picture stood, plus a standalone chunk per table and picture (its description for
  retrieval, its Markdown for reading);
* ``interleaved``: the same text chunks with tables and pictures kept inline at their place;
* ``page``: one chunk per page, the page render attached (slide decks);
* ``auto`` (default): ``element`` for vertical documents, ``page`` for horizontal ones.

Placeholders are Markdown links to the element they stand for, ``[Table: caption](#el-<id>)``;
context assembly replaces them with the table or picture when the answer needs it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any, Protocol

from docsight._registry import Registry
from docsight.document.chunk import Chunk
from docsight.document.model import BBox, Document, EdgeKind, Element, ElementKind
from docsight.settings import ChunkSettings

ARTIFACT_KINDS = frozenset({ElementKind.TABLE, ElementKind.FIGURE, ElementKind.CHART})
PLACEHOLDER_RE = re.compile(r"\[(?P<label>[^\]\n]{1,300})\]\(#el-(?P<id>[0-9a-f]{32})\)")


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
CHUNKERS.register("element", "docsight.ingest.element_chunker:ElementChunker")
CHUNKERS.register("interleaved", "docsight.ingest.element_chunker:InterleavedChunker")
CHUNKERS.register("page", "docsight.ingest.page_chunker:PageChunker")
CHUNKERS.register("auto", "docsight.ingest.page_chunker:AutoChunker")


def create_chunker(settings: ChunkSettings) -> Chunker:
    chunker: Chunker = CHUNKERS.create(settings.strategy, settings)
    return chunker


# --- text helpers ------------------------------------------------------------------------------


def word_count(text: str) -> int:
    return len(text.split())


@lru_cache(maxsize=1)
def _segmenter() -> Any:
    import pysbd

    return pysbd.Segmenter(language="en", clean=False)


#: pysbd's rules take time that grows faster than the text (minutes on a megabyte of "a. a. "),
#: so long text is segmented in windows of about this many characters, cut between sentences.
_SEGMENT_CHARS = 20_000
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s")


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` (pysbd's rules handle abbreviations, decimals and initials)."""
    text = text.strip()
    if not text:
        return []
    segmenter = _segmenter()
    out: list[str] = []
    for window in _windows(text, _SEGMENT_CHARS):
        try:
            # The processed sentences, not ``segment()``: its character-span pass searches the
            # whole text once per sentence, quadratic on repetitive input. Stripped, the two agree.
            sentences = segmenter.processor(window).process()
        except Exception:  # pysbd fails on rare inputs; a chunker must not
            sentences = [window]
        out.extend(s.strip() for s in sentences if s.strip())
    return out


def _windows(text: str, size: int) -> list[str]:
    """``text`` in pieces of at most about ``size`` characters, cut after a sentence end when
    there is one, else at a space."""
    pieces: list[str] = []
    start = 0
    while len(text) - start > size:
        end = start + size
        cut = -1
        for m in _SENTENCE_END.finditer(text, start + size // 2, end):
            cut = m.end()
        if cut < 0:
            cut = text.rfind(" ", start + size // 2, end) + 1 or end
        pieces.append(text[start:cut])
        start = cut
    pieces.append(text[start:])
    return pieces


def split_long_text(text: str, max_words: int) -> list[str]:
    """Pack sentences into pieces of at most ``max_words`` words (a longer sentence is cut)."""
    pieces: list[str] = []
    current: list[str] = []
    count = 0
    for sentence in split_sentences(text):
        words = sentence.split()
        if len(words) > max_words:  # a run-on "sentence" (lists, tables flattened to text)
            if current:
                pieces.append(" ".join(current))
                current, count = [], 0
            # Cut by index: slicing off the head each time is quadratic in a megabyte line.
            cut = len(words) - len(words) % max_words
            pieces.extend(" ".join(words[k : k + max_words]) for k in range(0, cut, max_words))
            words = words[cut:]
        if count + len(words) > max_words and current:
            pieces.append(" ".join(current))
            current, count = [], 0
        if words:
            current.append(" ".join(words))
            count += len(words)
    if current:
        pieces.append(" ".join(current))
    return pieces


# --- artifacts ---------------------------------------------------------------------------------


def is_skipped_picture(element: Element) -> bool:
    """Logos and blank images (see ``ingest.describe``) are not content."""
    return element.attrs.get("picture_class") in ("logo", "blank")


def bound_captions(document: Document) -> dict[str, Element]:
    """Artifact id → its caption element, from the map's ``caption_of`` edges."""
    by_id = {e.id: e for e in document.elements}
    return {
        edge.target: by_id[edge.source]
        for edge in document.edges
        if edge.kind == EdgeKind.CAPTION_OF and edge.target and edge.source in by_id
    }


def artifact_label(element: Element, caption: Element | None) -> str:
    if caption is not None:
        return " ".join(caption.text.split())[:200]
    kind = "Table" if element.kind == ElementKind.TABLE else "Figure"
    return f"{kind} on page {element.page + 1}"


def placeholder(element: Element, caption: Element | None) -> str:
    kind = "Table" if element.kind == ElementKind.TABLE else "Figure"
    return f"[{kind}: {artifact_label(element, caption)}](#el-{element.id})"


def strip_placeholders(text: str) -> str:
    """Placeholders as plain words, for indexing: the label stays, the link target goes."""
    return PLACEHOLDER_RE.sub(lambda m: m.group("label"), text)


def artifact_reading(element: Element, caption: Element | None) -> str:
    """What a reader (or a model) should see of a table or picture."""
    head = caption.text.strip() if caption is not None else ""
    if element.kind in (ElementKind.TABLE, ElementKind.CHART) and element.markdown:
        # A chart read from its file carries its data as a table: that is what to show.
        content = element.markdown
        if element.kind == ElementKind.CHART and element.text:
            content = f"{element.text}\n{content}"
    elif element.kind == ElementKind.TABLE:
        content = element.text
    else:
        content = str(element.attrs.get("description") or element.text)
    return f"{head}\n{content}".strip() if head and head not in content else content.strip()


def artifact_index_text(element: Element, caption: Element | None) -> str:
    """What retrieval should match for a table or picture: its description, else its text."""
    description = str(element.attrs.get("description") or "")
    if description:
        return description
    return artifact_reading(element, caption)


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
