"""Model accounting (issue 17, "profile first"): every engine call is counted and timed per kind,
thread-safely, with snapshots, deltas and a reset; the worker turns the deltas into timing keys."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from docsight.ingest.timings import StageClock, model_timings
from docsight.vision.common import (
    MODEL_STATS,
    ModelEngine,
    ModelStats,
    ModelTiming,
    model_stats,
    model_stats_since,
    reset_model_stats,
)
from docsight.vision.ocr import OcrEngine


def _spin(seconds: float) -> None:
    """Burn ``seconds`` of this thread's CPU time (and so at least as much wall time): counted
    in CPU, not wall, so a loaded machine that gives the thread less CPU cannot fail the CPU
    assertions below."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


class _FakeEngine(ModelEngine):
    """An engine whose "model" burns a little CPU, loaded (and accounted) on first use."""

    kind = "fake-test"

    def __init__(self, work_s: float = 0.0, fail: bool = False) -> None:
        super().__init__()
        self.work_s = work_s
        self.fail = fail
        self.loaded = 0

    def _load(self) -> Any:
        if self._model is None:
            self.loaded += 1
            _spin(0.01)
            self._model = self._infer
        return self._model

    def _infer(self, arr: np.ndarray) -> int:
        _spin(self.work_s)
        if self.fail:
            raise RuntimeError("model failure")
        return int(arr.shape[0])

    def run(self, arr: np.ndarray) -> int:
        with self._lock:
            model = self._ready()
            with self._invocation(arr):
                return int(model(arr))


def _delta(before: dict[str, ModelTiming], kind: str = _FakeEngine.kind) -> ModelTiming:
    return model_stats_since(before).get(kind, ModelTiming())


def test_calls_pixels_and_seconds_are_counted_and_the_load_apart() -> None:
    before = model_stats()
    engine = _FakeEngine(work_s=0.02)
    engine.run(np.zeros((10, 20, 3), dtype=np.uint8))
    engine.run(np.zeros((30, 40), dtype=np.uint8))
    t = _delta(before)
    assert engine.calls == 2 and engine.loaded == 1
    assert (t.calls, t.pixels, t.loads) == (2, 10 * 20 + 30 * 40, 1)
    # Two calls of at least 20 ms each, on this thread: wall and CPU both see them.
    assert t.wall >= 0.04 and t.cpu > 0.01
    assert t.load_wall >= 0.01 and t.load_cpu >= 0.0
    # The load is not part of the calls' seconds: a second process-wide look adds no load.
    engine.run(np.zeros((5, 5, 3), dtype=np.uint8))
    assert _delta(before).loads == 1 and _delta(before).calls == 3


def test_a_failed_call_still_counts() -> None:
    before = model_stats()
    engine = _FakeEngine(fail=True)
    with pytest.raises(RuntimeError):
        engine.run(np.zeros((8, 8, 3), dtype=np.uint8))
    t = _delta(before)
    assert engine.calls == 1 and (t.calls, t.pixels) == (1, 64)


def test_cpu_of_other_threads_during_a_call_is_counted() -> None:
    """onnxruntime infers on its own threads: process CPU time sees them, thread time would
    not. A model that works on a helper thread while the caller waits shows the difference."""

    class Threaded(_FakeEngine):
        def _infer(self, arr: np.ndarray) -> int:
            helper = threading.Thread(target=_spin, args=(0.15,))
            helper.start()
            helper.join()
            return 0

    before = model_stats()
    Threaded().run(np.zeros((4, 4, 3), dtype=np.uint8))
    assert _delta(before).cpu >= 0.05


