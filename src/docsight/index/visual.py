"""Page-image vectors of the ``visual`` channel, in the Lance collection.

One row per page image in the ``page_vectors`` table (``doc_id:page``): a vector column for
single-vector encoders, a Lance multivector column (``list<fixed_size_list<float32, dim>>``) for
late-interaction ones. Lance scores a multivector column with ``distance_type("cosine")`` as
``Σ_query tokens (1 - max_page tokens cos)``, so MaxSim is the number of query tokens minus the
distance (``tests/unit/test_visual_store.py`` checks it against numpy ``maxsim``).

Measured on two cores at dim 128, 20 query tokens: the search is exact and reading the token
vectors dominates it, so numpy over the same rows is no faster (0.34 s against Lance's 0.23 s for
100 pages of 1,024 tokens). A BTREE index on ``doc_id`` makes a search within documents read only
their rows: 0.016 s for one document of 100 pages among 10,000 pages of 128 tokens, 1.5 s
without it; the whole collection takes 2.4 s, hence the channel is scoped
(``retrieval.visual``). No ANN index: an IVF-PQ index over those 1.28 M token vectors took 51 s to
build and missed the exact best page. Storage is the float32 values and little else: 64 KiB a
page of 128 tokens, 513 KiB a page of 1,024.

The rows are child rows of their document like chunks: written before the document row (the
commit point), deleted with it, orphans removed by ``recover``. Every row was made by the visual
encoder bound in ``collection.json`` (fingerprint, kind, dim); only ``reindex`` changes the
binding, and it drops the old encoder's rows first, so vectors of two models are never compared.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow.compute as pc
from pydantic import BaseModel

from docsight.document.model import ParsedDocument
from docsight.errors import ConfigurationError, EncoderError, StoreError
from docsight.index import schema as S
from docsight.index.base import ChannelHit, PageVectors, VisualBinding

if TYPE_CHECKING:
    from docsight.encoders.visual import VisualEncoder
    from docsight.index.lance import LanceStore
    from docsight.settings import VisualSettings

log = logging.getLogger(__name__)

PAGE_VECTORS = "page_vectors"
#: Page images handed to the encoder per call (it batches them further itself); bounds the
#: images decoded and the vectors held at once during a re-embedding.
_PAGES_PER_CALL = 32
_REINDEX_HINT = "`docsight reindex --visual` embeds them"

#: ``reindex`` progress: pages embedded so far, pages to embed, the document at hand.
ReindexProgress = Callable[[int, int, str], None]


class VisualReindexReport(BaseModel):
    """What ``docsight reindex --visual`` did."""

    #: The visual encoder the collection is bound to now (``None``: page vectors removed).
    visual: VisualBinding | None
    #: Whether the rows of another encoder (or of none) were dropped first.
    rebound: bool
    documents: int = 0
    pages: int = 0
    #: Documents already embedded by this encoder (an interrupted re-embedding resumed).
    kept_documents: int = 0
    #: Pages whose image could not be read (left without a vector; ``check`` names them).
    failed_pages: int = 0
    seconds: float = 0.0


# --- the binding --------------------------------------------------------------------------------


def binding_for(encoder: VisualEncoder, settings: VisualSettings | None = None) -> VisualBinding:
    """The binding that describes ``encoder`` (``dim`` may load the model or call the endpoint)."""
    model = getattr(encoder, "model", None)
    if model is None and settings is not None:
        model = settings.model or (str(settings.model_path) if settings.model_path else None)
    return VisualBinding(
        fingerprint=encoder.fingerprint,
        kind=encoder.kind,
        dim=int(encoder.dim),
        backend=str(getattr(encoder, "name", "")),
        model=str(model) if model else None,
    )


def mismatch_message(path: Any, bound: VisualBinding, configured: str) -> str:
    return (
        f"the page images of collection {path} were embedded with {bound.fingerprint}, but the "
        f"configured visual encoder is {configured}; page vectors of two models are never "
        "mixed: run `docsight reindex --visual` to embed every page image again with the "
        f"configured encoder (or configure the {bound.backend or 'original'} encoder again)"
    )


def binding(store: LanceStore) -> VisualBinding | None:
    data = store._read_manifest().get("visual")
    return VisualBinding.model_validate(data) if data else None


def bind(store: LanceStore, new: VisualBinding) -> None:
    """Record the collection's visual encoder; refuse another one (see :func:`rebind`)."""
    with store._lock:
        current = binding(store)
        if current is None:
            store._read_manifest()["visual"] = new.model_dump()
            store._write_manifest()
        elif (current.fingerprint, current.kind, current.dim) != (
            new.fingerprint,
            new.kind,
            new.dim,
        ):
            raise ConfigurationError(mismatch_message(store.path, current, new.fingerprint))


