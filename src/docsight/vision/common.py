"""What the vision engines share: result types, image conversion, optional imports, caching.

Only numpy and Pillow (default dependencies) are imported here.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, replace
from importlib import metadata
from types import ModuleType
from typing import Any, ClassVar, TypeVar

import numpy as np
from PIL import Image

from docsight.cache import JsonCache
from docsight.document.model import ElementKind
from docsight.errors import MissingDependencyError

#: A box as ``(x0, y0, x1, y1)`` in pixels, origin top-left.
Box = tuple[float, float, float, float]
T = TypeVar("T")

# Threads each model session may use; 0 leaves it to onnxruntime (one per core). A parse worker
# sets it at start from ``IngestSettings.model_thread_count``: several workers each running a
# model on every core would ask for more threads than the machine has.
_MODEL_THREADS = 0


def set_model_threads(threads: int) -> None:
    """Threads for model sessions created from now on in this process (0: onnxruntime's
    default). Sessions already loaded keep theirs."""
    global _MODEL_THREADS
    _MODEL_THREADS = max(0, int(threads))


def model_threads() -> int:
    return _MODEL_THREADS


#: Modules the ``ocr`` extra provides (import names).
OCR_MODULES = ("rapidocr", "rapid_layout", "rapid_table", "cv2", "onnxruntime")


@dataclass(frozen=True)
class OcrLine:
    """One line of recognised text; the box is axis-aligned around the detected polygon."""

    text: str
    box: Box
    score: float

    @property
    def x0(self) -> float:
        return self.box[0]

    @property
    def top(self) -> float:
        return self.box[1]

    @property
    def x1(self) -> float:
        return self.box[2]

    @property
    def bottom(self) -> float:
        return self.box[3]

    @property
    def vertical(self) -> bool:
        # RapidOCR turns crops at least 1.5 times taller than wide before recognising them, so
        # such boxes hold text running up or down the page (axis titles, margin stamps).
        w, h = self.box[2] - self.box[0], self.box[3] - self.box[1]
        return len(self.text.strip()) >= 2 and h >= 1.5 * w

    def to_json(self) -> list[Any]:
        return [self.text, *(round(v, 1) for v in self.box), round(self.score, 4)]

    @classmethod
    def from_json(cls, row: list[Any]) -> OcrLine:
        text, x0, y0, x1, y1, score = row
        return cls(str(text), (float(x0), float(y0), float(x1), float(y1)), float(score))


@dataclass(frozen=True)
class Region:
    """A layout region: ``label`` is one of the CDLA classes (text, title, figure,
    figure_caption, table, table_caption, header, footer, reference, equation)."""

    label: str
    box: Box
    score: float

    def to_json(self) -> list[Any]:
        return [self.label, *(round(v, 1) for v in self.box), round(self.score, 4)]

    @classmethod
    def from_json(cls, row: list[Any]) -> Region:
        label, x0, y0, x1, y1, score = row
        return cls(str(label), (float(x0), float(y0), float(x1), float(y1)), float(score))


@dataclass(frozen=True)
class PageLine:
    """An OCR line with what the page tells about it: estimated font size (pixels), weight."""

    text: str
    box: Box
    score: float
    size: float
    bold: bool = False
    vertical: bool = False


@dataclass(frozen=True)
class Ink:
    """What the pixels of a line box tell: ``stroke`` is the mean horizontal run length of ink
    (stroke width; bold is wider), ``core`` the height of the band where the ink is dense (the
    x-height of mixed-case text, the cap height of capitals), both in pixels; 0 = unmeasured."""

    stroke: float = 0.0
    core: float = 0.0


@dataclass
class Block:
    """A piece of page content in reading order, in pixels of the page image."""

    kind: ElementKind
    text: str
    box: Box
    level: int | None = None
    markdown: str | None = None
    rows: list[list[str]] | None = None
    #: Mean OCR confidence of the lines, weighted by characters (``None`` without text).
    score: float | None = None
    lines: list[PageLine] = field(default_factory=list)
    #: The layout label that applied, if any.
    label: str | None = None

    def scaled(self, factor: float) -> Block:
        """The block with every box multiplied by ``factor``."""

        def sc(b: Box) -> Box:
            return (b[0] * factor, b[1] * factor, b[2] * factor, b[3] * factor)

        lines = [replace(ln, box=sc(ln.box), size=ln.size * factor) for ln in self.lines]
        return replace(self, box=sc(self.box), lines=lines)


def ocr_available() -> bool:
    """Whether the ``ocr`` extra is installed (checked without importing it)."""
    return all(importlib.util.find_spec(name) is not None for name in OCR_MODULES)


def import_optional(module: str, feature: str) -> ModuleType:
    """Import a module of the ``ocr`` extra or raise :class:`MissingDependencyError`."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependencyError(feature, "ocr", f"{module}: {exc}") from exc


