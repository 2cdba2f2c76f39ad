"""Token counters for context packs."""
