"""Run an evaluation: ingest the documents once, ask every question, score, write a run directory.

A run directory holds ``summary.json`` (aggregates and the configuration), ``metrics.json``
(aggregates per domain and per evidence type), ``questions.jsonl`` (one ``QuestionResult`` per
line: retrieved pages, scores, answer, citations, timings) and ``report.md``.

Collections are reused: documents are ingested into a collection named after the documents
folder and the settings that change the index (parsing, chunking, embedding), so a second run,
or another retrieval configuration, costs only the questions.
"""

from __future__ import annotations

import hashlib
import json
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from docsight.errors import ConfigurationError
from docsight.evaluation.types import EvalQuestion, EvalSet, QuestionResult
from docsight.settings import Settings

Scope = Literal["document", "corpus"]
Kind = Literal["retrieval", "qa"]
Progress = Callable[[int, int, str], None]

#: Settings groups whose values change what is stored in a collection.
_INDEX_GROUPS = ("parse", "chunk", "embed", "graph", "visual")


class EvalConfig(BaseModel):
    dataset: Path
    docs: Path | None = None
    format: str | None = None
    scope: Scope = "document"
    k: int = Field(default=10, ge=1, le=100)
    collection: Path | None = None
    out: Path | None = None
    #: Score only the first N questions (quick runs).
    limit: int | None = Field(default=None, ge=1)
    #: Use the configured LLM as a judge in QA runs (ignored without an LLM).
    judge: bool = True
    #: Search with the questions' images (False: their text only, the stream-A baseline).
    images: bool = True
    label: str | None = None


def index_fingerprint(settings: Settings) -> str:
    """A short hash of the settings that change what a collection stores."""
    data = {g: getattr(settings, g).model_dump(mode="json") for g in _INDEX_GROUPS}
    data["embed"].pop("api_key", None)
    data["visual"].pop("api_key", None)
    if data["visual"].get("backend") == "none":
        data.pop("visual")  # keeps the names of collections built before the visual channel
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:10]


def default_docs(dataset: Path) -> Path | None:
    """Where a dataset's documents usually are: a ``documents`` folder next to it, or the folder
    it is in (ViDoSeek keeps its PDFs beside ``rag_dataset.json``)."""
    base = dataset if dataset.is_dir() else dataset.parent
    for candidate in (base / "documents", base.parent / "documents", base):
        if candidate.is_dir() and any(
            p.suffix.lower() in (".pdf", ".docx", ".pptx", ".html", ".md")
            for p in candidate.iterdir()
        ):
            return candidate
    return None


def default_collection(docs: Path, settings: Settings) -> Path:
    return Path(".docsight-eval") / f"{docs.resolve().name}-{index_fingerprint(settings)}"


def mean(values: Iterable[float]) -> float | None:
    values = list(values)
    return round(statistics.fmean(values), 4) if values else None


def aggregate(results: list[QuestionResult]) -> dict[str, float | int | None]:
    """Mean of every metric over the questions that have it, with the count of questions."""
    names = sorted({name for r in results for name in r.metrics})
    out: dict[str, float | int | None] = {"questions": len(results)}
    for name in names:
        out[name] = mean(r.metrics[name] for r in results if name in r.metrics)
    flags = [
        (r.metrics["abstained"], r.metrics["unanswerable"])
        for r in results
        if "abstained" in r.metrics
    ]
    if flags:
        from docsight.evaluation.scoring import abstention_summary

        out.update(abstention_summary(flags))
    return out


def percentile(values: list[float], q: float) -> float:
    """The value at quantile ``q`` of a non-empty list (nearest rank, no interpolation)."""
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 4)


