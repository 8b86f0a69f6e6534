"""Parts a text names by label (retrieval.census): the plural asked finds its singular as the
text capitalises it, lists of labels count each, and a lower-case mention is no label."""

from __future__ import annotations

from dataclasses import dataclass

from docsight.retrieval.census import _mentioned_labels, read_census


@dataclass
class _Chunk:
    id: str
    page: int
    text: str


@dataclass
class _Hit:
    chunk_id: str


class _Store:
    """The two calls the census makes: a word search, then the chunks it found."""

    def __init__(self, texts: list[str]) -> None:
        self.chunks = [_Chunk(f"c{i}", i, t) for i, t in enumerate(texts)]
        self.searched: list[str] = []

    def text_search(self, query: str, k: int, doc_ids: list[str]) -> list[_Hit]:
        self.searched.append(query)
        return [_Hit(c.id) for c in self.chunks if query.lower() in c.text.lower()][:k]

    def get_chunks(self, ids: list[str]) -> list[_Chunk]:
        return [c for c in self.chunks if c.id in ids]


def test_labels_of_every_plural_form_are_counted_once() -> None:
    store = _Store(
        [
            "This Agreement is made between Party A and Party B.",
            "PARTY C joins later; the parties agree that Party A pays.",
            "Schedules 1, 2 and 3 apply, and Schedule 4.2 too.",
            "Annexes A and B are attached; see Annex C. An annex 9 is not a label.",
        ]
    )
    assert _mentioned_labels(store, "d", "parties") == [  # type: ignore[arg-type]
        ("Party A", 0),
        ("Party B", 0),
        ("Party C", 1),
    ]
    assert store.searched[-1] == "party"
    schedules = _mentioned_labels(store, "d", "schedules")  # type: ignore[arg-type]
    assert [n for n, _ in schedules] == ["Schedule 1", "Schedule 2", "Schedule 3", "Schedule 4.2"]
    annexes = _mentioned_labels(store, "d", "annexes")  # type: ignore[arg-type]
    assert [n for n, _ in annexes] == ["Annex A", "Annex B", "Annex C"]
    assert read_census("How many parties are named in the agreement?") is not None


@dataclass
class _KindChunk(_Chunk):
    kind: str = "text"


class _AnyWordStore(_Store):
    """A word search that finds a chunk holding any word of the query, as BM25 does."""

    def __init__(self, chunks: list[_KindChunk]) -> None:
        self.chunks = chunks  # type: ignore[assignment]
        self.searched = []

    def text_search(self, query: str, k: int, doc_ids: list[str]) -> list[_Hit]:
        self.searched.append(query)
        words = query.lower().split()
        return [_Hit(c.id) for c in self.chunks if any(w in c.text.lower() for w in words)][:k]


def test_mentions_of_a_name_are_counted_by_page() -> None:
    from docsight.retrieval.census import _mentions, mention_text, mentioned_pages

    store = _AnyWordStore(
        [
            _KindChunk("a", 0, "The Plaintiffs filed Exhibit P-10 and Exhibit P-100.", "text"),
            _KindChunk("b", 2, "Exhibits P-10 and P-11 are reports; see exhibit p-10.", "text"),
            # A page's image repeats its text, and one text read twice counts once.
            _KindChunk(
                "c", 2, "Exhibits P-10 and P-11 are reports; see exhibit p-10.", "page_image"
            ),
            _KindChunk("d", 2, "Exhibits P-10 and P-11 are reports; see exhibit p-10.", "text"),
            _KindChunk("e", 5, "Nothing about it here, only P-1.", "text"),
        ]
    )
    assert _mentions(store, "d", "Exhibit P-10") == {0: 1, 2: 2}  # type: ignore[arg-type]
    # A slide whose words only OCR read: its picture's words count, once.
    slide = _KindChunk("f", 7, "Exhibit P-10 filed", "figure")
    image = _KindChunk("g", 7, "Page 8. Exhibit P-10 filed", "page_image")
    store.chunks.extend([slide, image])  # type: ignore[list-item]
    assert _mentions(store, "d", "Exhibit P-10") == {0: 1, 2: 2, 7: 1}  # type: ignore[arg-type]
    # A name without a number is matched whole, its first word also in the plural.
    assert _mentions(store, "d", "exhibit")[2] == 2  # type: ignore[arg-type]

    from docsight.retrieval.census import Census

    census = Census("d", "mention", "Exhibit P-10", 3, [("Exhibit P-10", 0), ("Exhibit P-10", 2)])
    text = mention_text(census, "claim.pdf")
    assert text == "3 mentions of “Exhibit P-10” in claim.pdf, on pages 1, 3."
    assert mentioned_pages(text) == ["1", "3"] and mentioned_pages("4 tables in x.pdf.") == []


def test_questions_about_a_names_mentions() -> None:
    times = read_census(
        "How many times does Exhibit P-10 mentioned in the document? List all pages"
    )
    assert times is not None and (times.part, times.noun) == ("mention", "Exhibit P-10")
    where = read_census("On which pages is the T-200 mentioned?")
    assert where is not None and where.noun == "T-200"
    assert read_census("Which pages mention the desiccant pack?").noun == "desiccant pack"  # type: ignore[union-attr]
    assert read_census("How many times has revenue grown since 2010?") is None
