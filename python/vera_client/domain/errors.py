"""The one exception hierarchy of VERA and the SQLSTATE codes it maps from.

SQL raises with a specific SQLSTATE; `error_for_sqlstate` turns it into the
matching class mechanically, so no caller parses messages. Each class's
docstring is its meaning; the instance message is the server's one line.
"""

from __future__ import annotations

from vera_client.distribution import install_hint


class VeraError(Exception):
    """VERA could not do what was asked."""

    sqlstate: str | None = None

    def __init__(self, message: str | None = None, *, sqlstate: str | None = None) -> None:
        super().__init__(message or (self.__doc__ or "").strip())
        if sqlstate is not None:
            self.sqlstate = sqlstate


class ConfigurationError(VeraError):
    """The configuration is invalid or incomplete."""


class MissingExtraError(ConfigurationError):
    """An optional part of VERA was used, but the extra that installs it was not installed
    (a slim install of the client talks to an existing VERA and needs none of them)."""

    def __init__(self, module: str, extra: str, needed_for: str) -> None:
        self.module = module
        self.extra = extra
        super().__init__(f"{needed_for} needs {module}, which is not installed: {install_hint(extra)}")


class DatabaseUnavailableError(VeraError):
    """The database cannot be reached with the configured connection settings."""


class EmbeddedServerError(VeraError):
    """The embedded PostgreSQL server could not be initialised, started or stopped."""


class GraphServerError(VeraError):
    """A local graph server (FalkorDB or Neo4j) could not be built, started or stopped."""


class GraphServerMissingError(GraphServerError):
    """A program a local graph server needs (redis-server with FalkorDB, java, mvn) is not installed."""


class PortInUseError(GraphServerError):
    """The port asked for is taken by another program."""


class MigrationError(VeraError):
    """The database schema cannot be brought up to date."""


class MissingExtensionError(MigrationError):
    """A PostgreSQL extension VERA needs is not installed on the server."""


class UnsupportedServerError(MigrationError):
    """The PostgreSQL server is too old for VERA."""


class EditedMigrationError(MigrationError):
    """A migration that was already applied has been edited since."""


class UnknownMigrationError(MigrationError):
    """The database records a migration this code does not have (it is newer than the code)."""


class PreBaselineDatabaseError(MigrationError):
    """The database was built by the migrations that preceded the baseline: recreate it."""


class JobQueueVersionError(MigrationError):
    """The database's job queue schema is of another Procrastinate version than the installed package."""


class AuthenticationError(VeraError):
    """The caller could not be authenticated."""


class MalformedApiKeyError(AuthenticationError):
    """The API key is not of the form vera_<prefix>_<secret>."""


class UnknownApiKeyError(AuthenticationError):
    """The API key is not recognised."""


class RevokedApiKeyError(AuthenticationError):
    """The API key has been revoked."""


class ExpiredApiKeyError(AuthenticationError):
    """The API key has expired."""


class NotAuthenticatedError(AuthenticationError):
    """The transaction has not authenticated a caller."""


class PrincipalDisabledError(AuthenticationError):
    """The principal is unknown or disabled."""


class PermissionDeniedError(VeraError):
    """The caller's role does not allow this."""


class LastOwnerError(PermissionDeniedError):
    """Disabling the principal would leave a group without an owner who can sign in."""


class NotFoundError(VeraError):
    """The object does not exist or is not visible to the caller."""


class InvalidArgumentError(VeraError):
    """An argument is missing, malformed or out of range."""


class ConflictError(VeraError):
    """The change conflicts with existing data."""


class InvalidAppLoginError(InvalidArgumentError):
    """An application login's name or limits are invalid."""


class AppLoginExistsError(ConflictError):
    """An application login of that name exists already."""


class AppLoginNotFoundError(NotFoundError):
    """There is no application login of that name."""


class EmbeddingMismatchError(InvalidArgumentError):
    """The embedding's model or dimension differs from the one pinned by the group."""


class InvalidEmbeddingError(InvalidArgumentError):
    """The embedding is not a vector of finite numbers."""


class SnapshotError(VeraError):
    """The snapshot cannot answer."""


class SnapshotStaleError(SnapshotError):
    """The snapshot was taken with another search version or embedding model than the running ones."""


