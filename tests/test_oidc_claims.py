"""The pure part of OIDC (vera_mcp.domain.oidc): settings that cannot be
configured unsafely, scopes, the claim mapping and the provisioned profile."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from vera_mcp.domain.access import Scope
from vera_mcp.domain.oidc import (
    ClaimRule,
    OidcSettings,
    membership_for,
    profile_from_claims,
    scopes_from_claims,
    subject_problem,
)

BASE: dict[str, Any] = {"issuer": "https://idp.test", "audience": "https://vera.test/mcp",
                        "jwks_url": "https://idp.test/jwks"}  # fmt: skip


def test_defaults_are_asymmetric_and_require_the_core_claims() -> None:
    settings = OidcSettings(**BASE)
    assert settings.algorithms == ("RS256", "ES256")
    assert {"iss", "sub", "aud", "exp"} <= set(settings.required_claims)
    assert set(OidcSettings(**BASE, required_claims=("iat",)).required_claims) == {
        "iss",
        "sub",
        "aud",
        "exp",
        "iat",
    }


@pytest.mark.parametrize("algorithms", [("none",), ("HS256",), ("RS256", "HS512"), ()])
def test_unsafe_algorithms_cannot_be_configured(algorithms: tuple[str, ...]) -> None:
    with pytest.raises(ValidationError):
        OidcSettings(**BASE, algorithms=algorithms)


@pytest.mark.parametrize(
    ("url", "allowed"),
    [("https://idp.test/jwks", True), ("http://127.0.0.1:8080/jwks", True), ("http://localhost/jwks", True),
     ("http://[::1]/jwks", True), ("http://idp.test/jwks", False), ("ftp://idp.test/jwks", False),
     ("http://127.0.0.1.evil.test/jwks", False), ("https:///jwks", False)],
)  # fmt: skip
def test_keys_are_fetched_over_tls_unless_on_loopback(url: str, allowed: bool) -> None:
    if allowed:
        assert OidcSettings(**(BASE | {"jwks_url": url})).jwks_url == url
    else:
        with pytest.raises(ValidationError, match="https"):
            OidcSettings(**(BASE | {"jwks_url": url}))


def test_exactly_one_key_source() -> None:
    with pytest.raises(ValidationError, match="exactly one"):
        OidcSettings(**BASE, public_key_pem="-----BEGIN PUBLIC KEY-----")
    with pytest.raises(ValidationError, match="exactly one"):
        OidcSettings(**(BASE | {"jwks_url": None}))


@pytest.mark.parametrize("group_id", ["u:0000000000000001", "o:xyz", "", "o:0000000000000001 "])
def test_a_rule_names_a_shared_group(group_id: str) -> None:
    with pytest.raises(ValidationError):
        ClaimRule(claim="groups", value="x", group_id=group_id)


def test_a_rule_cannot_grant_owner() -> None:
    with pytest.raises(ValidationError):
        ClaimRule(claim="groups", value="x", group_id="o:0000000000000001", role="owner")  # type: ignore[arg-type]


def test_settings_read_from_a_mapping_like_the_environment_gives_them() -> None:
    settings = OidcSettings.model_validate(
        BASE | {"claim_mapping": [{"claim": "groups", "value": "eng", "group_id": "w:00000000000000ab",
                                   "role": "member"}], "leeway_s": "10"}
    )  # fmt: skip
    assert settings.claim_mapping[0].role == "member" and settings.leeway_s == 10


@pytest.mark.parametrize(
    ("claims", "expected"),
    [
        ({"scope": "vera:read vera:propose openid"}, {Scope.READ, Scope.PROPOSE}),
        ({"scope": "read vera:snapshot"}, {Scope.SNAPSHOT}),
        ({"scp": ["vera:review", "vera:feedback", 3]}, {Scope.REVIEW, Scope.FEEDBACK}),
        ({"scp": "vera:read"}, {Scope.READ}),
        ({"scope": "vera:superuser vera:READ"}, set()),
        ({"scope": "vera:admin"}, {Scope.ADMIN}),  # the HTTP API's keys, principals, members, sources
        ({"scope": 42}, set()),
        ({}, set()),
    ],
)
def test_scopes_with_a_prefix(claims: dict[str, Any], expected: set[Scope]) -> None:
    assert scopes_from_claims(claims, "vera:") == expected


def test_scopes_without_a_prefix() -> None:
    assert scopes_from_claims({"scope": "read feedback profile"}) == {Scope.READ, Scope.FEEDBACK}


def test_first_matching_rule_wins() -> None:
    rules = (
        ClaimRule(claim="groups", value="admins", group_id="o:0000000000000001", role="admin"),
        ClaimRule(claim="groups", value="eng", group_id="w:0000000000000002", role="member"),
        ClaimRule(claim="hd", value="example.com", group_id="p:0000000000000003"),
    )
    assert membership_for({"groups": ["eng", "admins"]}, rules) is rules[0]
    assert membership_for({"groups": ["eng"], "hd": "example.com"}, rules) is rules[1]
    assert membership_for({"groups": "eng"}, rules) is rules[1]  # a string claim must equal the value
    assert membership_for({"groups": "engineering"}, rules) is None
    assert membership_for({"hd": "example.com"}, rules) is rules[2]
    assert membership_for({"groups": [["eng"]], "hd": ["example.org"]}, rules) is None
    assert membership_for({}, rules) is None


def test_profile_from_claims() -> None:
    profile = profile_from_claims({"name": "  Ada\u200b  Lovelace\n", "email": "ada@example.com"}, "s1")
    assert (profile.display_name, profile.email) == ("Ada Lovelace", "ada@example.com")
    assert profile_from_claims({"preferred_username": "ada"}, "s1").display_name == "ada"
    assert profile_from_claims({"email": "not an address"}, "s1").email is None
    assert profile_from_claims({"email": "a@b.c", "name": 5}, "s1").display_name == "a@b.c"
    assert profile_from_claims({}, "s1").display_name == "s1"
    assert len(profile_from_claims({"name": "x" * 500}, "s1").display_name) == 200


@pytest.mark.parametrize(
    ("subject", "problem"),
    [("abc", None), ("x" * 255, None), ("", "non-empty"), (None, "non-empty"), (7, "non-empty"),
     ("x" * 256, "over 255"), ("a\x00b", "control")],
)  # fmt: skip
def test_subject_problem(subject: object, problem: str | None) -> None:
    found = subject_problem(subject)
    assert found is None if problem is None else (found is not None and problem in found)
