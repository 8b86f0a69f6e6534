"""The ``visual`` channel: pages ranked by their image, not their text.

The question is embedded by the collection's visual encoder and compared with every page
image's vectors (``index.visual``): cosine for single-vector encoders, MaxSim (late interaction)
for multi-vector ones such as ColPali. It is a page channel like ``page_bm25``: fusion lifts the
chunks of the pages it ranks, and ``unit="page"`` ranks its pages directly, so it finds pages
whose words no text channel matched (charts, scans, slides).

It is scoped like ``locate``: it searches the document filter, or across a corpus the documents
the text channels rank best (``DOCSIGHT_RETRIEVAL_SCOPE_DOCUMENTS``), because exact MaxSim reads
every token vector it scores: Lance takes about 2 ms a page of 1,024 tokens (1.75 s for 1,000
such pages, 2.4 s for 10,000 pages of 128 tokens, on two cores), against 0.2 s for ten documents.
Alone (an ablation), it searches the filter or the whole collection.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Literal

import numpy as np

from docsight.errors import ConfigurationError
from docsight.index.base import ChannelHit, Store

if TYPE_CHECKING:
    from docsight.encoders.visual import VisualEncoder

log = logging.getLogger(__name__)


class VisualRetriever:
    """Pages by the similarity of their image vectors with the question's visual embedding."""

    name = "visual"
    level: Literal["chunk", "page"] = "page"
    scoped = True

    def __init__(self, store: Store, encoder: Callable[[], VisualEncoder | None]) -> None:
        self.store = store
        self._encoder = encoder  # resolved lazily: a local model loads only when searched

    def retrieve(
        self, query: str, limit: int, doc_ids: Sequence[str] | None = None
    ) -> list[ChannelHit]:
        encoder = self._encoder()
        if encoder is None or not query.strip() or doc_ids == []:
            return []
        embedded = encoder.encode_queries([query])
        vector = np.asarray(embedded[0], dtype=np.float32)
        return self.store.page_vector_search(vector, limit, doc_ids)


def visual_channels(
    channels: Sequence[str], *, explicit: bool, encoder: VisualEncoder | None, store: Store
) -> list[str]:
    """The channels a search runs: ``channels``, plus ``visual`` when they are the default
    ones (not ``explicit``) and the collection's page images are embedded by the configured
    visual encoder. Listing ``visual`` without a visual encoder is an error; with one, over a
    collection without page vectors, a logged warning (the channel has nothing to search). An
    encoder other than the collection's is an error either way, as for the text encoder: the
    vectors of two models are never compared."""
    listed = "visual" in channels
    out = list(channels)
    if not listed and explicit:
        return out
    if encoder is None:
        if listed:
            raise ConfigurationError(
                "the visual channel needs a visual encoder: set DOCSIGHT_VISUAL_BACKEND (openai "
                "or colpali, see the README), or leave visual out of DOCSIGHT_RETRIEVAL_CHANNELS"
            )
        return out
    bound = store.visual_binding()
    if bound is None:
        if listed:
            log.warning(
                "the visual channel has nothing to search: no page image of %s is embedded "
                "yet; `docsight reindex --visual` embeds them",
                store.path,
            )
        return [c for c in out if c != "visual"]
    if bound.fingerprint != encoder.fingerprint:
        from docsight.index.visual import mismatch_message

        raise ConfigurationError(mismatch_message(store.path, bound, encoder.fingerprint))
    return out if listed else [*out, "visual"]


def chunking_variant(strategy: str, visual_backend: str) -> str:
    """How the chunking strategy and the page images combine, named after MM-BizRAG's variants
    (``docsight info`` shows it). Page images are always their own channel, fused by rank:
    docsight has no joint text-and-image embedding of one unit."""
    if visual_backend == "none":
        return f"{strategy} (text only: no visual encoder, page images are not embedded)"
    if strategy == "page":
        return (
            "page, with page images (PCMHE: page-text chunks and page-image vectors ranked "
            "separately, fused by reciprocal rank)"
        )
    if strategy == "interleaved":
        return (
            "interleaved, with page images (TCMIE-like: text units carry their tables and "
            "pictures inline; the visual channel's page ranks lift every unit on the page, "
            "rather than one multimodal vector per unit)"
        )
    return (
        f"{strategy}, with page images (text chunks by element; page-image vectors ranked "
        "as a channel of their own and fused by reciprocal rank)"
    )