def rebind_configured(
    store: LanceStore, encoder: VisualEncoder, settings: VisualSettings | None = None
) -> list[str]:
    """A collection.json rebuilt without its visual binding (lost, no backup) gets ``encoder``
    back when the stored page vectors have its kind and dimension; returns what was done."""
    table = store._table(PAGE_VECTORS)
    if table is None or binding(store) is not None or not table.count_rows():
        return []
    new = binding_for(encoder, settings)
    expected = S.page_vectors_schema(new.kind, new.dim).field("vector").type
    if table.schema.field("vector").type != expected:
        return []
    bind(store, new)
    return [f"bound the configured visual encoder {new.fingerprint} again"]


def rebind(store: LanceStore, new: VisualBinding | None) -> None:
    """Drop every page vector, then bind ``new`` (``None``: no visual encoder). The rows go
    first: a crash in between leaves the old binding over no rows, never rows of one model
    under the binding of another."""
    with store._lock:
        if store._table(PAGE_VECTORS) is not None or store.location.is_dir(
            f"tables/{PAGE_VECTORS}.lance"
        ):
            store._connect().drop_table(PAGE_VECTORS, ignore_missing=True)
            store._tables.pop(PAGE_VECTORS, None)
        manifest = store._read_manifest()
        if new is None:
            manifest.pop("visual", None)
        else:
            manifest["visual"] = new.model_dump()
        store._write_manifest()


# --- writing ------------------------------------------------------------------------------------


def checked_vectors(
    vectors: np.ndarray | list[np.ndarray], n: int, kind: str, dim: int
) -> np.ndarray | list[np.ndarray]:
    """The encoder's output as the table stores it, or :class:`EncoderError` saying what is
    wrong with it (a wrong shape would otherwise fail deep inside Arrow, or be stored)."""
    if kind == "single":
        matrix = np.asarray(vectors, dtype=np.float32)
        if matrix.shape != (n, dim):
            raise EncoderError(
                f"the visual encoder returned vectors of shape {matrix.shape} for {n} page "
                f"images; expected ({n}, {dim})"
            )
        if not np.isfinite(matrix).all():
            raise EncoderError("the visual encoder returned vectors that are not finite")
        return matrix
    if len(vectors) != n:
        raise EncoderError(f"the visual encoder returned {len(vectors)} results for {n} images")
    out = []
    for page in vectors:
        tokens = np.asarray(page, dtype=np.float32)
        if tokens.ndim != 2 or tokens.shape[1] != dim or not len(tokens):
            raise EncoderError(
                f"the visual encoder returned a page of shape {tokens.shape}; expected "
                f"(tokens, {dim}) with at least one token"
            )
        if not np.isfinite(tokens).all():
            raise EncoderError("the visual encoder returned vectors that are not finite")
        out.append(tokens)
    return out


