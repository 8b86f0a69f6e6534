"""Late-interaction page embeddings (ColPali, ColQwen2 and relatives) from local weights.

``colpali-engine`` provides the models and processors; this backend loads them from
``DOCSIGHT_VISUAL_MODEL_PATH`` and never downloads anything: every ``from_pretrained`` call is
``local_files_only`` and the Hugging Face libraries are put in offline mode before they are
imported (unless the user set those variables themselves).

Supported model directories, recognised by their ``config.json`` (``architectures`` first, then
``model_type``):

========================  ============  ===========================================
colpali-engine class      model_type    published checkpoints (merged weights)
========================  ============  ===========================================
``ColPali``               paligemma     vidore/colpali-v1.3-merged
``ColQwen2``              qwen2_vl      vidore/colqwen2-v1.0-merged
``ColQwen2_5``            qwen2_5_vl    vidore/colqwen2.5-v0.2 (merged variants)
``ColIdefics3``           idefics3      vidore/colSmol-256M, vidore/colSmol-500M
``ColQwen3``              qwen3_vl      ColQwen3 checkpoints
``ColGemma3``             gemma3        ColGemma3 checkpoints
``ColModernVBert``        modernvbert   ModernVBERT/colmodernvbert
========================  ============  ===========================================

A directory that holds only a LoRA adapter (``adapter_config.json``) loads when its base model
is available offline (a local path, or the user's Hugging Face cache); a merged checkpoint needs
nothing else. Single-vector ``Bi*`` models are not this backend's business (their vectors are
not late-interaction).

Each page becomes a ``(tokens, dim)`` float32 matrix (``dim`` is 128 for the published models)
with unit-norm rows; padding positions are dropped using the processor's attention mask, so a
page's matrix has exactly its own tokens. Queries go through the processor's query formatting
(prefix and augmentation tokens), as the models were trained.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from docsight.encoders.visual import VectorKind
from docsight.encoders.visual_openai import load_page_image
from docsight.errors import ConfigurationError, EncoderError, MissingDependencyError
from docsight.settings import VisualSettings

log = logging.getLogger(__name__)

#: colpali-engine's late-interaction classes: model class -> processor class.
MODEL_CLASSES: dict[str, str] = {
    "ColPali": "ColPaliProcessor",
    "ColQwen2": "ColQwen2Processor",
    "ColQwen2_5": "ColQwen2_5_Processor",
    "ColIdefics3": "ColIdefics3Processor",
    "ColQwen3": "ColQwen3Processor",
    "ColGemma3": "ColGemmaProcessor3",
    "ColModernVBert": "ColModernVBertProcessor",
}
#: ``model_type`` -> model class, for directories whose ``architectures`` names the base model
#: (``Qwen2VLForConditionalGeneration``) rather than the colpali-engine class.
MODEL_TYPES: dict[str, str] = {
    "paligemma": "ColPali",
    "qwen2_vl": "ColQwen2",
    "qwen2_5_vl": "ColQwen2_5",
    "idefics3": "ColIdefics3",
    "qwen3_vl": "ColQwen3",
    "gemma3": "ColGemma3",
    "modernvbert": "ColModernVBert",
}

# Files whose content decides the vector space besides the weights: the architecture, and the
# image and text preprocessing (resolution limits, query prefix, tokenizer).
_CONFIG_FILES = (
    "config.json",
    "adapter_config.json",
    "preprocessor_config.json",
    "processor_config.json",
    "tokenizer_config.json",
)
_WEIGHT_SUFFIXES = (".safetensors", ".bin")
#: Bytes read from the start, middle and end of every weight file for the fingerprint: enough to
#: tell two fine-tunes of one architecture apart without reading gigabytes.
_SAMPLE_BYTES = 1 << 20


def _import_backend() -> tuple[Any, Any]:
    """torch and colpali_engine.models, imported on first use (they take seconds and are an
    optional extra)."""
    for package in ("torch", "colpali_engine"):
        if importlib.util.find_spec(package) is None:
            raise MissingDependencyError(
                "the 'colpali' visual backend", "visual", f"package {package} not found"
            )
    # Offline before transformers and huggingface_hub read their settings: a model directory
    # must never turn into a download. A user who set these keeps their choice.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    try:
        import colpali_engine.models as models
        import torch
    except ImportError as exc:
        raise MissingDependencyError("the 'colpali' visual backend", "visual", str(exc)) from exc
    except RuntimeError as exc:
        # A torchvision built for another torch fails at import with "operator torchvision::nms
        # does not exist"; transformers' image processors import it.
        raise MissingDependencyError(
            "the 'colpali' visual backend",
            "visual",
            f"{exc}",
            hint="torch and torchvision must come from the same build: install both from the "
            "same index (for CPU: pip install torch torchvision --index-url "
            "https://download.pytorch.org/whl/cpu)",
        ) from exc
    return torch, models


def _quiet_transformers() -> None:
    """No progress bars on stderr: docsight reports progress itself, and library code never
    writes to the terminal. (A process-wide transformers setting; docsight owns the process
    whenever it loads a model.)"""
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except ImportError:  # pragma: no cover - transformers comes with colpali-engine
        pass


def model_class_for(config: dict[str, Any], model_dir: Path) -> str:
    """The colpali-engine class for a model directory's ``config.json`` content."""
    architectures = [str(a) for a in config.get("architectures") or []]
    for name in architectures:
        if name in MODEL_CLASSES:
            return name
        if name.startswith("Bi"):
            raise EncoderError(
                f"{model_dir} holds a single-vector model ({name}); the 'colpali' visual backend "
                "needs a late-interaction Col* model"
            )
    model_type = str(config.get("model_type", ""))
    if model_type in MODEL_TYPES:
        return MODEL_TYPES[model_type]
    supported = ", ".join(f"{cls} ({kind})" for kind, cls in MODEL_TYPES.items())
    raise EncoderError(
        f"{model_dir}: model_type {model_type or 'missing'!r} with architectures "
        f"{architectures or 'missing'} is not a colpali-engine model this backend loads "
        f"(supported: {supported})"
    )


