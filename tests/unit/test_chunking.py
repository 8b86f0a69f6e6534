from __future__ import annotations

from collections.abc import Iterator

from docsight.document import BBox, Document, ElementKind
from docsight.document.builder import DocumentBuilder
from docsight.document.model import Element
from docsight.document.text import split_long_text, split_sentences
from docsight.ingest.element_chunker import ElementChunker
from docsight.settings import ChunkSettings


def _doc(build) -> Document:  # type: ignore[no-untyped-def]
    b = DocumentBuilder(
        doc_id="a" * 32,
        name="r.pdf",
        source="/r.pdf",
        media_type="application/pdf",
        sha256="a" * 64,
        parser="t/1",
    )
    b.add_page(100, 100)
    b.add_page(100, 100)
    build(b)
    return b.build().document


def _words(n: int, word: str = "alpha") -> str:
    return " ".join(f"{word}{i}." if i % 12 == 11 else f"{word}{i}" for i in range(n))


def test_tables_are_never_split_and_take_their_caption() -> None:
    rows = "\n".join(f"| r{i} | {i} |" for i in range(200))
    table_md = "| name | value |\n| --- | --- |\n" + rows

    def build(b: DocumentBuilder) -> None:
        b.add(ElementKind.HEADING, "Results", page=0, level=1)
        b.add(
            ElementKind.CAPTION,
            "Table 1: Values per row.",
            page=0,
            bbox=BBox(x0=0.1, y0=0.1, x1=0.9, y1=0.15),
        )
        b.add(
            ElementKind.TABLE,
            "rows",
            page=0,
            markdown=table_md,
            bbox=BBox(x0=0.1, y0=0.2, x1=0.9, y1=0.9),
        )
        b.add(ElementKind.PARAGRAPH, _words(20), page=0)

    chunks = ElementChunker(ChunkSettings(max_words=50, min_words=5)).chunk(_doc(build))
    tables = [c for c in chunks if c.kind == "table"]
    assert len(tables) == 1
    table = tables[0]
    assert table.body.startswith("Table 1: Values per row.")
    assert "| r199 | 199 |" in table.body  # whole table, far beyond max_words
    assert table.text.startswith("Results\n")
    assert table.bbox is not None and table.bbox.y0 == 0.1 and table.bbox.y1 == 0.9
    assert not any("Table 1" in c.body for c in chunks if c.kind == "text")


def test_chunks_respect_pages_sections_and_size() -> None:
    def build(b: DocumentBuilder) -> None:
        b.add(ElementKind.HEADING, "Intro", page=0, level=1)
        b.add(ElementKind.PARAGRAPH, _words(40), page=0)
        b.add(ElementKind.PARAGRAPH, _words(40, "beta"), page=0)
        b.add(ElementKind.HEADING, "Method", page=0, level=1)
        b.add(ElementKind.PARAGRAPH, _words(30, "gamma"), page=0)
        b.add(ElementKind.PARAGRAPH, _words(30, "delta"), page=1)
        b.add(ElementKind.FOOTER, "Page 2 footer", page=1)

    doc = _doc(build)
    chunks = ElementChunker(ChunkSettings(max_words=60, min_words=10)).chunk(doc)
    assert all(len(c.pages) >= 1 and c.page == min(c.pages) for c in chunks)
    assert all(c.n_words <= 60 for c in chunks)
    assert not any("footer" in c.text for c in chunks)
    method = [c for c in chunks if "gamma0" in c.body]
    assert len(method) == 1 and method[0].section_path == ["Method"]
    assert method[0].text.startswith("Method\n")
    assert "alpha0" not in method[0].body
    delta = next(c for c in chunks if "delta0" in c.body)
    assert delta.page == 1 and "gamma0" not in delta.body  # never crosses a page
    # every element id points into the document
    ids = {e.id for e in doc.elements}
    assert all(set(c.element_ids) <= ids for c in chunks)
    assert [c.order for c in chunks] == list(range(len(chunks)))


def test_long_paragraph_is_split_on_sentences() -> None:
    text = " ".join(f"Point {i} is about topic number {i} and its details." for i in range(40))

    def build(b: DocumentBuilder) -> None:
        b.add(ElementKind.PARAGRAPH, text, page=0)

    chunks = ElementChunker(ChunkSettings(max_words=50, min_words=5)).chunk(_doc(build))
    assert len(chunks) > 1
    assert all(c.n_words <= 50 for c in chunks)
    assert all(c.body.endswith(".") for c in chunks)
    assert " ".join(c.body for c in chunks) == text


def test_chunk_ids_are_deterministic_and_prefix_can_be_disabled() -> None:
    def build(b: DocumentBuilder) -> None:
        b.add(ElementKind.HEADING, "Scope", page=0, level=1)
        b.add(ElementKind.PARAGRAPH, _words(30), page=0)

    doc = _doc(build)
    a = ElementChunker(ChunkSettings()).chunk(doc)
    b = ElementChunker(ChunkSettings()).chunk(doc)
    assert [c.id for c in a] == [c.id for c in b]
    plain = ElementChunker(ChunkSettings(section_prefix=False)).chunk(doc)
    # Without the prefix the heading is part of the body instead.
    assert plain[0].body.startswith("# Scope\n")
    assert not a[0].body.startswith("Scope")
    assert a[0].text.startswith("Scope\n")


