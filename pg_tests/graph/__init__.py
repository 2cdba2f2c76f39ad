"""Tests of the graph projection and the real graph servers (vera_worker/graph)."""
