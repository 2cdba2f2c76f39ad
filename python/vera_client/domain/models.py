"""Values that cross the library's boundary: frozen, keyword-only dataclasses."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from datetime import datetime
from pathlib import Path
from typing import Any
from uuid import UUID

from vera_client.domain.time_scopes import TimeRange


@dataclass(frozen=True, kw_only=True, slots=True)
class ServerStatus:
    """State of a PostgreSQL server VERA manages."""

    running: bool
    data_dir: Path
    pid: int | None = None
    admin_url: str | None = None
    app_url: str | None = None
    tcp_address: str | None = None
    log_file: Path | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Migration:
    """One numbered, run-once SQL file."""

    version: int
    name: str
    path: Path
    sha256: str
    # listed in sql/migrations/RELEASED: frozen, an edit is refused
    released: bool = False


@dataclass(frozen=True, kw_only=True, slots=True)
class MigrationState:
    """A migration and whether (and with which checksum) the database applied it."""

    migration: Migration
    applied: bool
    applied_sha256: str | None = None

    @property
    def edited(self) -> bool:
        return self.applied and self.applied_sha256 != self.migration.sha256


@dataclass(frozen=True, kw_only=True, slots=True)
class Tenant:
    """An organisation as created by an operator, with its owner's first API key."""

    group_id: str
    owner_principal_id: UUID
    api_key: str = field(repr=False)  # a secret: never in a log line or a traceback


@dataclass(frozen=True, kw_only=True, slots=True)
class Signals:
    """The seven signals of the blend, each in [0, 1]; period is None when the search asked
    about no period (docs/time.md)."""

    relevance: float
    authority: float
    verification: float
    recency: float
    feedback: float
    confidence: float
    period: float | None = None


# the blend's signals in the order vera.search returns them (vera.signal_names())
SIGNAL_NAMES = tuple(f.name for f in fields(Signals))


@dataclass(frozen=True, kw_only=True, slots=True)
class Hit:
    """One ranked answer of vera.search: a fact or a passage, with its citation."""

    rank: int
    kind: str
    item_id: UUID
    group_id: str
    text: str
    score: float
    signals: Signals
    citation: dict[str, object]
    subject: str | None = None
    predicate: str | None = None
    object: str | None = None
    # stage 3, when a reranker ran on this hit: score = (1 - w) * blend_score min-max normalised
    # over the reranked head + w * rerank_score (vera_client.domain.reranking)
    blend_score: float | None = None
    rerank_score: float | None = None


class Hits(list[Hit]):
    """A search's hits, best first, and the period it asked about: passed as `during`, or found
    in the query's words (None: it asked about none)."""

    def __init__(self, hits: Iterable[Hit] = (), during: TimeRange | None = None) -> None:
        super().__init__(hits)
        self.during = during


@dataclass(frozen=True, kw_only=True, slots=True)
class Source:
    """A registered source: where knowledge comes from and how far it is trusted."""

    group_id: str
    source_id: UUID
    kind: str
    name: str
    uri: str | None
    trust_tier: int
    config: dict[str, object]
    created_at: datetime
    retracted_at: datetime | None
    tracked_records: int


@dataclass(frozen=True, kw_only=True, slots=True)
class Membership:
    """One group the caller reaches, with the role it has there (vera.whoami)."""

    principal_id: UUID
    display_name: str
    kind: str
    group_id: str
    group_kind: str
    group_name: str
    parent_group_id: str | None
    role: str


@dataclass(frozen=True, kw_only=True, slots=True)
class NewApiKey:
    """A key as created: the secret is shown this once, as `api_key`; repr and str show only
    the public prefix, so printing or logging the object never leaks it."""

    key_id: UUID
    prefix: str
    api_key: str = field(repr=False)


@dataclass(frozen=True, kw_only=True, slots=True)
class ApiKeyInfo:
    """A key as listed: no secret material."""

    key_id: UUID
    prefix: str
    name: str
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    last_used_at: datetime | None


@dataclass(frozen=True, kw_only=True, slots=True)
class EpisodeVersion:
    """What record_episode made of a record: created is False when its content was unchanged."""

    episode_id: UUID
    version: int
    created: bool


@dataclass(frozen=True, kw_only=True, slots=True)
class StoredChunk:
    ordinal: int
    chunk_id: UUID


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
class Vote:
    """A recorded vote, with the signals the hit had for its query."""

    feedback_id: UUID
    group_id: str
    signals: dict[str, float | None]  # period: None when the search asked about no period
    created: bool


