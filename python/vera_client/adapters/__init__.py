"""Adapters: the only place infrastructure libraries are imported."""
