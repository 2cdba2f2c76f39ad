"""OIDC access tokens against a real JWKS served on 127.0.0.1 (tests/oidc_idp.py):
what is accepted, what is refused and why, key rotation and the refetch rate
limit. Identities go to an in-memory directory here; pg_tests/access/test_oidc.py runs
the same verifier against PostgreSQL."""

from __future__ import annotations

import asyncio
import datetime
import logging
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any
from uuid import UUID

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.oidc_idp import AUDIENCE, TestIdp, running_idp
from vera_client.domain.callers import Principal
from vera_client.domain.errors import ConfigurationError, PrincipalDisabledError
from vera_mcp.adapters.oidc import OidcVerifier
from vera_mcp.adapters.oidc_keys import JwksKeys, StaticKey, load_public_key, parse_jwks
from vera_mcp.domain.access import Scope, VerifiedCaller
from vera_mcp.domain.oidc import ClaimRule, OidcSettings, Profile, ProvisionedRole

GROUP = "w:00000000000000aa"
RULES = (ClaimRule(claim="groups", value="lumen-engineers", group_id=GROUP, role="member"),)


class MemoryDirectory:
    """IdentityDirectory in memory, recording what it was asked."""

    def __init__(self) -> None:
        self.principals: dict[tuple[str, str], UUID] = {}
        self.disabled: set[UUID] = set()
        self.provisioned: list[tuple[str, str, Profile, str, str]] = []

    async def principal_for(self, issuer: str, subject: str) -> UUID | None:
        found = self.principals.get((issuer, subject))
        if found in self.disabled:
            raise PrincipalDisabledError("disabled")
        return found

    async def provision(
        self, issuer: str, subject: str, profile: Profile, group_id: str, role: ProvisionedRole
    ) -> UUID:
        self.provisioned.append((issuer, subject, profile, group_id, role))
        return self.principals.setdefault((issuer, subject), uuid.uuid4())


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def idp() -> Iterator[TestIdp]:
    with running_idp() as server:
        server.add_key("rsa-1", "RS256")
        server.add_key("ec-1", "ES256")
        yield server


def settings(idp: TestIdp, **overrides: Any) -> OidcSettings:
    values: dict[str, Any] = {
        "issuer": idp.issuer,
        "audience": AUDIENCE,
        "jwks_url": idp.jwks_url,
        "scope_prefix": "vera:",
        "claim_mapping": RULES,
        "leeway_s": 5,
    }
    return OidcSettings(**(values | overrides))


class Harness:
    """A verifier over the test IdP's JWKS, with a clock the test moves, run on one event loop."""

    def __init__(self, idp: TestIdp, *, refetch_interval_s: float = 30.0, cache_s: float = 300.0,
                 **overrides: Any) -> None:  # fmt: skip
        self.idp = idp
        self.clock = Clock()
        self.directory = MemoryDirectory()
        self.settings = settings(idp, **overrides)
        self.loop = asyncio.new_event_loop()
        self.http = httpx.AsyncClient(timeout=5)
        assert self.settings.jwks_url is not None
        self.keys = JwksKeys(self.settings.jwks_url, http=self.http, cache_s=cache_s,
                             refetch_interval_s=refetch_interval_s, clock=self.clock)  # fmt: skip
        self.verifier = OidcVerifier(self.settings, self.keys, self.directory)
        HARNESSES.append(self)

    def verify(self, token: str) -> VerifiedCaller | None:
        return self.loop.run_until_complete(self.verifier.verify(token))

    def verify_all(self, tokens: list[str]) -> list[VerifiedCaller | None]:
        async def run() -> list[VerifiedCaller | None]:
            return list(await asyncio.gather(*(self.verifier.verify(t) for t in tokens)))

        return self.loop.run_until_complete(run())

    def close(self) -> None:
        self.loop.run_until_complete(self.http.aclose())
        self.loop.close()


HARNESSES: list[Harness] = []


@pytest.fixture(autouse=True)
def _close_harnesses() -> Iterator[None]:
    yield
    while HARNESSES:
        HARNESSES.pop().close()


