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
from docsight.index.location import LocalLocation, Location

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
_DAMAGED = "its bytes do not match its hash (damaged)"


class SourceFiles:
    """The ``sources`` directory of a collection (a prefix of a remote one, whose files are
    fetched into its working directory when a renderer needs them)."""

    def __init__(self, collection: Location | Path) -> None:
        self.location = (
            collection if isinstance(collection, Location) else LocalLocation(Path(collection))
        )
        self.remote = self.location.remote
        #: The local directory (for a remote collection: where its local copies go).
        self.root = self.location.work_dir / (SOURCES_DIR if not self.remote else "files/sources")

    def key(self, sha256: str, media_type: str) -> str:
        """The file's path relative to the collection."""
        return f"{SOURCES_DIR}/{sha256[:2]}/{sha256}{_EXTENSIONS.get(media_type, '')}"

    def path(self, sha256: str, media_type: str) -> Path:
        return self.root / sha256[:2] / f"{sha256}{_EXTENSIONS.get(media_type, '')}"

    def find(self, sha256: str, media_type: str) -> Path | None:
        """The kept file as a local file (for a remote collection, a copy fetched into the
        working directory), or ``None`` when the collection does not have it."""
        if self.remote:
            try:
                return self.location.local_path(self.key(sha256, media_type))
            except FileNotFoundError:
                return None
        path = self.path(sha256, media_type)
        return path if path.is_file() else None

    def check(self, sha256: str, media_type: str) -> str | None:
        """What is wrong with the kept file (``None``: there, with the bytes its hash names)."""
        if self.remote:
            key = self.key(sha256, media_type)
            if not self.location.is_file(key):
                return "missing"
            digest = hashlib.sha256()
            for block in self.location.read_blocks(key, _CHUNK):
                digest.update(block)
            return None if digest.hexdigest() == sha256 else _DAMAGED
        path = self.find(sha256, media_type)
        return "missing" if path is None else verify(path, sha256)

    def put(self, source: Path, sha256: str, media_type: str) -> Path:
        """Copy ``source`` in, checking that its bytes still hash to ``sha256`` (a kept copy is
        replaced, whole or damaged). Raises :class:`IngestError` when the file changed."""
        if self.remote:
            return self._put_remote(source, sha256, media_type)
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

    def _put_remote(self, source: Path, sha256: str, media_type: str) -> Path:
        # Hash first, upload after: an object store has no rename, and a changed file must
        # never replace a good copy under the hash it no longer has.
        digest = hashlib.sha256()
        with open(source, "rb") as src:
            while block := src.read(_CHUNK):
                digest.update(block)
        if digest.hexdigest() != sha256:
            raise IngestError(
                source, "the file changed while it was being ingested; ingest it again"
            )
        self.location.upload(source, self.key(sha256, media_type))
        return source

    def remove(self, sha256: str, media_type: str) -> None:
        if self.remote:
            self.location.delete(self.key(sha256, media_type))
            with contextlib.suppress(OSError):  # the local copy, if one was fetched
                self.path(sha256, media_type).unlink()
            return
        with contextlib.suppress(FileNotFoundError):
            self.path(sha256, media_type).unlink()
        with contextlib.suppress(OSError):
            self.path(sha256, media_type).parent.rmdir()  # only when empty

    def delete(self, where: Path | str) -> bool:
        """Remove one entry of :meth:`stored` (``where``: its path there); whether it was
        there to remove (remotely: assumed, since a delete does not say)."""
        if self.remote:
            self.location.delete(str(where))
            return True
        path = Path(where)
        removed = False
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
            removed = True
        with contextlib.suppress(OSError):
            path.parent.rmdir()  # only when empty
        return removed

    def stored(self) -> dict[str, Path | str]:
        """Every kept file by its hash; leftovers of interrupted copies are listed under their
        file name (never a valid hash). Values: local paths, or keys of a remote collection."""
        found: dict[str, Path | str] = {}
        if self.remote:
            for rel in self.location.files(SOURCES_DIR):
                name = rel.rsplit("/", 1)[-1]
                found[name if _TMP in name else name.split(".", 1)[0]] = rel
            return found
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
        if self.remote:
            return sum(self.location.files(SOURCES_DIR).values())
        paths = [Path(p) for p in self.stored().values()]
        return sum(p.stat().st_size for p in paths if p.exists())


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
        return _DAMAGED
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
    for key, where in store.sources.stored().items():
        if key not in claimed and store.sources.delete(where):
            removed += 1
    return removed


def collection_stats(store: LanceStore) -> CollectionStats:
    def count(name: str, where: str | None = None) -> int:
        table = store._table(name)
        return int(table.count_rows(where)) if table is not None else 0

    from docsight.index.lance import CHILD_TABLES

    manifest = store._read_manifest()
    encoder = manifest.get("encoder") or {}
    indexes = []
    for name in ("documents", *CHILD_TABLES):
        table = store._table(name)
        if table is not None:
            indexes.extend(
                sorted(f"{name}.{i.name} ({i.index_type})" for i in table.list_indices())
            )
    sizes = disk_sizes(store.path) if not store.remote else remote_sizes(store.location)
    return CollectionStats(
        path=str(store.path.resolve()) if not store.remote else str(store.path),
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


def collection_bytes(location: Location) -> int:
    """Bytes a collection holds (for a remote one: with its local cache)."""
    if isinstance(location, LocalLocation):
        return sum(disk_sizes(location.root).values())
    return sum(remote_sizes(location).values())


def remote_sizes(location: Location) -> dict[str, int]:
    """:func:`disk_sizes` of a remote collection (its working directory's cache included)."""
    sizes: dict[str, int] = {}
    for rel, size in location.files("").items():
        parts = rel.split("/")
        if parts[0] == "tables" and len(parts) > 2:
            key = "tables/" + parts[1].removesuffix(".lance")
        elif parts[0] == SOURCES_DIR:
            key = parts[0]
        else:
            key = "other"
        sizes[key] = sizes.get(key, 0) + size
    cache = disk_sizes(location.work_dir).get("cache")
    if cache:
        sizes["cache"] = cache
    return dict(sorted(sizes.items()))


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
