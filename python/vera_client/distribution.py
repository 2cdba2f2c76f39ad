"""The name VERA is installed under. `vera` on PyPI is another project's, so the
distribution is `vera-memory`; the import packages (vera_client, vera_worker,
vera_mcp, vera_cli) and the `vera` command keep their names."""

from __future__ import annotations

DISTRIBUTION = "vera-memory"


def install_hint(extra: str) -> str:
    """The pip command that adds an optional part (an extra of pyproject.toml)."""
    return f"pip install '{DISTRIBUTION}[{extra}]'"
