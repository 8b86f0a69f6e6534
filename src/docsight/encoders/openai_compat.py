"""Embeddings from an OpenAI-compatible ``/embeddings`` endpoint (OpenAI, vLLM, Ollama, ...)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from docsight.encoders.base import l2_normalize
from docsight.errors import ConfigurationError, EncoderError
from docsight.settings import EmbedSettings


class OpenAIEncoder:
    name = "openai"

    def __init__(self, settings: EmbedSettings) -> None:
        if not settings.model:
            raise ConfigurationError(
                "the 'openai' embedding backend needs a model (DOCSIGHT_EMBED_MODEL)"
            )
        self.settings = settings
        self._client: Any = None
        self._dim: int | None = None
        self._lock = threading.Lock()

    @property
    def fingerprint(self) -> str:
        return f"openai:{self.settings.base_url or 'api.openai.com'}:{self.settings.model}"

    @property
    def dim(self) -> int:
        if self._dim is None:
            # The dimension is a property of the remote model: ask it once.
            self._dim = int(self._embed(["dimension probe"]).shape[1])
        return self._dim

    def _get_client(self) -> Any:
        with self._lock:
            if self._client is None:
                from openai import OpenAI

                key = self.settings.api_key.get_secret_value() if self.settings.api_key else None
                self._client = OpenAI(
                    base_url=self.settings.base_url,
                    api_key=key or "not-needed",
                    timeout=self.settings.timeout,
                    max_retries=3,
                )
            return self._client

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        import openai

        client = self._get_client()
        rows: list[list[float]] = []
        step = self.settings.batch_size
        for start in range(0, len(texts), step):
            batch = [t if t.strip() else " " for t in texts[start : start + step]]
            try:
                response = client.embeddings.create(model=self.settings.model, input=batch)
            except openai.OpenAIError as exc:
                raise EncoderError(f"embedding request to {client.base_url} failed: {exc}") from exc
            data = sorted(response.data, key=lambda d: d.index)
            if len(data) != len(batch):
                raise EncoderError(
                    f"embedding endpoint returned {len(data)} vectors for {len(batch)} inputs"
                )
            rows.extend(d.embedding for d in data)
        matrix = np.asarray(rows, dtype=np.float32)
        if matrix.ndim != 2 or matrix.shape[1] == 0:
            raise EncoderError("embedding endpoint returned malformed vectors")
        return l2_normalize(matrix)

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        matrix = self._embed(texts)
        self._dim = matrix.shape[1]
        return matrix

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.encode_documents(texts)
