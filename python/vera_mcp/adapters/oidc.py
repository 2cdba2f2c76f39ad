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

import asyncio
import base64
import binascii
import json
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol
from uuid import UUID

import httpx
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa
from joserfc import jwt
from joserfc.errors import ClaimError, JoseError
from joserfc.jwk import ECKey, Key, OKPKey, RSAKey, import_key
from joserfc.jwt import ClaimsOption

from vera_client.adapters.postgres.executor import AsyncExecutor
from vera_client.api import access as access_api
from vera_client.domain.callers import Operator, Principal
from vera_client.domain.errors import (
    ConfigurationError,
    DatabaseUnavailableError,
    PrincipalDisabledError,
    VeraError,
)
from vera_mcp.domain.access import VerifiedCaller
from vera_mcp.domain.oidc import (
    IdentityDirectory,
    OidcSettings,
    Profile,
    ProvisionedRole,
    membership_for,
    profile_from_claims,
    scopes_from_claims,
    subject_problem,
)

log = logging.getLogger("vera_mcp.oidc")

# Key types of asymmetric signatures; an "oct" (shared secret) key in a JWKS is never used.
_SIGNING_KEY_TYPES = {"RSA", "EC", "OKP"}
_MAX_JWKS_BYTES = 1 << 20


class TokenRefused(Exception):
    """Why a token is not accepted (logged at debug level, never with the token)."""


def _shown(value: object) -> str:
    """An attacker-controlled header value, safe to log: repr, cut short."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# --- keys ---------------------------------------------------------------------------------------


class KeySource(Protocol):
    """Where the key that verifies a token comes from."""

    async def key_for(self, kid: str | None, alg: str) -> Key | None:
        """The key for the token's `kid` and `alg`, or None when there is none."""
        ...

    async def aclose(self) -> None:
        """Release what the source holds (an HTTP client of its own)."""
        ...


def load_public_key(pem: str) -> Key:
    """A PEM public key or certificate (RSA, EC or Ed25519/Ed448) as a JOSE key.

    ConfigurationError for anything else, a private key or a shared secret
    included: the verifier only ever holds public keys."""
    public: object
    try:
        if "-----BEGIN CERTIFICATE-----" in pem:
            public = x509.load_pem_x509_certificate(pem.encode()).public_key()
        else:
            public = serialization.load_pem_public_key(pem.encode())
    except (ValueError, TypeError) as exc:
        raise ConfigurationError(
            "public_key_pem is not a PEM public key (-----BEGIN PUBLIC KEY-----) or certificate"
        ) from exc
    if isinstance(public, rsa.RSAPublicKey):
        return RSAKey.import_key(public)
    if isinstance(public, ec.EllipticCurvePublicKey):
        return ECKey.import_key(public)
    if isinstance(public, ed25519.Ed25519PublicKey | ed448.Ed448PublicKey):
        return OKPKey.import_key(public)
    raise ConfigurationError(f"public_key_pem holds a {type(public).__name__}, not an RSA, EC or OKP key")


class StaticKey:
    """One configured public key: it verifies every token, whatever its `kid`."""

    def __init__(self, key: Key) -> None:
        self._key = key

    async def key_for(self, kid: str | None, alg: str) -> Key | None:
        return self._key

    async def aclose(self) -> None:
        return None


def parse_jwks(document: object) -> dict[str | None, list[Key]]:
    """The signing keys of a JWKS document, by `kid` (None: keys without one).

    Keys that are not asymmetric signing keys (an "oct" secret, `use` other
    than "sig", a type or curve this library does not know) are skipped, as
    RFC 7517 section 5 asks of keys a reader does not understand."""
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise ValueError('not a JWK set: expected {"keys": [...]}')
    found: dict[str | None, list[Key]] = {}
    for entry in document["keys"]:
        if not isinstance(entry, dict) or entry.get("kty") not in _SIGNING_KEY_TYPES:
            continue
        if entry.get("use", "sig") != "sig":
            continue
        operations = entry.get("key_ops")
        if operations is not None and (not isinstance(operations, list) or "verify" not in operations):
            continue
        public = {
            name: value for name, value in entry.items() if name not in {"d", "p", "q", "dp", "dq", "qi"}
        }
        try:
            key = import_key(public)
        except (JoseError, ValueError, TypeError) as exc:
            log.debug("JWKS key %s skipped: %s", _shown(entry.get("kid")), exc)
            continue
        kid = entry.get("kid")
        found.setdefault(kid if isinstance(kid, str) else None, []).append(key)
    return found


