"""Tests of sources, episodes, ingestion and time scopes (vera_client/api/sources)."""
