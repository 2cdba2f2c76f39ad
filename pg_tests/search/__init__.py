"""Tests of search, its knobs and ranking pieces, feedback, snapshots and the golden set
(vera_client/api/search)."""
