"""PNG, JPEG and TIFF files: one page per frame, read by OCR (:mod:`docsight.parsers.raster`).

Images are hostile input as often as PDFs: decompression bombs, truncated and fuzzed files.
Pillow refuses images above ``Image.MAX_IMAGE_PIXELS`` when opening them; it is set from
``settings.max_image_pixels`` (Pillow's limit is process-wide; the last parse's settings win) and
every frame is checked against the settings again before it is decoded, since TIFF frames after
the first are never checked by Pillow. Any decoding failure becomes a ``ParseError`` naming the
file; a bad frame after the first costs only that frame.

A page is as large as the image in pixels (after EXIF orientation). OCR and the page image kept
for citations use a copy at most :data:`~docsight.vision.ocr.MAX_SIDE` pixels long; JPEGs
are decoded at reduced size directly when they are much larger.
"""

from __future__ import annotations

import io
import warnings
from pathlib import Path
from typing import Any

from PIL import Image, ImageOps

from docsight.document.builder import DocumentBuilder
from docsight.document.captions import caption_target
from docsight.document.model import BBox, ElementKind, ParsedDocument
from docsight.errors import DocsightError, LimitExceededError, ParseError
from docsight.parsers.base import ParseContext, SourceFile
from docsight.settings import ParseSettings
from docsight.vision.common import Block, flatten_image

#: Longest side of the working copy (OCR and the page image); equal to the OCR engine's.
WORK_SIDE = 2200
_ROTATED = (5, 6, 7, 8)  # EXIF orientations that swap width and height
#: Pillow's decoder for each media type this parser is registered for.
_FORMATS = {"image/png": "PNG", "image/jpeg": "JPEG", "image/tiff": "TIFF"}


class ImageParser:
    name = "image"
    uses_ocr = True
    # 2: page renders named by their recipe, not by their PNG (Asset.recipe_id)
    version = "2"

    def parse(
        self, source: SourceFile, settings: ParseSettings, context: ParseContext | None = None
    ) -> ParsedDocument:
        if len(source.data) > settings.max_file_mb * 1024 * 1024:
            raise LimitExceededError(source.path, f"larger than {settings.max_file_mb:g} MB")
        try:
            with warnings.catch_warnings():
                # Damaged files make Pillow warn about every odd tag; the outcome is what counts.
                warnings.simplefilter("ignore")
                return self._parse(source, settings, context)
        except DocsightError:
            raise
        except Exception as exc:  # the contract: name the file, never leak a library error
            raise ParseError(source.path, f"image could not be read ({exc})") from exc

    def _parse(
        self, source: SourceFile, settings: ParseSettings, context: ParseContext | None
    ) -> ParsedDocument:
        Image.MAX_IMAGE_PIXELS = settings.max_image_pixels
        try:
            # Sizes between the limit and twice it only warn (ignored above); the check of
            # every frame refuses them.
            # Only the sniffed format's decoder: a file is never handed to a plugin it did not
            # ask for (Pillow would try EPS, which runs Ghostscript, and dozens of others).
            image = Image.open(io.BytesIO(source.data), formats=[_FORMATS[source.media_type]])
        except Image.DecompressionBombError as exc:
            raise LimitExceededError(source.path, f"decompression bomb ({exc})") from exc
        except Exception as exc:
            raise ParseError(source.path, f"not a readable image ({exc})") from exc
        builder = source.builder(f"{self.name}/{self.version}")
        with image:
            frames = _frame_count(image)
            if frames > settings.max_pages:
                builder.warn(f"{frames} frames; only the first {settings.max_pages} were read")
                frames = settings.max_pages
            for k in range(frames):
                try:
                    page = _load_frame(image, k, source, settings)
                except LimitExceededError:
                    raise
                except Exception as exc:
                    if k == 0:
                        raise ParseError(source.path, f"image data unreadable ({exc})") from exc
                    builder.warn(f"frame {k + 1} unreadable ({exc}); later frames skipped")
                    break
                self._page(page, builder, settings, context)
                if context is not None:
                    context.report("parse", k + 1, frames)
        return builder.build()

    def _page(
        self,
        loaded: tuple[Image.Image, int, int],
        builder: DocumentBuilder,
        settings: ParseSettings,
        context: ParseContext | None,
    ) -> None:
        work, width, height = loaded
        index = builder.add_page(float(width), float(height))
        # The recipe that makes the page image again from the file: the frame and the limits.
        frame = {
            "frame": index,
            "max_image_pixels": settings.max_image_pixels,
            "max_render_pixels": settings.max_render_pixels,
        }
        builder.set_page_image(index, _asset(builder, "page", _fit(work, settings), frame))
        if settings.ocr == "never":
            return
        from docsight.parsers.raster.assemble import merge_lists
        from docsight.parsers.raster.page import read_page_image

        blocks = merge_lists(read_page_image(work, context, settings))
        for k, block in enumerate(blocks):
            _emit(block, blocks, k, index, work, builder, frame)


def _frame_count(image: Image.Image) -> int:
    try:
        return max(1, int(getattr(image, "n_frames", 1)))
    except Exception:  # a broken frame index still leaves the first frame
        return 1


