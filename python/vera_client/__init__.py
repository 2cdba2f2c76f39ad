"""VERA client library: the SQL API of a verified, time-aware knowledge memory."""

from __future__ import annotations

from vera_client.domain.errors import VeraError

__all__ = ["VeraError"]
__version__ = "0.1.0"
