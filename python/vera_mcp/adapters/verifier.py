"""The SDK's TokenVerifier over VERA's ordered TokenVerifications (API keys
first, then OIDC): the first that recognises a token decides. The AccessToken
it hands the SDK carries the VerifiedCaller, so a tool finds its caller in the
request (see runner.current_caller)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from mcp.server.auth.provider import AccessToken
from pydantic import InstanceOf

from vera_mcp.adapters.auth_throttle import AuthThrottledError, FailedAuthThrottle, client_address, key_prefix
from vera_mcp.domain.access import VerifiedCaller
from vera_mcp.domain.ports import TokenVerification


class VeraAccessToken(AccessToken):
    """An AccessToken that remembers who VERA verified."""

    verified: InstanceOf[VerifiedCaller]  # kept as it is: only checked to be one


def access_token(token: str, verified: VerifiedCaller, resource: str | None) -> VeraAccessToken:
    return VeraAccessToken(
        token=token,
        client_id=verified.principal_id,
        subject=verified.principal_id,
        scopes=sorted(scope.value for scope in verified.scopes),
        expires_at=verified.expires_at,
        resource=resource,
        verified=verified,
    )


class ChainedTokenVerifier:
    """Implements mcp.server.auth.provider.TokenVerifier; `resource` is this server's
    resource URL, reported as the resource of every token a verifier accepted
    (each verifier checks audience itself).

    With a throttle, a token no verifier accepts is counted against the client's address
    and key prefix and refused from memory for a while (adapters/auth_throttle.py);
    `on_refusal(reason)` hears of each refusal ("refused", "remembered", "throttled")."""

    def __init__(
        self,
        verifications: Sequence[TokenVerification],
        resource: str | None = None,
        *,
        throttle: FailedAuthThrottle | None = None,
    ) -> None:
        self.verifications = list(verifications)
        self.resource = resource
        self.throttle = throttle
        self.on_refusal: Callable[[str], None] = lambda _reason: None

    async def verify_token(self, token: str) -> AccessToken | None:
        throttle = self.throttle
        if throttle is None:
            verified = await self._first(token)
            return None if verified is None else access_token(token, verified, self.resource)
        digest = throttle.digest(token)
        if throttle.refused_recently(digest):
            self.on_refusal("remembered")
            return None
        address, prefix = client_address.get(), key_prefix(token)
        try:
            throttle.check(address, prefix)
        except AuthThrottledError:
            self.on_refusal("throttled")
            raise
        verified = await self._first(token)  # DatabaseUnavailableError propagates: neither counted nor cached
        if verified is None:
            throttle.failed(digest, address, prefix)
            self.on_refusal("refused")
            return None
        return access_token(token, verified, self.resource)

    async def _first(self, token: str) -> VerifiedCaller | None:
        for verification in self.verifications:
            verified = await verification.verify(token)
            if verified is not None:
                return verified
        return None
