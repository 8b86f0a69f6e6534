"""Collection stores, looked up by name."""

from __future__ import annotations

from docsight._registry import Registry
from docsight.index.base import (
    ChannelHit,
    CheckProblem,
    CheckReport,
    CollectionStats,
    DocumentInfo,
    Store,
)

STORES: Registry[Store] = Registry("stores")
STORES.register("lance", "docsight.index.lance:LanceStore", description="embedded LanceDB")

__all__ = [
    "STORES",
    "ChannelHit",
    "CheckProblem",
    "CheckReport",
    "CollectionStats",
    "DocumentInfo",
    "Store",
]
