"""A question's image (VISA): its type taxonomy, the loaded image, and the parts' contracts.

An image reaches search as a :class:`QueryImage`: read once with limits, hashed, scaled to a
working size and read by OCR once, so the router and every typed parser share the same pixels and
text lines. The router names up to three types from :data:`IMAGE_TYPES` with confidences; one
:class:`TypedParser` per type turns the image into typed text (a chart into a data table, an
equation into LaTeX-like text, ...); the typed texts are joined into a symbolic block with
upper-case tags, which is searched next to the question.

The taxonomy is VISA's nine types plus ``table``: tables are the most common evidence in business
documents (a quarter of the derived mmquery-dev queries crop one) and need their own parser.
"""

from __future__ import annotations

import io
import re
import stat
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, get_args, runtime_checkable

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError
from pydantic import BaseModel, Field, field_validator

from docsight.document.ids import bytes_sha256
from docsight.errors import QueryImageError
from docsight.settings import ImageQuerySettings
from docsight.vision.common import OcrLine, flatten_image

ImageType = Literal[
    "chart",
    "table",
    "circuit",
    "equation",
    "screenshot",
    "code",
    "figure",
    "diagram",
    "map",
    "photograph",
]
IMAGE_TYPES: tuple[ImageType, ...] = get_args(ImageType)
#: The type an unusable router answer falls back to: it claims no structure.
FALLBACK_TYPE: ImageType = "photograph"
#: Types whose typed text carries the image's content (labels, values, code, formulas), so the
#: question + typed-text stream deserves more weight when the router is sure of one of them.
STRUCTURED_TYPES: frozenset[str] = frozenset(
    {"chart", "table", "equation", "code", "screenshot", "circuit", "diagram", "map"}
)
#: Formats a query image may be in; anything else is refused before decoding.
IMAGE_FORMATS = ("PNG", "JPEG", "WEBP", "GIF", "BMP", "TIFF")


class TypeScore(BaseModel):
    """One type the router sees in the image, with its confidence in [0, 1]."""

    type: ImageType
    confidence: float = Field(ge=0.0, le=1.0)

    @field_validator("confidence", mode="before")
    @classmethod
    def _clip(cls, value: Any) -> float:
        return min(1.0, max(0.0, float(value)))


class Routing(BaseModel):
    """The router's answer: types, best first, and how it was reached (stored in the cache)."""

    types: list[TypeScore]
    #: The router strategy that produced it ("offline", "vlm:<model>", "all", "random:<seed>").
    strategy: str
    #: True when the router's own answer was unusable and :data:`FALLBACK_TYPE` was used.
    fallback: bool = False

    @property
    def top(self) -> TypeScore:
        return self.types[0]


class TypedText(BaseModel):
    """What one typed parser read from the image."""

    type: ImageType
    #: The typed text searched in stream B: a Markdown data table for a chart, LaTeX-like text
    #: for an equation, the verbatim source for code, ...
    text: str
    #: The same content as structured fields, for callers and tests ({"series": [...]}, ...).
    fields: dict[str, Any] = Field(default_factory=dict)
    #: The parser and its version or model, e.g. "offline-chart/1" or "vlm:qwen2-vl/1".
    parser: str


@dataclass(frozen=True, eq=False)
class QueryImage:
    """A loaded query image: upright RGB pixels at working size, their hash, and OCR lines."""

    #: Where it came from, for messages (a file name, or "<bytes>").
    source: str
    #: sha256 of the file's bytes: the cache key of everything derived from the image.
    digest: str
    #: Upright RGB pixels, the longest side at most ``ImageQuerySettings.max_side``.
    rgb: np.ndarray
    #: The working image as PNG, for vision-model calls.
    png: bytes
    #: OCR lines in ``rgb`` pixel coordinates (empty when the ``ocr`` extra is missing).
    lines: tuple[OcrLine, ...] = ()
    #: Whether OCR ran (so an empty ``lines`` means "no text" rather than "not read").
    ocr: bool = False
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def width(self) -> int:
        return int(self.rgb.shape[1])

    @property
    def height(self) -> int:
        return int(self.rgb.shape[0])

    @property
    def text(self) -> str:
        """The OCR lines in reading order, one per line."""
        return "\n".join(line.text for line in self.lines)


@runtime_checkable
class Router(Protocol):
    """Names the image's types. Contract: ``route`` never raises for a readable image; an unusable
    model answer falls back to :data:`FALLBACK_TYPE`. ``strategy`` namespaces the cache, so two
    strategies never share entries."""

    @property
    def strategy(self) -> str: ...

    def route(self, image: QueryImage) -> Routing: ...


@runtime_checkable
class TypedParser(Protocol):
    """Turns an image of one type into typed text. Contract: ``version`` changes whenever the
    output would (it keys the cache, together with the image hash and the type); ``parse``
    returns None when it finds nothing of its type, and raises only :class:`DocsightError`."""

    @property
    def type(self) -> ImageType: ...

    @property
    def version(self) -> str: ...

    def parse(self, image: QueryImage) -> TypedText | None: ...


@runtime_checkable
class Captioner(Protocol):
    """One or two sentences saying what the image shows (stream C)."""

    @property
    def version(self) -> str: ...

    def caption(self, image: QueryImage, routing: Routing) -> str | None: ...


