"""The document map as data: the section tree with what each section holds, and the edges.

This is what ``docsight map`` prints and what agents will navigate: sections with their pages and
element counts, the tables and figures in each with their captions, and the references between
parts of the document, and the text kept out of search because a reader would not see it.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from docsight.document.model import Document, EdgeKind, ElementKind

_ARTIFACTS = (ElementKind.TABLE, ElementKind.FIGURE, ElementKind.CHART)
#: Characters of each hidden element shown in the map.
_HIDDEN_PREVIEW = 200


def document_map(doc: Document) -> dict[str, Any]:
    captions = {e.target: e.source for e in doc.edges if e.kind == EdgeKind.CAPTION_OF}
    by_id = {e.id: e for e in doc.elements}
    sections = doc.section_index()
    children: dict[str | None, list[Any]] = {}
    for section in sorted(doc.sections, key=lambda s: s.order):
        children.setdefault(section.parent_id, []).append(section)
    section_titles = {s.id: s.title for s in doc.sections}
    per_section: dict[str | None, list[Any]] = {}
    pages_of: dict[str | None, set[int]] = {}
    for element in doc.indexable_elements():
        per_section.setdefault(element.section_id, []).append(element)
        pages_of.setdefault(element.section_id, set()).add(element.page)

    def artifacts(section_id: str | None) -> list[dict[str, Any]]:
        out = []
        for e in per_section.get(section_id, []):
            if e.kind in _ARTIFACTS:
                caption = by_id.get(captions.get(e.id, ""))
                out.append(
                    {
                        "id": e.id,
                        "kind": str(e.kind),
                        "page": e.page,
                        "caption": caption.text if caption else None,
                    }
                )
        return out

    def node(section_id: str | None, nested: bool = True) -> dict[str, Any]:
        elements = per_section.get(section_id, [])
        section = sections.get(section_id or "")
        pages = sorted(pages_of.get(section_id, set()))
        return {
            "id": section_id,
            "title": section.title if section else None,
            "level": section.level if section else 0,
            "page": section.page if section else (pages[0] if pages else 0),
            "pages": [pages[0], pages[-1]] if pages else [],
            "elements": dict(
                Counter(str(e.kind) for e in elements if e.kind != ElementKind.HEADING)
            ),
            "artifacts": artifacts(section_id),
            "children": [node(c.id) for c in children.get(section_id, [])] if nested else [],
        }

    def target_name(edge: Any) -> str:
        if edge.target_page is not None:
            return f"page {edge.target_page + 1}"
        if edge.target in section_titles:
            return f"section {section_titles[edge.target]}"
        target = by_id.get(edge.target)
        return f"{target.kind} on page {target.page + 1}" if target else str(edge.target)

    return {
        "id": doc.id,
        "name": doc.name,
        "title": doc.title,
        "layout": doc.layout,
        "pages": doc.page_count,
        "front_matter": node(None, nested=False),
        "sections": [node(s.id) for s in children.get(None, [])],
        "references": [
            {
                "from_page": by_id[e.source].page if e.source in by_id else None,
                "text": e.text,
                "to": target_name(e),
            }
            for e in doc.edges
            if e.kind == EdgeKind.REFERS_TO
        ],
        "captions_bound": sum(1 for e in doc.edges if e.kind == EdgeKind.CAPTION_OF),
        # Text a reader would not see: shown so people can inspect what was kept out of search.
        "hidden": [
            {
                "id": e.id,
                "page": e.page,
                "reasons": [str(r) for r in e.hidden],
                "text": e.text[:_HIDDEN_PREVIEW],
                "chars": len(e.text),
                "bbox": list(e.bbox.as_tuple()) if e.bbox else None,
            }
            for e in doc.elements
            if e.hidden
        ],
    }
