"""Retrieval: channels, fusion and read-out."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from docsight._registry import Registry
from docsight.encoders.base import Encoder
from docsight.encoders.visual import VisualEncoder
from docsight.index.base import Store
from docsight.retrieval.channels import Retriever
from docsight.retrieval.fusion import reciprocal_rank_fusion
from docsight.retrieval.hit import Hit

RETRIEVERS: Registry[Retriever] = Registry("retrievers")
RETRIEVERS.register(
    "bm25", "docsight.retrieval.channels:BM25Retriever", description="BM25 full text"
)
RETRIEVERS.register(
    "dense", "docsight.retrieval.channels:DenseRetriever", description="text embeddings"
)
RETRIEVERS.register(
    "page_bm25", "docsight.retrieval.channels:PageBM25Retriever", description="BM25 over pages"
)
RETRIEVERS.register(
    "page_ref",
    "docsight.retrieval.locate:PageReferenceRetriever",
    description="pages named in the question (page words only; see locate)",
)
RETRIEVERS.register(
    "locate",
    "docsight.retrieval.locate:LocateRetriever",
    description="pages and parts the question names: page 14, Table 3, Appendix B, the last chart",
)
RETRIEVERS.register(
    "tree", "docsight.retrieval.tree:TreeRetriever", description="the summary tree, top-down"
)
RETRIEVERS.register(
    "graph",
    "docsight.retrieval.channels:GraphRetriever",
    description="evolved chunk vectors of the content graph",
)

RETRIEVERS.register(
    "visual",
    "docsight.retrieval.visual:VisualRetriever",
    description="page images, by the visual encoder (DOCSIGHT_VISUAL_BACKEND)",
)

# Channels that need the encoder receive a zero-argument callable returning it.
_NEEDS_ENCODER = {"dense", "tree", "graph"}
_NEEDS_VISUAL = {"visual"}


def create_retrievers(
    names: Sequence[str],
    store: Store,
    encoder: Callable[[], Encoder],
    visual: Callable[[], VisualEncoder | None] | None = None,
) -> list[Retriever]:
    """``visual``: the visual encoder (or ``None`` when none is configured) for ``visual``."""
    retrievers: list[Retriever] = []
    for name in names:
        factory = RETRIEVERS.load(name)
        if name in _NEEDS_ENCODER:
            retrievers.append(factory(store, encoder))
        elif name in _NEEDS_VISUAL:
            retrievers.append(factory(store, visual or (lambda: None)))
        else:
            retrievers.append(factory(store))
    return retrievers


__all__ = ["RETRIEVERS", "Hit", "Retriever", "create_retrievers", "reciprocal_rank_fusion"]
