from __future__ import annotations

import pytest

from vera_client.domain import errors
from vera_client.domain.errors import error_for_sqlstate


@pytest.mark.parametrize(
    ("sqlstate", "expected"),
    [
        ("VA001", errors.MalformedApiKeyError),
        ("VA002", errors.UnknownApiKeyError),
        ("VA003", errors.RevokedApiKeyError),
        ("VA004", errors.ExpiredApiKeyError),
        ("VA005", errors.NotAuthenticatedError),
        ("VA006", errors.PrincipalDisabledError),
        ("VA999", errors.AuthenticationError),
        ("VN001", errors.NotFoundError),
        ("42501", errors.PermissionDeniedError),
        ("22023", errors.InvalidArgumentError),
        ("22P02", errors.InvalidArgumentError),
        ("23505", errors.ConflictError),
        ("23514", errors.InvalidArgumentError),
        ("22001", errors.InvalidArgumentError),
        ("VE001", errors.EmbeddingMismatchError),
        ("VE002", errors.InvalidEmbeddingError),
        ("VJ001", errors.JobQueueMissingError),
        ("VS001", errors.SnapshotStaleError),
        ("VS002", errors.SnapshotUnsealedError),
        ("VS003", errors.SnapshotOntologyChangedError),
        ("VS004", errors.SnapshotPolicyChangedError),
        ("VS005", errors.SnapshotAssemblerChangedError),
        ("25000", errors.TransactionStateError),
        ("VT001", errors.ReadCommittedRequiredError),
        ("VM001", errors.PreBaselineDatabaseError),
        ("VM002", errors.UnknownMigrationError),
        ("VM003", errors.EditedMigrationError),
        ("VM004", errors.JobQueueVersionError),
        ("VM005", errors.MigrationError),
        ("08006", errors.DatabaseUnavailableError),
        ("XX000", errors.VeraError),
        (None, errors.VeraError),
    ],
)
def test_sqlstate_maps_to_one_error_class(sqlstate: str | None, expected: type[errors.VeraError]) -> None:
    error = error_for_sqlstate(sqlstate, "the server's line")
    assert type(error) is expected
    assert str(error) == "the server's line"
    assert error.sqlstate == sqlstate


def test_every_error_is_a_vera_error_with_a_docstring() -> None:
    classes = [obj for obj in vars(errors).values() if isinstance(obj, type) and issubclass(obj, Exception)]
    assert len(classes) > 10
    for cls in classes:
        assert issubclass(cls, errors.VeraError)
        assert cls.__doc__ and cls.__doc__.strip().endswith(".")


def test_default_message_is_the_docstring() -> None:
    assert str(errors.RevokedApiKeyError()) == "The API key has been revoked."
