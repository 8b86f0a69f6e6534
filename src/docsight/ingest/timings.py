"""What an ingestion job measures besides its result: wall and CPU seconds per stage, what
each model cost, and what the file held. They travel in a job's ``timings`` dict
(``ingest.worker``) to the ingest report and to ``benchmarks/ingest_profile.py``."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from docsight.document.model import ParsedDocument

if TYPE_CHECKING:
    from docsight.vision.common import ModelTiming


class StageClock:
    """Wall and CPU seconds per stage into a timings dict: ``with clock("parse"): ...`` adds
    ``parse`` (wall) and ``parse.cpu``.

    CPU is process time, not the calling thread's: the models run on onnxruntime's own threads.
    A worker parses one file at a time, so the process's CPU is this file's.
    """

    def __init__(self, into: dict[str, float]) -> None:
        self.into = into

    @contextlib.contextmanager
    def __call__(self, stage: str) -> Iterator[None]:
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self._add(stage, time.perf_counter() - wall)
            self._add(f"{stage}.cpu", time.process_time() - cpu)

    def _add(self, key: str, seconds: float) -> None:
        self.into[key] = round(self.into.get(key, 0.0) + seconds, 4)


def model_timings(stats: Mapping[str, ModelTiming], prefix: str = "") -> dict[str, float]:
    """Timings keys for what each model cost: ``model.<prefix><kind>.calls`` (invocations, one
    image each), ``.pixels`` (of those images), ``.wall`` and ``.cpu`` (seconds in inference)
    and, when the model was loaded meanwhile, ``.load`` and ``.load.cpu`` (seconds loading)."""
    out: dict[str, float] = {}
    for kind, t in sorted(stats.items()):
        key = f"model.{prefix}{kind}"
        if t.calls:
            out[f"{key}.calls"] = t.calls
            out[f"{key}.pixels"] = t.pixels
            out[f"{key}.wall"] = round(t.wall, 4)
            out[f"{key}.cpu"] = round(t.cpu, 4)
        if t.loads:
            out[f"{key}.load"] = round(t.load_wall, 4)
            out[f"{key}.load.cpu"] = round(t.load_cpu, 4)
    return out


def content_counts(parsed: ParsedDocument, pictures_read: int) -> dict[str, float]:
    """What a file held, next to its timings, counted in its document's elements (see
    :func:`count_timings`)."""
    from docsight.document.model import ElementKind

    kinds = [e.kind for e in parsed.document.elements]
    pictures = kinds.count(ElementKind.FIGURE) + kinds.count(ElementKind.CHART)
    return count_timings(
        parsed.document.page_count, kinds.count(ElementKind.TABLE), pictures, pictures_read
    )


def count_timings(pages: int, tables: int, pictures: int, pictures_read: int) -> dict[str, float]:
    """Timings keys for what a file held: ``count.pages``, ``count.tables``,
    ``count.pictures`` and ``count.pictures_ocr`` (pictures read by OCR while describing); the
    caller adds ``count.chunks``."""
    return {
        "count.pages": pages,
        "count.tables": tables,
        "count.pictures": pictures,
        "count.pictures_ocr": pictures_read,
    }
