"""Text encoders, looked up by name."""

from __future__ import annotations

from docsight._registry import Registry
from docsight.encoders.base import Encoder
from docsight.settings import EmbedSettings

ENCODERS: Registry[Encoder] = Registry("encoders")
ENCODERS.register(
    "minilm-onnx",
    "docsight.encoders.minilm:MiniLMEncoder",
    description="all-MiniLM-L6-v2, int8 ONNX on onnxruntime (offline)",
)
ENCODERS.register(
    "openai",
    "docsight.encoders.openai_compat:OpenAIEncoder",
    description="an OpenAI-compatible /embeddings endpoint",
)


def create_encoder(settings: EmbedSettings) -> Encoder:
    encoder: Encoder = ENCODERS.create(settings.backend, settings)
    return encoder


__all__ = ["ENCODERS", "Encoder", "create_encoder"]