def _load_frame(
    image: Image.Image, k: int, source: SourceFile, settings: ParseSettings
) -> tuple[Image.Image, int, int]:
    """Frame ``k`` as an upright RGB working copy, and the upright size of the original."""
    if k:
        image.seek(k)
    width, height = image.size
    if width < 1 or height < 1:
        raise ParseError(source.path, f"frame {k + 1} has no pixels ({width}×{height})")
    if width * height > settings.max_image_pixels:
        raise LimitExceededError(
            source.path,
            f"frame {k + 1} is {width}×{height} pixels, more than the limit of "
            f"{settings.max_image_pixels:,} (max_image_pixels)",
        )
    orientation = _orientation(image)
    if orientation in _ROTATED:
        width, height = height, width
    if image.format == "JPEG" and max(width, height) > 2 * WORK_SIDE:
        # The decoder scales by 1/2, 1/4 or 1/8 for free; Pillow picks the largest that still
        # covers the requested size.
        factor = max(width, height) / WORK_SIDE
        image.draft("RGB", (int(image.size[0] / factor), int(image.size[1] / factor)))
    image.load()
    frame = image
    if orientation not in (None, 1):
        try:
            frame = ImageOps.exif_transpose(image) or image
        except Exception:  # broken EXIF: keep the pixels as stored
            frame = image
            if orientation in _ROTATED:
                width, height = height, width
    frame = flatten_image(frame)
    if max(frame.size) > WORK_SIDE:
        frame = frame.copy()
        frame.thumbnail((WORK_SIDE, WORK_SIDE), Image.Resampling.LANCZOS, reducing_gap=3.0)
    return frame, width, height


def _orientation(image: Image.Image) -> int | None:
    try:
        value = image.getexif().get(0x0112)
    except Exception:
        return None
    return value if isinstance(value, int) else None


def _fit(image: Image.Image, settings: ParseSettings) -> Image.Image:
    pixels = image.width * image.height
    if pixels <= settings.max_render_pixels:
        return image
    factor = (settings.max_render_pixels / pixels) ** 0.5
    size = (max(1, int(image.width * factor)), max(1, int(image.height * factor)))
    return image.resize(size, Image.Resampling.LANCZOS)


def _asset(
    builder: DocumentBuilder, kind: str, image: Image.Image, render: dict[str, Any] | None = None
) -> str:
    def encode() -> bytes:
        out = io.BytesIO()
        image.save(out, format="PNG", compress_level=1)
        return out.getvalue()

    return builder.add_asset(kind, "image/png", encode, image.width, image.height, render=render)


def render_frame(data: bytes, media_type: str, recipe: dict[str, Any]) -> Image.Image:
    """The page image (or, with ``recipe["crop"]``, the crop of the working copy) that parsing
    made of frame ``recipe["frame"]``, made again from the file's bytes."""
    settings = ParseSettings(
        max_image_pixels=recipe["max_image_pixels"],
        max_render_pixels=recipe["max_render_pixels"],
    )
    source = SourceFile(path=Path("<stored source>"), data=data, sha256="", media_type=media_type)
    with Image.open(io.BytesIO(data), formats=[_FORMATS[media_type]]) as image:
        work, _, _ = _load_frame(image, int(recipe["frame"]), source, settings)
        if recipe.get("crop"):
            return work.crop(tuple(recipe["crop"]))
        return _fit(work, settings)


def _emit(
    block: Block,
    blocks: list[Block],
    k: int,
    page: int,
    work: Image.Image,
    builder: DocumentBuilder,
    frame: dict[str, Any],
) -> None:
    x0, y0, x1, y1 = block.box
    bbox = BBox.from_absolute(x0, y0, x1, y1, work.width, work.height)
    attrs: dict[str, Any] = {"ocr": True}
    if block.score is not None:
        attrs["confidence"] = round(block.score, 3)
    kind, level, image_id = block.kind, block.level, None
    if kind == ElementKind.TITLE and page > 0:
        kind, level = ElementKind.HEADING, 1  # one title per document, on its first page
    if kind in (ElementKind.TABLE, ElementKind.FIGURE):
        box = (
            int(x0),
            int(y0),
            min(work.width, int(x1 + 0.999)),
            min(work.height, int(y1 + 0.999)),
        )
        if box[2] - box[0] >= 2 and box[3] - box[1] >= 2:
            image_id = _asset(builder, "crop", work.crop(box), {**frame, "crop": list(box)})
        if kind == ElementKind.TABLE and block.rows:
            attrs.update(rows=len(block.rows), cols=len(block.rows[0]))
        elif block.text:
            attrs["labels"] = block.text
        caption = _caption(blocks, k, "table" if kind == ElementKind.TABLE else "figure")
        if caption:
            attrs["caption"] = caption
    elif kind == ElementKind.LIST:
        attrs["items"] = block.text.count("\n") + 1
    if not block.text and kind != ElementKind.FIGURE:
        return
    builder.add(
        kind,
        block.text,
        page=page,
        bbox=bbox,
        level=level,
        markdown=block.markdown,
        image_id=image_id,
        attrs=attrs,
    )


def _caption(blocks: list[Block], k: int, want: str) -> str | None:
    for j in (k - 1, k + 1):
        if (
            0 <= j < len(blocks)
            and blocks[j].kind == ElementKind.CAPTION
            and caption_target(blocks[j].text) == want
        ):
            return blocks[j].text
    return None
