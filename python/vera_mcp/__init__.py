"""VERA network entrypoints: the MCP server and the HTTP API."""

from __future__ import annotations

__all__: list[str] = []
