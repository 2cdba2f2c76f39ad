"""Tests of context packs and remember (vera_client/api/context)."""
