"""OIDC access tokens: the MCP server's second token verifier (beside API
keys). A JWT is accepted when its signature verifies with a configured public
key or a key of the IdP's live JWKS, its algorithm is on the allow-list, and
its issuer, audience, lifetime and required claims hold; its subject then maps
to a VERA principal, provisioned just in time the first time it is seen.

Every refusal is `None` (the transport answers 401) with the reason logged at
debug level; the token itself is never logged. A database that cannot be
reached is not the token's fault: DatabaseUnavailableError propagates.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any
from uuid import UUID

import httpx
from joserfc import jwt
from joserfc.errors import ClaimError
from joserfc.jwt import ClaimsOption

from vera_client.adapters.postgres.executor import AsyncExecutor
from vera_client.api import access as access_api
from vera_client.domain.callers import Operator, Principal
from vera_client.domain.errors import (
    DatabaseUnavailableError,
    PrincipalDisabledError,
    VeraError,
)
from vera_mcp.adapters.oidc_keys import JwksKeys, KeySource, StaticKey, load_public_key, shown
from vera_mcp.domain.access import VerifiedCaller
from vera_mcp.domain.oidc import (
    IdentityDirectory,
    OidcSettings,
    Profile,
    ProvisionedRole,
    lifetime_problem,
    membership_for,
    profile_from_claims,
    scopes_from_claims,
    subject_problem,
)

log = logging.getLogger("vera_mcp.oidc")


class TokenRefused(Exception):
    """Why a token is not accepted (logged at debug level, never with the token)."""


# --- keys ---------------------------------------------------------------------------------------


class PostgresIdentityDirectory:
    """External identities in vera.external_identities, through the executor
    of the gateway's pool (its login must be vera_gateway)."""

    def __init__(self, executor: AsyncExecutor) -> None:
        self._executor = executor

    async def principal_for(self, issuer: str, subject: str) -> UUID | None:
        found: UUID | None = await self._executor.run(
            Operator(), access_api.principal_for_identity(issuer, subject)
        )
        return found

    async def provision(
        self, issuer: str, subject: str, profile: Profile, group_id: str, role: ProvisionedRole
    ) -> UUID:
        call = access_api.provision_identity(
            issuer,
            subject,
            display_name=profile.display_name,
            email=profile.email,
            group_id=group_id,
            role=role,
        )
        principal: UUID = await self._executor.run(Operator(), call)
        return principal


# --- the verifier -------------------------------------------------------------------------------


def _header(token: str) -> dict[str, Any]:
    """The protected header of a compact JWS (not yet verified: only used to pick the key)."""
    parts = token.split(".")
    if len(parts) != 3:
        raise TokenRefused(f"not a compact JWS ({len(parts)} segments, expected 3)")
    segment = parts[0]
    try:
        header = json.loads(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))
    except (binascii.Error, ValueError, RecursionError) as exc:
        raise TokenRefused("the header is not base64url JSON") from exc
    if not isinstance(header, dict):
        raise TokenRefused("the header is not a JSON object")
    return header


def _media_type(typ: object) -> str | None:
    """A `typ` header as RFC 7515 4.1.9 compares it: lower case, "application/" dropped."""
    if not isinstance(typ, str):
        return None
    return typ.lower().removeprefix("application/")


