"""Page images and queries embedded by an OpenAI-compatible ``/embeddings`` endpoint (vLLM).

OpenAI's own embeddings API takes text only. vLLM extends it for multimodal embedding models
(CLIP, SigLIP, VLM2Vec, DSE-Qwen2, Qwen3-VL-Embedding, ...): instead of ``input``, the request
body may carry ``messages`` in the Chat Completions schema, which vLLM renders through the
model's chat template into one prompt and embeds into one vector. That is the request this
backend sends, for pages and queries alike::

    POST {base_url}/embeddings
    {"model": "...", "encoding_format": "float",
     "messages": [{"role": "user", "content": [
         {"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}]}]}

and, for a query, the same with ``[{"type": "text", "text": "..."}]`` as the content. Queries go
through ``messages`` too (not ``input``), so the server applies the same chat template to both
sides, as vLLM's multimodal embedding examples do. Models that want an instruction around the
image or the query (VLM2Vec, DSE) get it from the server's ``--chat-template``.

One conversation is one prompt, so each image is one request; ``batch_size`` requests are in
flight at once (vLLM batches concurrent requests on the GPU), and only that many pages are
decoded and re-encoded at a time, which bounds memory on long documents.
"""

from __future__ import annotations

import base64
import contextlib
import io
import logging
import random
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import numpy as np

from docsight.encoders.base import l2_normalize
from docsight.encoders.visual import VectorKind
from docsight.errors import ConfigurationError, EncoderError
from docsight.settings import VisualSettings

log = logging.getLogger(__name__)

#: HTTP statuses worth another try: rate limiting and the server-side failures a busy or
#: restarting vLLM returns. Anything else (400 for a model that takes no images, 401, 404) fails
#: the same way on every try.
_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
#: The longest ``Retry-After`` honoured; a server asking for more is treated as failing.
_MAX_RETRY_AFTER_S = 30.0


def load_page_image(data: bytes, max_side: int, index: int = 0) -> Any:
    """Decode one page image and scale it down so its longest side is at most ``max_side``.

    Returns an RGB ``PIL.Image``. Images are never scaled up: a small crop stays small, and the
    model's own processor decides how to pad it. ``index`` only names the image in errors.
    """
    from PIL import Image, UnidentifiedImageError

    image: Image.Image
    try:
        image = Image.open(io.BytesIO(data))
        # JPEG can decode at a fraction of its size directly, which saves most of the work
        # for large scans.
        image.draft("RGB", (max_side, max_side))
        image.load()
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as exc:
        raise EncoderError(f"page image {index} is not a readable PNG or JPEG: {exc}") from exc
    if image.mode != "RGB":
        # Transparent renders are composited on white, as a page would be printed.
        if image.mode in ("RGBA", "LA", "P"):
            rgba = image.convert("RGBA")
            canvas = Image.new("RGB", rgba.size, (255, 255, 255))
            canvas.paste(rgba, mask=rgba.getchannel("A"))
            image = canvas
        else:
            image = image.convert("RGB")
    if max(image.size) > max_side:
        scale = max_side / max(image.size)
        size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
        image = image.resize(size, Image.Resampling.LANCZOS)
    return image


def image_data_url(data: bytes, max_side: int, index: int = 0) -> str:
    """A ``data:`` URL for one page image, scaled to ``max_side``.

    Rendered pages are mostly flat colour and text, which PNG keeps sharp and small; photographs
    and scans (sent as JPEG) stay JPEG, which is several times smaller for them.
    """
    image = load_page_image(data, max_side, index)
    is_jpeg = data[:3] == b"\xff\xd8\xff"
    buffer = io.BytesIO()
    if is_jpeg:
        image.save(buffer, format="JPEG", quality=90)
        mime = "image/jpeg"
    else:
        image.save(buffer, format="PNG", optimize=False)
        mime = "image/png"
    return f"data:{mime};base64,{base64.b64encode(buffer.getvalue()).decode('ascii')}"