@pytest.fixture
def harness(idp: TestIdp) -> Harness:
    idp.publish("rsa-1", "ec-1")
    return Harness(idp)


@pytest.mark.parametrize("kid", ["rsa-1", "ec-1"])
def test_a_valid_token_becomes_a_principal_with_its_scopes(harness: Harness, idp: TestIdp, kid: str) -> None:
    exp = int(time.time()) + 120
    verified = harness.verify(idp.token(kid, "alice", exp=exp))
    assert verified is not None
    assert isinstance(verified.caller, Principal)
    assert verified.principal_id == str(verified.caller.principal_id)
    assert verified.scopes == {Scope.READ, Scope.FEEDBACK}
    assert verified.via == "oidc" and verified.expires_at == exp
    [(issuer, subject, profile, group, role)] = harness.directory.provisioned
    assert (issuer, subject, group, role) == (idp.issuer, "alice", GROUP, "member")
    assert profile == Profile(display_name="Alice", email="alice@example.com")


def test_a_known_subject_is_not_provisioned_again(harness: Harness, idp: TestIdp) -> None:
    first = harness.verify(idp.token("rsa-1", "bob"))
    again = harness.verify(idp.token("ec-1", "bob"))
    assert first is not None and again is not None and first.caller == again.caller
    assert len(harness.directory.provisioned) == 1


def _refusal(harness: Harness, token: str, caplog: pytest.LogCaptureFixture) -> str:
    """The debug reason the verifier logged for refusing token (which must not appear in it)."""
    caplog.clear()
    provisioned = list(harness.directory.provisioned)
    with caplog.at_level(logging.DEBUG, logger="vera_mcp.oidc"):
        assert harness.verify(token) is None
    text = "\n".join(record.getMessage() for record in caplog.records)
    signature = token.rsplit(".", maxsplit=1)[-1]
    assert token not in text and (not signature or signature not in text)
    assert harness.directory.provisioned == provisioned
    return text


@pytest.mark.parametrize(
    ("claims_at", "reason"),
    [
        (lambda now: {"exp": now - 60}, "'exp'"),
        (lambda now: {"nbf": now + 120}, "'nbf'"),
        (lambda now: {"iat": now + 120}, "'iat'"),
        (lambda _now: {"aud": "https://someone-else.test"}, "'aud'"),
        (lambda _now: {"aud": ["https://a.test", "https://b.test"]}, "'aud'"),
        (lambda _now: {"iss": "https://evil.test/realm"}, "'iss'"),
        (lambda _now: {"exp": None}, "exp"),
        (lambda _now: {"sub": None}, "sub"),
        (lambda _now: {"sub": "x" * 256}, "sub is over 255"),
        (lambda _now: {"sub": "bad\nsubject"}, "control characters"),
        (lambda _now: {"groups": ["other-team"]}, "matches no claim mapping rule"),
        (lambda _now: {"groups": None}, "matches no claim mapping rule"),
        (lambda _now: {"exp": 1e300}, "more than 86400 s ahead"),
        (lambda now: {"exp": now + 2 * 86_400}, "more than 86400 s ahead"),
        (lambda now: {"iat": now - 3 * 86_400, "exp": now + 60}, "lifetime"),
    ],
    ids=[
        "expired",
        "not yet valid",
        "issued in the future",
        "wrong audience",
        "none of the audiences",
        "wrong issuer",
        "no exp",
        "no sub",
        "sub too long",
        "sub with a newline",
        "no rule matches",
        "no groups claim",
        "exp 1e300",
        "exp two days ahead",
        "issued three days before it expires",
    ],
)
def test_refused_claims(
    harness: Harness,
    idp: TestIdp,
    caplog: pytest.LogCaptureFixture,
    claims_at: Callable[[int], dict[str, Any]],
    reason: str,
) -> None:
    # times from the moment the test runs, not from collection: a long run would age them past
    # the leeway ("not yet valid" 120 s ahead is valid 90 s after collection)
    claims = claims_at(int(time.time()))
    assert reason in _refusal(harness, idp.token("rsa-1", "carol", **claims), caplog)