class JwksKeys:
    """The IdP's keys from its JWKS URL, fetched with httpx and cached.

    Keys are refetched when the cache is older than `cache_s`, and when a
    token names a `kid` the cache lacks (key rotation: a new key verifies at
    once, a removed one stops at the next fetch). Fetches are at least
    `refetch_interval_s` apart, and concurrent requests share one fetch, so a
    flood of tokens with made-up kids cannot hammer the IdP. A failed fetch
    keeps the keys already known (the IdP being down is no reason to refuse
    tokens it signed) and is retried after the interval."""

    def __init__(
        self,
        url: str,
        *,
        http: httpx.AsyncClient,
        cache_s: float = 300.0,
        refetch_interval_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
        owns_http: bool = False,
    ) -> None:
        self.url = url
        self._http = http
        self._owns_http = owns_http
        self._cache_s = cache_s
        self._interval_s = refetch_interval_s
        self._clock = clock
        self._keys: dict[str | None, list[Key]] = {}
        self._fetched_at: float | None = None  # last successful fetch
        self._attempted_at: float | None = None  # last fetch, successful or not
        self._lock = asyncio.Lock()
        self.fetches = 0  # how many times the URL was requested (for tests and metrics)

    async def aclose(self) -> None:
        """Close the HTTP client if it was made for these keys alone."""
        if self._owns_http:
            await self._http.aclose()

    def _may_fetch(self) -> bool:
        return self._attempted_at is None or self._clock() - self._attempted_at >= self._interval_s

    def _expired(self) -> bool:
        return self._fetched_at is None or self._clock() - self._fetched_at >= self._cache_s

    def _find(self, kid: str | None, alg: str) -> Key | None:
        if kid is None:
            # a token without kid: only unambiguous when the set has one key
            every = [key for keys in self._keys.values() for key in keys]
            candidates = every if len(every) == 1 else []
        else:
            candidates = self._keys.get(kid, [])
        for key in candidates:
            declared = key.get("alg")
            if declared is None or declared == alg:
                return key
        return None

    async def key_for(self, kid: str | None, alg: str) -> Key | None:
        if self._expired():
            await self._refresh(self._expired)
        key = self._find(kid, alg)
        if key is None:
            await self._refresh(lambda: self._find(kid, alg) is None)
            key = self._find(kid, alg)
        return key

    async def _refresh(self, still_needed: Callable[[], bool]) -> None:
        """Fetch the keys if still needed once the lock is ours, and if the interval allows.

        A request that finds a fetch in flight waits for it (its key may be in it)."""
        async with self._lock:
            # another request may have fetched while this one waited for the lock
            if not still_needed() or not self._may_fetch():
                return
            self._attempted_at = self._clock()
            self.fetches += 1
            try:
                keys = await self._fetch()
            except (httpx.HTTPError, ValueError, RecursionError) as exc:
                log.warning("OIDC: fetching the JWKS %s failed (%s); keeping %d known keys",
                            self.url, exc, sum(len(k) for k in self._keys.values()))  # fmt: skip
                return
            self._keys = keys
            self._fetched_at = self._attempted_at
            log.debug("OIDC: fetched %d keys from %s", sum(len(k) for k in keys.values()), self.url)

    async def _fetch(self) -> dict[str | None, list[Key]]:
        body = bytearray()
        async with self._http.stream("GET", self.url, headers={"Accept": "application/json"}) as response:
            response.raise_for_status()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > _MAX_JWKS_BYTES:  # read no further than that
                    raise ValueError(f"JWKS is over {_MAX_JWKS_BYTES} bytes")
        return parse_jwks(json.loads(body))


# --- identities ---------------------------------------------------------------------------------


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
                f"algorithm {_shown(alg)} is not allowed ({', '.join(self.settings.algorithms)})"
            )
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise TokenRefused("kid is not a string")
        if self.settings.token_types and _media_type(header.get("typ")) not in self.settings.token_types:
            raise TokenRefused(
                f"typ {_shown(header.get('typ'))} is not one of {', '.join(self.settings.token_types)}"
            )
        key = await self._keys.key_for(kid, alg)
        if key is None:
            raise TokenRefused(f"no key for kid {_shown(kid)} and algorithm {alg}")
        try:
            decoded = jwt.decode(token, key, algorithms=list(self.settings.algorithms))
        except Exception as exc:  # whatever a crafted token makes the library raise, it is a refusal
            raise TokenRefused(
                f"signature not verified with kid {_shown(kid)}: {type(exc).__name__}"
            ) from exc
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
        problem = subject_problem(claims.get("sub"))
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
