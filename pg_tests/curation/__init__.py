"""Tests of publishing, review, retraction, proposals and the entity and outbox machinery
(vera_client/api/curation)."""
