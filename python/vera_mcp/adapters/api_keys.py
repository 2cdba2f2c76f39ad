"""API keys as bearer tokens: `vera_<prefix>_<secret>`, checked by the database.

A key is verified by running vera.whoami as that key (vera.authenticate checks
its form, hash, revocation, expiry and the principal). A verified key is
remembered for `cache_seconds` so that a busy agent does not pay a round trip
per HTTP request; a key revoked meanwhile still passes the transport until its
entry expires, but every tool call authenticates the key again in its own
transaction, so it reads and writes nothing from the moment it is revoked.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict

from vera_client.client import AsyncVeraClient
from vera_client.domain.callers import ApiKey
from vera_client.domain.errors import AuthenticationError
from vera_mcp.domain.access import ALL_SCOPES, VerifiedCaller
from vera_mcp.domain.quotas import organisations_of

API_KEY_PREFIX = "vera_"
_MAX_KEY_CHARS = 200  # keys are ~62 characters; anything far longer is not one


class ApiKeyVerification:
    """The TokenVerification of API keys (the port in vera_mcp.domain.ports)."""

    def __init__(
        self, client: AsyncVeraClient, *, cache_seconds: float = 30.0, max_entries: int = 10_000
    ) -> None:
        self._client = client
        self._cache_seconds = cache_seconds
        self._max_entries = max_entries
        # sha256(key) -> (expires at, caller): the secret itself is not kept
        self._verified: OrderedDict[bytes, tuple[float, VerifiedCaller]] = OrderedDict()

    @staticmethod
    def handles(token: str) -> bool:
        """Whether the token looks like an API key (other tokens go to other verifiers)."""
        return token.startswith(API_KEY_PREFIX) and len(token) <= _MAX_KEY_CHARS

    async def check(self, token: str) -> VerifiedCaller:
        """The caller of a key; else AuthenticationError (malformed, unknown, revoked, expired, ...)."""
        digest = hashlib.sha256(token.encode()).digest()
        now = time.monotonic()
        cached = self._verified.get(digest)
        if cached is not None and cached[0] > now:
            return cached[1]
        memberships = await self._client.as_caller(ApiKey(token)).whoami()
        if not memberships:  # every principal has its personal scope; without any it can do nothing
            raise AuthenticationError("the API key's principal reaches no scope")
        verified = VerifiedCaller(
            caller=ApiKey(token),
            principal_id=str(memberships[0].principal_id),
            scopes=ALL_SCOPES,  # a key may attempt anything; its roles in SQL decide
            via="api_key",
            organisations=organisations_of(memberships),
        )
        if self._cache_seconds > 0:
            self._verified[digest] = (now + self._cache_seconds, verified)
            self._verified.move_to_end(digest)
            while len(self._verified) > self._max_entries:
                self._verified.popitem(last=False)
        return verified

    async def verify(self, token: str) -> VerifiedCaller | None:
        """The caller of a key, or None when the token is not a valid key (the transport answers 401)."""
        if not self.handles(token):
            return None
        try:
            return await self.check(token)
        except AuthenticationError:
            return None
