"""Tests of the worker's jobs: the queue, extraction, judges, queue metrics, stalled jobs, cleanup
(vera_client/api/jobs)."""