@dataclass(frozen=True, kw_only=True, slots=True)
class Calibration:
    """Weights derived from a group's votes; persisted when they became the active set."""

    weight_set_id: UUID | None
    persisted: bool
    sample_count: int
    helpful: int
    unhelpful: int
    weights: dict[str, Any] | None
    separation: dict[str, float | None] | None  # period: None without votes on searches that asked one


@dataclass(frozen=True, kw_only=True, slots=True)
class SnapshotTaken:
    snapshot_id: UUID
    item_count: int
    created_at: datetime


@dataclass(frozen=True, kw_only=True, slots=True)
class SnapshotInfo:
    snapshot_id: UUID
    name: str
    created_at: datetime
    sealed: bool
    item_count: int
    embedding_model: str | None
    embedding_dim: int | None
    search_version: str
    weights: dict[str, Any]


@dataclass(frozen=True, kw_only=True, slots=True)
class VectorIndexBuild:
    """A per-group HNSW index that is due, and the statements that build it."""

    group_id: str
    table_name: str
    dim: int
    vector_rows: int
    index_name: str
    statements: list[str]


@dataclass(frozen=True, kw_only=True, slots=True)
class LoginLimits:
    """What one SQL application's login may use: connections at once, and how
    long a statement may run and a transaction may sit idle before the server
    ends it ("30s", "500ms", "2min", "1h"; "0" turns a limit off)."""

    connection_limit: int = 20
    statement_timeout: str = "30s"
    idle_in_transaction_timeout: str = "60s"


@dataclass(frozen=True, kw_only=True, slots=True)
class AppLogin:
    """A login role of one SQL application: a member of vera_app, with its limits."""

    role: str
    limits: LoginLimits
    can_login: bool
    sessions: int


# --- knowledge reads (issue 13: the MCP server's tools) ---------------------------------------------


@dataclass(frozen=True, kw_only=True, slots=True)
class Fact:
    """One fact as read_facts and search show it, with its citation (source, episode, chunk, evidence)."""

    fact_id: UUID
    group_id: str
    subject: str
    predicate: str
    object: str
    fact_text: str
    lifecycle: str
    tier: int
    authority: float
    verification: str
    confidence: float
    valid_from: datetime
    valid_to: datetime | None
    recorded_at: datetime
    proposed_for: str | None
    citation: dict[str, Any]


@dataclass(frozen=True, kw_only=True, slots=True)
class TimelineFact(Fact):
    """A fact of explain_fact's timeline: relation is 'fact', 'supporting', 'superseded' or 'superseding'."""

    relation: str


@dataclass(frozen=True, kw_only=True, slots=True)
class ExploredFact(Fact):
    """A fact explore reached, at hop 1 (it names the starting entity) or later."""

    hop: int


@dataclass(frozen=True, kw_only=True, slots=True)
class FactChange(Fact):
    """What happened to a fact lately: change is 'published', 'superseded' or 'retracted', at `at`."""

    change: str
    at: datetime


@dataclass(frozen=True, kw_only=True, slots=True)
class EntityFact(Fact):
    """A fact about an entity: role 'subject' or 'object'."""

    role: str


@dataclass(frozen=True, kw_only=True, slots=True)
class Entity:
    """An entity of one group, its aliases and the facts that hold with it (as of the instant asked)."""

    entity_id: UUID
    group_id: str
    canonical_name: str
    entity_type: str | None
    aliases: list[str]
    facts: list[EntityFact]


@dataclass(frozen=True, kw_only=True, slots=True)
class Evidence:
    """Where a fact came from: source, episode (version of a record), chunk text and the cited span."""

    fact_id: UUID
    group_id: str
    source_id: UUID | None
    source_name: str | None
    source_kind: str | None
    tier: int
    episode_id: UUID | None
    external_id: str | None
    version: int | None
    title: str | None
    uri: str | None
    observed_at: datetime | None
    recorded_at: datetime | None
    chunk_id: UUID | None
    ordinal: int | None
    heading: str | None
    chunk_text: str | None
    evidence_start: int | None
    evidence_end: int | None
    evidence_text: str | None


@dataclass(frozen=True, kw_only=True, slots=True)
class SourceVersion:
    """One episode of a source: a version of one of its records."""

    episode_id: UUID
    external_id: str
    version: int
    title: str | None
    observed_at: datetime
    recorded_at: datetime
    status: str
    retracted: bool


