"""Entrypoints: the `vera` command line."""
