"""Context assembly: from hits to the numbered sources an answerer reads.

The readout (:mod:`docsight.retrieval.readout`) decides what is read: the hits, what the
content graph says belongs with them, whole pages that several hits point at, and neighbours,
within a token budget, in document order. Here the passages become numbered sources; a slide's
text and what its page image shows become one source.
"""

from __future__ import annotations

from collections.abc import Sequence

from docsight.agents.answer import Source
from docsight.document.model import Document
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


def source_images(
    sources: Sequence[Source], store: Store, limit: int, *, dpi: float | None, max_side: int
) -> list[tuple[int, bytes]]:
    """Up to ``limit`` images of ``sources`` as ``(source number, PNG)``, best-ranked first: the
    figure crops a source carries, else the render of its page; each page or crop once, its
    longest side at most ``max_side`` pixels."""
    shown: list[tuple[int, bytes]] = []
    seen: set[str] = set()
    documents: dict[str, Document] = {}
    for source in sorted(sources, key=lambda s: (s.rank, s.n)):
        if len(shown) >= limit:
            break
        ids = list(source.image_ids)
        if not ids:
            if source.doc_id not in documents:
                documents[source.doc_id] = store.get_document(source.doc_id)
            document = documents[source.doc_id]
            if 0 <= source.page < document.page_count:
                page_id = document.pages[source.page].image_id
                ids = [page_id] if page_id else []
        for image_id in ids:
            if image_id in seen or len(shown) >= limit:
                continue
            seen.add(image_id)
            asset = store.get_asset(image_id, dpi=dpi)
            if asset is not None and asset.data:
                shown.append((source.n, bounded_png(asset.data, max_side)))
    return shown


def bounded_png(data: bytes, max_side: int) -> bytes:
    """The image as it is when its longest side is within ``max_side``, else scaled down."""
    import io

    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        if max(image.size) <= max_side:
            return data
        image.thumbnail((max_side, max_side))
        out = io.BytesIO()
        image.save(out, format="PNG")
        return out.getvalue()
