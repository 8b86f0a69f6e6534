"""The one settings object.

Every tunable lives here, grouped by concern. Each group reads its own environment variables
(``DOCSIGHT_LLM_BASE_URL``, ``DOCSIGHT_EMBED_BACKEND``, ...), and the top-level object reads
``DOCSIGHT_*``. Constructing settings is cheap and does no I/O beyond reading the environment.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict, SettingsError

from docsight.errors import InvalidSettingError


class _Settings(BaseSettings):
    """Settings whose invalid values raise :class:`InvalidSettingError` naming the environment
    variable, the value and what is allowed, instead of pydantic's multi-line report."""

    def __init__(self, **values: Any) -> None:
        try:
            super().__init__(**values)
        except ValidationError as exc:
            raise _invalid(type(self), exc) from exc
        except SettingsError as exc:
            raise _undecodable(type(self), exc) from exc


def env_name(model: type[BaseSettings], field: str) -> str:
    """The environment variable that sets ``field`` of a settings group."""
    info = model.model_fields.get(field)
    alias = info.validation_alias if info is not None else None
    if isinstance(alias, AliasChoices) and isinstance(alias.choices[0], str):
        return alias.choices[0]
    if isinstance(alias, str):
        return alias
    return f"{model.model_config.get('env_prefix', '')}{field}".upper()


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return repr(text if len(text) <= 80 else text[:77] + "...")


def _invalid(model: type[BaseSettings], exc: ValidationError) -> InvalidSettingError:
    parts: list[str] = []
    names: list[str] = []
    for error in exc.errors(include_url=False):
        field = str(error["loc"][0]) if error["loc"] else ""
        name = env_name(model, field) if field else model.__name__
        rule = error["msg"]
        rule = rule[:1].lower() + rule[1:]
        if field and (default := _default(model, field)) is not None:
            rule += f" (default {default})"
        item = (
            f" (item {error['loc'][1] + 1})"
            if len(error["loc"]) > 1 and isinstance(error["loc"][1], int)
            else ""
        )
        parts.append(f"{name}={_shown(error.get('input'))}{item}: {rule}")
        names.append(name)
    return InvalidSettingError("invalid setting " + "; ".join(parts), names)


def _default(model: type[BaseSettings], field: str) -> str | None:
    info = model.model_fields.get(field)
    if info is None:
        return None
    factory = info.default_factory
    value = factory() if factory is not None else info.default  # type: ignore[call-arg]
    if value is None or isinstance(value, BaseSettings):
        return None
    return json.dumps(value) if isinstance(value, list | dict) else str(value)


def _undecodable(model: type[BaseSettings], exc: SettingsError) -> InvalidSettingError:
    """A structured value (a mapping) that is not valid JSON in its environment variable."""
    import os

    match = re.search(r'field "(\w+)"', str(exc))
    field = match.group(1) if match else ""
    name = env_name(model, field) if field else model.__name__
    value = next((v for k, v in os.environ.items() if k.upper() == name), "")
    example = _default(model, field) if field else None
    hint = f", e.g. {example}" if example else ""
    return InvalidSettingError(
        f"invalid setting {name}={_shown(value)}: expected JSON{hint}", [name]
    )


