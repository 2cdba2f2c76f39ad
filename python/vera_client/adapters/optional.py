"""Optional parts: a module that only an extra installs is imported where it is
first needed, so that the client alone imports without it, and using the part
without its extra fails with one line naming the extra (MissingExtraError)."""

from __future__ import annotations

import importlib
from types import ModuleType

from vera_client.domain.errors import MissingExtraError


def require(module: str, *, extra: str, needed_for: str) -> ModuleType:
    """The module, or MissingExtraError naming the extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(module.split(".", maxsplit=1)[0], extra, needed_for) from exc