def symbolic_block(texts: list[TypedText]) -> str:
    """Typed outputs joined with upper-case type tags: ``[CHART] ...``, one block per type."""
    return "\n".join(f"[{t.type.upper()}] {t.text.strip()}" for t in texts if t.text.strip())


# --- loading ------------------------------------------------------------------------------------


def read_image_bytes(source: str | Path | bytes, settings: ImageQuerySettings) -> tuple[str, bytes]:
    """The name to report and the bytes of a query image given as a path or as bytes."""
    if isinstance(source, bytes):
        name, data = "<image bytes>", source
    else:
        path = Path(source)
        name = str(path)
        limit = int(settings.max_file_mb * 1024 * 1024)
        try:
            info = path.stat()
        except FileNotFoundError:
            raise QueryImageError(name, "no such file") from None
        except OSError as exc:
            raise QueryImageError(name, f"cannot read: {exc.strerror or exc}") from exc
        if stat.S_ISDIR(info.st_mode):
            raise QueryImageError(name, "a directory, not an image file")
        if not stat.S_ISREG(info.st_mode):
            # A device or a pipe (/dev/zero, /dev/stdin) never ends or blocks: never read it.
            raise QueryImageError(name, "not a regular file (a device, pipe or socket)")
        if info.st_size > limit:
            raise QueryImageError(name, f"larger than {settings.max_file_mb:g} MB (max_file_mb)")
        try:
            with path.open("rb") as handle:
                data = handle.read(limit + 1)  # the file may have grown since stat()
        except OSError as exc:
            raise QueryImageError(name, f"cannot read: {exc.strerror or exc}") from exc
    if len(data) > settings.max_file_mb * 1024 * 1024:
        raise QueryImageError(name, f"larger than {settings.max_file_mb:g} MB (max_file_mb)")
    if not data:
        raise QueryImageError(name, "empty file")
    return name, data


def decode_image(name: str, data: bytes, settings: ImageQuerySettings) -> np.ndarray:
    """Upright RGB pixels scaled to ``max_side``; refuses other formats and decompression bombs."""
    try:
        with warnings.catch_warnings():
            # Pillow only warns between its limit and twice it; the explicit check refuses.
            warnings.simplefilter("ignore")
            image = Image.open(io.BytesIO(data), formats=IMAGE_FORMATS)
            width, height = image.size
            if width * height > settings.max_pixels:
                raise QueryImageError(
                    name,
                    f"{width}×{height} pixels, more than the limit of "
                    f"{settings.max_pixels:,} (max_pixels)",
                )
            if width < 1 or height < 1:
                raise QueryImageError(name, f"an image without pixels ({width}×{height})")
            image.draft("RGB", (settings.max_side, settings.max_side))
            upright: Image.Image = ImageOps.exif_transpose(image) or image
            rgb = flatten_image(upright)
            if max(rgb.size) > settings.max_side:
                rgb.thumbnail((settings.max_side, settings.max_side), Image.Resampling.LANCZOS)
            return np.asarray(rgb, dtype=np.uint8).copy()
    except QueryImageError:
        raise
    except Image.DecompressionBombError as exc:
        raise QueryImageError(name, f"decompression bomb ({exc})") from exc
    except UnidentifiedImageError as exc:
        kinds = ", ".join(IMAGE_FORMATS)
        raise QueryImageError(name, f"not an image: its content is none of {kinds}") from exc
    except Exception as exc:  # the contract: name the file, never leak a library error
        kinds = ", ".join(IMAGE_FORMATS)
        raise QueryImageError(
            name, f"not a readable image ({kinds}): {_library_message(exc)}"
        ) from exc


def _library_message(exc: Exception) -> str:
    """A decoder's complaint without the reprs of internal objects ("<_io.BytesIO object at
    0x7f...>") that mean nothing to the person who named the file."""
    text = re.sub(r"\s*<[\w.]+ object at 0x[0-9a-f]+>", "", str(exc)).strip()
    return text or type(exc).__name__


def to_png(rgb: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(rgb).save(buffer, format="PNG", optimize=False)
    return buffer.getvalue()


def load_query_image(
    source: str | Path | bytes,
    settings: ImageQuerySettings | None = None,
    cache: Any = None,
    *,
    ocr: bool = True,
    name: str | None = None,
) -> QueryImage:
    """Read, check, scale and (with the ``ocr`` extra) OCR a query image.

    ``cache`` is a :class:`~docsight.cache.JsonCache` for the OCR lines; ``ocr=False`` skips OCR
    (routers and parsers then work from pixels alone). ``name`` replaces the source in error
    messages (for bytes read from a file elsewhere).
    """
    from docsight.vision.common import ocr_available

    settings = settings or ImageQuerySettings()
    read_name, data = read_image_bytes(source, settings)
    name = name or read_name
    rgb = decode_image(name, data, settings)
    lines: tuple[OcrLine, ...] = ()
    ran = False
    if ocr and ocr_available():
        from docsight.vision.ocr import OcrEngine

        lines = tuple(OcrEngine.shared().recognize(rgb, cache))
        ran = True
    return QueryImage(
        source=name, digest=bytes_sha256(data), rgb=rgb, png=to_png(rgb), lines=lines, ocr=ran
    )
