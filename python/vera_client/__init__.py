"""VERA client library: the SQL API of a verified, time-aware knowledge memory.

from vera_client import VeraClient

with VeraClient.from_settings() as vera:  # VERA_API_KEY, VERA_DB__*, ... or a .env file
    hits = vera.search("who owns ledger-db?")
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vera_client.domain.errors import VeraError

if TYPE_CHECKING:
    from vera_client.client import AsyncVeraClient, VeraClient

__all__ = ["AsyncVeraClient", "VeraClient", "VeraError"]
__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    # The clients are imported on first use, not with the package: `import vera_client.domain...`
    # (the worker's and the server's domain code, a slim install's tools) must not pull in the
    # database driver and the model providers that the client's module imports.
    if name in {"VeraClient", "AsyncVeraClient"}:
        from vera_client import client  # noqa: PLC0415 (deferred on purpose, see above)

        return getattr(client, name)
    raise AttributeError(f"module 'vera_client' has no attribute {name!r}")
