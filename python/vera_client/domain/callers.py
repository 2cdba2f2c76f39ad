"""Who a request runs as. VERA authenticates every transaction: a caller is
either an API key, checked by vera.authenticate, or a principal that a trusted
server role vouches for with vera.authenticate_principal (the gateway after it
verified an OAuth token; the worker acting for the principal that queued a
job). Operator work (provisioning tenants, maintenance) runs unauthenticated on
an operator connection."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from uuid import UUID

from vera_client.domain.errors import ConfigurationError


@dataclass(frozen=True, slots=True)
class ApiKey:
    """A caller identified by an API key (`vera_<prefix>_<secret>`)."""

    key: str

    def __post_init__(self) -> None:
        if not self.key:
            raise ConfigurationError("an API key is needed: pass api_key or set VERA_API_KEY")

    def __repr__(self) -> str:  # the secret never reaches a log: only the public prefix
        return f"ApiKey({'_'.join(self.key.split('_')[:2])}_…)"

    @property
    def identity(self) -> str:
        """A stable, non-secret name of the caller (for per-caller caches)."""
        return "key:" + hashlib.sha256(self.key.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Principal:
    """A principal a trusted server role vouches for (the login role must be allowed to)."""

    principal_id: UUID

    def __post_init__(self) -> None:
        value: object = self.principal_id
        if isinstance(value, UUID):
            return
        try:  # an id as text (from a token's claims, a job's args) is accepted once it parses
            object.__setattr__(self, "principal_id", UUID(str(value)))
        except ValueError:
            raise ConfigurationError(f"not a principal id: {str(value)[:100]!r}") from None

    @property
    def identity(self) -> str:
        return f"principal:{self.principal_id}"


@dataclass(frozen=True, slots=True)
class Operator:
    """No caller: operator connections (provisioning, maintenance) run unauthenticated."""

    @property
    def identity(self) -> str:
        return "operator"


Caller = ApiKey | Principal | Operator
