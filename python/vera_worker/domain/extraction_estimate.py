"""What sending a group's passages to the extraction model would cost, before it is sent
(`vera extract --backlog`): passages, tokens in and out, and dollars at the configured prices.

An estimate, not a meter: about four characters a token, each passage's prompt carrying the
instructions, the answer's JSON Schema and up to PROMPT_ENTITIES entity names, and an answer
of a few claims. The meter (vera_client.adapters.providers.metering) counts what was spent."""

from __future__ import annotations

import json
from dataclasses import dataclass

from vera_worker.domain.prompts import EXTRACTION_INSTRUCTIONS, EXTRACTION_PROMPT_VERSION, EXTRACTION_SCHEMA

CHARS_PER_TOKEN = 4
# the ontology and up to 50 entity names offered with each passage, in characters
CONTEXT_CHARS = 1500
# an answer of a few claims, in tokens
ANSWER_TOKENS = 250


def extraction_model_version(model: str) -> str:
    """What a stored extraction is keyed by: the model and the prompt's version."""
    return f"{model}/{EXTRACTION_PROMPT_VERSION}"


@dataclass(frozen=True, slots=True)
class ExtractionEstimate:
    passages: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None  # None: the model has no price (VERA_LLM__PRICES)

    def describe(self, model: str) -> str:
        """One line: how much, and what it would cost."""
        cost = (
            f"about ${self.cost_usd:,.2f}" if self.cost_usd is not None
            else "cost unknown: no price for it (set VERA_LLM__PRICES)"
        )  # fmt: skip
        return (
            f"{self.passages:,} passages to send to {model}: about {self.input_tokens:,} input and "
            f"{self.output_tokens:,} output tokens, {cost}"
        )


def estimate_extraction(
    passages: int, characters: int, price: tuple[float, float] | None
) -> ExtractionEstimate:
    """The estimate for passages of characters in all; price: USD per million tokens (in, out)."""
    overhead = len(EXTRACTION_INSTRUCTIONS) + len(json.dumps(EXTRACTION_SCHEMA)) + CONTEXT_CHARS
    input_tokens = (characters + passages * overhead) // CHARS_PER_TOKEN
    output_tokens = passages * ANSWER_TOKENS
    cost = None if price is None else (input_tokens * price[0] + output_tokens * price[1]) / 1e6
    return ExtractionEstimate(passages, input_tokens, output_tokens, cost)