def _split_list(value: Any) -> Any:
    """A list setting from the environment: JSON (``["bm25", "dense"]``) or comma-separated
    words (``bm25,dense``)."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if text.startswith("["):
        try:
            return json.loads(text)
        except ValueError:
            return value  # reported by validation, with the variable's name
    return [part.strip() for part in text.split(",") if part.strip()]


def thread_share(sessions: int, cores: int | None = None) -> int:
    """Threads for each of ``sessions`` onnxruntime sessions that run at the same time: an equal
    share of the cores, at least one. More threads than cores do not add speed, they time-slice,
    and onnxruntime's idle threads spin before they sleep, so the surplus burns CPU others need.
    """
    import os

    cores = cores if cores is not None else (os.cpu_count() or 1)
    return max(1, cores // max(1, sessions))


def _group(prefix: str) -> SettingsConfigDict:
    # validate_by_name: fields with environment aliases (base_url, api_key) must still be
    # settable by their own name in code.
    return SettingsConfigDict(
        env_prefix=prefix,
        extra="ignore",
        validate_assignment=True,
        validate_by_name=True,
        validate_by_alias=True,
    )


class LLMSettings(_Settings):
    """An OpenAI-compatible chat endpoint (vLLM, Ollama, llama.cpp, OpenAI).

    The LLM is used only when ``model`` is set; otherwise every feature runs offline.
    """

    model_config = _group("DOCSIGHT_LLM_")

    base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("DOCSIGHT_LLM_BASE_URL", "OPENAI_BASE_URL")
    )
    model: str | None = None
    api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("DOCSIGHT_LLM_API_KEY", "OPENAI_API_KEY")
    )
    #: Wall-clock seconds one request may take, from connecting to the last byte of the answer
    #: (an endpoint that trickles bytes is cut off too, not only one that stalls).
    timeout: float = Field(default=20.0, gt=0)
    max_retries: int = Field(default=2, ge=0, le=10)
    #: Wall-clock seconds one model call may take across its retries, backoff and JSON repair;
    #: ``ask`` spends one budget on all its model calls. The defaults give a first extractive
    #: fallback within about 30 s when the endpoint never answers.
    budget: float = Field(default=30.0, gt=0)
    #: Upper bound of the exponential backoff between retries, in seconds.
    max_backoff: float = Field(default=20.0, gt=0)
    max_concurrency: int = Field(default=4, ge=1)
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(default=512, ge=1)
    #: On-disk response cache keyed by model and request.
    cache: bool = True

    @property
    def enabled(self) -> bool:
        return bool(self.model)


class VLMSettings(LLMSettings):
    """A vision-capable OpenAI-compatible endpoint, used at ingestion to classify documents and
    describe pictures and slides. Off unless ``DOCSIGHT_VLM_MODEL`` is set."""

    model_config = _group("DOCSIGHT_VLM_")

    base_url: str | None = None
    api_key: SecretStr | None = None
    max_tokens: int = Field(default=300, ge=1)
    #: Pictures smaller than this share of their page are not worth a model call.
    min_picture_area: float = Field(default=0.02, ge=0.0, le=1.0)
    #: Most model calls per document (pictures and pages), so a long deck stays affordable.
    max_calls_per_document: int = Field(default=60, ge=0)


class EmbedSettings(_Settings):
    model_config = _group("DOCSIGHT_EMBED_")

    #: ``minilm-onnx`` (offline, default) or ``openai`` (an OpenAI-compatible /embeddings endpoint).
    backend: str = "minilm-onnx"
    batch_size: int = Field(default=32, ge=1)
    #: At most this many texts × tokens² in one batch of the offline encoder: inputs wider than
    #: about 45 word pieces go in smaller batches (4 of 128, 1 of 256). Attention needs memory in
    #: proportion, and onnxruntime's arena grows to the largest a call needed, so this bounds the
    #: ingesting process's peak. 8 × 128² took 200 MiB less than 32 × 128² and embedded 8 %
    #: faster (smaller batches of wide inputs stay in cache); 4 × 128² took 71 MiB less again
    #: while embedding a 1,000-page report's chunks, at the same speed, and on the dev PDFs 5 %
    #: less CPU (2 × 128²: 26 MiB less still, 6 % slower; benchmarks/results/large_pdf.md).
    batch_area: int = Field(default=4 * 128 * 128, ge=1)
    #: onnxruntime intra-op threads; 0 uses every core.
    threads: int = Field(default=0, ge=0)
    #: Let onnxruntime's idle threads spin (busy-wait) for work instead of sleeping
    #: (``session.intra_op/inter_op.allow_spinning``; onnxruntime's default is on). Off: on 2
    #: cores the spinning cost about 40 % more CPU a chunk (126 against 90 ms with 2 threads,
    #: 117 against 89 beside two busy worker processes) and embedded no faster
    #: (benchmarks/results/parse_cpu.md, ``benchmarks/embed_spin.py``).
    spin: bool = False
    max_tokens: int = Field(default=256, ge=8, le=512)
    #: Only for the ``openai`` backend.
    base_url: str | None = None
    model: str | None = None
    api_key: SecretStr | None = None
    timeout: float = Field(default=60.0, gt=0)


class VisualSettings(_Settings):
    """The visual channel: page images embedded by a model the user provides (none offline)."""

    model_config = _group("DOCSIGHT_VISUAL_")

    #: ``none`` (default: no page image is embedded), ``openai`` (an OpenAI-compatible
    #: embeddings endpoint that accepts images) or ``colpali`` (local late-interaction weights
    #: through colpali-engine; the ``visual`` extra).
    backend: str = "none"
    #: For ``openai``: the endpoint, model and key.
    base_url: str | None = None
    model: str | None = None
    api_key: SecretStr | None = None
    timeout: float = Field(default=120.0, gt=0)
    #: For ``colpali``: a directory with the model's weights (never downloaded by docsight).
    model_path: Path | None = None
    #: ``cpu``, ``cuda``, ``cuda:1``, ``mps`` or ``auto`` (a GPU when torch sees one).
    device: str = "auto"
    #: Page images per forward pass or request; bounds memory.
    batch_size: int = Field(default=4, ge=1, le=256)
    #: Longest side, in pixels, a page image is scaled to before embedding.
    max_side: int = Field(default=1024, ge=64, le=8192)


class ParseSettings(_Settings):
    model_config = _group("DOCSIGHT_PARSE_")

    max_file_mb: float = Field(default=512.0, gt=0)
    max_pages: int = Field(default=5000, ge=1)
    #: Keep a PNG render of every page for citations.
    render_pages: bool = True
    render_dpi: int = Field(default=96, ge=24, le=300)
    #: Renders larger than this many pixels are scaled down (a guard against huge page boxes).
    max_render_pixels: int = Field(default=4_000_000, ge=10_000)
    extract_tables: bool = True
    extract_figures: bool = True
    #: What reads a PDF page's glyphs, images and drawn shapes: ``pdfium`` walks the objects
    #: pdfium has parsed already; ``pdfminer`` (through pdfplumber, the reading before parser
    #: ``pdf/9``) interprets the content stream again in Python, at about 1.5 times the CPU of
    #: the parse without models (``benchmarks/results/parse_cpu.md``, section 4).
    pdf_objects: Literal["pdfium", "pdfminer"] = "pdfium"
    #: OCR for pages and images without a usable text layer (needs the ``ocr`` extra):
    #: ``auto`` OCRs pages whose text layer holds fewer than ``ocr_min_chars`` characters,
    #: ``always`` every page, ``never`` none.
    ocr: Literal["auto", "always", "never"] = "auto"
    ocr_dpi: int = Field(default=200, ge=72, le=400)
    ocr_min_chars: int = Field(default=20, ge=0)
    #: Pictures without text of their own that cover at least this share of their page are read
    #: by OCR too (a pasted chart, a screenshot).
    ocr_picture_min_area: float = Field(default=0.05, ge=0.0, le=1.0)
    #: Detect layout regions (titles, tables, figures, captions) on page images.
    layout_model: bool = True
    #: Images larger than this are refused as decompression bombs.
    max_image_pixels: int = Field(default=80_000_000, ge=1_000_000)
    #: Office files are ZIP archives: refuse ones that expand past these bounds before parsing.
    max_zip_members: int = Field(default=10_000, ge=10)
    max_unzipped_mb: float = Field(default=1024.0, gt=0)
    max_zip_ratio: float = Field(default=200.0, gt=1)
    #: Spreadsheet cells read per sheet; larger sheets are cut with a warning.
    max_sheet_cells: int = Field(default=500_000, ge=1000)
    #: Embedded images smaller than this fraction of the page are decoration, not figures.
    min_figure_area: float = Field(default=0.01, ge=0.0, le=1.0)
    #: Flag text a reader would not see (off the page, too small, no contrast with what is
    #: behind it, marked hidden); flagged text is kept in the map but never indexed.
    flag_hidden_text: bool = True
    #: Text set smaller than this (points) is flagged as too small to read.
    min_font_pt: float = Field(default=2.0, ge=0.0, le=12.0)


class IngestSettings(_Settings):
    """How files are parsed: in worker processes with per-file limits, or in-process.

    Parsing libraries crash, hang and exhaust memory on hostile files; a worker process holds
    each file so only the worker dies. A worker over a limit is killed and replaced, and the file
    is reported with the limit it hit.
    """

    model_config = _group("DOCSIGHT_INGEST_")

    #: ``process`` (default): parse in worker processes under the limits below; ``none``: parse
    #: in the calling process without limits (debugging, tests that patch parsers).
    isolation: Literal["process", "none"] = "process"
    #: Parallel worker processes; 0 picks ``min(2, cpu count)``. With ``engine = "ray"``: parse
    #: tasks run at once on the cluster (a placement group of that many CPUs); 0 there means
    #: the cluster's CPUs.
    workers: int = Field(default=0, ge=0, le=64)
    #: Wall-clock seconds one file may take to parse, read by OCR, describe and chunk ...
    timeout_s: float = Field(default=120.0, gt=0)
    #: ... plus this many per page (or picture to read by OCR), so long documents and scans
    #: get the time they need (OCR takes a few seconds a page) ...
    per_page_s: float = Field(default=6.0, ge=0)
    #: ... but never more than this.
    max_timeout_s: float = Field(default=1800.0, gt=0)
    #: Resident memory of a worker, in MiB; a worker above it is killed.
    memory_mb: int = Field(default=2048, ge=256)
    #: CPU seconds (all threads together) a file may use at ``timeout_s``, scaled like the wall
    #: clock for long documents; 0: twice the wall-clock budget (the OCR and layout models run
    #: on several threads); -1: no CPU limit.
    cpu_s: float = Field(default=0.0, ge=-1)
    #: Address space of a worker in MiB, a backstop for allocations too fast for the memory
    #: watchdog; 0 picks ``memory_mb`` plus room for the model runtimes' reservations, -1 none.
    address_space_mb: int = Field(default=0, ge=-1)
    #: onnxruntime threads of each OCR and layout model in a worker: ``-1`` (default) shares the
    #: cores among the workers (:func:`thread_share`), 0 leaves it to onnxruntime (every core, in
    #: each worker), a number sets it. On two cores onnxruntime's default ran 2 workers x 2
    #: threads beside the parent's 2 embedding threads; the threads wait by spinning, so the
    #: oversubscription cost CPU and slowed the parent's embedding
    #: (benchmarks/results/model_threads.md).
    model_threads: int = Field(default=-1, ge=-1, le=64)
    #: ``local`` (default): worker processes on this machine; ``ray``: parse tasks and embedding
    #: actors on a Ray cluster (the ``distributed`` extra; ``docsight ingest --engine ray``). The
    #: store is written by this process either way (see docs/scale.md).
    engine: Literal["local", "ray"] = "local"
    #: The Ray cluster to use (``--address``): ``auto`` for a running local cluster,
    #: ``ray://host:10001`` for a remote one; unset: ``$RAY_ADDRESS``, else a new local instance
    #: for the duration of the ingest.
    ray_address: str | None = None
    #: Embedding actors on the cluster, each holding one copy of the encoder.
    ray_embedders: int = Field(default=1, ge=1, le=64)
    #: CPUs each embedding actor reserves on the cluster. 0 (default) shares the parse tasks'
    #: CPUs, as the local engine's embedding shares the workers' cores; on a cluster, reserve
    #: CPUs so the actors are not starved by parsing.
    ray_embed_cpus: float = Field(default=0.0, ge=0, le=64)
    #: A PDF with more pages than this has its pages spread over the workers in ranges of at
    #: most this many (when there are 2 workers or more), so one long file does not run on one
    #: core; each range is its own job under the limits above. A scanned PDF (read by OCR, ten
    #: times the cost a page) is cut into ranges a tenth as long, at least 2 pages. 0: a file
    #: is one job.
    pages_per_part: int = Field(default=40, ge=0)
    #: Files stored between two compactions of the collection during one ingest. Each stored
    #: file adds a small file to every table, and every read scans all of them, so a batch of
    #: small files grew slower file by file (600 files: 0.14 s for one lookup, against 0.01 s
    #: compacted). The indexes are still updated once, at the end; without the ``large`` extra,
    #: tables past 32,768 rows are left to the end too. 0: only at the end
    #: (benchmarks/results/batch_compaction.md).
    compact_every: int = Field(default=32, ge=0)

    def budget(self, pages: int = 0) -> tuple[float, float | None]:
        """``(wall-clock seconds, CPU seconds or None)`` for a file of ``pages`` pages."""
        ceiling = max(self.max_timeout_s, self.timeout_s)
        wall = min(self.timeout_s + self.per_page_s * pages, ceiling)
        if self.cpu_s < 0:
            return wall, None
        base = self.cpu_s or 2 * self.timeout_s
        return wall, base * wall / self.timeout_s

    def worker_count(self) -> int:
        import os

        return self.workers or max(1, min(2, os.cpu_count() or 1))

    def model_thread_count(self) -> int:
        """Threads of each model session in a worker, 0 for onnxruntime's default (see
        ``model_threads``)."""
        if self.model_threads >= 0:
            return self.model_threads
        return thread_share(self.worker_count())


class ChunkSettings(_Settings):
    model_config = _group("DOCSIGHT_CHUNK_")

    #: ``auto`` (element chunks for reports, page chunks for slide decks), ``element``,
    #: ``interleaved`` or ``page`` (see ``ingest.chunking``).
    strategy: str = "auto"
    #: Soft upper bound per chunk. MiniLM reads 256 word pieces, about 180 words of prose.
    max_words: int = Field(default=150, ge=20)
    #: Chunks smaller than this are merged with their neighbour on the same page.
    min_words: int = Field(default=30, ge=0)
    #: Prefix each chunk with its section path (improves both BM25 and dense matches).
    section_prefix: bool = True


class GraphSettings(_Settings):
    """The content graph and summary tree built for every document at ingestion."""

    model_config = _group("DOCSIGHT_GRAPH_")

    #: Chunks linked by reading-order adjacency on each side of a chunk.
    window: int = Field(default=2, ge=0, le=10)
    #: ``auto``: written by the chat model when one is configured (``DOCSIGHT_LLM_*``), else
    #: extractive; ``extractive``: never call a model; ``model``: the chat model (extractive
    #: without one).
    summaries: Literal["auto", "extractive", "model"] = "auto"
    #: ``auto``: ``model`` with a chat model, else ``lite``; ``lite``: similarity propagation of
    #: chunk vectors, no model; ``model``: ``lite`` plus summaries rewritten from neighbours by
    #: the chat model; ``none``.
    evolution: Literal["auto", "none", "lite", "model"] = "auto"
    #: Evolution rounds (G-Reader's T).
    rounds: int = Field(default=3, ge=0, le=10)
    #: Neighbours each chunk mixes with per round, and ``similar`` edges per chunk.
    neighbours: int = Field(default=4, ge=1, le=32)
    #: Weight of the neighbours' mean against the chunk's own vector in each round.
    alpha: float = Field(default=0.5, ge=0.0, le=4.0)
    #: Evolved similarity a ``similar`` edge needs.
    min_similarity: float = Field(default=0.5, ge=-1.0, le=1.0)
    #: Model calls per document for summaries and model evolution (each round counts).
    max_model_calls: int = Field(default=200, ge=0)


class RetrievalSettings(_Settings):
    model_config = _group("DOCSIGHT_RETRIEVAL_")

    #: Chunk channels ``bm25``, ``dense`` and ``graph`` (evolved vectors of the content graph);
    #: page channels ``page_bm25`` (BM25 over whole pages), ``tree`` (the summary tree,
    #: top-down), ``locate`` (pages and parts the question names: "page 14", "Table 3",
    #: "Appendix B", "the last chart"), ``page_ref`` (page words only) and ``visual`` (page
    #: images by the visual encoder, ``DOCSIGHT_VISUAL_*``; added to the default list when the
    #: collection is bound to one).
    channels: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["bm25", "dense", "page_bm25", "locate"]
    )
    _channels_list = field_validator("channels", mode="before")(_split_list)
    rrf_k: int = Field(default=60, ge=1)
    #: Per-channel weights of reciprocal rank fusion (1 when absent). A page the question names
    #: explicitly is strong evidence, hence the weight of the locator; BM25's 1.5 was chosen by
    #: leave-documents-out cross-validation on the shared dev data
    #: (``benchmarks/results/retrieval_cv.md``).
    weights: dict[str, float] = Field(
        default_factory=lambda: {"locate": 3.0, "page_ref": 3.0, "bm25": 1.5}
    )
    #: Add the line items and statements a financial metric is computed from ("inventory
    #: turnover" → cost of sales, inventories, balance sheets) to the question
    #: (``retrieval.expand``).
    expand: bool = True
    #: Documents a scoped channel (``page_ref``) searches when no document filter is given: the
    #: best-ranked documents of the other channels.
    scope_documents: int = Field(default=10, ge=1)
    #: Across several documents, how much a document's own fused score (each channel ranking
    #: documents by their best hit) adds to every result in it; 0 ranks results on their own.
    document_prior: float = Field(default=0.0, ge=0.0, le=10.0)
    #: Second stage over the fused list: ``none``, ``features`` (offline, a linear model over
    #: per-page evidence fitted on the shared dev data) or ``llm`` (the configured chat model
    #: orders the candidates listwise; the fused order when no model is configured or it fails).
    rerank: Literal["none", "features", "llm"] = "none"
    #: Candidates the reranker sees, and how many of its order come first (MM-BizRAG: 30 → 20).
    rerank_candidates: int = Field(default=30, ge=2, le=200)
    rerank_keep: int = Field(default=20, ge=1, le=200)
    #: Seconds the ``llm`` reranker may take before the fused order is used instead.
    rerank_timeout: float = Field(default=20.0, gt=0)
    #: Candidates fetched per channel before fusion.
    candidates: int = Field(default=100, ge=1)
    #: Build an ANN vector index once a collection holds this many chunks (exact search below).
    vector_index_min_rows: int = Field(default=50_000, ge=256)


class AnswerSettings(_Settings):
    model_config = _group("DOCSIGHT_ANSWER_")

    #: Hits read when ``adaptive`` is off or ``ask`` is given ``k`` (the readout adds what
    #: belongs with them).
    top_k: int = Field(default=6, ge=1, le=50)
    #: Choose how many hits to read per question (ViDoRAG's adaptive k): per channel, the
    #: results in the high component of a two-component Gaussian mixture of its scores,
    #: clamped to ``[k_min, k_max]``, united across channels.
    adaptive: bool = True
    k_min: int = Field(default=3, ge=1, le=50)
    k_max: int = Field(default=8, ge=1, le=100)
    #: Budget of the readout (the sources' text), in tokens of about four characters.
    context_tokens: int = Field(default=3000, ge=100, le=100_000)
    #: Hits on one page that make the readout take the whole page (1: every hit's page is read
    #: whole, chosen by cross-validation of what reaches the answerer).
    page_hits: int = Field(default=1, ge=1, le=100)
    #: Reading-order neighbours the readout adds on each side of a hit, budget permitting.
    neighbours: int = Field(default=1, ge=0, le=10)
    #: Sentences in an extractive answer.
    max_sentences: int = Field(default=3, ge=1)
    #: Evidence below this is "not answerable": share of the question's content words found in
    #: the sources, combined with the best dense similarity (see ``agents.evidence``).
    min_evidence: float = Field(default=0.35, ge=0.0, le=1.0)
    #: Characters of each source passed to the model (the readout's budget bounds the total).
    max_source_chars: int = Field(default=6000, ge=100)
    #: How ``ask`` answers: ``fast`` (one retrieval, one answer), ``agent`` (seeker and
    #: inspector rounds), ``plan`` (a DAG of sub-questions) or ``auto`` (chosen per question).
    mode: Literal["fast", "agent", "plan", "auto"] = "fast"
    #: Inspector rounds of ``agent``; retrieval refinements per sub-question of ``plan``.
    max_rounds: int = Field(default=3, ge=1, le=10)
    #: Model tokens (estimated) an ``agent`` or ``plan`` answer may spend on its own calls.
    mode_tokens: int = Field(default=8000, ge=100)
    #: Wall-clock seconds an ``agent`` or ``plan`` answer may take before it answers with what
    #: it has.
    mode_seconds: float = Field(default=60.0, gt=0)
    #: What happens to a sentence of a model's answer that the sources it cites do not support
    #: (``agents.verify``): ``mark`` it "(unsupported)", ``remove`` it, or ``off`` (no check).
    #: Either way the answer's warnings say which.
    verify: Literal["mark", "remove", "off"] = "mark"
    #: Page renders and figure crops shown to a vision model (``DOCSIGHT_VLM_*``) with the
    #: sources, best-ranked sources first.
    max_images: int = Field(default=4, ge=0, le=32)
    #: Resolution those images are rendered at from a kept PDF (0: as ingestion rendered them,
    #: ``DOCSIGHT_PARSE_RENDER_DPI``); small print needs more than 96 dpi to be read.
    image_dpi: int = Field(default=0, ge=0, le=600)
    #: Longest side, in pixels, of an image sent to the vision model (larger ones are scaled).
    max_image_side: int = Field(default=1600, ge=64, le=8192)


Stream = Literal["A", "B", "C"]
_ALL_STREAMS: tuple[Stream, ...] = ("A", "B", "C")


class ImageQuerySettings(_Settings):
    """Questions asked with an image (VISA): routing, typed parsing, three streams, fusion."""

    model_config = _group("DOCSIGHT_IMAGE_")

    #: How the image's types are chosen: ``auto`` (the vision model when one is configured, else
    #: the offline classifier), ``offline``, ``vlm``, ``all`` (every type) or ``random`` (seeded;
    #: an ablation baseline).
    router: Literal["auto", "offline", "vlm", "all", "random"] = "auto"
    #: Most types an image is parsed as (VISA uses up to three).
    max_types: int = Field(default=3, ge=1, le=10)
    #: Types after the first are kept only with at least this confidence.
    min_confidence: float = Field(default=0.2, ge=0.0, le=1.0)
    random_seed: int = 0
    #: Typed parsers that may run (all when None); leaving one out is an ablation.
    parsers: Annotated[list[str] | None, NoDecode] = None
    #: Parsers run in parallel, each with this time budget in seconds.
    parser_timeout: float = Field(default=120.0, gt=0)
    #: ``auto`` (the vision model when configured, else an offline caption), ``vlm``,
    #: ``offline`` or ``none``.
    caption: Literal["auto", "vlm", "offline", "none"] = "auto"
    #: Streams searched: A = the question, B = question + typed text, C = question + caption.
    streams: Annotated[list[Stream], NoDecode] = Field(default_factory=lambda: list(_ALL_STREAMS))
    _lists = field_validator("parsers", "streams", mode="before")(_split_list)
    #: ``rrf`` (reciprocal rank, k = ``rrf_k``) or ``weighted`` (confidence-weighted linear fusion
    #: of min-max normalised scores).
    fusion: Literal["rrf", "weighted"] = "weighted"
    rrf_k: int = Field(default=60, ge=1)
    #: Stream A's weight never falls below this, so an image can only add to text search.
    min_weight_a: float = Field(default=0.3, ge=0.0, le=1.0)
    #: Results each stream fetches before fusion.
    candidates: int = Field(default=50, ge=1)
    #: Words of typed text and caption appended to the question (long OCR dumps drown it).
    max_stream_words: int = Field(default=200, ge=10)
    #: Images larger than this are refused; larger sides are scaled down to ``max_side``.
    max_pixels: int = Field(default=40_000_000, ge=10_000)
    max_side: int = Field(default=2200, ge=64)
    max_file_mb: float = Field(default=32.0, gt=0)


class ServerSettings(_Settings):
    """``docsight serve``: the REST API, the web page and MCP over HTTP."""

    model_config = _group("DOCSIGHT_SERVER_")

    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=0, le=65535)
    #: Bearer token every request must carry; required when binding beyond loopback.
    api_key: SecretStr | None = None
    #: Largest upload per file (MiB); the body streams to disk and stops at this cap.
    max_upload_mb: float = Field(default=200.0, gt=0)
    #: Files in one upload request.
    max_files: int = Field(default=100, ge=1)
    #: Ingestion jobs running at once; more are refused with 429.
    max_jobs: int = Field(default=2, ge=1)
    #: Largest JSON request body (KiB) and query length (characters).
    max_body_kb: int = Field(default=16_384, ge=1)
    max_query_chars: int = Field(default=4000, ge=10)
    #: Origins allowed by CORS; none (CORS off) by default.
    cors_origins: Annotated[list[str], NoDecode] = Field(default_factory=list)
    _origins = field_validator("cors_origins", mode="before")(_split_list)


class Settings(_Settings):
    """Everything configurable in docsight."""

    model_config = SettingsConfigDict(
        env_prefix="DOCSIGHT_", extra="ignore", validate_assignment=True
    )

    #: A local directory, or a URI on object storage (``s3://bucket/prefix``, ``gs://``,
    #: ``az://``): kept as a ``Path`` for a directory and as the URI string otherwise.
    collection_dir: Path | str = Path(".docsight")
    store: str = "lance"
    #: Seconds a writer waits for another writer's lock (or remote lease) before failing.
    lock_timeout: float = Field(default=30.0, ge=0)
    #: Local working directory of a collection on object storage (caches, sessions, local
    #: copies of kept files); default: under ~/.cache/docsight/collections, named after the URI.
    work_dir: Path | None = None
    #: The writer guard of a collection on object storage: ``lease`` (a lease object taken
    #: with S3 conditional writes) or ``none`` (no guard: only when one writer at a time runs).
    remote_lock: Literal["lease", "none"] = "lease"
    #: Seconds a remote writer's lease lives without renewal (renewed every third of it).
    lease_seconds: float = Field(default=60.0, ge=1)
    #: Page images and crops made from kept source files, cached in memory per process (MiB).
    render_cache_mb: float = Field(default=64.0, ge=0)

    @field_validator("collection_dir", mode="before")
    @classmethod
    def _collection_location(cls, value: Any) -> Any:
        from docsight.index.location import normalize

        return normalize(value) if isinstance(value, str | Path) else value

    llm: LLMSettings = Field(default_factory=LLMSettings)
    vlm: VLMSettings = Field(default_factory=VLMSettings)
    embed: EmbedSettings = Field(default_factory=EmbedSettings)
    visual: VisualSettings = Field(default_factory=VisualSettings)
    parse: ParseSettings = Field(default_factory=ParseSettings)
    ingest: IngestSettings = Field(default_factory=IngestSettings)
    chunk: ChunkSettings = Field(default_factory=ChunkSettings)
    graph: GraphSettings = Field(default_factory=GraphSettings)
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    answer: AnswerSettings = Field(default_factory=AnswerSettings)
    image: ImageQuerySettings = Field(default_factory=ImageQuerySettings)
    server: ServerSettings = Field(default_factory=ServerSettings)
