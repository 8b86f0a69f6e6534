"""The threads of the OCR and layout sessions in a parse worker (issue 17): onnxruntime's
default, a number, or the cores shared among the workers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from PIL import Image, ImageDraw

from docsight.settings import IngestSettings
from docsight.vision.common import model_threads, set_model_threads


def _sessions(obj: Any, seen: set[int] | None = None, depth: int = 0) -> Iterator[Any]:
    """The onnxruntime sessions a library object holds, however deep (up to a few levels)."""
    import onnxruntime as ort

    seen = set() if seen is None else seen
    if id(obj) in seen or depth > 4 or not hasattr(obj, "__dict__"):
        return
    seen.add(id(obj))
    for value in vars(obj).values():
        if isinstance(value, ort.InferenceSession):
            yield value
        elif not isinstance(value, (str, bytes, int, float, list, dict, tuple)):
            yield from _sessions(value, seen, depth + 1)


def test_the_cores_can_be_shared_among_the_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    assert IngestSettings(workers=2, model_threads=0).model_thread_count() == 0  # onnxruntime's
    assert IngestSettings(workers=2, model_threads=-1).model_thread_count() == 1
    assert IngestSettings(workers=1, model_threads=-1).model_thread_count() == 2
    assert IngestSettings(workers=3, model_threads=-1).model_thread_count() == 1  # never zero
    assert IngestSettings(workers=2, model_threads=4).model_thread_count() == 4
    monkeypatch.setattr("os.cpu_count", lambda: 8)
    assert IngestSettings(workers=2, model_threads=-1).model_thread_count() == 4


@pytest.fixture
def one_thread() -> Iterator[None]:
    before = model_threads()
    set_model_threads(1)
    yield
    set_model_threads(before)


def test_ocr_and_layout_sessions_take_the_thread_count(one_thread: None) -> None:
    pytest.importorskip("rapidocr", reason="needs the ocr extra")
    from docsight.vision.layout import LayoutEngine
    from docsight.vision.ocr import OcrEngine

    page = Image.new("RGB", (800, 200), "white")
    ImageDraw.Draw(page).text((20, 20), "Harbour lighthouse survey 2024", fill="black")
    ocr = OcrEngine()  # fresh engines, not the process-wide ones other tests share
    assert [line.text for line in ocr.recognize(page)] == ["Harbour lighthouse survey 2024"]
    layout = LayoutEngine()
    layout.detect(page)
    sessions = [*_sessions(ocr._model), *_sessions(layout._model)]
    assert len(sessions) >= 3  # detection, recognition, layout
    options = [s.get_session_options() for s in sessions]
    assert all(o.intra_op_num_threads == 1 and o.inter_op_num_threads == 1 for o in options)
