"""Tests of isolation and robustness: the adversary, side channels, concurrency, bad input, SQL
properties."""