def package_version(distribution: str, parts: int = 2) -> str:
    """``major.minor`` of an installed distribution, for cache namespaces."""
    try:
        return ".".join(metadata.version(distribution).split(".")[:parts])
    except metadata.PackageNotFoundError:
        return "unknown"


def to_rgb_array(image: Image.Image | np.ndarray) -> np.ndarray:
    """An ``H × W × 3`` uint8 RGB array; transparent pixels are laid on white.

    Arrays are taken as RGB (or grayscale when 2-D) already.
    """
    if isinstance(image, np.ndarray):
        arr = image
        if arr.ndim == 2:
            arr = np.repeat(arr[:, :, None], 3, axis=2)
        elif arr.ndim == 3 and arr.shape[2] == 4:
            alpha = arr[:, :, 3:4].astype(np.float32) / 255.0
            arr = arr[:, :, :3] * alpha + 255.0 * (1.0 - alpha)
        if arr.dtype != np.uint8:
            arr = np.clip(arr, 0, 255).astype(np.uint8)
        return np.ascontiguousarray(arr[:, :, :3])
    return np.asarray(flatten_image(image))


def flatten_image(image: Image.Image) -> Image.Image:
    """An RGB copy of ``image``: alpha laid on white, 16-bit and float images stretched to
    8 bits (a plain conversion would clip them to black or white)."""
    mode = image.mode
    if mode in ("I", "F") or mode.startswith("I;"):
        values = np.asarray(image, dtype=np.float64)
        lo, hi = (float(values.min()), float(values.max())) if values.size else (0.0, 1.0)
        span = hi - lo or 1.0
        image = Image.fromarray(((values - lo) * (255.0 / span)).astype(np.uint8), "L")
        mode = "L"
    if mode in ("RGBA", "LA", "PA") or (mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(white, rgba).convert("RGB")
    return image if mode == "RGB" else image.convert("RGB")


def pixel_digest(arr: np.ndarray) -> str:
    """A content hash of an image's pixels (shape included), to key cached model outputs."""
    h = hashlib.sha256(repr((arr.shape, str(arr.dtype))).encode())
    h.update(np.ascontiguousarray(arr).data)
    return h.hexdigest()


def memo(cache: JsonCache | None, namespace: str, key: str, compute: Callable[[], T]) -> T:
    """``cache.memo`` when a cache is given, else just ``compute()``."""
    if cache is None:
        return compute()
    return cache.memo(namespace, key, compute)


# --- accounting: what the models cost ----------------------------------------------------------


@dataclass(frozen=True)
class ModelTiming:
    """What one kind of model did in this process: invocations (one image each, cache misses
    only), the pixels of those images, and wall and CPU seconds spent in them. Loading the model
    is counted apart (``loads``, ``load_wall``, ``load_cpu``): it happens once per process, and
    mixing it into the first call would make per-call costs depend on the batch size.

    CPU seconds are process CPU time (:func:`time.process_time`) measured around the call:
    onnxruntime runs inference on its own thread pool, which the calling thread's clock
    (:func:`time.thread_time`) would not see at all. The figure is honest where nothing else runs
    in the process during a call, as in an ingestion worker (one file at a time, one thread);
    in a process serving several threads it also counts their work.
    """

    calls: int = 0
    pixels: int = 0
    wall: float = 0.0
    cpu: float = 0.0
    loads: int = 0
    load_wall: float = 0.0
    load_cpu: float = 0.0

    def __add__(self, other: ModelTiming) -> ModelTiming:
        return ModelTiming(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    def __sub__(self, other: ModelTiming) -> ModelTiming:
        return ModelTiming(*(getattr(self, f.name) - getattr(other, f.name) for f in fields(self)))

    @property
    def empty(self) -> bool:
        return self.calls == 0 and self.loads == 0


class ModelStats:
    """Per-kind :class:`ModelTiming` totals of a process, updated under one lock.

    A model call takes milliseconds to seconds; one uncontended lock and a few additions per
    call cost microseconds, so the accounting is always on.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._totals: dict[str, ModelTiming] = {}

    def add(self, kind: str, timing: ModelTiming) -> None:
        with self._lock:
            self._totals[kind] = self._totals.get(kind, ModelTiming()) + timing

    def snapshot(self) -> dict[str, ModelTiming]:
        """The totals so far, by kind (a copy; the values are immutable)."""
        with self._lock:
            return dict(self._totals)

    def reset(self) -> None:
        with self._lock:
            self._totals.clear()


#: The process's model accounting; every :class:`ModelEngine` reports here.
MODEL_STATS = ModelStats()


def model_stats() -> dict[str, ModelTiming]:
    """What each kind of model ("ocr", "layout", "table") cost this process so far."""
    return MODEL_STATS.snapshot()


def reset_model_stats() -> None:
    MODEL_STATS.reset()


def model_stats_since(
    before: dict[str, ModelTiming], now: dict[str, ModelTiming] | None = None
) -> dict[str, ModelTiming]:
    """What each kind of model cost between the :func:`model_stats` snapshots ``before`` and
    ``now`` (default: this moment); kinds that did nothing in between are left out. A delta
    rather than a reset, so that measuring one job never disturbs others measuring in the
    same process."""
    out = {}
    for kind, total in (model_stats() if now is None else now).items():
        delta = total - before.get(kind, ModelTiming())
        if not delta.empty:
            out[kind] = delta
    return out


E = TypeVar("E", bound="ModelEngine")


class ModelEngine:
    """A model loaded on first use, guarded by a lock, one instance per process and class.

    ``calls`` counts model invocations (cache misses), which tests use to prove caching. Every
    invocation and load is also accounted in :data:`MODEL_STATS` under :attr:`kind`.
    """

    _instances: ClassVar[dict[type, ModelEngine]] = {}
    _instances_lock: ClassVar[threading.Lock] = threading.Lock()
    #: The key of this engine in :data:`MODEL_STATS` (and in ingestion timings).
    kind: ClassVar[str] = "model"

    def __init__(self) -> None:
        self.calls = 0
        self._model: Any = None
        self._lock = threading.Lock()

    @classmethod
    def shared(cls: type[E]) -> E:
        """The process-wide engine of this kind."""
        with ModelEngine._instances_lock:
            engine = ModelEngine._instances.get(cls)
            if engine is None:
                engine = ModelEngine._instances[cls] = cls()
            return engine  # type: ignore[return-value]

    def _load(self) -> Any:
        """Create the model (subclasses); called by :meth:`_ready` only while it is missing."""
        raise NotImplementedError

    def _ready(self) -> Any:
        """The model, loaded (and the load accounted) on first use. Call under ``_lock``."""
        if self._model is not None:
            return self._model
        wall, cpu = time.perf_counter(), time.process_time()
        model = self._load()
        timing = ModelTiming(
            loads=1, load_wall=time.perf_counter() - wall, load_cpu=time.process_time() - cpu
        )
        MODEL_STATS.add(self.kind, timing)
        return model

    @contextmanager
    def _invocation(self, image: np.ndarray) -> Iterator[None]:
        """Count and time one model call on ``image``. Used inside ``_lock``, around the
        inference alone, so time spent waiting for the lock is not counted."""
        self.calls += 1
        pixels = int(image.shape[0]) * int(image.shape[1]) if image.ndim >= 2 else int(image.size)
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            timing = ModelTiming(
                calls=1,
                pixels=pixels,
                wall=time.perf_counter() - wall,
                cpu=time.process_time() - cpu,
            )
            MODEL_STATS.add(self.kind, timing)
