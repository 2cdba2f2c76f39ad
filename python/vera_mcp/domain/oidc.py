"""OIDC access tokens, the pure part: the settings of the verifier, what the
claims of a verified token mean (scopes, the membership a first-seen subject
is provisioned with, its display name and email), and the port to the
directory of external identities. Signatures, keys and the database live in
vera_mcp.adapters.oidc.

A token's claims only choose among what the operator configured: the scopes
narrow what it may attempt, and the claim mapping picks one of the operator's
(group, role) pairs. No claim names a group or a role by itself.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from ipaddress import ip_address
from typing import Any, Literal, Protocol, TypeGuard
from urllib.parse import urlsplit
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from vera_mcp.domain.access import Scope

# Asymmetric JWS algorithms only (RFC 7518, RFC 8037). "none" proves nothing,
# and an HS* token verified with a public key lets anyone who has the public
# key (everyone) sign tokens: neither can be configured.
SIGNING_ALGORITHMS = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)
# What a first-seen subject may be given: no claim mapping mints owners.
ProvisionedRole = Literal["viewer", "member", "admin"]
# OpenID Connect Core 1.0, section 2: at most 255 ASCII characters.
MAX_SUBJECT = 255
MAX_ISSUER = 2048
MAX_DISPLAY_NAME = 200
MAX_EMAIL = 320
_GROUP_ID = re.compile(r"[owp]:[0-9a-f]{16}")
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+")
_LOOPBACK_HOSTS = {"localhost"}


class ClaimRule(BaseModel):
    """One rule of the claim mapping: a token whose `claim` equals `value`
    (a string claim) or contains it (a list claim, such as `groups`) is
    provisioned as `role` in `group_id`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    claim: str = Field(min_length=1, max_length=200, description="A top-level claim, e.g. groups")
    value: str = Field(min_length=1, max_length=1000, description="The value it must equal or contain")
    group_id: str = Field(description="The organisation, workspace or project (o:/w:/p:) to join")
    role: ProvisionedRole = "viewer"

    @field_validator("group_id")
    @classmethod
    def _shared_group(cls, value: str) -> str:
        if not _GROUP_ID.fullmatch(value):
            raise ValueError(
                f"group_id {value[:40]!r} is not an organisation, workspace or project id (o:/w:/p: + 16 hex)"
            )
        return value

    def matches(self, claims: Mapping[str, Any]) -> bool:
        found = claims.get(self.claim)
        if isinstance(found, str):
            return found == self.value
        if isinstance(found, list):
            return any(isinstance(item, str) and item == self.value for item in found)
        return False


