"""Reading the caller's API key from an HTTP Authorization header."""

from __future__ import annotations

from vera_client.domain.errors import MalformedApiKeyError


def bearer_api_key(authorization: str | None) -> str:
    """The API key of an `Authorization: Bearer vera_...` header.

    The key's form is checked again, authoritatively, by vera.authenticate.
    """
    scheme, _, credentials = (authorization or "").strip().partition(" ")
    if scheme.lower() != "bearer" or not credentials.strip().startswith("vera_"):
        raise MalformedApiKeyError("expected 'Authorization: Bearer vera_<prefix>_<secret>'")
    return credentials.strip()
