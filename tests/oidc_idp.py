"""A test identity provider: a real HTTP server on 127.0.0.1 that serves a
JWKS of keys generated here with `cryptography`, and signs access tokens with
them. The keys it publishes can be switched (key rotation), and every JWKS
request is counted (so tests can see how often a verifier fetched).

Tokens are signed with joserfc; the forged ones (alg "none", HS256 keyed with
the public key) are assembled by hand, as an attacker would.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from joserfc import jwt
from joserfc.jwk import ECKey, Key, RSAKey

AUDIENCE = "https://vera.test/mcp"


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _segment(value: dict[str, Any]) -> str:
    return _b64(json.dumps(value, separators=(",", ":")).encode())


@dataclass
class SigningKey:
    kid: str
    alg: str
    private: Key
    public_pem: str

    def jwk(self) -> dict[str, Any]:
        public = self.private.as_dict(private=False)
        return {**public, "kid": self.kid, "use": "sig", "alg": self.alg}


def generate_key(kid: str, alg: str = "RS256") -> SigningKey:
    """A fresh key pair: RSA 2048 for RS*/PS*, P-256 for ES256."""
    if alg.startswith(("RS", "PS")):
        private_rsa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        key: Key = RSAKey.import_key(private_rsa)
        public = private_rsa.public_key()
    else:
        private_ec = ec.generate_private_key(ec.SECP256R1())
        key = ECKey.import_key(private_ec)
        public = private_ec.public_key()  # type: ignore[assignment]
    pem = public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return SigningKey(kid=kid, alg=alg, private=key, public_pem=pem.decode())


@dataclass
class TestIdp:
    """The provider's state: its keys, which of them the JWKS shows, its request count."""

    __test__ = False  # not a test class, whatever its name

    port: int = 0
    keys: dict[str, SigningKey] = field(default_factory=dict)
    published: list[str] = field(default_factory=list)
    jwks_requests: int = 0
    # when set, served in place of the JWKS (a broken or hostile IdP)
    body_override: bytes | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.port}/realm"

    @property
    def jwks_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/realm/jwks.json"

    def add_key(self, kid: str, alg: str = "RS256", *, publish: bool = True) -> SigningKey:
        key = generate_key(kid, alg)
        with self.lock:
            self.keys[kid] = key
            if publish:
                self.published.append(kid)
        return key

    def publish(self, *kids: str) -> None:
        """Serve exactly these keys from now on."""
        with self.lock:
            self.published = list(kids)

    def jwks(self) -> dict[str, Any]:
        with self.lock:
            return {"keys": [self.keys[kid].jwk() for kid in self.published]}

    def claims(self, subject: str = "alice", **overrides: Any) -> dict[str, Any]:
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": self.issuer,
            "aud": AUDIENCE,
            "sub": subject,
            "iat": now,
            "nbf": now,
            "exp": now + 300,
            "scope": "openid vera:read vera:feedback",
            "name": subject.title(),
            "email": f"{subject}@example.com",
            "groups": ["lumen-engineers"],
        }
        claims.update(overrides)
        return {name: value for name, value in claims.items() if value is not None}

    def token(
        self, kid: str, subject: str = "alice", *, header: dict[str, Any] | None = None, **claims: Any
    ) -> str:
        """A token signed with key `kid` (its algorithm); claims override the defaults (None drops one)."""
        key = self.keys[kid]
        protected = {"alg": key.alg, "kid": kid, "typ": "at+jwt", **(header or {})}
        return jwt.encode(
            protected, self.claims(subject, **claims), key.private, algorithms=[protected["alg"]]
        )

    def unsigned_token(self, subject: str = "alice", **claims: Any) -> str:
        """alg "none": no signature at all."""
        return f"{_segment({'alg': 'none', 'typ': 'JWT'})}.{_segment(self.claims(subject, **claims))}."

    def hs256_with_public_key(self, kid: str, subject: str = "alice", **claims: Any) -> str:
        """The classic confusion attack: HMAC-SHA256 keyed with the public key's PEM."""
        header = _segment({"alg": "HS256", "kid": kid, "typ": "JWT"})
        signing_input = f"{header}.{_segment(self.claims(subject, **claims))}"
        secret = self.keys[kid].public_pem.encode()
        signature = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
        return f"{signing_input}.{_b64(signature)}"


@contextmanager
def running_idp() -> Iterator[TestIdp]:
    """A TestIdp served on 127.0.0.1 (a free port) until the block ends."""
    idp = TestIdp()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path != "/realm/jwks.json":
                self.send_error(404)
                return
            with idp.lock:
                idp.jwks_requests += 1
            body = idp.body_override if idp.body_override is not None else json.dumps(idp.jwks()).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    idp.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, name="test-idp", daemon=True)
    thread.start()
    try:
        yield idp
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
