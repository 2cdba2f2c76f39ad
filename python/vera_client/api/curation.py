"""Curation: publishing claims, predicates, review of claims and passages, retraction and
erasure, and an agent's own proposals (sql/functions/130_publish.sql, 140_review.sql,
150_retract.sql, 160_predicates.sql, 214_proposals.sql; queries in curation.sql; tests in
pg_tests/curation/)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from vera_client.api.call import Call, Json, record, records, scalar
from vera_client.api.operation import Plan, Session, Work, ask, operation, plan
from vera_client.domain.cleanup import RetractCleanup, clean_up_at_once
from vera_client.domain.ports import GraphStore


@dataclass(frozen=True, kw_only=True, slots=True)
class PublishedClaim:
    """What became of one claim: where it landed, its lifecycle and how its subject resolved."""

    claim: int
    fact_id: UUID
    fact_group_id: str
    lifecycle: str
    subject_entity_id: UUID
    resolution: str


@dataclass(frozen=True, kw_only=True, slots=True)
class PendingReview:
    """A tier-3 claim awaiting review, or a proposal made for the group."""

    fact_id: UUID
    fact_group_id: str
    lifecycle: str
    subject: str
    predicate: str
    object: str
    fact_text: str
    tier: int | None
    verification: str
    confidence: float | None
    proposed_by: UUID | None
    recorded_at: datetime
    origin: dict[str, Any] | None


@dataclass(frozen=True, kw_only=True, slots=True)
class PendingPassage:
    """A passage of a tier-3 source awaiting review, or of a tier-4 source proposed for the group."""

    chunk_id: UUID
    lifecycle: str
    heading: str | None
    text: str
    ordinal: int
    tier: int
    verification: str
    source_id: UUID
    source_name: str
    episode_id: UUID
    external_id: str
    version: int
    title: str | None
    proposed_by: UUID | None
    stored_at: datetime


@dataclass(frozen=True, kw_only=True, slots=True)
class PassageReviewOutcome:
    chunk_id: UUID
    group_id: str
    lifecycle: str


@dataclass(frozen=True, kw_only=True, slots=True)
class ReviewOutcome:
    fact_id: UUID
    group_id: str
    lifecycle: str


@dataclass(frozen=True, kw_only=True, slots=True)
class Proposal:
    """A claim proposed by the caller: where it waits (its u: scope), for which scope, and its evidence."""

    fact_id: UUID
    group_id: str
    proposed_for: str
    lifecycle: str
    source_id: UUID
    episode_id: UUID
    chunk_id: UUID


@dataclass(frozen=True, kw_only=True, slots=True)
class ProposalState:
    """One of the caller's proposals: lifecycle proposal (waiting), accepted, rejected or retracted."""

    fact_id: UUID
    proposed_for: str
    subject: str
    predicate: str
    object: str
    fact_text: str
    lifecycle: str = field(metadata={"description": "proposal (waiting), accepted, rejected or retracted"})
    evidence: str | None
    recorded_at: datetime
    reviewed_at: datetime | None


@dataclass(frozen=True, kw_only=True, slots=True)
class RetractedProposal:
    fact_id: UUID
    lifecycle: str


def publish_claims(
    group: str,
    episode: UUID | None,
    claims: Sequence[Mapping[str, Any]],
    embedding_model: str | None = None,
) -> Call[list[PublishedClaim]]:
    """publish_claims: one batch, all or nothing."""
    params = {"group": group, "episode": episode, "claims": Json([dict(c) for c in claims]),
              "embedding_model": embedding_model}  # fmt: skip
    return Call("publish_claims", params, records(PublishedClaim))


def claim_fact_texts(claims: Sequence[Mapping[str, Any]]) -> Call[list[str | None]]:
    """The fact text of each claim, in order, as publish_claims stores it (None for an element
    that is no valid claim): what a client embeds to give the facts it writes their vectors."""
    return Call("claim_fact_texts", {"claims": Json([dict(c) for c in claims])}, scalar)