def embed_images(
    encoder: VisualEncoder, images: Sequence[bytes], kind: str, dim: int
) -> np.ndarray | list[np.ndarray]:
    """Page vectors for ``images``, a bounded group at a time."""
    parts: list[Any] = []
    for start in range(0, len(images), _PAGES_PER_CALL):
        group = images[start : start + _PAGES_PER_CALL]
        parts.append(checked_vectors(encoder.encode_pages(group), len(group), kind, dim))
    if kind == "single":
        return np.concatenate(parts) if parts else np.zeros((0, dim), dtype=np.float32)
    return [page for part in parts for page in part]


def document_page_vectors(
    parsed: ParsedDocument,
    encoder: VisualEncoder,
    store: Any,
    settings: VisualSettings | None = None,
) -> PageVectors | None:
    """The page-image vectors of a document about to be stored, from its page renders (``None``
    for documents without page images: text, Markdown). Binds the collection to ``encoder``
    first, so a different encoder fails before anything is embedded."""
    assets = {a.id: a for a in parsed.assets}
    pages: list[int] = []
    images: list[bytes] = []
    for page in parsed.document.pages:
        asset = assets.get(page.image_id) if page.image_id else None
        if asset is not None and asset.data:
            pages.append(page.index)
            images.append(asset.data)
    if not pages:
        return None
    new = binding_for(encoder, settings)
    store.bind_visual(new)
    vectors = embed_images(encoder, images, new.kind, new.dim)
    return PageVectors(binding=new, pages=pages, vectors=vectors)


def write(store: LanceStore, doc_id: str, vectors: PageVectors, *, append: bool = False) -> None:
    """Upsert a document's page vectors (before its document row, or for a committed one);
    with ``append``, the caller has made sure the table holds none of them."""
    current = binding(store)
    if current is None or current.fingerprint != vectors.binding.fingerprint:
        raise StoreError(
            f"page vectors of {vectors.binding.fingerprint} cannot be stored in {store.path}, "
            f"whose visual encoder is {current.fingerprint if current else 'not bound'}"
        )
    if len(vectors.vectors) != len(vectors.pages):
        raise StoreError(f"{len(vectors.pages)} pages but {len(vectors.vectors)} page vectors")
    if not vectors.pages:
        return
    table = S.page_vector_table(doc_id, vectors.pages, vectors.vectors, current.kind, current.dim)
    page_schema = S.page_vectors_schema(current.kind, current.dim)
    if append:
        store._append(PAGE_VECTORS, table, page_schema)
    else:
        store._upsert(PAGE_VECTORS, table, page_schema)
    try:
        ensure_index(store)
    except Exception as exc:  # only speed: a search within documents scans without it
        log.warning("the page vectors' document index could not be built yet: %s", exc)


def ensure_index(store: LanceStore) -> None:
    """A BTREE index on ``doc_id``: a search within a few documents reads only their rows."""
    from docsight.index.lookup import create_lookup_index

    table = store._table(PAGE_VECTORS)
    if table is None or not table.count_rows():
        return
    if not any("doc_id" in i.columns for i in table.list_indices()):
        create_lookup_index(table, "doc_id")


# --- reading ------------------------------------------------------------------------------------


def search(
    store: LanceStore, query: np.ndarray, limit: int, doc_ids: Sequence[str] | None
) -> list[ChannelHit]:
    """Pages ranked by cosine (single) or MaxSim (multi) with the query's embedding."""
    from docsight.index.where import in_filter as _in_filter

    current = binding(store)
    table = store._table(PAGE_VECTORS)
    if current is None or table is None or doc_ids == [] or limit < 1:
        return []
    q = np.asarray(query, dtype=np.float32)
    q = q.reshape(-1) if current.kind == "single" else q.reshape(-1, q.shape[-1])
    if q.shape[-1] != current.dim or not q.size:
        raise ConfigurationError(
            f"the query's visual embedding has dimension {q.shape[-1]}; the page vectors of "
            f"{store.path} have {current.dim} ({current.fingerprint})"
        )
    found = table.search(q, vector_column_name="vector").distance_type("cosine")
    if doc_ids:
        found = found.where(_in_filter("doc_id", doc_ids), prefilter=True)
    rows = found.select(["doc_id", "page", "_distance"]).limit(limit).to_arrow()
    distance = rows.column("_distance").to_numpy(zero_copy_only=False).astype(np.float64)
    # Lance's multivector cosine distance is Σ over query tokens of (1 - best cosine).
    scores = 1.0 - distance if current.kind == "single" else len(q) - distance
    return store._hits(rows, scores.tolist(), pages=True)


