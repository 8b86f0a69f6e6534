"""The real SmolLM2-135M behind llama.cpp (xllamacpp), reached through the OpenAI SDK."""

from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import sys
import urllib.request
from typing import Any

import pytest
from pydantic import BaseModel

from docsight.errors import LLMResponseError
from docsight.llm import OpenAIChatClient

pytestmark = pytest.mark.llm


def test_chat_through_client(local_llm: Any) -> None:
    assert local_llm.base_url.startswith("http://127.0.0.1:") and local_llm.base_url.endswith("/v1")
    client = OpenAIChatClient(local_llm.llm_settings(max_tokens=24, timeout=60))
    result = client.chat(
        [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "What is the capital of France?"},
        ]
    )
    assert result.text.strip()
    assert not result.cached
    assert result.finish_reason in {"stop", "length"}
    assert 0 < result.usage["completion_tokens"] <= 24
    client.close()


def test_json_mode_is_accepted(local_llm: Any) -> None:
    class Capital(BaseModel):
        city: str

    client = OpenAIChatClient(local_llm.llm_settings(max_tokens=48, timeout=60))
    try:
        value = client.chat_json(
            [{"role": "user", "content": "What is the capital of France?"}], Capital
        )
    except LLMResponseError:
        value = None  # a 135M model may fail twice; the protocol must still end cleanly
    assert value is None or value.city.strip()
    assert client.json_mode_supported  # llama.cpp understands response_format
    client.close()


def test_embeddings_endpoint(local_llm: Any) -> None:
    import openai

    sdk = openai.OpenAI(base_url=local_llm.base_url, api_key="not-needed", max_retries=0)
    texts = [
        "The quarterly revenue grew by 12 percent.",
        "Figure 3 shows the network layout.",
        "ok",
    ]
    response = sdk.embeddings.create(model=local_llm.model, input=texts)
    vectors = [item.embedding for item in sorted(response.data, key=lambda d: d.index)]
    assert len(vectors) == len(texts)
    dims = {len(v) for v in vectors}
    assert len(dims) == 1 and dims.pop() > 100
    assert all(math.isfinite(x) for v in vectors for x in v)
    assert vectors[0] != vectors[1]
    sdk.close()


@pytest.mark.parametrize("how", ["stdin-eof", "sigterm"])
def test_cli_prints_one_listening_line(how: str) -> None:
    pytest.importorskip("xllamacpp")
    from docsight.errors import MissingDependencyError
    from docsight.llm.local import default_model_path

    try:
        model = default_model_path()
    except MissingDependencyError as exc:
        pytest.skip(str(exc))
    proc = subprocess.Popen(
        [sys.executable, "-m", "docsight.llm.local", "--model", str(model), "--ctx", "512"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("LISTENING http://127.0.0.1:")
    if how == "sigterm":
        proc.terminate()
    proc.stdin.close()  # on its own, closing stdin must be enough to stop it
    # Well under a second. A stop this soon after LISTENING used to hang for good now and then
    # with the cores busy, when it came before llama.cpp's task loop had begun.
    assert proc.wait(timeout=120) == 0
    assert proc.stdout.read() == ""  # nothing else ever goes to stdout


def test_llm_serve_answers_then_stops_on_ctrl_c() -> None:
    pytest.importorskip("xllamacpp")
    from docsight.errors import MissingDependencyError
    from docsight.llm.local import default_model_path

    try:
        default_model_path()
    except MissingDependencyError as exc:
        pytest.skip(str(exc))
    proc = subprocess.Popen(
        [sys.executable, "-m", "docsight.cli.main", "llm", "serve", "--port", "0", "--ctx", "512"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    try:
        assert proc.stdout is not None
        found = re.search(r"http://127\.0\.0\.1:\d+/v1", proc.stdout.readline())
        assert found is not None
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(found.group(0).removesuffix("/v1") + "/slots", timeout=60) as reply:
            assert json.load(reply)[0]["n_ctx"] == 512
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=120) == 0
        assert "stopping" in proc.stdout.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_startup_failure_reports_the_log(tmp_path: Any) -> None:
    pytest.importorskip("xllamacpp")
    from docsight.errors import LLMError
    from docsight.llm.local import LocalLLMServer

    bogus = tmp_path / "broken.gguf"
    bogus.write_bytes(b"this is not a gguf file" * 10)
    server = LocalLLMServer(bogus, startup_timeout=60)
    with pytest.raises(LLMError, match="exited during startup") as info:
        server.start()
    assert "server log ends with" in str(info.value)
    assert not server.running


def test_startup_timeout_kills_the_process() -> None:
    pytest.importorskip("xllamacpp")
    from docsight.errors import LLMTimeoutError, MissingDependencyError
    from docsight.llm.local import LocalLLMServer

    try:
        server = LocalLLMServer(startup_timeout=0.01)
        with pytest.raises(LLMTimeoutError, match="did not start"):
            server.start()
    except MissingDependencyError as exc:
        pytest.skip(str(exc))
    assert not server.running
