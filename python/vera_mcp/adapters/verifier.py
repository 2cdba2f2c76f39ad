"""The SDK's TokenVerifier over VERA's ordered TokenVerifications (API keys
first, then OIDC): the first that recognises a token decides. The AccessToken
it hands the SDK carries the VerifiedCaller, so a tool finds its caller in the
request (see runner.current_caller)."""

from __future__ import annotations

from collections.abc import Sequence

from mcp.server.auth.provider import AccessToken
from pydantic import InstanceOf

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
    (each verifier checks audience itself)."""

    def __init__(self, verifications: Sequence[TokenVerification], resource: str | None = None) -> None:
        self.verifications = list(verifications)
        self.resource = resource

    async def verify_token(self, token: str) -> AccessToken | None:
        for verification in self.verifications:
            verified = await verification.verify(token)
            if verified is not None:
                return access_token(token, verified, self.resource)
        return None