def test_leeway_accepts_small_clock_skew(harness: Harness, idp: TestIdp) -> None:
    """exp 3 s ago and nbf 3 s ahead are within the 5 s leeway."""
    now = int(time.time())
    assert harness.verify(idp.token("rsa-1", "dave", exp=now - 3, nbf=now + 3)) is not None


def test_audience_in_a_list_is_accepted(harness: Harness, idp: TestIdp) -> None:
    assert harness.verify(idp.token("rsa-1", "erin", aud=["https://other.test", AUDIENCE])) is not None


def test_an_unknown_key_id_is_refused(
    harness: Harness, idp: TestIdp, caplog: pytest.LogCaptureFixture
) -> None:
    idp.add_key("never-published", publish=False)
    idp.publish("rsa-1", "ec-1")
    assert "no key for kid 'never-published'" in _refusal(harness, idp.token("never-published"), caplog)


def test_a_signature_by_another_key_under_a_known_kid_is_refused(
    harness: Harness, idp: TestIdp, caplog: pytest.LogCaptureFixture
) -> None:
    """An attacker's own key, claiming a kid the IdP publishes."""
    idp.add_key("attacker", publish=False)
    forged = idp.token("attacker", header={"kid": "rsa-1"})
    assert "signature not verified" in _refusal(harness, forged, caplog)


def test_tampered_claims_are_refused(
    harness: Harness, idp: TestIdp, caplog: pytest.LogCaptureFixture
) -> None:
    header, _, signature = idp.token("rsa-1", "frank").split(".")
    other_payload = idp.token("rsa-1", "mallory").split(".")[1]
    assert "signature not verified" in _refusal(harness, f"{header}.{other_payload}.{signature}", caplog)


def test_alg_none_is_refused(harness: Harness, idp: TestIdp, caplog: pytest.LogCaptureFixture) -> None:
    assert "algorithm 'none' is not allowed" in _refusal(harness, idp.unsigned_token(), caplog)


def test_hs256_keyed_with_the_public_key_is_refused(
    harness: Harness, idp: TestIdp, caplog: pytest.LogCaptureFixture
) -> None:
    assert "algorithm 'HS256' is not allowed" in _refusal(harness, idp.hs256_with_public_key("rsa-1"), caplog)


def test_an_algorithm_off_the_allow_list_is_refused(idp: TestIdp, caplog: pytest.LogCaptureFixture) -> None:
    idp.publish("rsa-1", "ec-1")
    only_rsa = Harness(idp, algorithms=("RS256",))
    assert "algorithm 'ES256' is not allowed" in _refusal(only_rsa, idp.token("ec-1"), caplog)


def test_a_key_declared_for_another_algorithm_is_not_used(
    harness: Harness, idp: TestIdp, caplog: pytest.LogCaptureFixture
) -> None:
    """The JWK of rsa-1 says RS256: a PS256 token under that kid finds no key."""
    harness_ps = Harness(idp, algorithms=("RS256", "PS256"))
    token = idp.token("rsa-1", header={"alg": "PS256"})
    assert "no key for kid 'rsa-1' and algorithm PS256" in _refusal(harness_ps, token, caplog)


@pytest.mark.parametrize(
    "token",
    ["", "abc", "a.b", "a.b.c.d.e", "!!!.e30.sig", "bnVsbA.e30.sig", "e30.e30.sig", "x" * 20_000],
    ids=[
        "empty",
        "one segment",
        "two segments",
        "JWE shape",
        "bad base64",
        "header null",
        "header without alg",
        "oversized",
    ],
)
def test_malformed_tokens_are_refused(harness: Harness, token: str) -> None:
    assert harness.verify(token) is None
    assert harness.directory.provisioned == []


def test_a_token_without_a_scope_claim_verifies_with_no_scopes(harness: Harness, idp: TestIdp) -> None:
    """It names a principal but may attempt nothing: each tool refuses it, naming the scope (403, not 401)."""
    verified = harness.verify(idp.token("rsa-1", "grace", scope=None))
    assert verified is not None and verified.scopes == frozenset()


