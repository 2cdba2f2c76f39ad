"""Embedders, one adapter per provider, each satisfying domain.ports.Embedder."""

from __future__ import annotations

from functools import cache

from vera_client.adapters.embedders.deterministic import DeterministicEmbedder
from vera_client.adapters.embedders.local_minilm import MODEL as MINILM_MODEL
from vera_client.adapters.embedders.local_minilm import LocalMiniLMEmbedder
from vera_client.domain.ports import Embedder


@cache
def local_embedder_for(model: str) -> Embedder | None:
    """The embedder that runs here for a pinned model name, if one does (one instance per model)."""
    if model == MINILM_MODEL:
        return LocalMiniLMEmbedder()
    if model.startswith("deterministic-hash-") and model.removeprefix("deterministic-hash-").isdigit():
        return DeterministicEmbedder(int(model.removeprefix("deterministic-hash-")))
    return None


# Languages a model reads, for models that read few (absent: multilingual or not known).
# all-MiniLM-L6-v2 was trained on English; its tokenizer folds other Latin scripts to ASCII.
MODEL_LANGUAGES: dict[str, frozenset[str]] = {MINILM_MODEL: frozenset({"en"})}


def model_languages(model: str) -> frozenset[str] | None:
    return MODEL_LANGUAGES.get(model)