def count(store: LanceStore) -> int:
    table = store._table(PAGE_VECTORS)
    return int(table.count_rows()) if table is not None else 0


def _page_images(store: LanceStore, doc_ids: frozenset[str]) -> dict[str, dict[int, str]]:
    """Per committed document, its pages that have an image: page → asset id."""
    table = store._table("pages")
    out: dict[str, dict[int, str]] = defaultdict(dict)
    if table is None:
        return out
    rows = table.search().select(["doc_id", "page", "image_id"]).limit(None).to_arrow()
    for doc_id, page, image in zip(
        rows.column("doc_id").to_pylist(),
        rows.column("page").to_pylist(),
        rows.column("image_id").to_pylist(),
        strict=True,
    ):
        if image and doc_id in doc_ids:
            out[doc_id][int(page)] = image
    return out


def _embedded(store: LanceStore) -> dict[str, set[int]]:
    table = store._table(PAGE_VECTORS)
    out: dict[str, set[int]] = defaultdict(set)
    if table is None:
        return out
    rows = table.search().select(["doc_id", "page"]).limit(None).to_arrow()
    for doc_id, page in zip(
        rows.column("doc_id").to_pylist(), rows.column("page").to_pylist(), strict=True
    ):
        out[doc_id].add(int(page))
    return out


def pages_without_vectors(store: LanceStore) -> dict[str, dict[int, str]]:
    """Per committed document, its page images that have no vector yet (page → asset id)."""
    images = _page_images(store, store.committed_ids())
    embedded = _embedded(store)
    missing = {
        doc_id: {p: i for p, i in pages.items() if p not in embedded.get(doc_id, set())}
        for doc_id, pages in images.items()
    }
    return {doc_id: pages for doc_id, pages in missing.items() if pages}


def reindex(
    store: LanceStore,
    encoder: VisualEncoder | None,
    settings: VisualSettings | None = None,
    progress: ReindexProgress | None = None,
) -> VisualReindexReport:
    """Embed every page image with ``encoder`` and bind it (caller holds the writer lock).

    Another encoder's rows (or rows of an unknown one) are dropped first; rows of this one are
    kept, so an interrupted re-embedding resumes where it stopped. Without an encoder, the page
    vectors and the binding are removed. Each document's vectors are written in groups of
    pages, each group one commit.
    """
    started = time.perf_counter()
    current = binding(store)
    if encoder is None:
        rebound = current is not None or count(store) > 0
        if rebound:
            rebind(store, None)
        return VisualReindexReport(
            visual=None, rebound=rebound, seconds=round(time.perf_counter() - started, 3)
        )
    new = binding_for(encoder, settings)
    same = current is not None and (current.fingerprint, current.kind, current.dim) == (
        new.fingerprint,
        new.kind,
        new.dim,
    )
    if not same:
        rebind(store, new)
    todo = pages_without_vectors(store)
    committed_with_images = _page_images(store, store.committed_ids())
    report = VisualReindexReport(
        visual=new,
        rebound=not same,
        kept_documents=len(set(committed_with_images) - set(todo)),
    )
    total = sum(len(pages) for pages in todo.values())
    names = {d.id: d.name for d in store.list_documents()}
    done = 0
    for doc_id in sorted(todo, key=lambda d: (names.get(d, ""), d)):
        pages = sorted(todo[doc_id].items())
        name = names.get(doc_id, doc_id[:12])
        if progress is not None:
            progress(done, total, name)
        for start in range(0, len(pages), _PAGES_PER_CALL):
            group = pages[start : start + _PAGES_PER_CALL]
            numbers, images = [], []
            for page, image_id in group:
                asset = None
                with contextlib.suppress(StoreError):  # a lost file: check reports it
                    asset = store.get_asset(image_id)
                if asset is None or not asset.data:
                    report.failed_pages += 1
                    continue
                numbers.append(page)
                images.append(asset.data)
            if images:
                vectors = embed_images(encoder, images, new.kind, new.dim)
                write(store, doc_id, PageVectors(binding=new, pages=numbers, vectors=vectors))
            done += len(group)
            report.pages += len(numbers)
            if progress is not None:
                progress(done, total, name)
        report.documents += 1
    report.seconds = round(time.perf_counter() - started, 3)
    return report