def latency(results: list[QuestionResult]) -> dict[str, float | int]:
    """Median and 95th percentile seconds per timed step; for image questions also how many
    were answered from the cache (warm: no OCR or model call)."""
    out: dict[str, float | int] = {}
    steps = sorted({step for r in results for step in r.timings})
    for step in steps:
        values = [r.timings[step] for r in results if step in r.timings]
        out[f"{step}_p50"] = percentile(values, 0.5)
        out[f"{step}_p95"] = percentile(values, 0.95)
    warm = [r.image_warm for r in results if r.image_warm is not None]
    if warm:
        out["image_warm"] = sum(warm)
        out["image_cold"] = len(warm) - sum(warm)
    return out


def grouped(results: list[QuestionResult]) -> dict[str, dict[str, dict[str, float | int | None]]]:
    by_domain: dict[str, list[QuestionResult]] = defaultdict(list)
    by_source: dict[str, list[QuestionResult]] = defaultdict(list)
    for r in results:
        by_domain[r.domain or "unknown"].append(r)
        for source in r.evidence_sources or ["unknown"]:
            by_source[source].append(r)
    return {
        "by_domain": {k: aggregate(v) for k, v in sorted(by_domain.items())},
        "by_evidence": {k: aggregate(v) for k, v in sorted(by_source.items())},
    }


