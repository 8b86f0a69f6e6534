"""Hierarchical fusion in HybridSearcher, with scripted channels over an in-memory store."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import pytest

from docsight.document.chunk import Chunk
from docsight.index.base import ChannelHit, DocumentInfo
from docsight.retrieval.search import HybridSearcher
from docsight.settings import RetrievalSettings


def _chunk(cid: str, page: int, doc: str = "d1") -> Chunk:
    return Chunk(
        id=cid,
        doc_id=doc,
        doc_name=f"{doc}.pdf",
        text=cid,
        body=f"body {cid}",
        page=page,
        pages=[page],
        order=int(cid[1:]),
    )


CHUNKS = {
    c.id: c
    for c in [_chunk("c0", 0), _chunk("c1", 1), _chunk("c2", 1), _chunk("c3", 2), _chunk("c4", 5)]
}


class MemoryStore:
    def get_chunks(self, ids: Sequence[str]) -> list[Chunk]:
        return [CHUNKS[i] for i in ids if i in CHUNKS]

    def chunks_on_pages(self, pages: Sequence[tuple[str, int]]) -> list[Chunk]:
        wanted = set(pages)
        return sorted(
            (c for c in CHUNKS.values() if (c.doc_id, c.page) in wanted), key=lambda c: c.order
        )

    def has_document(self, doc_id: str) -> DocumentInfo | None:
        return None


class Scripted:
    def __init__(
        self,
        name: str,
        level: Literal["chunk", "page"],
        hits: list[ChannelHit],
        scoped: bool = False,
    ) -> None:
        self.name, self.level, self.hits, self.scoped = name, level, hits, scoped
        self.calls: list[Sequence[str] | None] = []

    def retrieve(
        self, query: str, limit: int, doc_ids: Sequence[str] | None = None
    ) -> list[ChannelHit]:
        self.calls.append(doc_ids)
        return self.hits[:limit]


def chunk_hit(cid: str) -> ChannelHit:
    c = CHUNKS[cid]
    return ChannelHit(cid, c.doc_id, c.page, 1.0)


def page_hit(page: int, doc: str = "d1") -> ChannelHit:
    return ChannelHit(None, doc, page, 1.0)


def searcher(*channels: Scripted, **settings: object) -> HybridSearcher:
    options = {"weights": {}, **settings}
    return HybridSearcher(MemoryStore(), list(channels), RetrievalSettings(**options))  # type: ignore[arg-type]


def test_page_votes_lift_every_chunk_on_the_page() -> None:
    bm25 = Scripted("bm25", "chunk", [chunk_hit("c0"), chunk_hit("c3"), chunk_hit("c1")])
    pages = Scripted("page_bm25", "page", [page_hit(1), page_hit(0)])
    hits = searcher(bm25, pages).search("q", k=4)
    # c0: 1/61 + 1/62; c1: 1/63 + 1/61; c2 (not found by bm25) joins through its page: 1/61;
    # c3: 1/62
    assert [h.chunk_id for h in hits] == ["c0", "c1", "c2", "c3"]
    assert hits[0].score == pytest.approx(1 / 61 + 1 / 62)
    assert hits[1].ranks == {"bm25": 3, "page_bm25": 1}
    assert hits[2].ranks == {"page_bm25": 1}


def test_page_level_results_fuse_page_rankings_and_read_out_best_chunk() -> None:
    bm25 = Scripted("bm25", "chunk", [chunk_hit("c2"), chunk_hit("c0"), chunk_hit("c1")])
    dense = Scripted("dense", "chunk", [chunk_hit("c1"), chunk_hit("c3")])
    ref = Scripted("page_ref", "page", [page_hit(5)], scoped=True)
    hits = searcher(bm25, dense, ref, weights={"page_ref": 3.0}).search(
        "q", k=3, doc_ids=["d1"], unit="page"
    )
    # page 5 (named, weight 3) > page 1 (both channels' best page) > page 0 (tied with page 2
    # at rank 2, seen first)
    assert [(h.page, h.chunk_id) for h in hits] == [(5, "c4"), (1, "c1"), (0, "c0")]
    assert all(h.unit == "page" for h in hits)
    # page 1 is read out by c1, which both channels found, rather than c2 (bm25's top chunk)
    assert hits[1].ranks == {"bm25": 3, "dense": 1}
    assert ref.calls == [["d1"]]


def test_scoped_channels_search_the_documents_other_channels_found() -> None:
    bm25 = Scripted("bm25", "chunk", [chunk_hit("c1"), ChannelHit("x9", "d2", 0, 1.0)])
    ref = Scripted("page_ref", "page", [], scoped=True)
    searcher(bm25, ref, scope_documents=1).search("q", k=2)
    assert ref.calls == [["d1"]]


def test_pages_without_text_are_returned_as_pages() -> None:
    ref = Scripted("page_ref", "page", [page_hit(7)], scoped=True)
    hits = searcher(ref).search("what is on page 8", k=2, doc_ids=["d1"], unit="page")
    assert (
        len(hits) == 1 and hits[0].chunk_id is None and hits[0].page == 7 and hits[0].kind == "page"
    )


def test_invalid_arguments() -> None:
    s = searcher(Scripted("bm25", "chunk", []))
    with pytest.raises(ValueError):
        s.search("q", k=0)
    with pytest.raises(ValueError):
        s.search("q", unit="section")  # type: ignore[arg-type]
    assert s.search("q") == []
