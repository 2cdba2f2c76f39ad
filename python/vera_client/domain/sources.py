"""Finding a source by what a person types: its name or its id."""

from __future__ import annotations

from collections.abc import Iterable

from vera_client.domain.errors import InvalidArgumentError, NotFoundError
from vera_client.domain.models import Source


def pick_source(candidates: Iterable[Source], name_or_id: str, group_id: str | None = None) -> Source:
    """The one source named (or with the id) name_or_id: NotFoundError, or InvalidArgumentError
    when the name is used in several groups."""
    matches = [s for s in candidates if name_or_id in (s.name, str(s.source_id))]
    if not matches:
        raise NotFoundError(f"no source {name_or_id!r}" + (f" in {group_id}" if group_id else ""))
    if len(matches) > 1:
        groups = ", ".join(s.group_id for s in matches)
        raise InvalidArgumentError(f"source {name_or_id!r} exists in several groups ({groups}): pass --group")
    return matches[0]
