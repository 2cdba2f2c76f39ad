"""The HTTP API's idempotency keys in SQL (sql/functions/260_idempotency.sql), through the
client: a key is claimed once, its answer replayed, refused for another request or while it
runs, forgotten after a failure, and each principal's own."""

from __future__ import annotations

import hashlib

import pytest

from pg_tests.support.clients import client_for
from pg_tests.support.seed import World
from vera_client.api.idempotency import RecordedAnswer
from vera_client.domain.errors import ConflictError, InvalidArgumentError

pytestmark = pytest.mark.pg


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_a_key_is_claimed_once_and_its_answer_replayed(world: World) -> None:
    with client_for(world, world.a.owner_key) as vera:
        assert vera.begin_idempotent("k-replay", _hash("POST /v1/proposals {}")).status is None
        assert vera.finish_idempotent("k-replay", 201, {"fact_id": "x"})
        again = vera.begin_idempotent("k-replay", _hash("POST /v1/proposals {}"))
        assert again == RecordedAnswer(status=201, response={"fact_id": "x"})
        assert not vera.finish_idempotent("k-replay", 500, {"late": True}), "an answer is recorded once"
        assert vera.begin_idempotent("k-replay", _hash("POST /v1/proposals {}")) == again


def test_a_key_is_refused_for_another_request_and_while_it_runs(world: World) -> None:
    with client_for(world, world.a.owner_key) as vera:
        assert vera.begin_idempotent("k-running", _hash("one")).status is None
        with pytest.raises(ConflictError, match="still running") as running:
            vera.begin_idempotent("k-running", _hash("one"))
        assert running.value.sqlstate == "VI002"
        with pytest.raises(ConflictError, match="another request") as other:
            vera.begin_idempotent("k-running", _hash("two"))
        assert other.value.sqlstate == "VI001"
        assert vera.forget_idempotent("k-running")
        assert vera.begin_idempotent("k-running", _hash("two")).status is None, "forgotten: free again"


@pytest.mark.parametrize(("key", "digest"), [("", _hash("x")), ("k" * 201, _hash("x")), ("k", "not-hex")])
def test_bad_keys_and_hashes_are_refused(world: World, key: str, digest: str) -> None:
    with client_for(world, world.a.owner_key) as vera, pytest.raises(InvalidArgumentError) as refused:
        vera.begin_idempotent(key, digest)
    assert refused.value.sqlstate == "22023"


def test_a_key_is_its_principals_alone(world: World) -> None:
    """Another principal (another tenant's, or a viewer of the same tenant) using the same key
    claims a key of its own: it neither sees the answer nor can finish or forget the first."""
    with client_for(world, world.a.owner_key) as owner:
        assert owner.begin_idempotent("k-shared", _hash("a")).status is None
        assert owner.finish_idempotent("k-shared", 200, {"secret": "of A"})
    for key in (world.b.owner_key, world.a.viewer_key):
        with client_for(world, key) as other:
            assert other.begin_idempotent("k-shared", _hash("a")).status is None, "a key of its own, empty"
            assert other.forget_idempotent("k-shared"), "its own running key"
    with client_for(world, world.b.owner_key) as other:
        assert not other.finish_idempotent("k-shared", 200, {"forged": True}), "not B's key to finish"
    with client_for(world, world.a.owner_key) as owner:
        assert owner.begin_idempotent("k-shared", _hash("a")) == RecordedAnswer(
            status=200, response={"secret": "of A"}
        )
    with world.db.admin() as admin:
        rows = admin.execute(
            "select group_id, status from vera.idempotency_keys where idempotency_key = 'k-shared'"
        ).fetchall()
    assert rows == [(world.a.owner_personal, 200)], "the others' keys were their own, and are forgotten"