def test_concurrent_calls_from_many_threads_lose_nothing() -> None:
    before = model_stats()
    engines = [_FakeEngine(), _FakeEngine()]
    image = np.zeros((7, 11, 3), dtype=np.uint8)
    barrier = threading.Barrier(8)

    def hammer(k: int) -> None:
        barrier.wait()
        for _ in range(200):
            engines[k % 2].run(image)

    threads = [threading.Thread(target=hammer, args=(k,)) for k in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    t = _delta(before)
    assert (t.calls, t.pixels, t.loads) == (1600, 1600 * 77, 2)
    assert sum(e.calls for e in engines) == 1600


def test_stats_add_is_thread_safe_without_engine_locks() -> None:
    stats = ModelStats()
    one = ModelTiming(calls=1, pixels=3, wall=0.5, cpu=0.25)

    def add() -> None:
        for _ in range(2000):
            stats.add("k", one)

    threads = [threading.Thread(target=add) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    total = stats.snapshot()["k"]
    assert (total.calls, total.pixels) == (12000, 36000)
    assert total.wall == pytest.approx(6000.0) and total.cpu == pytest.approx(3000.0)


def test_snapshot_is_a_copy_and_reset_clears() -> None:
    stats = ModelStats()
    stats.add("ocr", ModelTiming(calls=1, pixels=10, wall=1.0, cpu=2.0))
    snap = stats.snapshot()
    stats.add("ocr", ModelTiming(calls=1, pixels=10, wall=1.0, cpu=2.0))
    assert snap["ocr"].calls == 1 and stats.snapshot()["ocr"].calls == 2
    stats.reset()
    assert stats.snapshot() == {}


def test_global_reset_and_deltas() -> None:
    saved = model_stats()
    try:
        reset_model_stats()
        assert model_stats() == {}
        _FakeEngine().run(np.zeros((2, 3), dtype=np.uint8))
        first = model_stats()
        assert first[_FakeEngine.kind].calls == 1
        # Kinds that did nothing in between are left out of a delta.
        MODEL_STATS.add("other-test", ModelTiming(calls=2, pixels=4, wall=0.1, cpu=0.1))
        delta = model_stats_since(first)
        assert set(delta) == {"other-test"} and delta["other-test"].calls == 2
        assert model_stats_since(first, first) == {}
    finally:
        reset_model_stats()
        for kind, timing in saved.items():
            MODEL_STATS.add(kind, timing)


def test_a_real_engine_accounts_under_its_kind() -> None:
    engine = OcrEngine()
    engine._model = lambda arr: SimpleNamespace(
        boxes=[[[1, 1], [30, 1], [30, 9], [1, 9]]], txts=("hi",), scores=(0.9,)
    )
    before = model_stats()
    assert [ln.text for ln in engine.recognize(np.full((20, 40, 3), 255, dtype=np.uint8))] == ["hi"]
    t = model_stats_since(before)["ocr"]
    # The model was there already: a call, no load.
    assert (t.calls, t.pixels, t.loads) == (1, 800, 0)


def test_model_timings_keys() -> None:
    stats = {
        "ocr": ModelTiming(calls=3, pixels=300, wall=1.23456, cpu=2.5, loads=1, load_wall=0.5),
        "layout": ModelTiming(loads=1, load_wall=0.25, load_cpu=0.2),
    }
    keys = model_timings(stats)
    assert keys == {
        "model.ocr.calls": 3,
        "model.ocr.pixels": 300,
        "model.ocr.wall": 1.2346,
        "model.ocr.cpu": 2.5,
        "model.ocr.load": 0.5,
        "model.ocr.load.cpu": 0.0,
        "model.layout.load": 0.25,
        "model.layout.load.cpu": 0.2,
    }
    assert set(model_timings(stats, prefix="picture_")) == {
        k.replace("model.", "model.picture_") for k in keys
    }


def test_stage_clock_adds_wall_and_cpu() -> None:
    timings: dict[str, float] = {}
    clock = StageClock(timings)
    with clock("parse"):
        _spin(0.02)
    with clock("parse"):
        pass
    assert set(timings) == {"parse", "parse.cpu"}
    assert timings["parse"] >= 0.02 and timings["parse.cpu"] > 0.0
