"""Descriptions that make tables, pictures and slide pages retrievable as text (MM-BizRAG).

Offline, every description is assembled from what the document itself says — table cells with
their headers, captions, labels read off a picture, the sentence before it, the page title — so it
is never empty and never invented. Pictures are classified first (logo, chart, picture, blank):
logos and blank images carry no content and are left out of the index.

Descriptions are stored on the elements (``attrs["description"]``, ``attrs["picture_class"]``) and,
for horizontal documents, on the pages (``Page.description``).
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from docsight.document.artifacts import DESCRIPTION_CONTEXT, DESCRIPTION_TEXT
from docsight.document.model import (
    EdgeKind,
    Element,
    ElementKind,
    Layout,
    Page,
    ParsedDocument,
)

if TYPE_CHECKING:
    from docsight.ingest.vlm import VisionDescriber

PICTURE_CLASSES = ("logo", "chart", "picture", "blank")
#: Pictures of these classes are not content.
SKIPPED_CLASSES = frozenset({"logo", "blank"})
_MAX_ROWS = 60
_MAX_DESCRIPTION = 2000
_NUMBER = re.compile(r"^[-+(]?[$€£]?\d[\d.,]*%?\)?$")


def _markdown_rows(markdown: str) -> list[list[str]]:
    rows = []
    for line in markdown.splitlines():
        line = line.strip()
        if not (line.startswith("|") and line.endswith("|")):
            continue
        cells = [c.strip().replace("\\|", "|") for c in line.strip("|").split("|")]
        if all(set(c) <= set("-: ") for c in cells):
            continue
        rows.append(cells)
    return rows


def describe_table(table: Element, caption: str | None) -> str:
    """A row-by-row reading of the table: "Revenue: 2023 412.0; 2024 468.5." per row."""
    rows = _markdown_rows(table.markdown or "") or [
        [c.strip() for c in line.split("|")] for line in table.text.splitlines() if line.strip()
    ]
    parts = [caption.rstrip(".") + "." if caption else "Table."]
    if not rows:
        return parts[0]
    header, body = rows[0], rows[1:]
    if header:
        parts.append("Columns: " + ", ".join(h for h in header if h) + ".")
    for row in body[:_MAX_ROWS]:
        label, *values = row
        pairs = [f"{h} {v}" if h else v for h, v in zip(header[1:], values, strict=False) if v]
        if not pairs and not label:
            continue
        parts.append(
            f"{label}: {'; '.join(pairs)}." if label and pairs else f"{label or '; '.join(pairs)}."
        )
    if len(body) > _MAX_ROWS:
        parts.append(f"({len(body) - _MAX_ROWS} more rows.)")
    return " ".join(parts)[:_MAX_DESCRIPTION]


def classify_picture(image_bytes: bytes | None, element: Element, page_area_share: float) -> str:
    """logo, chart, picture or blank, from the crop's pixels and the words found in it."""
    labels = element.text.split()
    numeric = sum(1 for w in labels if _NUMBER.match(w))
    stats = _pixel_stats(image_bytes) if image_bytes else None
    flat = stats is not None and stats["flat"] >= 0.75
    if stats is not None and stats["spread"] < 6.0 and not labels:
        return "blank"
    if numeric >= 3:
        return "chart"
    if page_area_share < 0.02 and len(labels) <= 3:
        return "logo"  # small marks with a word or two: brands, icons, badges
    if flat and labels:
        return "chart"
    return "picture"