def _read_config(model_dir: Path) -> dict[str, Any]:
    """``config.json``, or for an adapter-only directory the base model's config when local."""
    path = model_dir / "config.json"
    if not path.is_file():
        adapter = model_dir / "adapter_config.json"
        if adapter.is_file():
            base = _json(adapter).get("base_model_name_or_path")
            if base and (Path(base) / "config.json").is_file():
                return _json(Path(base) / "config.json")
            # An adapter on a hub base model: the class is named by the processor config that
            # colpali-engine saves beside the adapter.
            by_processor = {processor: model for model, processor in MODEL_CLASSES.items()}
            for name in ("processor_config.json", "preprocessor_config.json"):
                processor_class = _json_or_empty(model_dir / name).get("processor_class")
                if processor_class in by_processor:
                    return {"architectures": [by_processor[processor_class]]}
        raise EncoderError(
            f"no model found in {model_dir} (no config.json): DOCSIGHT_VISUAL_MODEL_PATH must be "
            "a directory saved by save_pretrained, e.g. a downloaded vidore/colqwen2-v1.0-merged"
        )
    return _json(path)


def _json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EncoderError(f"cannot read {path}: {exc}") from exc
    if not isinstance(value, dict):
        raise EncoderError(f"{path} is not a JSON object")
    return value


def _json_or_empty(path: Path) -> dict[str, Any]:
    try:
        return _json(path) if path.is_file() else {}
    except EncoderError:
        return {}


