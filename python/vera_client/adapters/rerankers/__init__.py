"""Rerankers, one adapter per provider, each satisfying domain.ports.Reranker."""
