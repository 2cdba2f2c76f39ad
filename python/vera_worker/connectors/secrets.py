"""A connector's secret: read from the environment variable its source's
`token_env` names, at the start of a run, and nowhere else. The source row
holds only the variable's name; the secret is never stored, logged, put in a
job's arguments or quoted in an error (an error names the variable)."""

from __future__ import annotations

from collections.abc import Mapping

from vera_client.domain.errors import SourceUnavailableError


class MissingSecretError(SourceUnavailableError):
    """The environment variable that a source's token_env names is not set for the worker."""


def source_token(source: str, token_env: str | None, environ: Mapping[str, str]) -> str | None:
    """The secret of source from the worker's environment (None when the source names no variable);
    MissingSecretError naming the variable when it is unset or empty."""
    if token_env is None:
        return None
    token = environ.get(token_env, "")
    if not token.strip():
        raise MissingSecretError(
            f"source {source!r}: its token_env {token_env} is not set in the worker's environment"
        )
    return token.strip()


def redacted(text: str, secret: str | None) -> str:
    """text with every occurrence of the secret replaced: the last guard before a message leaves
    the run (a server that echoes the token in its error body must not put it in a log)."""
    if not secret:
        return text
    return text.replace(secret, "[secret]")
