"""The facade: one object that the CLI, the server and the tests use.

``DocSight`` wires the store, encoder, chunker, retrievers and answerers from one ``Settings``
object. Construction is cheap: nothing is opened, loaded or imported until a method needs it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from docsight.agents.answer import Answer, Source
from docsight.agents.trace import TraceStep
from docsight.document.model import Document
from docsight.encoders.base import Encoder
from docsight.encoders.visual import VisualEncoder
from docsight.errors import (
    CollectionLockedError,
    CollectionNotFoundError,
    DocumentNotFoundError,
    EmptyQuestionError,
    PathNotFoundError,
    UsageError,
)
from docsight.index.base import CheckProblem, CheckReport, CollectionStats, DocumentInfo, Store
from docsight.ingest.report import IngestReport
from docsight.retrieval.hit import Hit
from docsight.settings import Settings

log = logging.getLogger(__name__)

#: The most results ``search`` returns and sources ``ask`` reads (the CLI's bounds too).
MAX_SEARCH_K = 1000
MAX_ANSWER_K = 50

if TYPE_CHECKING:
    from docsight.index.visual import VisualReindexReport
    from docsight.query.analyze import ImageAnalysis
    from docsight.retrieval.census import Census

    #: A query image: a file path, its bytes, or an analysis from :meth:`DocSight.analyze_image`.
    ImageInput = str | Path | bytes | ImageAnalysis


class DocSight:
    """A collection of documents you can ingest, search and ask questions of.

    >>> ds = DocSight("./.docsight")
    >>> ds.ingest(["reports/"])                      # doctest: +SKIP
    >>> ds.search("net revenue 2021", k=5)           # doctest: +SKIP
    >>> ds.ask("What was net revenue in 2021?")      # doctest: +SKIP
    """

    def __init__(
        self,
        collection_dir: str | Path | None = None,
        *,
        settings: Settings | None = None,
        chat: Any = None,
        vision: Any = None,
        visual: VisualEncoder | None = None,
    ) -> None:
        """``chat`` and ``vision``: a chat model and a vision model to use instead of the
        configured ones (any object keeping the ``llm.base.ChatModel`` contract, such as
        ``llm.scripted.ScriptedChat`` in tests); ``visual``: a page-image encoder to use
        instead of the configured one (``DOCSIGHT_VISUAL_*``)."""
        from docsight.index.location import open_location

        settings = settings.model_copy(deep=True) if settings is not None else Settings()
        if collection_dir is not None:
            settings.collection_dir = collection_dir  # a directory or a URI (s3://, gs://, az://)
        self.settings = settings
        #: The collection: a directory, or for a collection on object storage its URI (``str``).
        self.path: Any = settings.collection_dir
        self.location = open_location(settings.collection_dir, settings.work_dir)
        #: Caches and sessions: the collection directory itself, or for a remote collection a
        #: local directory derived from its URI (``DOCSIGHT_WORK_DIR``).
        self.work_dir: Path = self.location.work_dir
        self._store: Store | None = None
        self._encoder: Encoder | None = None
        self._cached_encoder: Encoder | None = None
        self._chat: Any = chat
        self._vlm_chat: Any = vision
        self._visual: VisualEncoder | None = visual
        self._visual_made = visual is not None
        self._image_analyzer: Any = None
        self._lock = threading.RLock()

    # --- components (lazy) ---------------------------------------------------------------------

    @property
    def store(self) -> Store:
        # Servers call one facade from many threads: each component is made once.
        with self._lock:
            if self._store is None:
                from docsight.index import STORES

                remote = {"work_dir": self.work_dir} if self.location.remote else {}
                self._store = STORES.create(
                    self.settings.store,
                    self.path,
                    vector_index_min_rows=self.settings.retrieval.vector_index_min_rows,
                    render_cache_mb=self.settings.render_cache_mb,
                    **remote,
                )
            return self._store

    def encoder(self) -> Encoder:
        with self._lock:
            if self._encoder is None:
                from docsight.encoders import create_encoder

                self._encoder = create_encoder(self.settings.embed)
            return self._encoder

    def _answering_encoder(self) -> Encoder:
        """The encoder search and answering use: :meth:`encoder` remembering the vectors of
        recent texts (``encoders.cache``), as questions about one document embed the same
        sources and sentences again. Ingestion uses :meth:`encoder` itself."""
        with self._lock:
            if self._cached_encoder is None:
                from docsight.encoders.cache import CachedEncoder

                self._cached_encoder = CachedEncoder(self.encoder())
            return self._cached_encoder

    def visual_encoder(self) -> VisualEncoder | None:
        """The page-image encoder of the ``visual`` channel, or ``None`` when none is
        configured (``DOCSIGHT_VISUAL_BACKEND=none``, the default). Cheap: models load on use."""
        with self._lock:
            if not self._visual_made:
                from docsight.encoders import create_visual_encoder

                self._visual = create_visual_encoder(self.settings.visual)
                self._visual_made = True
            return self._visual

    def chat_model(self) -> Any:
        """The configured chat model, or ``None`` when no LLM endpoint is configured."""
        with self._lock:
            if self._chat is None and self.settings.llm.enabled:
                from docsight.llm import create_chat_model

                self._chat = create_chat_model(
                    self.settings.llm, cache_path=self.work_dir / "cache" / "llm.sqlite"
                )
            return self._chat

    def _vision_chat(self) -> Any:
        """The vision model client (``DOCSIGHT_VLM_*``), or ``None`` when none is configured."""
        with self._lock:
            if self._vlm_chat is None and self.settings.vlm.enabled:
                from docsight.llm.client import OpenAIChatClient

                self._vlm_chat = OpenAIChatClient(
                    self.settings.vlm, self.work_dir / "cache" / "llm.sqlite"
                )
            return self._vlm_chat

    def _vision(self) -> Any:
        """The vision describer used at ingestion, when a VLM endpoint is configured."""
        client = self._vision_chat()
        if client is None:
            return None
        from docsight.ingest.vlm import VisionDescriber

        return VisionDescriber(client, self.settings.vlm)

    def _require_collection(self) -> None:
        if not self.store.exists:  # type: ignore[attr-defined]
            raise self._not_found()

    def _not_found(self) -> CollectionNotFoundError:
        if self.location.remote:
            return self.location.not_found()  # type: ignore[attr-defined, no-any-return]
        where = self.path.resolve()
        why = "" if self.path.exists() else " (no such directory)"
        return CollectionNotFoundError(
            f"no collection at {where}{why}; check --collection (or $DOCSIGHT_COLLECTION_DIR), "
            "or create one with `docsight ingest PATH`"
        )

    def _check_encoder(self) -> None:
        bound = self.store.encoder_fingerprint()
        if bound is not None and bound != self.encoder().fingerprint:
            from docsight.errors import ConfigurationError

            raise ConfigurationError(
                f"collection {self.path} was embedded with {bound}, but the configured encoder is "
                f"{self.encoder().fingerprint}"
            )

    # --- writing -------------------------------------------------------------------------------

    def _writer_lock(self) -> Any:
        if self.location.remote:
            from docsight.index.lease import writer_guard

            return writer_guard(self.location, self.settings)  # type: ignore[arg-type]
        from filelock import FileLock

        self.path.mkdir(parents=True, exist_ok=True)
        return FileLock(str(self.path / "writer.lock"), timeout=self.settings.lock_timeout)

    def _locked(self) -> Any:
        from filelock import Timeout

        from docsight.index.guard import storage_error

        try:
            lock = self._writer_lock()
            lock.acquire()
        except Timeout as exc:
            raise CollectionLockedError(
                f"another process is writing to {self.path} "
                f"(waited {self.settings.lock_timeout:g} s)"
            ) from exc
        except OSError as exc:  # a read-only mount, missing permissions, a full disk
            mapped = storage_error(exc, self.path, "taking the writer lock")
            if mapped is None:
                raise
            raise mapped from exc
        return lock

    def ingest(
        self, paths: Sequence[str | Path] | str | Path, progress: Any = None
    ) -> IngestReport:
        """Ingest files and directories; unchanged files are skipped without parsing."""
        from docsight.cache import JsonCache
        from docsight.ingest.chunking import create_chunker
        from docsight.ingest.pipeline import IngestPipeline
        from docsight.ingest.worker import WorkerSetup
        from docsight.parsers.base import ParseContext

        if isinstance(paths, str | Path):
            paths = [paths]
        # A mistyped path is a usage error, found before the collection is created or touched.
        missing = [str(p) for p in paths if not Path(p).exists()]
        if missing:
            raise PathNotFoundError(missing)
        lock = self._locked()
        try:
            if self.store.exists:  # type: ignore[attr-defined]
                self._rebind_encoder()  # a collection.json rebuilt without it
                self._rebind_visual()
            visual = self.visual_encoder()
            bound = self.store.visual_binding() if self.store.exists else None  # type: ignore[attr-defined]
            if visual is not None and bound is not None and bound.fingerprint != visual.fingerprint:
                from docsight.errors import ConfigurationError
                from docsight.index.visual import mismatch_message

                raise ConfigurationError(mismatch_message(self.path, bound, visual.fingerprint))
            cache_dir = self.work_dir / "cache"
            inline = self.settings.ingest.isolation == "none"
            setup = WorkerSetup(
                self.settings, cache_dir / "artifacts.sqlite", cache_dir / "llm.sqlite"
            )
            pipeline = IngestPipeline(
                self.store,
                self.encoder,
                create_chunker(self.settings.chunk),
                self.settings,
                ParseContext(
                    cache=JsonCache(cache_dir / "artifacts.sqlite"),
                    # Workers build their own vision client from settings.vlm.
                    vlm=self._vision() if inline else None,
                ),
                setup,
                chat=self.chat_model() if self.settings.graph.summaries != "extractive" else None,
                visual=(lambda: visual) if visual is not None else None,
            )
            report = pipeline.run(paths, progress)
            if visual is None and bound is not None:
                report.warnings.extend(self._unembedded_warning(report, bound.fingerprint))
            elif visual is not None and bound is None:
                report.warnings.extend(self._unembedded_warning(report, None))
            return report
        finally:
            lock.release()

    def _unembedded_warning(self, report: IngestReport, fingerprint: str | None) -> list[str]:
        """Pages the visual channel cannot see, which must be said: of documents just added to
        a collection with page vectors while no visual encoder is configured (``fingerprint``:
        the collection's), or of documents stored before the first visual encoder was bound."""
        from docsight.index.visual import pages_without_vectors

        added = {f.doc_id for f in report.files if f.status == "added" and f.doc_id}
        if not added or (fingerprint is None and self.store.visual_binding() is None):
            return []
        missing = pages_without_vectors(self.store)  # type: ignore[arg-type]
        if fingerprint is None:
            earlier = [d for d in missing if d not in added]
            return (
                [
                    f"{len(earlier)} document(s) stored before a visual encoder was configured "
                    "have no page vectors, so the visual channel does not see their pages; "
                    "`docsight reindex --visual` embeds them"
                ]
                if earlier
                else []
            )
        missing = {d: p for d, p in missing.items() if d in added}
        if not missing:
            return []
        return [
            f"{len(missing)} document(s) were stored without page vectors: the collection's "
            f"page images are embedded by {fingerprint}, but no visual encoder is configured, "
            "so the visual channel does not see their pages; configure that encoder "
            "(DOCSIGHT_VISUAL_*) and run `docsight reindex --visual`"
        ]

    def remove(self, ref: str) -> DocumentInfo:
        """Delete a document by name or id (a unique id prefix works too) and free its space:
        its kept file goes at once, and the tables drop the deleted rows and old versions (a
        table is left as it is, rows hidden, when the disk has no room to rewrite it)."""
        from docsight.errors import DocsightError

        self._require_collection()
        info = self.resolve(ref)
        lock = self._locked()
        try:
            self.store.delete_document(info.id)
            try:
                for reason in self.store.optimize() or []:
                    log.warning("%s", reason)
            except DocsightError as exc:  # the document is gone; only the space is not back
                log.warning("space not reclaimed yet (%s: %s)", exc.code, exc.message)
        finally:
            lock.release()
        return info

    def check(self, *, repair: bool = False) -> CheckReport:
        """Verify the collection's integrity: see :meth:`Store.check` for what is checked.

        Read-only unless ``repair``: then :meth:`Store.repair` restores a working collection
        (damaged tables rolled back or cut down, indexes rebuilt, interrupted writes finished or
        undone, documents that lost rows dropped) and the report lists what it did and which
        files to ingest again. The writer lock is held throughout, so a write in progress is
        never mistaken for damage; a read-only collection is checked without it.
        """
        from docsight.errors import MissingDependencyError, ReadOnlyCollectionError

        self._require_collection()
        try:
            lock = self._locked()
        except (ReadOnlyCollectionError, MissingDependencyError):
            if repair:
                raise
            # Nobody can write to it either; or, remotely, this install cannot take the writer
            # lease (no boto3), which a read-only check can do without.
            lock = None
        try:
            before = self.store.check() if repair else None
            actions: list[str] = []
            reingest: list[str] = []
            if before is not None:
                actions, reingest = self.store.repair()
                actions += self._rebind_encoder()
                actions += self._rebind_visual()
            report = self.store.check()
        finally:
            if lock is not None:
                lock.release()
        if before is not None:
            left = {(p.code, p.table, p.doc_id) for p in report.problems}
            report.repairs = actions + [
                p.code
                + (f" in {p.table}" if p.table else "")
                + (f" of {p.doc_id[:12]}" if p.doc_id else "")
                + (f" ({p.rows} rows)" if p.rows else "")
                for p in before.problems
                if (p.code, p.table, p.doc_id) not in left
            ]
            report.reingest = reingest
        if self.location.remote:
            report.work_dir = str(self.work_dir)
        configured = self.encoder().fingerprint
        if report.encoder is not None and report.encoder != configured:
            report.problems.append(
                CheckProblem(
                    code="encoder_mismatch",
                    message=f"the collection was embedded with {report.encoder}, but the "
                    f"configured encoder is {configured}: searches refuse to run",
                )
            )
        visual = self.visual_encoder()
        bound = report.visual
        if bound is not None and visual is not None and bound.fingerprint != visual.fingerprint:
            from docsight.index.visual import mismatch_message

            report.problems.append(
                CheckProblem(
                    code="visual_mismatch",
                    message=mismatch_message(self.path, bound, visual.fingerprint),
                    table="page_vectors",
                )
            )
        return report

    def _rebind_encoder(self) -> list[str]:
        """A collection.json rebuilt without its encoder gets the configured one back, when the
        stored vectors have its dimension (any other encoder would be refused on every search)."""
        if self.store.encoder_fingerprint() is not None:
            return []
        dim = self.store.vector_dim()
        if dim is None:
            return []
        encoder = self.encoder()
        if dim != encoder.dim:
            return []
        self.store.bind_encoder(encoder.fingerprint, encoder.dim)
        return [f"bound the configured encoder {encoder.fingerprint} (dimension {dim}) again"]

    def _rebind_visual(self) -> list[str]:
        """A collection.json rebuilt without its visual encoder gets the configured one back,
        when the stored page vectors have its kind and dimension."""
        from docsight.index.visual import rebind_configured

        encoder = self.visual_encoder()
        if encoder is None:
            return []
        return rebind_configured(self.store, encoder, self.settings.visual)  # type: ignore[arg-type]

    def reindex_visual(
        self, progress: Callable[[int, int, str], None] | None = None
    ) -> VisualReindexReport:
        """Embed every page image with the configured visual encoder and bind it to the
        collection (``docsight reindex --visual``).

        Page vectors of another encoder are dropped first, never mixed; pages already embedded
        by this one are kept, so an interrupted run resumes. With no visual encoder configured,
        the page vectors are removed. ``progress(done, total, name)`` counts pages.
        """
        from docsight.index.visual import reindex

        self._require_collection()
        lock = self._locked()
        try:
            self.store.recover()
            report = reindex(
                self.store,  # type: ignore[arg-type]
                self.visual_encoder(),
                self.settings.visual,
                progress,
            )
            if report.pages or report.rebound:
                for reason in self.store.optimize() or []:
                    log.warning("%s", reason)
        finally:
            lock.release()
        return report

    # --- reading -------------------------------------------------------------------------------

    def documents(self) -> list[DocumentInfo]:
        """The collection's documents; empty for a collection directory with nothing stored yet,
        :class:`CollectionNotFoundError` when the directory does not exist (a mistyped path)."""
        if not self.store.exists:  # type: ignore[attr-defined]
            if self.location.remote or not self.path.exists():
                raise self._not_found()
            return []
        return self.store.list_documents()

    def resolve(self, ref: str, docs: Sequence[DocumentInfo] | None = None) -> DocumentInfo:
        """The document a name, path, id or unique id prefix refers to; also a name without
        its extension or a unique prefix of a name (both ignoring case). A miss names the
        closest document names."""
        from docsight.index.names import resolve_document

        docs = self.documents() if docs is None else docs
        return resolve_document(ref, docs, self.path)

    def document(self, ref: str) -> Document:
        self._require_collection()
        return self.store.get_document(self.resolve(ref).id)

    def page_image(self, doc_ref: str, page: int) -> bytes | None:
        """The PNG image of a page (0-based) for citations: made from the kept PDF or image
        file (cached per process), or as stored for other formats; ``None`` when the page has
        none."""
        document = self.document(doc_ref)
        if not 0 <= page < document.page_count:
            raise DocumentNotFoundError(f"{document.name} has no page {page}")
        image_id = document.pages[page].image_id
        asset = self.store.get_asset(image_id) if image_id else None
        return asset.data if asset else None

    def info(self) -> CollectionStats:
        self._require_collection()
        stats = self.store.stats()
        if self.location.remote:
            stats.work_dir = str(self.work_dir)
        return stats

    def search(
        self,
        query: str,
        k: int = 10,
        doc_names: Sequence[str] | None = None,
        *,
        unit: Literal["chunk", "page"] = "chunk",
        image: ImageInput | None = None,
    ) -> list[Hit]:
        """Hybrid search (BM25 + dense, fused by reciprocal rank); ``unit="page"`` ranks pages.

        With ``image`` (a path, bytes, or an :meth:`analyze_image` result) the question is also
        searched with the image's typed text and caption, and the streams are fused (VISA).
        """
        query = self._question(query, k, MAX_SEARCH_K)
        searcher, doc_ids = self._searcher(doc_names)
        if image is None:
            return searcher.search(query, k=k, doc_ids=doc_ids, unit=unit)
        from docsight.query.analyze import ImageAnalysis
        from docsight.retrieval.multimodal import plan_streams, search_streams

        analysis = image if isinstance(image, ImageAnalysis) else self.analyze_image(image)
        plan = plan_streams(query, analysis, self.settings.image)
        return search_streams(
            plan,
            lambda text, n: searcher.search(text, k=n, doc_ids=doc_ids, unit=unit),
            k,
            self.settings.image,
            candidates=self.settings.image.candidates,
        )

    def _searcher(self, doc_names: Sequence[str] | None) -> tuple[Any, list[str] | None]:
        """The hybrid searcher over the configured channels, and the filter's document ids."""
        from docsight.retrieval import create_retrievers
        from docsight.retrieval.search import HybridSearcher

        self._require_collection()
        if {"dense", "tree", "graph"} & set(self.settings.retrieval.channels):
            self._check_encoder()
        doc_ids = None
        if doc_names:
            docs = self.documents()  # read once, however many names there are
            doc_ids = [self.resolve(name, docs).id for name in doc_names]
        from docsight.retrieval.rerank import create_reranker

        settings = self.settings.retrieval
        retrievers = create_retrievers(
            self._channels(), self.store, self._answering_encoder, visual=self.visual_encoder
        )
        chat = self.chat_model() if settings.rerank == "llm" else None
        reranker = create_reranker(settings, self.store, chat)
        return HybridSearcher(self.store, retrievers, settings, reranker), doc_ids

    def _channels(self) -> list[str]:
        """The configured retrieval channels, with ``visual`` added or refused as
        :func:`retrieval.visual.visual_channels` decides."""
        from docsight.retrieval.visual import visual_channels

        settings = self.settings.retrieval
        return visual_channels(
            settings.channels,
            explicit="channels" in settings.model_fields_set,
            encoder=self.visual_encoder(),
            store=self.store,
        )

    def analyze_image(self, image: str | Path | bytes) -> ImageAnalysis:
        """Route a query image to its types, parse it into typed text and caption it (cached in
        the collection, so asking again with the same image calls no model)."""
        from docsight.cache import JsonCache
        from docsight.query.analyze import ImageQueryAnalyzer

        with self._lock:
            if self._image_analyzer is None:
                cache = JsonCache(self.work_dir / "cache" / "artifacts.sqlite")
                self._image_analyzer = ImageQueryAnalyzer(
                    self.settings.image, chat=self._vision_chat(), cache=cache
                )
            analyzer = self._image_analyzer
        return analyzer.analyze(image)

    def context(
        self,
        question: str,
        *,
        doc_names: Sequence[str] | None = None,
        k: int | None = None,
        image: ImageInput | None = None,
    ) -> list[Source]:
        """The numbered sources ``ask`` would answer from, without answering.

        The hits are chosen by adaptive k (or the top ``k`` when given), then read out along
        the content graph within ``answer.context_tokens``, in document order.
        """
        from docsight.agents.context import assemble
        from docsight.retrieval.readout import ReadoutPlan

        question = self._question(question, k, MAX_ANSWER_K)
        settings = self.settings.answer
        if image is not None or k is not None or not settings.adaptive:
            hits = self.search(question, k=k or settings.top_k, doc_names=doc_names, image=image)
        else:
            searcher, doc_ids = self._searcher(doc_names)
            hits = searcher.context(
                question, doc_ids, k_min=settings.k_min, k_max=max(settings.k_min, settings.k_max)
            )
        plan = ReadoutPlan(
            budget_tokens=settings.context_tokens,
            page_hits=settings.page_hits,
            neighbours=settings.neighbours,
        )
        return assemble(hits, self.store, plan)

    def ask(
        self,
        question: str,
        *,
        doc_names: Sequence[str] | None = None,
        k: int | None = None,
        image: ImageInput | None = None,
        mode: str | None = None,
        on_step: Callable[[TraceStep], None] | None = None,
        on_token: Callable[[str, int], None] | None = None,
    ) -> Answer:
        """Answer with numbered citations: by the LLM if one is configured, else extractively.

        With ``image``, retrieval fuses the image's text streams and the answerer sees what the
        image shows (typed text and caption) next to the question. ``mode`` (default
        ``answer.mode``): ``fast``, ``agent``, ``plan`` or ``auto`` (``agents.modes``).
        ``on_step`` is called with each trace step as it finishes, ``on_token(piece, draft)``
        with a model's words as it writes them (``agents.pipeline.answer_question``). The
        policy lives in ``agents.pipeline``; this wires the collection into it.
        """
        from docsight.agents.pipeline import Ports, answer_question
        from docsight.query.question import clean_question

        question, bad_bytes = clean_question(question)
        _require_words(question)
        analysis = None
        asked = question
        if image is not None:
            from docsight.query.analyze import ImageAnalysis
            from docsight.retrieval.multimodal import question_with_image

            analysis = image if isinstance(image, ImageAnalysis) else self.analyze_image(image)
            asked = question_with_image(question, analysis, self.settings.image)
        ports = Ports(
            retrieve=lambda query: self.context(query, doc_names=doc_names, k=k, image=analysis),
            pages_missing=self._pages_missing,
            absent=self._words_absent,
            census=self._census,
            named_pages=self._named_pages,
            encoder=self._answering_encoder,
            chat=self.chat_model,
            vision=self._vision_chat,
            images=self._source_images,
            walk=self._walk,
        )
        answer = answer_question(
            question,
            ports,
            self.settings,
            asked=asked,
            mode=mode,
            on_step=on_step,
            on_token=on_token,
        )
        if analysis is not None:
            answer.question = question
            answer.warnings.extend(analysis.warnings)
        if bad_bytes is not None:
            answer.warnings.insert(0, bad_bytes)
        return answer

    def _source_images(self, sources: Sequence[Source], limit: int) -> list[tuple[int, bytes]]:
        from docsight.agents.context import source_images

        answer = self.settings.answer
        return source_images(
            sources, self.store, limit, dpi=answer.image_dpi or None, max_side=answer.max_image_side
        )

    def _walk(self, sources: Sequence[Source]) -> list[Source]:
        """What surrounds ``sources`` in their documents: a readout from them as hits with a
        wider reach (two neighbours each side, whole pages, artifacts and references)."""
        from docsight.agents.context import assemble
        from docsight.retrieval.hit import Hit
        from docsight.retrieval.readout import ReadoutPlan

        settings = self.settings.answer
        hits = [
            Hit(**s.location(), rank=s.rank, score=1.0 / s.rank, kind=s.kind, text=s.text)
            for s in sources
            if s.chunk_id
        ]
        plan = ReadoutPlan(
            budget_tokens=settings.context_tokens * 2,
            page_hits=1,
            neighbours=max(2, settings.neighbours + 1),
        )
        return assemble(hits, self.store, plan)

    def chat(
        self,
        question: str,
        *,
        session: str | None = None,
        doc_names: Sequence[str] | None = None,
        image: ImageInput | None = None,
        mode: str | None = None,
        on_step: Callable[[TraceStep], None] | None = None,
        on_token: Callable[[str, int], None] | None = None,
    ) -> Answer:
        """Ask within a conversation kept in the collection; ``session`` continues one (its
        id is ``Answer.session``). A follow-up is rewritten to stand alone before retrieval
        (``agents.conversation``: by the LLM when one is configured, else by rules), and
        looks first in the documents the previous answer cited."""
        from docsight.agents.conversation import Conversation, take_turn
        from docsight.index.sessions import SessionStore, new_session_id
        from docsight.query.question import clean_question

        self._require_collection()
        sessions = SessionStore(self.work_dir)
        conversation = (
            self._conversation(sessions, session) if session else Conversation(id=new_session_id())
        )
        question, _ = clean_question(question)
        _require_words(question)
        answer = take_turn(
            conversation,
            question,
            lambda text, doc_names, on_token: self.ask(
                text,
                doc_names=doc_names,
                image=image,
                mode=mode,
                on_step=on_step,
                on_token=on_token,
            ),
            chat=self.chat_model(),
            budget=self.settings.llm.budget,
            doc_names=doc_names,
            on_step=on_step,
            on_token=on_token,
        )
        sessions.save(conversation.id, conversation.model_dump_json(indent=1))
        return answer

    def conversation(self, session: str) -> Any:
        """The stored conversation ``session`` (``agents.conversation.Conversation``)."""
        from docsight.index.sessions import SessionStore

        self._require_collection()
        return self._conversation(SessionStore(self.work_dir), session)

    @staticmethod
    def _conversation(sessions: Any, session: str) -> Any:
        from pydantic import ValidationError

        from docsight.agents.conversation import CONVERSATION_SCHEMA_VERSION, Conversation
        from docsight.errors import StoreError

        try:
            conversation = Conversation.model_validate_json(sessions.load(session))
        except ValidationError as exc:
            raise StoreError(
                f"conversation {session} is damaged: {exc.errors()[0]['msg']}"
            ) from exc
        if conversation.schema_version != CONVERSATION_SCHEMA_VERSION:
            raise StoreError(
                f"conversation {session} was written in format v{conversation.schema_version}; "
                f"this version of docsight reads v{CONVERSATION_SCHEMA_VERSION}"
            )
        return conversation

    def _pages_missing(self, question: str, sources: Sequence[Source]) -> bool:
        """Whether the question names pages that the documents it is about do not have."""
        from docsight.retrieval.locate import pages_missing

        doc_ids = list(dict.fromkeys(s.doc_id for s in sources))
        return pages_missing(question, self.store, doc_ids)

    def _named_pages(self, question: str, sources: Sequence[Source]) -> dict[str, list[int]]:
        """The pages ``question`` names in the documents of ``sources``."""
        from docsight.retrieval.locate import named_pages

        return named_pages(question, self.store, list(dict.fromkeys(s.doc_id for s in sources)))

    def _census(self, question: str, sources: Sequence[Source]) -> Census | None:
        """The count of parts ``question`` asks of the best-ranked source's document."""
        from docsight.retrieval.census import take_census

        ranked = sorted(sources, key=lambda s: s.rank)
        return take_census(question, self.store, list(dict.fromkeys(s.doc_id for s in ranked)))

    def _words_absent(self, words: Sequence[str], sources: Sequence[Source]) -> list[str]:
        """Which of ``words`` no document of ``sources`` mentions anywhere."""
        from docsight.retrieval.locate import words_absent

        doc_ids = list(dict.fromkeys(s.doc_id for s in sources))
        return words_absent(words, self.store, doc_ids)

    @staticmethod
    def _question(text: str, k: int | None, most: int) -> str:
        """The question as valid text (bad bytes replaced, with a logged warning) and ``k``
        checked against the same bounds as the command line's."""
        from docsight.query.question import clean_question

        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= most):
            raise UsageError(f"k must be a whole number from 1 to {most}, not {k!r}")
        cleaned, warning = clean_question(text)
        if warning is not None:
            log.warning("%s", warning)
        _require_words(cleaned)
        return cleaned


def _require_words(question: str) -> None:
    """A blank question would be searched and answered "Not answerable": refuse it instead."""
    if not any(ch.isalnum() for ch in question):
        raise EmptyQuestionError(
            "the question is empty"
            if not question.strip()
            else f"the question {question.strip()[:40]!r} has no words to search for"
        )
