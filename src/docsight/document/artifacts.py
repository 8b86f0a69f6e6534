"""Tables and pictures in running text: placeholders, captions and what a reader sees of them.

Chunks keep a placeholder where a table or picture stood, a Markdown link to the element,
``[Table: caption](#el-<id>)``; whoever shows the text to a reader (context assembly, the graph
readout) replaces it with the table's Markdown or the picture's description.
"""

from __future__ import annotations

import re

from docsight.document.model import Document, EdgeKind, Element, ElementKind

ARTIFACT_KINDS = frozenset({ElementKind.TABLE, ElementKind.FIGURE, ElementKind.CHART})
PLACEHOLDER_RE = re.compile(r"\[(?P<label>[^\]\n]{1,300})\]\(#el-(?P<id>[0-9a-f]{32})\)")

# An offline picture description (``ingest.describe``) reads "Chart on page 7, section A > B.
# <caption>. Text in it: <words>. Context: <the sentence before it>." Its first sentence only
# says what and where the picture is; the prefixes introduce what it holds. Readers that pick
# answers out of text (``agents.extractive``) drop the one and strip the others.
DESCRIPTION_TEXT = "Text in it: "
DESCRIPTION_CONTEXT = "Context: "
DESCRIPTION_FRAME_RE = re.compile(r"^\s*(?:Logo|Chart|Picture|Blank|Figure|Table) on page \d+\b")
_DESCRIPTION_PREFIX_RE = re.compile(
    rf"^\s*(?:{re.escape(DESCRIPTION_TEXT.strip())}|{re.escape(DESCRIPTION_CONTEXT.strip())})\s*"
)


def description_body(line: str) -> str:
    """A whole description line without its frame and caption: from "Text in it:" or
    "Context:" on (``""`` when it has neither). Cut before splitting into sentences, because a
    section path in the frame can hold sentence ends of its own ("ITEM 7. MANAGEMENT'S ...")."""
    if not DESCRIPTION_FRAME_RE.match(line):
        return line
    starts = [i for i in (line.find(DESCRIPTION_TEXT), line.find(DESCRIPTION_CONTEXT)) if i >= 0]
    return line[min(starts) :] if starts else ""


def description_content(sentence: str) -> str:
    """A sentence of a picture description as content: ``""`` for its framing sentence, the
    words without their "Text in it:"/"Context:" prefix otherwise."""
    if DESCRIPTION_FRAME_RE.match(sentence):
        return ""
    return _DESCRIPTION_PREFIX_RE.sub("", sentence)


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
