"""Text lines from page images with RapidOCR (PP-OCRv6 small, bundled with the package).

One engine per process, created on first use: the ONNX sessions take a second to load and several
hundred megabytes while running, and every caller wants the same models. Inference runs under a
lock: onnxruntime already spreads one call over every core, so concurrent calls would only
compete for them (and RapidOCR keeps per-call settings on the instance).

The angle classifier stays off: on upright scans it flipped correct lines into garbage, and pages
reach us upright (PDF renders apply /Rotate, images their EXIF orientation).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from PIL import Image

from docsight.cache import JsonCache, content_key
from docsight.vision.common import (
    ModelEngine,
    OcrLine,
    import_optional,
    memo,
    model_threads,
    package_version,
    pixel_digest,
    to_rgb_array,
)

#: Longest image side the recogniser works on; longer images are scaled down by RapidOCR (the
#: caller normally does it first, see :mod:`.page`). 2200 px keeps a letter page at 200 dpi.
MAX_SIDE = 2200
#: Lines recognised with less confidence than this are dropped (RapidOCR's default).
MIN_SCORE = 0.5
#: Longest side text detection works on (scaled down to it, never up). Detection is most of the
#: cost of a scanned slide (80 % of 4.0 CPU s at 1,600 px) and grows with the pixels, while
#: recognition reads the line crops at full resolution whatever this is. 1,280 px (with
#: :data:`REC_WIDTH`) was chosen by ``benchmarks/ocr_settings.py`` (results/ocr_settings.md): the
#: cheapest setting measured whose word recall and character error rate against the text layer
#: of 39 rendered dev pages stay within 0.5 points of 1,600 px's, by leave-one-document-out
#: cross-validation (held out: recall 0.988 against 0.992, CER 0.046 against 0.045). It cuts
#: OCR by 38 % on scanned slides and 34 % on the generated scans, and is not free: one word pair
#: of the generated scans ran together ("theharbour": recall 0.987 against 1.000), and nine
#: scanned slides kept 94 % of the words read at 1,600 px (one line garbled). 1,024 px was at
#: the edge (recall 0.987), 736 px lost 5 points.
DET_SIDE = 1280
#: Narrowest recogniser input, in pixels at its 48 px line height (``Rec.rec_img_shape``;
#: RapidOCR's default is 320). Every crop is padded to this width, so pictures full of short
#: words (a screenshot of code, a chart's labels) paid for 320 px a word: recognition was 81 %
#: of picture OCR and 27 % of its input padding (40 % in the costliest picture). At 128 px the
#: recall and error rate on 22 pages did not move (0.992; 0.040 against 0.041); pictures cost 11 %
#: less.
REC_WIDTH = 128
#: Line crops recognised per call (``Rec.rec_batch_num``; RapidOCR's default is 6). A batch is
#: padded to its widest crop, so one crop a call reads each line at its own width. Chosen by
#: ``benchmarks/ocr_settings.py`` (results/ocr_settings.md) against batches of 2, 3 and 6: a
#: quarter less CPU on pages and pictures (2.00 against 2.62 s a page, 0.66 against 0.88 a
#: picture), with the pages' word recall unchanged (0.990) and the generated scans read without
#: an error (recall 0.987 → 1.000); picked in every leave-one-document-out fold.
REC_BATCH = 1
_FEATURE = "OCR of page images"


class OcrEngine(ModelEngine):
    """RapidOCR behind a cache. ``calls`` counts model invocations (cache misses)."""

    kind = "ocr"

    def __init__(self, max_side: int = MAX_SIDE, min_score: float = MIN_SCORE) -> None:
        super().__init__()
        self.max_side = max_side
        self.min_score = min_score

    @property
    def namespace(self) -> str:
        return f"ocr/rapidocr-{package_version('rapidocr')}/ppocrv6-small"

    @property
    def params(self) -> dict[str, Any]:
        return {
            "use_cls": False,
            "max_side": self.max_side,
            "det_side": DET_SIDE,
            "rec_width": REC_WIDTH,
            "rec_batch": REC_BATCH,
            "min_score": self.min_score,
        }

    def recognize(
        self,
        image: Image.Image | np.ndarray,
        cache: JsonCache | None = None,
        *,
        digest: str | None = None,
    ) -> list[OcrLine]:
        """Text lines of ``image`` (PIL image or RGB array) in pixel coordinates.

        ``digest`` is :func:`~.common.pixel_digest` of the RGB array when the caller has it.
        """
        arr = to_rgb_array(image)
        if arr.shape[0] < 4 or arr.shape[1] < 4:
            return []
        key = content_key(digest or pixel_digest(arr), self.params)
        rows = memo(cache, self.namespace, key, lambda: self._run(arr))
        return [OcrLine.from_json(row) for row in rows]

    def rapidocr_params(self) -> dict[str, Any]:
        """The settings RapidOCR is created with (every one that changes the output is in
        :attr:`params`, the cache key)."""
        params: dict[str, Any] = {
            "Global.use_cls": False,
            "Global.max_side_len": self.max_side,
            "Global.text_score": self.min_score,
            # Pages without text are normal here; RapidOCR warns about each.
            "Global.log_level": "error",
            "Det.limit_type": "max",
            "Det.limit_side_len": DET_SIDE,
            "Rec.rec_img_shape": [3, 48, REC_WIDTH],
            "Rec.rec_batch_num": REC_BATCH,
        }
        threads = model_threads()
        if threads:
            params["EngineConfig.onnxruntime.intra_op_num_threads"] = threads
            params["EngineConfig.onnxruntime.inter_op_num_threads"] = 1
        return params

    def _load(self) -> Any:
        if self._model is None:
            rapidocr = import_optional("rapidocr", _FEATURE)
            self._model = rapidocr.RapidOCR(params=self.rapidocr_params())
        return self._model

    def _run(self, arr: np.ndarray) -> list[list[Any]]:
        with self._lock:
            model = self._ready()
            # RapidOCR reads arrays as OpenCV does: BGR.
            with self._invocation(arr):
                result = model(np.ascontiguousarray(arr[:, :, ::-1]))
        boxes, texts, scores = (getattr(result, k, None) for k in ("boxes", "txts", "scores"))
        if boxes is None or texts is None or scores is None:
            return []
        rows: list[list[Any]] = []
        for quad, text, score in zip(boxes, texts, scores, strict=False):
            text = " ".join(str(text).split())
            if not text:
                continue
            pts = np.asarray(quad, dtype=np.float64).reshape(-1, 2)
            box = (pts[:, 0].min(), pts[:, 1].min(), pts[:, 0].max(), pts[:, 1].max())
            rows.append(OcrLine(text, tuple(map(float, box)), float(score)).to_json())  # type: ignore[arg-type]
        return rows