@dataclass(frozen=True, kw_only=True, slots=True)
class SourceDetail:
    """A source with its freshness (last ingestion, age in seconds) and its versions, newest first."""

    source_id: UUID
    group_id: str
    kind: str
    name: str
    uri: str | None
    trust_tier: int
    created_at: datetime
    retracted_at: datetime | None
    episode_count: int
    last_recorded_at: datetime | None
    last_observed_at: datetime | None
    age_seconds: float | None
    versions: list[SourceVersion]


@dataclass(frozen=True, kw_only=True, slots=True)
class ConflictValue:
    """One of the competing values of a subject and predicate (conflict numbers the subject+predicate)."""

    conflict: int
    subject: str
    predicate: str
    fact_id: UUID
    group_id: str
    object: str
    lifecycle: str
    tier: int
    authority: float
    verification: str
    source_id: UUID | None
    source_name: str | None
    valid_from: datetime
    recorded_at: datetime
    proposed_for: str | None


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
    lifecycle: str
    evidence: str | None
    recorded_at: datetime
    reviewed_at: datetime | None


@dataclass(frozen=True, kw_only=True, slots=True)
class RetractedProposal:
    fact_id: UUID
    lifecycle: str


# --- remember in one call (vera.remember) ---------------------------------------------------------


@dataclass(frozen=True, kw_only=True, slots=True)
class Remembered:
    """What vera.remember recorded: one episode of a source in group_id.

    created is False when the same content was remembered before: nothing new was
    recorded and episode_id is the earlier episode (passages and claims_recorded are
    then 0). lifecycle is how the source's tier graded the passages: published, or
    pending_review (tier 3) and proposal (tier 4) in a shared scope. Free-text
    extraction is off: only the claims passed in are published."""

    group_id: str
    source_id: UUID
    episode_id: UUID
    version: int
    created: bool
    passages: int
    claims_recorded: int
    claims_published: int
    lifecycle: str | None


@dataclass(frozen=True, kw_only=True, slots=True)
class RememberPreview:
    """What vera.remember would store: the group it lands in, that group's embedding pin (None
    before its first vector) and the passages ({"text", "heading"?, "char_start"?, "char_end"?})."""

    group_id: str
    embedding_model: str | None
    embedding_dim: int | None
    passages: list[dict[str, Any]]


@dataclass(frozen=True, kw_only=True, slots=True)
class GraphFactRow:
    """A fact as the graph projection needs it (vera.graph_facts, vera.graph_group_facts).

    object_id is None for a literal object (object_name is then the value); the
    embeddings are None when not known; belongs says whether the group's graph holds it."""

    fact_id: UUID
    group_id: str
    episode_id: UUID | None
    source_id: UUID | None
    subject_id: UUID
    subject_name: str
    object_id: UUID | None
    object_name: str
    predicate: str
    fact_text: str
    lifecycle: str
    valid_from: datetime
    valid_to: datetime | None
    recorded_at: datetime
    retired_at: datetime | None
    fact_embedding: tuple[float, ...] | None
    subject_embedding: tuple[float, ...] | None
    object_embedding: tuple[float, ...] | None
    belongs: bool


@dataclass(frozen=True, kw_only=True, slots=True)
class GraphCheckResult:
    """The last check of one group's graph against PostgreSQL; drift None means none."""

    group_id: str
    backend: str
    checked_at: datetime
    sql_edges: int
    graph_edges: int
    sql_nodes: int
    graph_nodes: int
    drift: str | None


@dataclass(frozen=True, kw_only=True, slots=True)
class QueueLag:
    """How far one queue (None: every queue) is behind: jobs due, when the oldest fell due, its age."""

    queue: str | None
    waiting: int
    oldest_due: datetime | None
    lag_seconds: float


# --- extraction and the judges (issue 15) ------------------------------------------------------


@dataclass(frozen=True, kw_only=True, slots=True)
class PassageToTimeScope:
    """A passage whose time scope VERA's reader has not read, or read with an older version."""

    chunk_id: UUID
    heading: str | None
    text: str


@dataclass(frozen=True, kw_only=True, slots=True)
class PassageToExtract:
    """A passage the extract job has still to send through the extraction model."""

    chunk_id: UUID
    episode_id: UUID
    ordinal: int
    text: str
    content_sha256: bytes


@dataclass(frozen=True, kw_only=True, slots=True)
class ExtractionRun:
    """The validated claims a model version extracted from one passage text."""

    model_version: str
    outcome: str
    claims: list[dict[str, Any]]


@dataclass(frozen=True, kw_only=True, slots=True)
class ExtractionContext:
    """What the extraction prompt offers about a group: its predicates and known entity names."""

    predicates: list[dict[str, str]]
    entities: list[str]