class PageVectorMethods:
    """The page-vector methods of :class:`~docsight.index.lance.LanceStore` (see the module)."""

    def visual_binding(self) -> VisualBinding | None:
        """The visual encoder the page-image vectors were made with (``None``: none yet)."""
        return binding(self)  # type: ignore[arg-type]

    def bind_visual(self, new: VisualBinding) -> None:
        """Record the visual encoder of this collection; refuse a different one."""
        bind(self, new)  # type: ignore[arg-type]

    def page_vector_search(
        self, query: np.ndarray, limit: int, doc_ids: Sequence[str] | None = None
    ) -> list[ChannelHit]:
        """Pages by their image vectors: cosine, or MaxSim for multivectors."""
        return search(self, query, limit, doc_ids)  # type: ignore[arg-type]

    def page_vector_count(self) -> int:
        return count(self)  # type: ignore[arg-type]


# --- checking -----------------------------------------------------------------------------------


def check_schema(checker: Any, table: Any) -> bool:
    """The table's layout, and its vectors against the bound encoder's kind and dimension."""
    from docsight.index.check import _schema_difference

    bound: VisualBinding | None = checker.report.visual
    expected = S.page_vectors_schema(bound.kind if bound else "single", bound.dim if bound else 1)
    differences = _schema_difference(table.schema, expected, {"vector"})
    if "vector" not in table.schema.names:
        differences.append("missing column vector")
    if differences:
        checker.problem(
            "table_schema",
            f"table {PAGE_VECTORS} does not have the layout of store schema "
            f"v{S.STORE_SCHEMA_VERSION}: {'; '.join(differences)}",
            table=PAGE_VECTORS,
        )
        return False
    actual = table.schema.field("vector").type
    if bound is None:
        if table.count_rows():
            checker.problem(
                "visual_unbound",
                f"{PAGE_VECTORS} holds page-image vectors but collection.json names no visual "
                "encoder; `docsight check --repair` binds the configured one if it made them, "
                f"else {_REINDEX_HINT} again",
                table=PAGE_VECTORS,
            )
        return True
    if actual != expected.field("vector").type:
        checker.problem(
            "vector_dim",
            f"{PAGE_VECTORS} vectors are {actual}; the collection's visual encoder "
            f"{bound.fingerprint} makes {bound.kind} vectors of dimension {bound.dim}; "
            f"{_REINDEX_HINT} again",
            table=PAGE_VECTORS,
        )
        return False
    return True