def test_scp_claim_and_prefix(harness: Harness, idp: TestIdp) -> None:
    verified = harness.verify(
        idp.token("rsa-1", "heidi", scope=None, scp=["vera:review", "read", "vera:nope"])
    )
    assert verified is not None and verified.scopes == {Scope.REVIEW}


def test_a_disabled_principal_is_refused(
    harness: Harness, idp: TestIdp, caplog: pytest.LogCaptureFixture
) -> None:
    verified = harness.verify(idp.token("rsa-1", "ivan"))
    assert verified is not None
    harness.directory.disabled.add(UUID(verified.principal_id))
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="vera_mcp.oidc"):
        assert harness.verify(idp.token("rsa-1", "ivan")) is None
    assert "disabled" in caplog.text


def test_key_rotation_without_restart(idp: TestIdp) -> None:
    """A new kid is fetched at once (the interval has passed); the old key keeps
    verifying until a fetch no longer shows it, then its tokens are refused."""
    idp.publish("rsa-1")
    harness = Harness(idp, refetch_interval_s=10, cache_s=60)
    old_token = idp.token("rsa-1", "judy")
    assert harness.verify(old_token) is not None
    fetched = harness.keys.fetches

    idp.add_key("rsa-2", publish=False)
    idp.publish("rsa-1", "rsa-2")  # the IdP publishes the next key beside the current one
    harness.clock.now += 11
    assert harness.verify(idp.token("rsa-2", "judy")) is not None
    assert harness.keys.fetches == fetched + 1

    idp.publish("rsa-2")  # and later retires the old one
    assert harness.verify(old_token) is not None  # still cached
    harness.clock.now += 61  # the cache expires: the next request fetches
    assert harness.verify(old_token) is None
    assert harness.verify(idp.token("rsa-2", "judy")) is not None
    assert harness.keys.fetches == fetched + 2


def test_a_flood_of_bogus_kids_fetches_at_most_once_per_interval(idp: TestIdp) -> None:
    idp.publish("rsa-1")
    harness = Harness(idp, refetch_interval_s=30, cache_s=300)
    before = idp.jwks_requests
    assert harness.verify(idp.token("rsa-1")) is not None  # the first fetch
    assert idp.jwks_requests == before + 1

    idp.add_key("bogus", publish=False)
    bogus = [idp.token("bogus", header={"kid": f"bogus-{n}"}) for n in range(40)]
    assert harness.verify_all(bogus) == [None] * 40
    assert idp.jwks_requests == before + 1  # within the interval: no fetch at all

    harness.clock.now += 31
    assert harness.verify_all(bogus) == [None] * 40
    assert idp.jwks_requests == before + 2  # one fetch for the 40 concurrent requests
    assert harness.verify(idp.token("rsa-1")) is not None  # known keys still work throughout


def test_concurrent_first_requests_share_one_fetch(idp: TestIdp) -> None:
    idp.publish("rsa-1", "ec-1")
    harness = Harness(idp)
    before = idp.jwks_requests
    tokens = [idp.token("rsa-1" if n % 2 else "ec-1", f"user-{n}") for n in range(10)]
    assert all(harness.verify_all(tokens))
    assert idp.jwks_requests == before + 1