class Evaluator:
    """Evaluate a dataset against a collection built from its documents."""

    def __init__(self, config: EvalConfig, settings: Settings | None = None) -> None:
        self.config = config
        self.settings = settings or Settings()

    # --- preparation ---------------------------------------------------------------------------

    def prepare(self, ingest_progress: Any = None) -> tuple[Any, EvalSet, dict[str, Any]]:
        from docsight.api import DocSight
        from docsight.evaluation.datasets import load_dataset

        evalset = load_dataset(self.config.dataset, self.config.format)
        docs = self.config.docs or default_docs(Path(self.config.dataset))
        if docs is None:
            raise ConfigurationError(
                f"no documents folder found for {self.config.dataset}; pass --docs DIR"
            )
        collection = self.config.collection or default_collection(docs, self.settings)
        ds = DocSight(collection, settings=self.settings)
        report = ds.ingest([docs], progress=ingest_progress)
        page_counts = {d.name: d.pages for d in ds.documents()}
        evalset, dropped = evalset.restrict_pages(page_counts)
        missing = sorted({q.doc for q in evalset.questions if q.doc and q.doc not in page_counts})
        questions = (
            evalset.questions[: self.config.limit] if self.config.limit else evalset.questions
        )
        info = {
            "dataset": evalset.name,
            "format": evalset.format,
            "source": evalset.source,
            "documents": str(docs),
            "collection": str(collection),
            "ingest": report.counts(),
            "labels_dropped_out_of_range": dropped,
            "documents_missing": missing,
            "notes": evalset.notes,
        }
        return ds, evalset.model_copy(update={"questions": questions}), info

    # --- running -------------------------------------------------------------------------------

    def run(
        self, kind: Kind, progress: Progress | None = None, ingest_progress: Any = None
    ) -> dict[str, Any]:
        ds, evalset, info = self.prepare(ingest_progress)
        judge = self._judge(ds) if kind == "qa" and self.config.judge else None
        started = time.perf_counter()
        results: list[QuestionResult] = []
        usable = [
            q for q in evalset.questions if not q.doc or q.doc not in info["documents_missing"]
        ]
        for i, q in enumerate(usable, start=1):
            if progress is not None:
                progress(i, len(usable), q.id)
            results.append(
                self._retrieval(ds, q) if kind == "retrieval" else self._qa(ds, q, judge)
            )
        seconds = time.perf_counter() - started
        summary = {
            "kind": kind,
            "label": self.config.label,
            "scope": self.config.scope,
            "k": self.config.k,
            **info,
            **aggregate(results),
            "seconds": round(seconds, 2),
            "seconds_per_question": round(seconds / len(results), 4) if results else None,
            "judge": judge.model if judge is not None else None,
            "image_queries": sum(1 for q in usable if q.image),
            "images_used": self.config.images,
            "latency": latency(results),
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "settings": self.settings.model_dump(
                mode="json", include={"retrieval", "chunk", "answer", "parse", "embed", "image"}
            ),
        }
        if summary["image_queries"] and not self.config.images:
            summary["notes"] = [
                *summary["notes"],
                "query images were not used (--no-images): questions were asked with their text",
            ]
        out = self._out_dir(kind, evalset.name)
        from docsight.evaluation.report import write_run

        write_run(out, summary, grouped(results), results)
        summary["run_dir"] = str(out)
        return summary

    def _out_dir(self, kind: Kind, name: str) -> Path:
        if self.config.out is not None:
            return self.config.out
        stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
        return Path("eval-runs") / f"{stamp}-{name}-{kind}"

    def _judge(self, ds: Any) -> Any:
        chat = ds.chat_model()
        if chat is None:
            return None
        from docsight.evaluation.judge import Judge

        return Judge(chat)

    def _filter(self, q: EvalQuestion) -> list[str] | None:
        return [q.doc] if self.config.scope == "document" and q.doc else None

    def _base(self, q: EvalQuestion) -> QuestionResult:
        return QuestionResult(
            id=q.id,
            question=q.question,
            doc=q.doc,
            domain=q.domain,
            evidence_sources=q.evidence_sources,
            gold_pages=q.evidence_pages,
            gold_answer=q.answer,
            answerable=q.answerable,
        )

    def _image(self, ds: Any, q: EvalQuestion, result: QuestionResult) -> Any:
        """The question's image analysis (timed), or None for text-only questions and runs."""
        if not q.image or not self.config.images:
            return None
        started = time.perf_counter()
        analysis = ds.analyze_image(q.image)
        result.timings["image"] = round(time.perf_counter() - started, 4)
        result.image_types = [t.type for t in analysis.routing.types]
        result.image_warm = analysis.warm
        result.warnings.extend(analysis.warnings)
        return analysis

    def _retrieval(self, ds: Any, q: EvalQuestion) -> QuestionResult:
        from docsight.evaluation.scoring import score_chunks, score_pages

        result = self._base(q)
        image = self._image(ds, q, result)
        started = time.perf_counter()
        hits = ds.search(
            q.question, k=self.config.k, doc_names=self._filter(q), unit="page", image=image
        )
        result.timings["search"] = round(time.perf_counter() - started, 4)
        result.retrieved = [f"{h.doc_name}#{h.page}" for h in hits]
        result.scores = [round(h.score, 6) for h in hits]
        result.metrics.update(score_pages(result.retrieved, q, self.config.k))
        if q.regions:
            chunks = ds.search(q.question, k=5, doc_names=self._filter(q), image=image)
            result.metrics.update(score_chunks(chunks, q))
        return result

    def _qa(self, ds: Any, q: EvalQuestion, judge: Any) -> QuestionResult:
        from docsight.evaluation.scoring import score_answer

        result = self._base(q)
        image = self._image(ds, q, result)
        started = time.perf_counter()
        answer = ds.ask(q.question, doc_names=self._filter(q), image=image)
        result.timings["answer"] = round(time.perf_counter() - started, 4)
        result.answer = answer.answer
        result.citations = [f"{c.doc_name}#{c.page}" for c in answer.citations]
        result.retrieved = list(
            dict.fromkeys(
                f"{s.doc_name}#{s.page}" for s in sorted(answer.sources, key=lambda s: s.rank)
            )
        )
        result.warnings.extend(w for w in answer.warnings if w not in result.warnings)
        # What the answer cost beyond retrieval: steps taken, model calls and their tokens.
        result.metrics["steps"] = float(len(answer.trace))
        result.metrics["model_steps"] = float(sum(s.by == "model" for s in answer.trace))
        result.metrics["model_tokens"] = float(sum(s.tokens for s in answer.trace))
        started = time.perf_counter()
        metrics, notes = score_answer(answer, q, judge)
        if judge is not None:
            result.timings["judge"] = round(time.perf_counter() - started, 4)
        result.metrics.update(metrics)
        result.warnings.extend(notes)
        return result
