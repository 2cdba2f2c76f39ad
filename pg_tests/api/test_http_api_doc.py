"""docs/http-api.md: its curl examples run against `vera api serve` (the real command, as a
process) on the demo data and print what their markers say, and its table of routes names
every path of the OpenAPI document.

A curl example is a ```bash block marked on the line above:
    <!-- example: curl; prints "Lumen Owner" "organisation" -->
It runs under bash with VERA_API (the server's URL) and VERA_API_KEY (the demo key)."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from pg_tests.support.databases import ROOT, Database
from pg_tests.support.lumen import Lumen, load_lumen
from pg_tests.support.mcp_servers import ServeProcess, cli_env, free_port, serve_process

pytestmark = pytest.mark.pg
DOC = ROOT / "docs" / "http-api.md"
MARKER = re.compile(r"^<!--\s*example:\s*curl;\s*prints\s*(.*?)\s*-->\s*$")


@dataclass(frozen=True)
class CurlExample:
    line: int
    code: str
    expected: list[str]


def curl_examples() -> list[CurlExample]:
    lines = DOC.read_text(encoding="utf-8").splitlines()
    found = []
    for index, line in enumerate(lines):
        marked = MARKER.match(line)
        if marked and index + 1 < len(lines) and lines[index + 1].startswith("```bash"):
            end = next(i for i in range(index + 2, len(lines)) if lines[i].startswith("```"))
            code = "\n".join(lines[index + 2 : end]) + "\n"
            found.append(CurlExample(index + 2, code, re.findall(r'"([^"]+)"', marked.group(1))))
    return found


EXAMPLES = curl_examples()


@pytest.fixture(scope="module")
def lumen(db: Database, tmp_path_factory: pytest.TempPathFactory) -> Lumen:
    return load_lumen(db, Path(tmp_path_factory.mktemp("objects")))


@pytest.fixture(scope="module")
def served(db: Database, lumen: Lumen) -> Iterator[ServeProcess]:
    port = free_port()
    with serve_process(cli_env(db), port, ("api", "serve")) as running:
        yield running


def test_the_doc_has_curl_examples() -> None:
    assert len(EXAMPLES) >= 8 and all(example.expected for example in EXAMPLES)


@pytest.mark.parametrize("example", EXAMPLES, ids=[f"http-api.md:{e.line}" for e in EXAMPLES])
def test_a_curl_example_prints_what_it_says(example: CurlExample, served: ServeProcess, lumen: Lumen) -> None:
    env = {"PATH": os.environ["PATH"], "VERA_API": served.base, "VERA_API_KEY": lumen.key}
    command = ["/bin/bash", "-euo", "pipefail", "-c", example.code]
    ran = subprocess.run(command, check=False, env=env, capture_output=True, text=True, timeout=60)  # noqa: S603
    assert ran.returncode == 0, ran.stderr
    for text in example.expected:
        assert text in ran.stdout, f"{text!r} not in {ran.stdout!r}"


def test_the_routes_table_names_every_path(served: ServeProcess) -> None:
    document = httpx.get(served.base + "/openapi.json", timeout=10).json()
    text = DOC.read_text(encoding="utf-8")
    missing = [
        f"{method.upper()} {path}"
        for path, operations in document["paths"].items()
        for method in operations
        if f"{method.upper()} {path}`" not in text and f"`{method.upper()} {path}" not in text
    ]
    assert not missing, f"docs/http-api.md does not list {missing}"