class OidcSettings(BaseModel):
    """How the MCP server verifies OIDC access tokens (JWTs) and provisions
    their subjects. Exactly one of jwks_url and public_key_pem."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    issuer: str = Field(min_length=1, max_length=MAX_ISSUER, description="The `iss` tokens must carry")
    audience: str = Field(min_length=1, description="The `aud` tokens must carry (this server's resource)")
    jwks_url: str | None = Field(default=None, description="The IdP's JWKS (https, or http on loopback)")
    public_key_pem: str | None = Field(default=None, description="Or one public key, PEM")
    algorithms: tuple[str, ...] = Field(default=("RS256", "ES256"), min_length=1)
    leeway_s: int = Field(default=30, ge=0, le=300, description="Clock skew allowed on exp, nbf and iat")
    max_token_lifetime_s: int = Field(
        default=86_400,
        ge=60,
        le=30 * 86_400,
        description="a token whose exp is further ahead than this, or whose exp - iat exceeds it, is refused",
    )
    scope_prefix: str = Field(default="", max_length=100, description='e.g. "vera:" for "vera:read"')
    claim_mapping: tuple[ClaimRule, ...] = Field(
        default=(), description="First matching rule wins; a subject no rule matches is refused"
    )
    required_claims: tuple[str, ...] = Field(
        default=("iss", "sub", "aud", "exp"), description="Claims every token must carry"
    )
    jwks_cache_s: float = Field(default=300.0, ge=1, le=86_400, description="How long fetched keys are used")
    jwks_refetch_interval_s: float = Field(
        default=30.0, ge=0, le=3600, description="At least this long between fetches an unknown kid triggers"
    )
    jwks_timeout_s: float = Field(default=5.0, gt=0, le=60)
    token_types: tuple[str, ...] = Field(
        default=(),
        description='Accepted `typ` headers, e.g. ["at+jwt"] (RFC 9068) to refuse ID tokens; empty: any',
    )
    max_token_bytes: int = Field(default=16_384, ge=512, le=1_048_576)

    @field_validator("algorithms")
    @classmethod
    def _asymmetric_only(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        refused = [name for name in value if name not in SIGNING_ALGORITHMS]
        if refused:
            raise ValueError(
                f"algorithms {refused} are not allowed: use asymmetric ones, {sorted(SIGNING_ALGORITHMS)}"
            )
        return tuple(dict.fromkeys(value))

    @field_validator("token_types")
    @classmethod
    def _media_types(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(name.lower().removeprefix("application/") for name in value)

    @field_validator("jwks_url")
    @classmethod
    def _keys_over_tls(cls, value: str | None) -> str | None:
        if value is not None and not _https_or_loopback(value):
            raise ValueError(
                "jwks_url must be https (plain http only on a loopback host): keys fetched in the clear "
                "could be replaced by anyone on the path"
            )
        return value

    @field_validator("required_claims")
    @classmethod
    def _always_required(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        # the verifier needs these whatever the operator lists
        return tuple(dict.fromkeys(("iss", "sub", "aud", "exp", *value)))

    @model_validator(mode="after")
    def _one_key_source(self) -> OidcSettings:
        if (self.jwks_url is None) == (self.public_key_pem is None):
            raise ValueError("give exactly one of jwks_url and public_key_pem")
        return self


def _https_or_loopback(url: str) -> bool:
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return True
    if parts.scheme != "http" or not parts.hostname:
        return False
    if parts.hostname in _LOOPBACK_HOSTS:
        return True
    try:
        return ip_address(parts.hostname).is_loopback
    except ValueError:
        return False


def scopes_from_claims(claims: Mapping[str, Any], prefix: str = "") -> frozenset[Scope]:
    """The VERA scopes a token carries: its `scope` claim (space-separated,
    RFC 8693/9068) or else its `scp` claim (a list or a string). With a
    prefix, only prefixed names count (another API's "read" is not ours);
    unknown names are ignored."""
    raw = claims.get("scope")
    if raw is None:
        raw = claims.get("scp")
    if isinstance(raw, str):
        names: Sequence[object] = raw.split()
    elif isinstance(raw, list):
        names = raw
    else:
        return frozenset()
    known = {scope.value: scope for scope in Scope}
    found = set()
    for name in names:
        if not isinstance(name, str) or not name.startswith(prefix):
            continue
        scope = known.get(name[len(prefix) :])
        if scope is not None:
            found.add(scope)
    return frozenset(found)


def membership_for(claims: Mapping[str, Any], rules: Sequence[ClaimRule]) -> ClaimRule | None:
    """The first rule the claims match, or None (the subject is not provisioned)."""
    return next((rule for rule in rules if rule.matches(claims)), None)


def _printable(text: str) -> str:
    """Text without control or format characters, whitespace collapsed."""
    kept = "".join(ch for ch in text if unicodedata.category(ch)[0] != "C")
    return " ".join(kept.split())


@dataclass(frozen=True, slots=True, kw_only=True)
class Profile:
    """What a first-seen subject is called: its principal's display name and email."""

    display_name: str
    email: str | None


def profile_from_claims(claims: Mapping[str, Any], subject: str) -> Profile:
    """Display name from `name`, `preferred_username`, `email` or else the
    subject (cut to 200 characters); the email only when it is one address."""
    email = claims.get("email")
    if not (isinstance(email, str) and len(email) <= MAX_EMAIL and _EMAIL.fullmatch(email)):
        email = None
    for candidate in (claims.get("name"), claims.get("preferred_username"), email, subject):
        if isinstance(candidate, str) and _printable(candidate):
            return Profile(display_name=_printable(candidate)[:MAX_DISPLAY_NAME].strip(), email=email)
    return Profile(display_name=f"OIDC subject {_printable(subject)[:150]}".strip(), email=email)


def subject_problem(subject: object) -> str | None:
    """Why `sub` cannot name an identity, or None when it can."""
    if not isinstance(subject, str) or not subject:
        return "sub is not a non-empty string"
    if len(subject) > MAX_SUBJECT:
        return f"sub is over {MAX_SUBJECT} characters"
    if any(unicodedata.category(ch) == "Cc" for ch in subject):
        return "sub contains control characters"
    return None


class IdentityDirectory(Protocol):
    """Where external identities map to principals (vera.external_identities)."""

    async def principal_for(self, issuer: str, subject: str) -> UUID | None:
        """The principal the identity was provisioned as, or None when never seen.

        Raises PrincipalDisabledError when that principal is disabled."""
        ...

    async def provision(
        self, issuer: str, subject: str, profile: Profile, group_id: str, role: ProvisionedRole
    ) -> UUID:
        """Provision a first-seen identity, exactly once; its principal."""
        ...


def lifetime_problem(
    claims: Mapping[str, Any], *, now: float, max_lifetime_s: int, leeway_s: int
) -> str | None:
    """Why a token's lifetime is refused (exp too far ahead, exp - iat too long), or None.

    Bounds what a leaked token is worth and keeps absurd values (exp 1e300) out of the
    caller's expiry, whatever the IdP signed."""
    exp, iat = claims.get("exp"), claims.get("iat")
    if not _finite_number(exp):
        return "exp is not a finite number"
    if exp - now > max_lifetime_s + leeway_s:
        return f"exp is more than {max_lifetime_s} s ahead (max_token_lifetime_s)"
    if iat is not None:
        if not _finite_number(iat):
            return "iat is not a finite number"
        if exp - iat > max_lifetime_s:
            return f"its lifetime exp - iat is over {max_lifetime_s} s (max_token_lifetime_s)"
    return None


def _finite_number(value: object) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
