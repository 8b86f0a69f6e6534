"""Chat models behind one small protocol.

Importing this package is cheap: the ``openai`` SDK is imported on the first request, and the
local llama.cpp server (:mod:`docsight.llm.local`) only when it is started.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from docsight.llm.base import ChatModel, ChatResult, Message, extract_json
from docsight.llm.cache import ResponseCache, cache_key
from docsight.llm.client import OpenAIChatClient

if TYPE_CHECKING:
    from docsight.llm.local import LocalLLMServer
    from docsight.settings import LLMSettings


def create_chat_model(settings: LLMSettings, cache_path: Path | None = None) -> ChatModel | None:
    """The configured chat model, or None when no LLM is configured (everything runs offline)."""
    if not settings.enabled:
        return None
    return OpenAIChatClient(settings, cache_path)


def __getattr__(name: str) -> Any:
    # local.py pulls in subprocess plumbing that most users never need.
    if name == "LocalLLMServer":
        from docsight.llm.local import LocalLLMServer

        return LocalLLMServer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ChatModel",
    "ChatResult",
    "LocalLLMServer",
    "Message",
    "OpenAIChatClient",
    "ResponseCache",
    "cache_key",
    "create_chat_model",
    "extract_json",
]
