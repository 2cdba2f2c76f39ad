"""Embedders, one adapter per provider, each satisfying domain.ports.Embedder."""