def declare_predicate(
    group: str, name: str, cardinality: str = "multi", description: str | None = None
) -> Call[str]:
    """Declare a predicate of the group: 'functional' (one value at a time) or 'multi'."""
    params = {"group": group, "name": name, "cardinality": cardinality, "description": description}
    return Call("declare_predicate", params, scalar)


def pending_reviews(group: str) -> Call[list[PendingReview]]:
    """Claims awaiting review in group (admins)."""
    return Call("pending_reviews", {"group": group}, records(PendingReview))


def review_claim(group: str, fact: UUID, decision: str, note: str | None = None) -> Call[ReviewOutcome]:
    """review_claim: 'approve' or 'reject'."""
    params = {"group": group, "fact": fact, "decision": decision, "note": note}
    return Call("review_claim", params, record(ReviewOutcome))


def pending_passages(group: str) -> Call[list[PendingPassage]]:
    """Passages of tier-3 sources awaiting review, and of tier-4 ones proposed for the group (admins)."""
    return Call("pending_passages", {"group": group}, records(PendingPassage))


def review_passage(
    group: str, chunk: UUID, decision: str, note: str | None = None
) -> Call[PassageReviewOutcome]:
    """'approve' (searchable by the group, human verified) or 'reject' a waiting passage (admins)."""
    params = {"group": group, "chunk": chunk, "decision": decision, "note": note}
    return Call("review_passage", params, record(PassageReviewOutcome))


def retract_episode_call(group: str, episode: UUID, reason: str | None = None) -> Call[int]:
    """retract_episode: the retraction alone (committed with its cleanup job); the job's id."""
    return Call("retract_episode", {"group": group, "id": episode, "reason": reason}, scalar)


def erase_episode_call(group: str, episode: UUID, reason: str | None = None) -> Call[int]:
    """erase_episode: the erasure alone (committed with its cleanup job); the job's id."""
    return Call("erase_episode", {"group": group, "id": episode, "reason": reason}, scalar)


def retract_source_call(group: str, source: UUID, reason: str | None = None) -> Call[int]:
    """retract_source: the retraction alone (committed with its cleanup job); the job's id."""
    return Call("retract_source", {"group": group, "id": source, "reason": reason}, scalar)


def erase_source_call(group: str, source: UUID, reason: str | None = None) -> Call[int]:
    """erase_source: the erasure alone (committed with its cleanup job); the job's id."""
    return Call("erase_source", {"group": group, "id": source, "reason": reason}, scalar)


def complete_cleanup(job: int) -> Call[bool]:
    """Mark a cleanup job's work done (the worker, after deleting what it names)."""
    return Call("complete_cleanup", {"job": job}, scalar)


def cleanup_work(job: int) -> Call[dict[str, Any] | None]:
    """What a pending cleanup job names (None once it ran); admins of its group."""
    return Call("cleanup_work", {"job": job}, scalar)


def settle_cleanup(job: int, edge_ids_left: Sequence[UUID], object_keys_left: Sequence[str]) -> Call[str]:
    """Retire a cleanup job ('completed'), or leave it only what is left ('narrowed')."""
    params = {"job": job, "edge_ids_left": list(edge_ids_left), "object_keys_left": list(object_keys_left)}
    return Call("settle_cleanup", params, scalar)


@dataclass(frozen=True, kw_only=True, slots=True)
class Withdrawal:
    """A retraction or erasure, committed, and its cleanup outside PostgreSQL."""

    job: int = field(metadata={"description": "the retract_cleanup job: the safety net of the cleanup"})
    cleaned_up: bool = field(metadata={"description": "all done at once: the job retired"})
    edges_removed: int
    objects_deleted: int
    edges_left: int = field(metadata={"description": "edges left to the job (no graph here, or it failed)"})
    objects_left: int = field(metadata={"description": "raw objects left to the job (their deletion failed)"})