class SnapshotOntologyChangedError(SnapshotStaleError):
    """A predicate the snapshot knew has changed its cardinality (or is gone) since it was taken."""


class SnapshotPolicyChangedError(SnapshotStaleError):
    """The grading rules, a tier's authority or an entity-resolution or judge setting changed since."""


class SnapshotAssemblerChangedError(SnapshotStaleError):
    """The snapshot was taken with another context assembler version than the running one."""


class SnapshotUnsealedError(SnapshotError):
    """The snapshot's copy never completed."""


class TransactionStateError(VeraError):
    """The operation needs another kind of transaction (for example REPEATABLE READ)."""


class ReadCommittedRequiredError(TransactionStateError):
    """The write needs a READ COMMITTED transaction (it waits on locks, then must see what was committed)."""


class JobQueueMissingError(VeraError):
    """The job queue (Procrastinate's schema) is not installed: run vera db migrate."""


class SourceUnavailableError(VeraError):
    """The source cannot be read (its folder is missing or not readable)."""


class SourceRootNotAllowedError(PermissionDeniedError):
    """A folder source's root is not within the folders an operator allowed its organisation
    (`vera tenant roots add`), or the organisation has none yet (SQLSTATE VR001)."""


class ProviderError(VeraError):
    """A model or storage provider (OpenAI, Voyage, S3, Valkey, ...) failed."""


class ProviderUnavailableError(ProviderError):
    """The provider keeps failing: its circuit breaker is open, calls are refused until it cools down."""


class ProviderRateLimitedError(ProviderError):
    """The provider refused with 429 (too many requests) and retries ran out."""


class ProviderTimeoutError(ProviderError):
    """The provider did not answer in time and retries ran out."""


class ProviderResponseError(ProviderError):
    """The provider answered with an error or a response VERA cannot use (not retried when 4xx)."""


class ProviderAnswerTooLargeError(ProviderResponseError):
    """The provider's answer is larger than the configured limit, as received or once decompressed
    (not retried: reading stopped at the limit)."""


# Specific codes first; class-level fallbacks (first two characters) after.
ERRORS_BY_SQLSTATE: dict[str, type[VeraError]] = {
    "VA001": MalformedApiKeyError,
    "VA002": UnknownApiKeyError,
    "VA003": RevokedApiKeyError,
    "VA004": ExpiredApiKeyError,
    "VA005": NotAuthenticatedError,
    "VA006": PrincipalDisabledError,
    "VN001": NotFoundError,
    "VR001": SourceRootNotAllowedError,
    "VP001": LastOwnerError,
    "42501": PermissionDeniedError,
    "22004": InvalidArgumentError,
    "22023": InvalidArgumentError,
    "23505": ConflictError,
    "22001": InvalidArgumentError,
    "VE001": EmbeddingMismatchError,
    "VI001": ConflictError,  # an Idempotency-Key used for another request
    "VI002": ConflictError,  # the request with that Idempotency-Key still runs
    "VE002": InvalidEmbeddingError,
    "VJ001": JobQueueMissingError,
    "VS001": SnapshotStaleError,
    "VS002": SnapshotUnsealedError,
    "VS003": SnapshotOntologyChangedError,
    "VS004": SnapshotPolicyChangedError,
    "VS005": SnapshotAssemblerChangedError,
    "25000": TransactionStateError,
    "VT001": ReadCommittedRequiredError,
    "VM001": PreBaselineDatabaseError,
    "VM002": UnknownMigrationError,
    "VM003": EditedMigrationError,
    "VM004": JobQueueVersionError,
}
ERRORS_BY_SQLSTATE_CLASS: dict[str, type[VeraError]] = {
    "VA": AuthenticationError,
    "22": InvalidArgumentError,
    "23": InvalidArgumentError,
    "08": DatabaseUnavailableError,
    "28": AuthenticationError,
    "VS": SnapshotError,
    "25": TransactionStateError,
    "VM": MigrationError,
}


def error_for_sqlstate(sqlstate: str | None, message: str) -> VeraError:
    """Build the VeraError subclass that corresponds to a SQLSTATE."""
    code = sqlstate or ""
    cls = ERRORS_BY_SQLSTATE.get(code) or ERRORS_BY_SQLSTATE_CLASS.get(code[:2], VeraError)
    return cls(message, sqlstate=sqlstate)
