"""The keys OIDC access tokens are verified with: a configured public key (PEM, or a
certificate), or the IdP's JWKS fetched over HTTPS, cached and refreshed on an unknown kid
at most so often. Only asymmetric signing keys are used."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from typing import Protocol

import httpx
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa
from joserfc.errors import JoseError
from joserfc.jwk import ECKey, Key, OKPKey, RSAKey, import_key

from vera_client.domain.errors import ConfigurationError

log = logging.getLogger("vera_mcp.oidc")

# Key types of asymmetric signatures; an "oct" (shared secret) key in a JWKS is never used.
_SIGNING_KEY_TYPES = {"RSA", "EC", "OKP"}
_MAX_JWKS_BYTES = 1 << 20


def shown(value: object) -> str:
    """An attacker-controlled header value, safe to log: repr, cut short."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


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
            log.debug("JWKS key %s skipped: %s", shown(entry.get("kid")), exc)
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