def directory_hash(model_dir: Path) -> str:
    """A short hash of what decides a model directory's vector space.

    The configuration and preprocessing files are hashed whole; weight files by name, size and
    a sample of their bytes, which separates checkpoints (two fine-tunes share a config.json but
    not their tensors) while costing a few reads, not gigabytes. The directory's own path is
    left out, so moving the weights does not force a re-embedding.
    """
    digest = hashlib.sha256()
    for name in _CONFIG_FILES:
        path = model_dir / name
        if path.is_file():
            digest.update(name.encode() + b"\0" + path.read_bytes())
    weights = sorted(
        p for p in model_dir.iterdir() if p.is_file() and p.name.endswith(_WEIGHT_SUFFIXES)
    )
    for path in weights:
        size = path.stat().st_size
        digest.update(f"{path.name}\0{size}\0".encode())
        with path.open("rb") as handle:
            for offset in sorted(
                {0, max(0, size // 2 - _SAMPLE_BYTES // 2), max(0, size - _SAMPLE_BYTES)}
            ):
                handle.seek(offset)
                digest.update(handle.read(_SAMPLE_BYTES))
    return digest.hexdigest()[:16]


class ColPaliEncoder:
    """Multi-vector (late-interaction) page and query embeddings from a local Col* model."""

    name = "colpali"
    kind: VectorKind = "multi"

    def __init__(self, settings: VisualSettings) -> None:
        if settings.model_path is None:
            raise ConfigurationError(
                "the 'colpali' visual backend needs a model directory; set "
                "DOCSIGHT_VISUAL_MODEL_PATH (for example a downloaded vidore/colqwen2-v1.0-merged)"
            )
        self.settings = settings
        self.model_dir = Path(settings.model_path).expanduser()
        #: Forward passes run so far (pages and queries): how batching is observed and logged.
        self.forward_passes = 0
        self._model: Any = None
        self._processor: Any = None
        self._torch: Any = None
        self._device: Any = None
        self._class_name: str | None = None
        self._fingerprint: str | None = None
        self._dim: int | None = None
        self._lock = threading.RLock()

    # --- the contract --------------------------------------------------------------------------

    @property
    def fingerprint(self) -> str:
        # Computed from the files, not the loaded model, so that checking a collection against
        # the configured encoder does not load gigabytes of weights.
        with self._lock:
            if self._fingerprint is None:
                if not self.model_dir.is_dir():
                    raise EncoderError(
                        f"DOCSIGHT_VISUAL_MODEL_PATH {self.model_dir} is not a directory"
                    )
                config = _read_config(self.model_dir)
                cls = model_class_for(config, self.model_dir)
                self._fingerprint = (
                    f"colpali:{cls}:{directory_hash(self.model_dir)}:{self.settings.max_side}"
                )
            return self._fingerprint

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._load()
        if self._dim is None:
            # A model without a ``dim`` attribute: its output tells.
            self.encode_queries(["dimension probe"])
        assert self._dim is not None
        return self._dim

    @property
    def device(self) -> str:
        """The device the model runs on (loads it)."""
        self._load()
        return str(self._device)

    def encode_pages(self, images: Sequence[bytes]) -> list[np.ndarray]:
        if not images:
            return []
        self._load()
        out: list[np.ndarray] = []
        step = self.settings.batch_size
        for start in range(0, len(images), step):
            # Decoded one batch at a time: a long document never has all its pages in memory.
            batch = [
                load_page_image(images[i], self.settings.max_side, i)
                for i in range(start, min(start + step, len(images)))
            ]
            out.extend(self._run(lambda b=batch: self._processor.process_images(b), "pages"))
        return out

    def encode_queries(self, texts: Sequence[str]) -> list[np.ndarray]:
        if not texts:
            return []
        self._load()
        out: list[np.ndarray] = []
        step = self.settings.batch_size
        for start in range(0, len(texts), step):
            batch = [t if t.strip() else " " for t in texts[start : start + step]]
            out.extend(self._run(lambda b=batch: self._processor.process_queries(b), "queries"))
        return out

    # --- model ---------------------------------------------------------------------------------

    def _pick_device(self, torch: Any) -> Any:
        wanted = (self.settings.device or "auto").strip().lower()
        if wanted == "auto":
            if torch.cuda.is_available():
                return torch.device("cuda")
            mps = getattr(torch.backends, "mps", None)
            if mps is not None and mps.is_available():
                return torch.device("mps")
            return torch.device("cpu")
        try:
            device = torch.device(wanted)
        except RuntimeError as exc:
            raise ConfigurationError(
                f"DOCSIGHT_VISUAL_DEVICE={self.settings.device!r} is not a torch device "
                "(use auto, cpu, cuda, cuda:N or mps)"
            ) from exc
        if device.type == "cuda" and not torch.cuda.is_available():
            raise EncoderError(
                f"DOCSIGHT_VISUAL_DEVICE={self.settings.device!r} but torch sees no CUDA device "
                f"(torch {torch.__version__}; a CPU-only build?)"
            )
        return device

    @staticmethod
    def _dtype_for(torch: Any, device: Any) -> Any:
        # Half precision where the hardware does it natively; float32 on CPU, where bfloat16
        # matmuls are slower on most machines and float16 is unsupported for some ops.
        if device.type == "cuda":
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        if device.type == "mps":
            return torch.float16
        return torch.float32

    def _load(self) -> None:
        with self._lock:
            if self._model is not None:
                return
            torch, models = _import_backend()
            fingerprint = self.fingerprint  # validates the directory and the class
            cls_name = fingerprint.split(":")[1]
            model_cls = getattr(models, cls_name, None)
            processor_cls = getattr(models, MODEL_CLASSES[cls_name], None)
            if model_cls is None or processor_cls is None:
                raise EncoderError(
                    f"{self.model_dir} needs colpali_engine.models.{cls_name}, which this "
                    "colpali-engine version does not have; upgrade colpali-engine"
                )
            device = self._pick_device(torch)
            dtype = self._dtype_for(torch, device)
            path = str(self.model_dir)
            _quiet_transformers()
            try:
                model = model_cls.from_pretrained(path, dtype=dtype, local_files_only=True)
                processor = processor_cls.from_pretrained(path, local_files_only=True)
            except (OSError, ValueError, KeyError, RuntimeError, TypeError) as exc:
                hint = ""
                if (self.model_dir / "adapter_config.json").is_file():
                    hint = (
                        " (this directory holds a LoRA adapter: its base model must be available "
                        "offline; a merged checkpoint avoids that)"
                    )
                raise EncoderError(
                    f"cannot load {cls_name} from {self.model_dir}{hint}: {exc}"
                ) from exc
            model = model.to(device).eval()
            self._dim = int(getattr(model, "dim", 0) or 0) or None
            self._torch, self._device = torch, device
            self._model, self._processor, self._class_name = model, processor, cls_name
            log.info("loaded %s from %s on %s (%s)", cls_name, self.model_dir, device, str(dtype))

    def _run(self, prepare: Any, what: str) -> list[np.ndarray]:
        """One forward pass over one prepared batch; a float32 matrix per input, padding
        dropped."""
        torch = self._torch
        with self._lock:
            try:
                batch = prepare()
                mask = batch["attention_mask"].bool()
                batch = batch.to(self._device)
                if "pixel_values" in batch:
                    batch["pixel_values"] = batch["pixel_values"].to(self._model.dtype)
                with torch.inference_mode():
                    embeddings = self._model(**batch)
                self.forward_passes += 1
            except (RuntimeError, ValueError, TypeError, KeyError, IndexError) as exc:
                # torch reports out-of-memory as a RuntimeError subclass; the message says so.
                raise EncoderError(
                    f"{self._class_name} from {self.model_dir} failed on a batch of {what} "
                    f"on {self._device}: {exc}"
                ) from exc
            values = embeddings.float().cpu().numpy()
        out: list[np.ndarray] = []
        for row, keep in zip(values, mask.numpy(), strict=True):
            tokens = row[keep]
            norms = np.linalg.norm(tokens, axis=1, keepdims=True)
            # Rows the model zeroed (masked non-image tokens) carry nothing to match.
            tokens = tokens[norms[:, 0] > 1e-6]
            norms = norms[norms[:, 0] > 1e-6]
            # Re-normalised in float32: half-precision outputs drift off unit norm.
            out.append(np.ascontiguousarray(tokens / norms, dtype=np.float32))
        if self._dim is None and out:
            self._dim = int(values.shape[-1])
        return out

    def close(self) -> None:
        """Drop the model (and free its memory) until the next use."""
        with self._lock:
            self._model = self._processor = None
            if self._torch is not None and self._device is not None and self._device.type == "cuda":
                self._torch.cuda.empty_cache()


__all__ = ["MODEL_CLASSES", "MODEL_TYPES", "ColPaliEncoder", "directory_hash", "model_class_for"]