def test_sentence_helpers() -> None:
    assert split_sentences("Dr. Smith paid $3.5 million. Then he left!") == [
        "Dr. Smith paid $3.5 million.",
        "Then he left!",
    ]
    pieces = split_long_text("word " * 130, 50)
    assert [len(p.split()) for p in pieces] == [50, 50, 30]


def test_sections_bound_chunks_and_subsections_join_short_parents() -> None:
    def build(b: DocumentBuilder) -> None:
        b.add(ElementKind.HEADING, "Support", page=0, level=1)
        b.add(ElementKind.PARAGRAPH, "How we help.", page=0)
        b.add(ElementKind.HEADING, "Warranty", page=0, level=2)
        b.add(ElementKind.PARAGRAPH, "Three years on every instrument.", page=0)
        b.add(ElementKind.HEADING, "Returns", page=0, level=2)
        b.add(ElementKind.PARAGRAPH, "Unused instruments can be returned within 45 days.", page=0)

    chunks = ElementChunker(ChunkSettings(max_words=100, min_words=30)).chunk(_doc(build))
    # The parent's short introduction takes in its first subsection, whose heading stays in the
    # text; a sibling section starts a chunk of its own, however short.
    assert [(c.section_path, c.body) for c in chunks] == [
        (["Support"], "How we help.\n## Warranty\nThree years on every instrument."),
        (["Support", "Returns"], "Unused instruments can be returned within 45 days."),
    ]
    assert chunks[1].text.startswith("Support > Returns\n")


def test_headings_before_a_table_travel_with_it() -> None:
    def build(b: DocumentBuilder) -> None:
        b.add(ElementKind.PARAGRAPH, _words(40), page=0)
        b.add(ElementKind.HEADING, "Prices", page=0, level=1)
        b.add(ElementKind.TABLE, "a | b", page=0, markdown="| a | b |\n| --- | --- |\n| 1 | 2 |")

    chunks = ElementChunker(ChunkSettings(max_words=100, min_words=10)).chunk(_doc(build))
    table = next(c for c in chunks if c.kind == "table")
    assert table.section_path == ["Prices"] and table.text.startswith("Prices\n| a | b |")
    assert "# Prices" not in table.body
    assert len(table.element_ids) == 2


def _one_by_one(doc: Document, reads: list[str]) -> Iterator[Element]:
    for element in doc.indexable_elements():
        reads.append(element.id)
        yield element.model_copy()  # read back from a window: equal, not the same


def test_chunks_from_elements_read_one_at_a_time_are_the_chunks_of_the_document() -> None:
    """The worker chunks a long document from its spooled windows (``chunk_elements``): the
    chunks must be those of ``chunk``, and the document's own elements are never read."""
    from docsight.document.artifacts import bound_captions
    from docsight.ingest.page_chunker import AutoChunker, PageChunker
    from docsight.ingest.streamed import streaming_captions

    def build(b: DocumentBuilder) -> None:
        b.add(ElementKind.HEADER, "Annual report", page=0)
        b.add(ElementKind.HEADING, "Results", page=0, level=1)
        b.add(ElementKind.PARAGRAPH, _words(30), page=0)
        b.add(ElementKind.CAPTION, "Table 1: Values per row.", page=0)
        b.add(ElementKind.TABLE, "r1 1", markdown="| r | v |\n| --- | --- |\n| r1 | 1 |", page=0)
        b.add(ElementKind.PARAGRAPH, "short", page=0)
        b.add(ElementKind.PARAGRAPH, _words(200, "beta"), page=1)
        b.add(ElementKind.HEADING, "Outlook", page=1, level=1)
        b.add(ElementKind.PARAGRAPH, _words(40, "gamma"), page=1)

    doc = _doc(build)
    for chunker in (ElementChunker(ChunkSettings(max_words=60)), AutoChunker()):
        whole = chunker.chunk(doc)
        head = doc.model_copy(update={"elements": []})
        reads: list[str] = []
        chunks = chunker.chunk_elements(head, _one_by_one(doc, reads), bound_captions(doc))
        # Each chunk comes as soon as it is finished, before the elements after it are read.
        first = next(chunks)
        assert 0 < len(reads) < sum(1 for _ in doc.indexable_elements())
        streamed = [first, *chunks]
        assert streamed == whole and len(whole) >= 4
        assert len(reads) == sum(1 for _ in doc.indexable_elements())
        assert streaming_captions(chunker, doc) == bound_captions(doc) != {}

    # Page chunks need the document whole; so do elements the windows would reorder.
    assert streaming_captions(PageChunker(), doc) is None
    slides = doc.model_copy(update={"layout": "horizontal"})
    assert streaming_captions(AutoChunker(), slides) is None
    backwards = doc.model_copy(update={"elements": list(reversed(doc.elements))})
    assert streaming_captions(ElementChunker(), backwards) is None