class OidcVerifier:
    """TokenVerification for OIDC access tokens (JWTs), with just-in-time provisioning."""

    def __init__(
        self,
        settings: OidcSettings,
        keys: KeySource,
        directory: IdentityDirectory,
        *,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self._keys = keys
        self._directory = directory
        self._now = now
        options: dict[str, ClaimsOption] = {name: {"essential": True} for name in settings.required_claims}
        options["iss"] = {"essential": True, "value": settings.issuer}
        options["aud"] = {"essential": True, "value": settings.audience}
        self._claim_options = options

    async def aclose(self) -> None:
        """Release the key source (the JWKS client the verifier made itself)."""
        await self._keys.aclose()

    async def verify(self, token: str) -> VerifiedCaller | None:
        try:
            return await self._verify(token)
        except TokenRefused as refused:
            log.debug("OIDC token refused: %s", refused)
            return None

    async def _verify(self, token: str) -> VerifiedCaller:
        claims = await self._verified_claims(token)
        subject: str = claims["sub"]
        principal = await self._principal(claims, subject)
        exp = claims["exp"]
        return VerifiedCaller(
            caller=Principal(principal),
            principal_id=str(principal),
            scopes=scopes_from_claims(claims, self.settings.scope_prefix),
            via="oidc",
            expires_at=int(exp),
        )

    async def _verified_claims(self, token: str) -> dict[str, Any]:
        """The claims of a token whose signature, algorithm and claims hold."""
        if not token or len(token) > self.settings.max_token_bytes:
            raise TokenRefused(f"empty or over {self.settings.max_token_bytes} bytes")
        header = _header(token)
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in self.settings.algorithms:
            raise TokenRefused(
                f"algorithm {shown(alg)} is not allowed ({', '.join(self.settings.algorithms)})"
            )
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise TokenRefused("kid is not a string")
        if self.settings.token_types and _media_type(header.get("typ")) not in self.settings.token_types:
            raise TokenRefused(
                f"typ {shown(header.get('typ'))} is not one of {', '.join(self.settings.token_types)}"
            )
        key = await self._keys.key_for(kid, alg)
        if key is None:
            raise TokenRefused(f"no key for kid {shown(kid)} and algorithm {alg}")
        try:
            decoded = jwt.decode(token, key, algorithms=list(self.settings.algorithms))
        except Exception as exc:  # whatever a crafted token makes the library raise, it is a refusal
            raise TokenRefused(f"signature not verified with kid {shown(kid)}: {type(exc).__name__}") from exc
        claims = decoded.claims
        registry = jwt.JWTClaimsRegistry(
            now=lambda: int(self._now()), leeway=self.settings.leeway_s, **self._claim_options
        )
        try:
            registry.validate(claims)
        except ClaimError as exc:
            raise TokenRefused(f"claim {exc.claim!r} refused: {exc.description}") from exc
        except (TypeError, ValueError, OverflowError) as exc:
            raise TokenRefused(f"claims not checkable: {type(exc).__name__}") from exc
        problem = lifetime_problem(
            claims, now=self._now(), max_lifetime_s=self.settings.max_token_lifetime_s,
            leeway_s=self.settings.leeway_s,
        ) or subject_problem(claims.get("sub"))  # fmt: skip
        if problem is not None:
            raise TokenRefused(problem)
        return claims

    async def _principal(self, claims: Mapping[str, Any], subject: str) -> UUID:
        """The principal of the token's subject, provisioned when first seen."""
        issuer = self.settings.issuer
        try:
            found = await self._directory.principal_for(issuer, subject)
            if found is not None:
                return found
            rule = membership_for(claims, self.settings.claim_mapping)
            if rule is None:
                raise TokenRefused("first-seen subject matches no claim mapping rule: not provisioned")
            principal = await self._directory.provision(
                issuer, subject, profile_from_claims(claims, subject), rule.group_id, rule.role
            )
        except PrincipalDisabledError as exc:
            raise TokenRefused("the subject's principal is disabled") from exc
        except DatabaseUnavailableError:
            raise
        except VeraError as exc:  # a mapping to a group that no longer exists, say
            log.warning("OIDC: provisioning a first-seen subject failed: %s", exc)
            raise TokenRefused(f"provisioning failed: {type(exc).__name__}") from exc
        log.info("OIDC: provisioned a first-seen subject of %s as principal %s", issuer, principal)
        return principal


def oidc_verifier(
    settings: OidcSettings, executor: AsyncExecutor, *, http: httpx.AsyncClient | None = None
) -> OidcVerifier:
    """The verifier the server runs: keys from settings (a JWKS fetched with
    `http`, or a client of its own that `aclose()` closes, or the PEM key),
    identities through the gateway's executor."""
    keys: KeySource
    if settings.jwks_url is not None:
        client = http or httpx.AsyncClient(timeout=settings.jwks_timeout_s, follow_redirects=False)
        keys = JwksKeys(
            settings.jwks_url,
            http=client,
            cache_s=settings.jwks_cache_s,
            refetch_interval_s=settings.jwks_refetch_interval_s,
            owns_http=http is None,
        )
    else:
        assert settings.public_key_pem is not None  # OidcSettings requires one of the two
        keys = StaticKey(load_public_key(settings.public_key_pem))
    return OidcVerifier(settings, keys, PostgresIdentityDirectory(executor))