def _withdraw(session: Session, job: int, graph: GraphStore | None) -> Plan[Withdrawal]:
    """After the commit: the cleanup at once, then the job settled (retired, or narrowed to what
    is left). A requester that dies before this leaves the whole job to the worker."""
    work = yield from ask(cleanup_work(job))
    if work is None:  # the job already ran (a worker was quicker)
        return Withdrawal(job=job, cleaned_up=True, edges_removed=0, objects_deleted=0, edges_left=0,
                          objects_left=0)  # fmt: skip
    named = RetractCleanup.from_job_args(work)
    objects = session.services.objects
    left = yield Work(lambda: clean_up_at_once(named, objects=objects, graph=graph))
    settled = yield from ask(settle_cleanup(job, left.edge_ids, left.object_keys))
    return Withdrawal(
        job=job, cleaned_up=left.nothing or settled == "already_run",
        edges_removed=left.edges_removed, objects_deleted=left.objects_deleted,
        edges_left=len(left.edge_ids), objects_left=len(left.object_keys),
    )  # fmt: skip


def retract_episode(
    session: Session, group: str, episode: UUID, reason: str | None = None, *, graph: GraphStore | None = None
) -> Plan[Withdrawal]:
    """Take an episode's knowledge out of search (admins), its graph edges removed at once when
    a graph store is passed in (else by the worker's cleanup job)."""
    job = yield from ask(retract_episode_call(group, episode, reason))
    return (yield from _withdraw(session, job, graph))


def erase_episode(
    session: Session, group: str, episode: UUID, reason: str | None = None, *, graph: GraphStore | None = None
) -> Plan[Withdrawal]:
    """Retract an episode and delete its text, evidence and raw bytes (admins): the raw bytes go at
    once through the client's object store, the graph edges too when a graph store is passed in;
    the cleanup job finishes what is left."""
    job = yield from ask(erase_episode_call(group, episode, reason))
    return (yield from _withdraw(session, job, graph))


def retract_source(
    session: Session, group: str, source: UUID, reason: str | None = None, *, graph: GraphStore | None = None
) -> Plan[Withdrawal]:
    """Take every episode of a source out of search (admins); graph edges as retract_episode."""
    job = yield from ask(retract_source_call(group, source, reason))
    return (yield from _withdraw(session, job, graph))


def erase_source(
    session: Session, group: str, source: UUID, reason: str | None = None, *, graph: GraphStore | None = None
) -> Plan[Withdrawal]:
    """Retract a source and delete its text, evidence and raw bytes (admins), cleaned up at once as
    erase_episode."""
    job = yield from ask(erase_source_call(group, source, reason))
    return (yield from _withdraw(session, job, graph))


def propose(subject: str, predicate: str, obj: str, evidence: str, for_group: str) -> Call[Proposal]:
    """A claim of the caller with its evidence: a proposal in its u: scope, for for_group's review."""
    params = {"subject": subject, "predicate": predicate, "object": obj, "evidence": evidence,
              "for_group": for_group}  # fmt: skip
    return Call("propose", params, record(Proposal))


def retract_proposal(fact: UUID) -> Call[RetractedProposal]:
    """Withdraw one of the caller's own live proposals."""
    return Call("retract_proposal", {"fact": fact}, record(RetractedProposal))


def list_proposals(*, limit: int = 100) -> Call[list[ProposalState]]:
    """The caller's own proposals, newest first, with their state."""
    return Call("list_proposals", {"max_rows": limit}, records(ProposalState))


class Curation:
    """The curation operations of a client face."""

    publish = operation(publish_claims)
    declare_predicate = operation(declare_predicate)
    pending_reviews = operation(pending_reviews)
    review = operation(review_claim)
    pending_passages = operation(pending_passages)
    review_passage = operation(review_passage)
    retract_episode = plan(retract_episode)
    erase_episode = plan(erase_episode)
    retract_source = plan(retract_source)
    erase_source = plan(erase_source)
    complete_cleanup = operation(complete_cleanup)
    propose = operation(propose)
    retract_proposal = operation(retract_proposal)
    list_proposals = operation(list_proposals)
