"""Ports: what the domain needs from the outside world, as typing.Protocol."""

from __future__ import annotations

from typing import Protocol

from vera_client.domain.models import ServerStatus


class DatabaseServer(Protocol):
    """A PostgreSQL server whose lifecycle VERA manages (the embedded one)."""

    def start(self) -> ServerStatus:
        """Initialise if needed and start; a no-op when it already runs."""
        ...

    def stop(self) -> ServerStatus:
        """Stop if running; a no-op otherwise."""
        ...

    def status(self) -> ServerStatus:
        """Report whether it runs and how to reach it."""
        ...