def test_an_unreachable_jwks_refuses_and_is_retried_after_the_interval(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with running_idp() as idp:
        idp.add_key("k")
        harness = Harness(idp, refetch_interval_s=5)
        token = idp.token("k")
        url = idp.jwks_url
    # the server is gone now
    with caplog.at_level(logging.WARNING, logger="vera_mcp.oidc"):
        assert harness.verify(token) is None
    assert f"fetching the JWKS {url} failed" in caplog.text
    assert harness.keys.fetches == 1
    assert harness.verify(token) is None
    assert harness.keys.fetches == 1  # not hammered
    harness.clock.now += 6
    assert harness.verify(token) is None
    assert harness.keys.fetches == 2


def test_a_configured_pem_key(idp: TestIdp) -> None:
    pem_settings = settings(
        idp, jwks_url=None, public_key_pem=idp.keys["ec-1"].public_pem, algorithms=("ES256",)
    )
    directory = MemoryDirectory()
    verifier = OidcVerifier(pem_settings, StaticKey(load_public_key(idp.keys["ec-1"].public_pem)), directory)
    assert asyncio.run(verifier.verify(idp.token("ec-1", "kim"))) is not None
    assert asyncio.run(verifier.verify(idp.token("rsa-1", "kim"))) is None  # another key (and algorithm)
    assert asyncio.run(verifier.verify(idp.hs256_with_public_key("ec-1", "kim"))) is None


def test_load_public_key_refuses_what_is_not_a_public_key(idp: TestIdp) -> None:
    with pytest.raises(ConfigurationError, match="not a PEM public key"):
        load_public_key("just a shared secret")
    private = idp.keys["rsa-1"].private.as_pem(private=True).decode()
    with pytest.raises(ConfigurationError, match="not a PEM public key"):
        load_public_key(private)


def test_parse_jwks_keeps_only_asymmetric_signing_keys(idp: TestIdp) -> None:
    rsa_jwk = idp.keys["rsa-1"].jwk()
    document = {
        "keys": [
            rsa_jwk,
            {"kty": "oct", "kid": "secret", "k": "c2VjcmV0"},
            {**idp.keys["ec-1"].jwk(), "use": "enc"},
            {"kty": "RSA", "kid": "broken", "n": "??", "e": "AQAB"},
            "not a key",
        ]
    }
    assert list(parse_jwks(document)) == ["rsa-1"]
    with pytest.raises(ValueError, match="not a JWK set"):
        parse_jwks({"keys": "nope"})


def test_token_types_refuse_id_tokens_when_configured(idp: TestIdp, caplog: pytest.LogCaptureFixture) -> None:
    idp.publish("rsa-1", "ec-1")
    typed = Harness(idp, token_types=("application/at+jwt",))
    assert typed.verify(idp.token("rsa-1", "leo")) is not None  # typ at+jwt
    assert typed.verify(idp.token("rsa-1", "leo", header={"typ": "AT+JWT"})) is not None
    assert "typ 'JWT' is not one of at+jwt" in _refusal(
        typed, idp.token("rsa-1", "leo", header={"typ": "JWT"}), caplog
    )
    assert (
        Harness(idp).verify(idp.token("rsa-1", "leo", header={"typ": "JWT"})) is not None
    )  # unchecked by default


def test_a_certificate_pem_gives_its_public_key(idp: TestIdp) -> None:
    key = idp.keys["ec-1"]
    private = serialization.load_pem_private_key(key.private.as_pem(private=True), password=None)
    assert isinstance(private, ec.EllipticCurvePrivateKey)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "idp.test")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(private.public_key())
        .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
        .sign(private, hashes.SHA256())
    )  # fmt: skip
    loaded = load_public_key(certificate.public_bytes(serialization.Encoding.PEM).decode())
    assert not loaded.is_private and loaded.as_dict() == load_public_key(key.public_pem).as_dict()


def test_jwks_keys_not_for_verifying_are_skipped(idp: TestIdp) -> None:
    signing = {**idp.keys["rsa-1"].jwk(), "key_ops": ["verify"]}
    encrypting = {**idp.keys["ec-1"].jwk(), "key_ops": ["encrypt"]}
    assert list(parse_jwks({"keys": [signing, encrypting]})) == ["rsa-1"]


@pytest.mark.parametrize(
    ("body", "reason"),
    [(b"<html>not json</html>", "Expecting value"), (b'{"keys": {}}', "not a JWK set"),
     (b"[" * 100_000, "maximum recursion depth"), (b" " * (2 << 20), "is over")],
    ids=["not JSON", "not a key set", "deeply nested", "oversized"],
)  # fmt: skip
def test_a_broken_jwks_is_refused_and_logged(
    idp: TestIdp, caplog: pytest.LogCaptureFixture, body: bytes, reason: str
) -> None:
    idp.publish("rsa-1")
    harness = Harness(idp)
    idp.body_override = body
    try:
        with caplog.at_level(logging.WARNING, logger="vera_mcp.oidc"):
            assert harness.verify(idp.token("rsa-1")) is None
    finally:
        idp.body_override = None
    assert "fetching the JWKS" in caplog.text and reason in caplog.text