def _pixel_stats(image_bytes: bytes) -> dict[str, float] | None:
    """Brightness spread, and the share of pixels in the 4 dominant of 64 colour bins: flat
    graphics (charts, logos) put nearly all pixels there, photographs far fewer."""
    try:
        import numpy as np
        from PIL import Image

        with Image.open(io.BytesIO(image_bytes)) as image:
            image.draft("RGB", (128, 128))
            small = image.convert("RGB").resize((96, 96))
        pixels = np.asarray(small, dtype=np.int32).reshape(-1, 3)
    except Exception:  # an undecodable crop is treated as having no pixels to judge
        return None
    spread = float(pixels.mean(axis=1).std())
    bins = (pixels // 64) @ np.array([16, 4, 1])
    counts = np.sort(np.bincount(bins, minlength=64))[::-1]
    return {"spread": spread, "flat": float(counts[:4].sum()) / len(bins)}


def describe_picture(
    element: Element,
    picture_class: str,
    caption: str | None,
    before: str | None,
    section_path: Sequence[str] = (),
) -> str:
    where = f" on page {element.page + 1}"
    if section_path:
        where += f", section {' > '.join(section_path)}"
    parts = [f"{picture_class.capitalize()}{where}."]
    if caption:
        parts.append(caption.rstrip(".") + ".")
    if element.text.strip():
        parts.append(DESCRIPTION_TEXT + " ".join(element.text.split()) + ".")
    if before:
        parts.append(DESCRIPTION_CONTEXT + before.rstrip(".") + ".")
    return " ".join(parts)[:_MAX_DESCRIPTION]


def _last_sentence(text: str) -> str:
    pieces = re.split(r"(?<=[.!?])\s+", text.strip())
    return pieces[-1] if pieces else ""


def describe_page(elements: Sequence[Element], page: int) -> str:
    """A slide-like page as text: its title, its words in reading order, its pictures."""
    title = next(
        (e.text for e in elements if e.kind in (ElementKind.TITLE, ElementKind.HEADING)), None
    )
    words: list[str] = []
    pictures: list[str] = []
    for e in elements:
        if e.kind in (ElementKind.FIGURE, ElementKind.CHART):
            description = e.attrs.get("description")
            if e.attrs.get("picture_class") not in SKIPPED_CLASSES and description:
                pictures.append(str(description))
        elif e.kind not in (ElementKind.HEADER, ElementKind.FOOTER) and e.text != title:
            words.append(" ".join(e.text.split()))
    parts = [f"Page {page + 1}" + (f": {title}." if title else ".")]
    if words:
        parts.append(" ".join(words))
    parts.extend(pictures)
    return " ".join(parts)[:_MAX_DESCRIPTION]


def enrich(parsed: ParsedDocument, vision: VisionDescriber | None = None) -> ParsedDocument:
    """Add descriptions and picture classes to a parsed document (in place, and returned).

    With a vision model, it decides the layout from the first page renders and describes
    pictures and slide pages; whatever it cannot answer keeps its offline description.
    """
    doc = parsed.document
    assets: dict[str, Any] = {a.id: a for a in parsed.assets}
    describer = Describer(vision)
    doc.layout = describer.start(doc.pages, doc.media_type, assets) or doc.layout
    by_id = {e.id: e for e in doc.elements}
    captions = {
        e.target: by_id[e.source].text
        for e in doc.edges
        if e.kind == EdgeKind.CAPTION_OF and e.target and e.source in by_id
    }
    describer.describe(doc.indexable_elements(), captions, assets, doc.section_path)
    if doc.layout == "horizontal":
        doc.pages = describer.describe_pages(doc.pages, doc.indexable_elements(), assets)
    describer.finish(parsed.warnings)
    return parsed


class Describer:
    """:func:`enrich` in steps, so a document can be described a batch of elements at a time
    (a streamed parse, :mod:`docsight.document.stream`): :meth:`start` once, :meth:`describe`
    for each batch in reading order, :meth:`describe_pages` once the layout is known (for a
    horizontal document), :meth:`finish` at the end."""

    def __init__(self, vision: VisionDescriber | None) -> None:
        self.vision = vision
        #: The last sentence of the last paragraph described: a picture's context.
        self._previous: str | None = None

    def start(
        self, pages: Sequence[Page], media_type: str, assets: Mapping[str, Any]
    ) -> Layout | None:
        """The layout the vision model sees in the first page renders (``None``: no model, or
        no answer)."""
        if self.vision is None:
            return None
        self.vision.start_document()
        renders = [
            assets[p.image_id].data for p in pages[:2] if p.image_id and p.image_id in assets
        ]
        if renders and media_type.startswith(("application/pdf", "image/")):
            return self.vision.layout(renders)
        return None

    def describe(
        self,
        elements: Iterable[Element],
        captions: Mapping[str, str],
        assets: Mapping[str, Any],
        section_path: Callable[[str | None], Sequence[str]],
    ) -> None:
        """Describe the tables and pictures among the indexable ``elements`` (hidden elements
        are never indexed: describing them would carry their text into the index).
        ``captions``: a table's or picture's id → its bound caption's text."""
        vision = self.vision
        to_look_at: list[tuple[Element, bytes, str | None, str | None]] = []
        tables: list[tuple[Element, str | None]] = []
        for element in elements:
            if not element.is_indexable:
                continue
            caption = captions.get(element.id, element.attrs.get("caption"))
            if element.kind == ElementKind.TABLE or (
                element.kind == ElementKind.CHART and element.markdown
            ):
                # Charts read from Office files carry their data table: describe it row by row.
                title = caption or (element.text if element.kind == ElementKind.CHART else None)
                element.attrs["description"] = describe_table(element, title)
                if vision is not None and element.markdown:
                    tables.append((element, caption))
            elif element.kind in (ElementKind.FIGURE, ElementKind.CHART):
                share = element.bbox.area if element.bbox is not None else 1.0
                asset = assets.get(element.image_id) if element.image_id else None
                picture_class = (
                    "chart"
                    if element.kind == ElementKind.CHART
                    else classify_picture(asset.data if asset else None, element, share)
                )
                element.attrs["picture_class"] = picture_class
                path = section_path(element.section_id)
                element.attrs["description"] = describe_picture(
                    element, picture_class, caption, self._previous, path
                )
                if (
                    vision is not None
                    and asset is not None
                    and picture_class != "blank"
                    and share >= vision.settings.min_picture_area
                ):
                    to_look_at.append((element, asset.data, caption, self._previous))
            elif element.kind == ElementKind.PARAGRAPH and element.text.strip():
                self._previous = _last_sentence(element.text)
        if vision is not None and (to_look_at or tables):
            _ask_vision(vision, to_look_at, tables)

    def describe_pages(
        self, pages: Sequence[Page], elements: Iterable[Element], assets: Mapping[str, Any]
    ) -> list[Page]:
        """``pages`` with descriptions of a slide-like document's pages, from its indexable
        ``elements`` (described already)."""
        per_page: dict[int, list[Element]] = {}
        for element in elements:
            if element.is_indexable:
                per_page.setdefault(element.page, []).append(element)
        described = []
        for page in pages:
            description = describe_page(per_page.get(page.index, []), page.index)
            if self.vision is not None and page.image_id and page.image_id in assets:
                description = (
                    self.vision.page(assets[page.image_id].data, description) or description
                )
            described.append(page.model_copy(update={"description": description}))
        return described

    def finish(self, warnings: list[str]) -> None:
        """Report the vision model's failures, if any, in ``warnings``."""
        vision = self.vision
        if vision is not None and vision.failures:
            warnings.append(
                f"the vision model failed on {len(vision.failures)} request(s); offline "
                f"descriptions were kept ({vision.failures[0]})"
            )


def _ask_vision(
    vision: VisionDescriber,
    pictures: list[tuple[Element, bytes, str | None, str | None]],
    tables: list[tuple[Element, str | None]],
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    def look(item: tuple[Element, bytes, str | None, str | None]) -> None:
        element, crop, caption, context = item
        answer = vision.picture(crop, caption, context)
        if answer is not None:
            element.attrs["picture_class"] = answer.picture_class
            element.attrs["description"] = answer.description
            element.attrs["described_by"] = "vlm"

    def read(item: tuple[Element, str | None]) -> None:
        element, caption = item
        summary = vision.table(element.markdown or "", caption)
        if summary:
            # The summary leads; the row-by-row reading stays because it carries every value.
            element.attrs["description"] = f"{summary} {element.attrs['description']}"
            element.attrs["described_by"] = "vlm"

    with ThreadPoolExecutor(max_workers=vision.settings.max_concurrency) as pool:
        list(pool.map(look, pictures))
        list(pool.map(read, tables))
