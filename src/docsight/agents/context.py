"""Context assembly: from hits to the numbered sources an answerer reads.

The readout (:mod:`docsight.retrieval.readout`) decides what is read: the hits, what the
content graph says belongs with them, whole pages that several hits point at, and neighbours,
within a token budget, in document order. Here the passages become numbered sources; a slide's
text and what its page image shows become one source.
"""

from __future__ import annotations

from collections.abc import Sequence

from docsight.agents.answer import Source
from docsight.index.base import Store
from docsight.retrieval.hit import Hit
from docsight.retrieval.readout import Passage, ReadoutPlan, read_out


def assemble(hits: Sequence[Hit], store: Store, plan: ReadoutPlan | None = None) -> list[Source]:
    passages = _merge_page_images(read_out(hits, store, plan))
    return [
        Source(
            n=n,
            rank=p.rank,
            kind=p.kind,
            text=p.text,
            image_ids=p.image_ids,
            via=p.via,
            **p.location(),
        )
        for n, p in enumerate(passages, start=1)
    ]


def _merge_page_images(passages: list[Passage]) -> list[Passage]:
    """A page's text chunk and its page-image chunk become one passage: the text, then what
    the page image shows. The passages given are not modified."""
    images = {(p.doc_id, p.page): p for p in passages if p.kind == "page_image"}
    texts = {(p.doc_id, p.page) for p in passages if p.kind == "page"}
    merged: list[Passage] = []
    for p in passages:
        key = (p.doc_id, p.page)
        if p.kind == "page_image" and key in texts:
            continue  # shown with its page text
        if p.kind == "page" and key in images:
            image = images[key]
            p = p.model_copy(
                update={
                    "text": f"{p.text}\nPage image: {image.text}",
                    "rank": min(p.rank, image.rank),
                    "image_ids": list(dict.fromkeys([*p.image_ids, *image.image_ids])),
                }
            )
        merged.append(p)
    return merged
