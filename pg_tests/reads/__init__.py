"""Tests of facts, evidence, entities, explore, changes and conflicts (vera_client/api/reads)."""
