"""Bad input (issue 11): a clear error with VERA's own code, a short message,
and nothing stored."""

from __future__ import annotations

from pg_tests.seed import World, caller


def test_lexical_query_runs_as_the_application_role(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        row = conn.execute("select vera.lexical_query('who owns ledger-db')::text").fetchone()
    assert row is not None
    assert "ledger" in row[0] and "owns" in row[0] and "'who'" in row[0]