class OpenAIVisualEncoder:
    """Single-vector page and query embeddings from an OpenAI-compatible endpoint (vLLM)."""

    name = "openai"
    kind: VectorKind = "single"
    #: Further tries after a 429/5xx or a refused connection (bounded; the endpoint is named in
    #: the error once they are spent).
    max_retries = 3
    #: First back-off in seconds when the server sends no ``Retry-After``; doubles per try.
    backoff_s = 0.5

    def __init__(self, settings: VisualSettings) -> None:
        missing = [
            variable
            for variable, value in (
                ("DOCSIGHT_VISUAL_BASE_URL", settings.base_url),
                ("DOCSIGHT_VISUAL_MODEL", settings.model),
            )
            if not value
        ]
        if missing:
            raise ConfigurationError(
                "the 'openai' visual backend needs an endpoint and a model that accepts images "
                f"(for example vLLM with --runner pooling); set {' and '.join(missing)}"
            )
        self.settings = settings
        self.base_url = str(settings.base_url).rstrip("/")
        self.model = str(settings.model)
        self.endpoint = f"{self.base_url}/embeddings"
        self._client: httpx.Client | None = None
        self._dim: int | None = None
        self._lock = threading.Lock()

    # --- the contract --------------------------------------------------------------------------

    @property
    def fingerprint(self) -> str:
        # max_side is part of the space: the same model sees a different picture at another
        # resolution, so pages embedded at 1024 px are not mixed with pages embedded at 448 px.
        return f"openai-visual:{self.base_url}:{self.model}:{self.settings.max_side}"

    @property
    def dim(self) -> int:
        if self._dim is None:
            # The dimension belongs to the remote model: one short text request tells it.
            self.encode_queries(["dimension probe"])
        assert self._dim is not None
        return self._dim

    def encode_pages(self, images: Sequence[bytes]) -> np.ndarray:
        if not images:
            return np.zeros((0, self.dim), dtype=np.float32)
        max_side = self.settings.max_side

        def page_content(i: int) -> list[dict[str, Any]]:
            url = image_data_url(images[i], max_side, i)
            return [{"type": "image_url", "image_url": {"url": url}}]

        return self._embed_all(len(images), page_content, "page image")

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)

        def query_content(i: int) -> list[dict[str, Any]]:
            # An empty text part is refused by some chat templates; a space embeds as "nothing".
            return [{"type": "text", "text": texts[i] if texts[i].strip() else " "}]

        return self._embed_all(len(texts), query_content, "query")

    # --- requests ------------------------------------------------------------------------------

    def _embed_all(
        self, count: int, content: Callable[[int], list[dict[str, Any]]], what: str
    ) -> np.ndarray:
        """Embed ``count`` items, ``batch_size`` requests at a time, in input order."""
        step = self.settings.batch_size
        rows: list[np.ndarray] = []
        with ThreadPoolExecutor(max_workers=min(step, count)) as pool:
            for start in range(0, count, step):
                indices = range(start, min(start + step, count))
                # The content (a decoded, re-encoded page) is built inside the worker, so at
                # most batch_size pages are held in memory at once.
                rows.extend(pool.map(lambda i: self._embed_one(content(i), f"{what} {i}"), indices))
        matrix = np.vstack(rows).astype(np.float32, copy=False)
        return l2_normalize(matrix)

    def _embed_one(self, content: list[dict[str, Any]], what: str) -> np.ndarray:
        body = {
            "model": self.model,
            "messages": [{"role": "user", "content": content}],
            "encoding_format": "float",
        }
        payload = self._post(body, what)
        return self._vector(payload, what)

    def _get_client(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                headers = {"Content-Type": "application/json"}
                key = self.settings.api_key.get_secret_value() if self.settings.api_key else ""
                if key:
                    headers["Authorization"] = f"Bearer {key}"
                timeout = httpx.Timeout(
                    self.settings.timeout, connect=min(10.0, self.settings.timeout)
                )
                limits = httpx.Limits(max_connections=self.settings.batch_size)
                self._client = httpx.Client(timeout=timeout, headers=headers, limits=limits)
            return self._client

    def _post(self, body: dict[str, Any], what: str) -> Any:
        client = self._get_client()
        attempt = 0
        while True:
            try:
                response = client.post(self.endpoint, json=body)
            except httpx.TimeoutException as exc:
                # Not retried: a request that outlived the timeout once would, on a stuck or
                # overloaded server, only multiply the wait.
                raise EncoderError(
                    f"visual embedding request to {self.endpoint} timed out after "
                    f"{self.settings.timeout:g} s ({what}); raise DOCSIGHT_VISUAL_TIMEOUT or lower "
                    "DOCSIGHT_VISUAL_MAX_SIDE"
                ) from exc
            except httpx.TransportError as exc:
                if attempt < self.max_retries:
                    attempt += 1
                    self._sleep(attempt, None)
                    continue
                raise EncoderError(
                    f"visual embedding endpoint {self.endpoint} is unreachable ({what}): {exc}"
                ) from exc
            if response.status_code in _RETRY_STATUSES and attempt < self.max_retries:
                attempt += 1
                log.info(
                    "visual embedding endpoint %s answered %d; retry %d of %d",
                    self.endpoint,
                    response.status_code,
                    attempt,
                    self.max_retries,
                )
                if self._sleep(attempt, response.headers.get("Retry-After")):
                    continue
            if response.status_code != 200:
                raise EncoderError(
                    f"visual embedding request to {self.endpoint} failed with HTTP "
                    f"{response.status_code} ({what}): {_error_detail(response)}"
                )
            try:
                return response.json()
            except ValueError as exc:
                raise EncoderError(
                    f"visual embedding endpoint {self.endpoint} returned a body that is not JSON "
                    f"({what})"
                ) from exc

    def _sleep(self, attempt: int, retry_after: str | None) -> bool:
        """Wait before another try; False when the server asks for longer than we wait."""
        delay = self.backoff_s * 2 ** (attempt - 1) * (0.75 + random.random() / 2)
        if retry_after is not None:
            # An HTTP date instead of seconds keeps our own back-off.
            with contextlib.suppress(ValueError):
                delay = max(0.0, float(retry_after))
            if delay > _MAX_RETRY_AFTER_S:
                return False
        time.sleep(delay)
        return True

    def _vector(self, payload: Any, what: str) -> np.ndarray:
        try:
            data = payload["data"]
            if len(data) != 1:
                raise ValueError(f"{len(data)} embeddings for one input")
            vector = np.asarray(data[0]["embedding"], dtype=np.float32)
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise EncoderError(
                f"visual embedding endpoint {self.endpoint} returned a malformed answer ({what}): "
                f"{exc}; is {self.model!r} an embedding model served with --runner pooling?"
            ) from exc
        if vector.ndim != 1 or vector.size == 0 or not np.isfinite(vector).all():
            raise EncoderError(
                f"visual embedding endpoint {self.endpoint} returned an empty or non-finite "
                f"vector ({what})"
            )
        with self._lock:
            if self._dim is None:
                self._dim = int(vector.size)
            elif vector.size != self._dim:
                raise EncoderError(
                    f"visual embedding endpoint {self.endpoint} returned {vector.size} dimensions "
                    f"({what}) after {self._dim} before; did the served model change?"
                )
        return vector

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None


def _error_detail(response: httpx.Response) -> str:
    """The server's own error message (vLLM and OpenAI send ``{"error": {"message": ...}}``)."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:300] or response.reason_phrase
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:300]
        if isinstance(body.get("message"), str):
            return body["message"][:300]
    return str(body)[:300]


__all__ = ["OpenAIVisualEncoder", "image_data_url", "load_page_image"]
