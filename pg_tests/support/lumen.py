"""The demo's data for tests: the Lumen Freight corpus (examples/lumen) ingested through the
real worker with the local MiniLM embedder, into a new tenant, as `vera demo` does; and the
VERA_* environment under which a client, a script or psql reaches it as `vera demo` leaves a
user."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from pg_tests.support.databases import APP_LOGIN, ROOT, Database
from pg_tests.support.ingesting import ingest_manifest, run_worker
from vera_client.adapters.embedders.local_minilm import LocalMiniLMEmbedder
from vera_client.adapters.examples import example_dir

EXAMPLE = ROOT / "examples" / "lumen"  # the checkout's copy of the example corpus


@dataclass(frozen=True)
class Lumen:
    organisation: str
    key: str  # the owner's: the key `vera demo` prints
    objects: Path

    def environment(self, db: Database) -> dict[str, str]:
        """VERA_* of a user after `vera demo`: the database (as the test application login,
        where the demo's is the embedded server's), the demo key in VERA_API_KEY, and no other
        VERA_ variable from the test run's own environment."""
        clean = {name: value for name, value in os.environ.items() if not name.startswith("VERA_")}
        return {**clean, "VERA_DB__DSN": db.dsn(APP_LOGIN), "VERA_API_KEY": self.key}


def load_lumen(db: Database, objects: Path) -> Lumen:
    """A tenant with the example corpus ingested (five sources, 9 passages, 15 claims)."""
    with db.admin() as admin:
        row = admin.execute("select * from vera.create_tenant('Lumen Freight', 'Lumen Owner')").fetchone()
        assert row is not None
        organisation, _, key = row
    ingest_manifest(db, key, organisation, example_dir() / "sources.toml")
    reports = run_worker(db, objects, LocalMiniLMEmbedder())
    assert sum(r.passages for r in reports) == 9 and not [r for r in reports if r.failed]
    return Lumen(organisation=organisation, key=key, objects=objects)
