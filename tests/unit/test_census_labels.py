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