def check_rows(checker: Any, tables: dict[str, Any], documents: dict[str, dict[str, Any]]) -> None:
    """Every page image of a document embedded with the visual encoder has its vector, and no
    vector is for a page without an image; vectors are finite and not zero."""
    from docsight.index.check import _read, _short

    bound: VisualBinding | None = checker.report.visual
    table = tables.get(PAGE_VECTORS)
    if bound is None or table is None or "pages" not in tables:
        return
    images: dict[str, set[int]] = defaultdict(set)
    rows = _read(tables["pages"], ["doc_id", "page", "image_id"])
    for doc_id, page, image in zip(
        rows.column("doc_id").to_pylist(),
        rows.column("page").to_pylist(),
        rows.column("image_id").to_pylist(),
        strict=True,
    ):
        if image and doc_id in documents:
            images[doc_id].add(int(page))
    stored: dict[str, set[int]] = defaultdict(set)
    rows = _read(table, ["doc_id", "page"])
    for doc_id, page in zip(
        rows.column("doc_id").to_pylist(), rows.column("page").to_pylist(), strict=True
    ):
        if doc_id in documents:
            stored[doc_id].add(int(page))
    never: list[str] = []
    for doc_id in sorted(set(images) | set(stored)):
        name = documents[doc_id]["name"]
        have, want = stored.get(doc_id, set()), images.get(doc_id, set())
        if want and not have:
            never.append(doc_id)
            continue
        missing, extra = want - have, have - want
        if missing:
            checker.problem(
                "page_vectors_missing",
                f"{name} ({doc_id[:12]}): {len(missing)} of its {len(want)} page images have "
                f"no vector (pages {_pages(missing)}): the visual channel does not see them; "
                f"{_REINDEX_HINT}",
                table=PAGE_VECTORS,
                doc_id=doc_id,
                rows=len(missing),
            )
        if extra:
            checker.problem(
                "page_vectors_extra",
                f"{name} ({doc_id[:12]}): {len(extra)} page vectors are for pages without an "
                f"image (pages {_pages(extra)}); {_REINDEX_HINT} again",
                table=PAGE_VECTORS,
                doc_id=doc_id,
                rows=len(extra),
            )
    if never:
        checker.problem(
            "page_vectors_missing",
            f"{len(never)} document(s) were stored without page-image vectors "
            f"({_short(never)}), so the visual channel does not see their pages; "
            f"{_REINDEX_HINT}",
            severity="warning",
            table=PAGE_VECTORS,
            rows=sum(len(images[d]) for d in never),
        )
    _check_values(checker, table, bound)


def _pages(pages: set[int]) -> str:
    shown = sorted(pages)
    text = ", ".join(str(p + 1) for p in shown[:5])
    return text + (f" and {len(shown) - 5} more" if len(shown) > 5 else "")


def _check_values(checker: Any, table: Any, bound: VisualBinding) -> None:
    """Vectors are present, finite and not zero (a zero vector has no cosine); a late-
    interaction page has at least one token."""
    from docsight.index.check import _read

    bad = 0
    for batch in _read(table, ["vector"]).to_batches():
        column = batch.column("vector")
        bad += column.null_count
        if column.null_count:
            column = column.filter(pc.is_valid(column))
        if bound.kind == "single":
            values = column.flatten().to_numpy(zero_copy_only=False).reshape(-1, bound.dim)
            good = np.isfinite(values).all(axis=1) & (np.abs(values).sum(axis=1) > 0)
            bad += int((~good).sum())
            continue
        lengths = column.value_lengths().to_numpy(zero_copy_only=False).astype(np.int64)
        tokens = column.flatten()
        values = tokens.flatten().to_numpy(zero_copy_only=False).reshape(-1, bound.dim)
        good = np.isfinite(values).all(axis=1) & (np.abs(values).sum(axis=1) > 0)
        owner = np.repeat(np.arange(len(lengths)), lengths)
        bad_tokens = np.bincount(owner, weights=~good, minlength=len(lengths))
        bad += int(((lengths == 0) | (bad_tokens > 0)).sum())
    if bad:
        checker.problem(
            "bad_vector",
            f"{bad} page vectors in table {PAGE_VECTORS} are missing, not finite or zero; "
            f"{_REINDEX_HINT} again",
            table=PAGE_VECTORS,
            rows=bad,
        )


__all__ = [
    "PAGE_VECTORS",
    "PageVectorMethods",
    "VisualReindexReport",
    "bind",
    "binding",
    "binding_for",
    "check_rows",
    "check_schema",
    "document_page_vectors",
    "embed_images",
    "mismatch_message",
    "pages_without_vectors",
    "rebind",
    "rebind_configured",
    "reindex",
    "search",
    "write",
]
