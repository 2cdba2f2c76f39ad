"""The bounds of every tool's arguments, in one place: the tools publish them in
their JSON Schema and the SDK refuses a call beyond them (a tool error naming
the bound) before any work starts."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds of tool arguments; `whoami` reports them."""

    max_query_chars: int = 8_192
    min_k: int = 1
    max_k: int = 50
    min_depth: int = 1
    max_depth: int = 5
    min_token_budget: int = 100
    max_token_budget: int = 32_000
    max_scopes: int = 50  # scopes named in one call
    max_name_chars: int = 200  # snapshot and scope names
    max_note_chars: int = 2_000  # a reviewer's note
    min_rows: int = 1  # the `limit` of list tools (changes, conflicts, proposals, explore, entities)
    max_rows: int = 1_000
    max_entity_chars: int = 500  # an entity's name (or id), and a proposal's subject
    max_predicate_chars: int = 100
    max_object_chars: int = 2_000
    max_evidence_chars: int = 20_000  # the text a proposal rests on
    max_position: int = 1_000  # positions in a context pack (it holds at most 1,000 items)
    # remember: vera.remember's own bounds, stated in the tool's schema
    max_remember_chars: int = 100_000  # a text to remember
    max_messages: int = 1_000  # messages of one transcript
    max_message_chars: int = 20_000  # one message (a passage holds at most that)
    max_speaker_chars: int = 200  # a message's role or name (vera.remember takes up to 2,000: a heading)

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


LIMITS = Limits()
