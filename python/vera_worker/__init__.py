"""VERA worker: Procrastinate jobs that do what SQL cannot (fetch sources,
call models, write the graph projection, clean up after retraction)."""

from __future__ import annotations

__all__: list[str] = []
