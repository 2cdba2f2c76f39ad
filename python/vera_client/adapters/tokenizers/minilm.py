"""Counts tokens with the MiniLM WordPiece tokenizer that the local embedder
uses (vendored with it, see adapters/embedders/minilm_data/NOTICE.md): a real
tokenizer, offline, with no model weights loaded. A context pack's budget is
counted in these tokens; a model with another vocabulary counts somewhat
differently, so budgets leave headroom."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from vera_client.adapters.optional import require

if TYPE_CHECKING:  # the [context] extra installs it (so do [local] and [server])
    from tokenizers import Tokenizer

TOKENIZER = Path(__file__).resolve().parents[1] / "embedders" / "minilm_data" / "tokenizer.json"


class MiniLMTokenCounter:
    """count(text): the number of word pieces of text, without the [CLS]/[SEP] markers."""

    @cached_property
    def _tokenizer(self) -> Tokenizer:
        tokenizers = require("tokenizers", extra="context", needed_for="counting a context pack's tokens")
        tokenizer: Tokenizer = tokenizers.Tokenizer.from_file(str(TOKENIZER))
        tokenizer.no_truncation()
        tokenizer.no_padding()
        return tokenizer

    def count(self, text: str) -> int:
        if not text:
            return 0
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)
