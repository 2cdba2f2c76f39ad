"""The example corpora bundled with VERA (Lumen Freight, a fictional company)."""

from __future__ import annotations

from pathlib import Path

from vera_client.domain.errors import InvalidArgumentError


def example_dir(name: str = "lumen") -> Path:
    """The bundled example (in the wheel, or in a checkout): a folder with a
    sources.toml manifest, the sources' files and a golden.toml set."""
    here = Path(__file__).resolve()
    for candidate in (here.parents[1] / "_examples" / name, here.parents[3] / "examples" / name):
        if (candidate / "sources.toml").is_file():
            return candidate
    raise InvalidArgumentError(f"the example corpus {name!r} was not found next to the vera_client package")
