"""Every SQL and Python example of README.md and docs/*.md, run against the demo data (the
Lumen corpus ingested by the worker with the local embedder, as `vera demo` leaves it): SQL
through the embedded server's own psql with the demo key in :key, Python as a script in a
fresh interpreter with VERA_API_KEY and the database in the environment. An example that
cannot run here is marked so and parsed (pg_tests/support/doc_examples.py says how blocks are marked)."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from pg_tests.support.databases import APP_LOGIN, ROOT, Database
from pg_tests.support.doc_examples import Example, documented_examples, sql_statements_only
from pg_tests.support.lumen import Lumen, load_lumen
from vera_client.adapters.embedders.local_minilm import LocalMiniLMEmbedder

EXAMPLES = documented_examples(ROOT)
RUNNABLE = [e for e in EXAMPLES if e.marker == "runs"]
SYNTAX_ONLY = [e for e in EXAMPLES if e.marker == "syntax only"]
EMBEDDED_QUESTION = "who owns ledger-db?"  # docs/sql-api.md passes its vector as :embedding
ERROR_LINE = re.compile(r"^(?:psql:[^ ]* )?ERROR:\s+(\w{5}):", re.MULTILINE)


@pytest.fixture(scope="module")
def lumen(db: Database, tmp_path_factory: pytest.TempPathFactory) -> Lumen:
    return load_lumen(db, tmp_path_factory.mktemp("objects"))


def test_every_sql_and_python_example_is_marked() -> None:
    unmarked = [e.name for e in EXAMPLES if e.marker is None]
    assert not unmarked, f"mark these examples (see pg_tests/support/doc_examples.py): {unmarked}"
    assert {e.path.name for e in RUNNABLE} >= {"README.md", "sql-api.md", "python-client.md"}
    assert all(e.note for e in SYNTAX_ONLY), "an example that cannot run says why"


@pytest.fixture(scope="module")
def embedding() -> str:
    """As docs/sql-api.md computes it: the local MiniLM's vector of EMBEDDED_QUESTION."""
    return json.dumps(LocalMiniLMEmbedder().embed([EMBEDDED_QUESTION])[0], separators=(",", ":"))


def _psql(db: Database, lumen: Lumen, code: str, embedding: str) -> subprocess.CompletedProcess[str]:
    """The example in psql as `vera demo` suggests it, with -v key=<the demo key> and
    -v embedding=<the vector docs/sql-api.md computes>."""
    variables = ["-v", f"key={lumen.key}", "-v", f"embedding={embedding}", "-v", "VERBOSITY=verbose"]
    command = [str(db.server.bin_dir / "psql"), "-X", *variables, db.dsn(APP_LOGIN)]
    return subprocess.run(command, input=code, capture_output=True, text=True, timeout=120, check=False)  # noqa: S603


def _python(db: Database, lumen: Lumen, code: str, folder: Path) -> subprocess.CompletedProcess[str]:
    """The example as a script of its own, in an empty folder (no .env), as after `vera demo`."""
    return subprocess.run(
        [sys.executable, "-"],
        input=code,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=folder,
        env=lumen.environment(db),
        check=False,
    )


@pytest.mark.parametrize("example", RUNNABLE, ids=lambda e: e.name)
def test_the_example_runs_against_the_demo_data(
    db: Database, lumen: Lumen, embedding: str, example: Example, tmp_path: Path
) -> None:
    if example.language == "sql":
        run = _psql(db, lumen, example.code, embedding)
        # verbose errors name their SQLSTATE: exactly the refusals the example announces
        assert ERROR_LINE.findall(run.stderr) == example.refusals, run.stderr
    else:
        run = _python(db, lumen, example.code, tmp_path)
        assert run.returncode == 0, run.stderr
    assert run.returncode == 0, run.stderr
    print(run.stdout)  # what the reader of the page sees, in the test log
    for text in example.expected:
        assert text in run.stdout, f"{example.name} should print {text!r}:\n{run.stdout}"


@pytest.mark.parametrize("example", SYNTAX_ONLY, ids=lambda e: e.name)
def test_an_example_that_cannot_run_here_parses(db: Database, example: Example) -> None:
    if example.language == "python":
        compile(example.code, example.name, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        return
    # PL/pgSQL checks the syntax of every statement of a body when the function is created,
    # without resolving a name (Citus's functions need not exist here)
    body = sql_statements_only(example.code)
    with db.admin() as admin:
        try:
            admin.execute(
                f"create function pg_temp.example_syntax() returns void language plpgsql as $example$ "
                f"begin {body} end $example$"
            )
        except psycopg.errors.SyntaxError as error:
            pytest.fail(f"{example.name}: {error}")
