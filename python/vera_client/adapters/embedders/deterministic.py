"""An offline embedder for tests and demos without a model: each word hashes
to a signed position, so texts that share words get close vectors. Stable
across processes and machines (SHA-256, not Python's salted hash)."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence

_WORD = re.compile(r"\w+", re.UNICODE)


class DeterministicEmbedder:
    def __init__(self, dim: int = 384) -> None:
        if dim < 2:
            raise ValueError("dim must be at least 2")
        self._dim = dim

    @property
    def model(self) -> str:
        return f"deterministic-hash-{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._one(text) for text in texts]

    def _one(self, text: str) -> list[float]:
        vector = [0.0] * self._dim
        for word in _WORD.findall(text.casefold()):
            digest = hashlib.sha256(word.encode()).digest()
            position = int.from_bytes(digest[:4], "big") % self._dim
            vector[position] += 1.0 if digest[4] & 1 else -1.0
        norm = math.sqrt(sum(x * x for x in vector))
        if norm == 0:
            # no words at all: a fixed unit vector keeps cosine defined
            vector[0], norm = 1.0, 1.0
        return [x / norm for x in vector]
