"""A configuration item as claims, by the source's documented mapping: each
mapped field becomes a claim of the item's name with the field's phrase as its
predicate ("owner": "owned by" -> OWNED_BY). Fields the mapping does not name
are left out (a CMDB carries many an internal field); a description field, when
named, becomes a passage. No model is involved."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vera_worker.connectors.contract import ItemSkipped
from vera_worker.domain.records import ParsedRecord, Passage
from vera_worker.domain.statements import (
    ClaimContext,
    claims_from_mapping,
    functional_predicates,
    scalar_text,
)

MAX_DESCRIPTION_CHARS = 20_000  # one passage's limit in vera.store_chunks


@dataclass(frozen=True, kw_only=True, slots=True)
class CmdbMapping:
    id_field: str
    name_field: str
    updated_field: str | None
    fields: Mapping[str, str]  # item field -> predicate phrase
    description_field: str | None
    functional: frozenset[str]

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> CmdbMapping:
        fields = config.get("fields")
        if (
            not isinstance(fields, Mapping)
            or not fields
            or not all(isinstance(k, str) and isinstance(v, str) for k, v in fields.items())
        ):
            raise ValueError(
                'config "fields" maps item fields to predicate phrases, e.g. {"owner": "owned by"}'
            )
        return cls(
            id_field=str(config.get("id_field", "id")),
            name_field=str(config.get("name_field", "name")),
            updated_field=str(config.get("updated_field", "updated")) or None,
            fields=dict(fields),
            description_field=str(config["description_field"]) if config.get("description_field") else None,
            functional=functional_predicates(config.get("functional")),
        )

    def key(self, item: Mapping[str, Any]) -> str:
        """The item's id, as its episodes' external id; ItemSkipped when it has none."""
        value = scalar_text(item.get(self.id_field))
        if value is None or not value.strip() or len(value) > 1000:
            raise ItemSkipped(f"an item without a usable {self.id_field!r} field")
        return value.strip()

    def record(self, item: Mapping[str, Any]) -> ParsedRecord:
        """The item's claims (and its description as a passage); ItemSkipped when it has no name."""
        subject = scalar_text(item.get(self.name_field))
        if subject is None or not subject.strip():
            raise ItemSkipped(f"no {self.name_field!r} field to name it by")
        metadata = {phrase: item[field] for field, phrase in self.fields.items() if field in item}
        claims, warnings = [], []
        for found in claims_from_mapping(subject.strip(), metadata, ClaimContext(functional=self.functional)):
            if isinstance(found, str):
                warnings.append(found)
            else:
                claims.append(found)
        passages: tuple[Passage, ...] = ()
        description = scalar_text(item.get(self.description_field)) if self.description_field else None
        if description and description.strip():
            if len(description) > MAX_DESCRIPTION_CHARS:
                raise ItemSkipped(
                    f"its {self.description_field!r} is {len(description):,} characters, "
                    f"over the {MAX_DESCRIPTION_CHARS:,} of a passage"
                )
            passages = (Passage(description.strip(), subject.strip(), 0, len(description.strip())),)
        return ParsedRecord(
            title=subject.strip(), passages=passages, claims=tuple(claims), warnings=tuple(warnings)
        )


def canonical_bytes(item: Mapping[str, Any]) -> bytes:
    """The item as stored and hashed: key order and spacing do not make a new version."""
    return json.dumps(item, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()
