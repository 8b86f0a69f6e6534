"""The source files a collection keeps, once each, named by the hash of their bytes.

Page images are the bulk of a collection that stores them: a 96 dpi PNG of a page weighs about
as much as 5 to 20 pages of the PDF it was rendered from. So a collection keeps the PDF (or the
image file) itself and renders pages and crops from it when they are asked for
(:mod:`docsight.index.renders`); the ``assets`` table holds the recipe of each image instead of
its pixels.

Files live under ``sources/<first two hex digits>/<sha256><extension>``, written to a temporary
name and renamed, so a file under its final name is always whole. A document's file is written
before its rows and removed after them; ``recover`` removes files no stored document claims (a
crash between the two steps), and ``check`` verifies that each document's file is there with
the bytes its hash names.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

from docsight.document.model import Asset
from docsight.errors import IngestError
from docsight.index.base import CollectionStats
from docsight.index.guard import damaged

if TYPE_CHECKING:
    from docsight.index.lance import LanceStore

SOURCES_DIR = "sources"
_CHUNK = 1 << 20
_EXTENSIONS = {
    "application/pdf": ".pdf",
    "image/png": ".png",
    "image/jpeg": ".jpg",
    "image/tiff": ".tif",
}
_TMP = ".tmp-"


class SourceFiles:
    """The ``sources`` directory of a collection."""

    def __init__(self, collection: Path) -> None:
        self.root = Path(collection) / SOURCES_DIR

    def path(self, sha256: str, media_type: str) -> Path:
        return self.root / sha256[:2] / f"{sha256}{_EXTENSIONS.get(media_type, '')}"

    def find(self, sha256: str, media_type: str) -> Path | None:
        path = self.path(sha256, media_type)
        return path if path.is_file() else None

    def put(self, source: Path, sha256: str, media_type: str) -> Path:
        """Copy ``source`` in, checking that its bytes still hash to ``sha256`` (a kept copy is
        replaced, whole or damaged). Raises :class:`IngestError` when the file changed."""
        target = self.path(sha256, media_type)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f"{target.name}{_TMP}{os.getpid()}")
        digest = hashlib.sha256()
        try:
            with open(source, "rb") as src, open(tmp, "wb") as dst:
                while block := src.read(_CHUNK):
                    digest.update(block)
                    dst.write(block)
                dst.flush()
                os.fsync(dst.fileno())
            if digest.hexdigest() != sha256:
                raise IngestError(
                    source, "the file changed while it was being ingested; ingest it again"
                )
            os.replace(tmp, target)
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()
        return target

    def remove(self, sha256: str, media_type: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path(sha256, media_type).unlink()
        with contextlib.suppress(OSError):
            self.path(sha256, media_type).parent.rmdir()  # only when empty

    def stored(self) -> dict[str, Path]:
        """Every kept file by its hash; leftovers of interrupted copies are listed under their
        file name (never a valid hash)."""
        found: dict[str, Path] = {}
        if not self.root.is_dir():
            return found
        for path in self.root.glob("*/*"):
            if not path.is_file():
                continue
            name = path.name
            key = name if _TMP in name else name.split(".", 1)[0]
            found[key] = path
        return found

    def size(self) -> int:
        return sum(p.stat().st_size for p in self.stored().values() if p.exists())


def verify(path: Path, sha256: str) -> str | None:
    """What is wrong with a kept file (``None``: its bytes hash to ``sha256``)."""
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            while block := f.read(_CHUNK):
                digest.update(block)
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})"
    if digest.hexdigest() != sha256:
        return "its bytes do not match its hash (damaged)"
    return None


# --- the store's side -------------------------------------------------------------------------


def stored_source(
    store: LanceStore, doc_id: str, *, committed: bool = True
) -> tuple[str, str] | None:
    """``(sha256, media type)`` of a document, naming the file kept for it (``None``: no such
    document; with ``committed=False`` an uncommitted or superseded row counts too)."""
    table = store._table("documents")
    if table is None:
        return None
    where = f"id = '{doc_id}'" + (" AND status = 'done'" if committed else "")
    rows = table.search().where(where).select(["sha256", "media_type"]).limit(1).to_arrow()
    if not rows.num_rows:
        return None
    row = rows.to_pylist()[0]
    return str(row["sha256"]), str(row["media_type"])


def render_asset(store: LanceStore, asset: Asset, *, dpi: float | None = None) -> Asset:
    """An asset kept as a recipe, with its image made from the document's file (at ``dpi``
    instead of the recipe's resolution when given, for PDFs)."""
    found = stored_source(store, asset.doc_id)
    path = store.sources.find(*found) if found is not None else None
    if found is None or path is None:
        raise damaged(
            store.path,
            [f"the file of document {asset.doc_id[:12]}, kept to show its page images, is missing"],
        )
    return store.renderer.render(asset, path, found[1], dpi=dpi)


def remove_orphans(store: LanceStore) -> int:
    """Delete kept files that no stored document claims (a crash between writing a file and
    committing its document, or between removing a document's rows and its file)."""
    rows = store._document_rows(all_versions=True)
    claimed = {str(r["sha256"]) for r in rows}
    removed = 0
    for key, path in store.sources.stored().items():
        if key not in claimed:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed += 1
            with contextlib.suppress(OSError):
                path.parent.rmdir()
    return removed


def collection_stats(store: LanceStore) -> CollectionStats:
    def count(name: str, where: str | None = None) -> int:
        table = store._table(name)
        return int(table.count_rows(where)) if table is not None else 0

    from docsight.index.lance import _TEXT_TABLES

    manifest = store._read_manifest()
    encoder = manifest.get("encoder") or {}
    indexes = []
    for name in _TEXT_TABLES:
        table = store._table(name)
        if table is not None:
            indexes.extend(
                sorted(f"{name}.{i.name} ({i.index_type})" for i in table.list_indices())
            )
    sizes = disk_sizes(store.path)
    return CollectionStats(
        path=str(store.path.resolve()),
        schema_version=int(manifest["schema_version"]),
        documents=count("documents", "status = 'done'"),
        pages=count("pages"),
        elements=count("elements"),
        chunks=count("chunks"),
        encoder=encoder.get("fingerprint"),
        dim=encoder.get("dim"),
        size_bytes=sum(sizes.values()),
        indexes=indexes,
        sizes=sizes,
        visual=store.visual_binding(),
        page_vectors=count("page_vectors"),
    )


def disk_sizes(collection: Path) -> dict[str, int]:
    """Bytes on disk per part of a collection: ``tables/<name>``, ``sources``, ``cache`` and
    ``other``."""
    sizes: dict[str, int] = {}
    if not collection.exists():
        return sizes
    for file in collection.rglob("*"):
        with contextlib.suppress(OSError):
            if not file.is_file():
                continue
            parts = file.relative_to(collection).parts
            if parts[0] == "tables" and len(parts) > 2:
                key = "tables/" + parts[1].removesuffix(".lance")
            elif parts[0] in (SOURCES_DIR, "cache"):
                key = parts[0]
            else:
                key = "other"
            sizes[key] = sizes.get(key, 0) + file.stat().st_size
    return dict(sorted(sizes.items()))
