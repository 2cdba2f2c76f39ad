"""Clients of the application login (APP_LOGIN) on a test database, as one caller.

`client_for(world, key)` opens one (close it, or use `with`); the fixtures `owner_a` and `owner_b`
(pg_tests/conftest.py) are the module's clients as tenant A's and tenant B's owner. A test that
is about opening or closing a client, or that needs another login, builds its own VeraClient."""

from __future__ import annotations

from pg_tests.support.databases import APP_LOGIN, Database
from pg_tests.support.seed import World
from vera_client.bootstrap import Providers
from vera_client.client import VeraClient
from vera_client.domain.callers import Caller


def client_for(
    place: World | Database, caller: Caller | str, *, providers: Providers | None = None
) -> VeraClient:
    """A client of the application login on the world's (or this) database, acting as caller."""
    database = place.db if isinstance(place, World) else place
    return VeraClient(database.dsn(APP_LOGIN), caller, providers=providers)
