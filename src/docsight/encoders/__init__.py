"""Text encoders, looked up by name."""

from __future__ import annotations

from docsight._registry import Registry
from docsight.encoders.base import Encoder
from docsight.encoders.visual import VisualEncoder
from docsight.settings import EmbedSettings, VisualSettings

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


#: Page-image encoders for the ``visual`` channel (``DOCSIGHT_VISUAL_BACKEND``); none by default.
VISUAL_ENCODERS: Registry[VisualEncoder] = Registry("visual_encoders")
VISUAL_ENCODERS.register(
    "openai",
    "docsight.encoders.visual_openai:OpenAIVisualEncoder",
    description="an OpenAI-compatible /embeddings endpoint that accepts images (e.g. vLLM)",
)
VISUAL_ENCODERS.register(
    "colpali",
    "docsight.encoders.visual_colpali:ColPaliEncoder",
    extra="visual",
    description="ColPali, ColQwen2 and relatives from local weights (colpali-engine, torch)",
)


def create_encoder(settings: EmbedSettings) -> Encoder:
    encoder: Encoder = ENCODERS.create(settings.backend, settings)
    return encoder


def create_visual_encoder(settings: VisualSettings) -> VisualEncoder | None:
    """The configured visual encoder, or ``None`` when the backend is ``none`` (the default)."""
    if settings.backend == "none":
        return None
    encoder: VisualEncoder = VISUAL_ENCODERS.create(settings.backend, settings)
    return encoder


__all__ = [
    "ENCODERS",
    "VISUAL_ENCODERS",
    "Encoder",
    "VisualEncoder",
    "create_encoder",
    "create_visual_encoder",
]
