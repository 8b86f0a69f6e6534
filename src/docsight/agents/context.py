"""Context assembly: from hits to the numbered sources an answerer reads.

Sources come in document order (documents by their best hit), each chunk once. A text chunk's
placeholders for tables and pictures are replaced with the table's Markdown or the picture's
description, unless that table or picture is a source of its own already: then the placeholder
stays a short reference, so nothing appears twice.
"""

from __future__ import annotations

from collections.abc import Sequence

from docsight.agents.answer import Source
from docsight.document.artifacts import PLACEHOLDER_RE, artifact_reading
from docsight.document.model import ElementKind
from docsight.index.base import Store
from docsight.retrieval.hit import Hit


def assemble(hits: Sequence[Hit], store: Store) -> list[Source]:
    unique = _merge_page_images(
        list({h.chunk_id or f"page:{h.doc_id}:{h.page}": h for h in hits}.values())
    )
    chunks = {c.id: c for c in store.get_chunks([h.chunk_id for h in unique if h.chunk_id])}
    doc_rank: dict[str, int] = {}
    for hit in unique:
        doc_rank.setdefault(hit.doc_id, hit.rank)

    def position(hit: Hit) -> tuple[int, int, int]:
        chunk = chunks.get(hit.chunk_id or "")
        return (doc_rank[hit.doc_id], hit.page, chunk.order if chunk else 0)

    ordered = sorted(unique, key=position)
    shown = {
        element_id
        for hit in ordered
        if hit.kind in (ElementKind.TABLE, ElementKind.FIGURE, ElementKind.CHART)
        for element_id in hit.element_ids
    }
    wanted = {
        m.group("id")
        for hit in ordered
        for m in PLACEHOLDER_RE.finditer(hit.text)
        if m.group("id") not in shown
    }
    artifacts = {e.id: e for e in store.get_elements(sorted(wanted))} if wanted else {}

    def expand(text: str) -> str:
        def replace(match: object) -> str:
            label, element_id = match.group("label"), match.group("id")  # type: ignore[attr-defined]
            element = artifacts.get(element_id)
            if element is None:
                return f"[{label}]"
            # The label already carries the caption.
            return f"[{label}]\n{artifact_reading(element, None)}\n"

        return PLACEHOLDER_RE.sub(replace, text).strip()

    sources = []
    for n, hit in enumerate(ordered, start=1):
        chunk = chunks.get(hit.chunk_id or "")
        images = list(chunk.image_ids) if chunk else []
        images += [
            artifacts[m.group("id")].image_id or ""
            for m in PLACEHOLDER_RE.finditer(hit.text)
            if m.group("id") in artifacts and artifacts[m.group("id")].image_id
        ]
        source = Source.from_hit(n, hit)
        sources.append(
            source.model_copy(
                update={"text": expand(hit.text), "image_ids": list(dict.fromkeys(images))}
            )
        )
    return sources


def _merge_page_images(hits: list[Hit]) -> list[Hit]:
    """A page's text chunk and its page-image chunk become one source: the text, then what the
    page image shows. The hits given are not modified."""
    images = {(h.doc_id, h.page): h for h in hits if h.kind == "page_image"}
    texts = {(h.doc_id, h.page) for h in hits if h.kind == "page"}
    merged: list[Hit] = []
    for hit in hits:
        key = (hit.doc_id, hit.page)
        if hit.kind == "page_image" and key in texts:
            continue  # shown with its page text
        if hit.kind == "page" and key in images:
            hit = hit.model_copy(update={"text": f"{hit.text}\nPage image: {images[key].text}"})
        merged.append(hit)
    return merged
