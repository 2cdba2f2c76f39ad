"""Configuration, read from the environment: prefix VERA_, nesting '__'.

    VERA_DB__DSN=postgresql://vera_app_billing:…@db.internal/vera  # external: an application login
    VERA_DB__ADMIN_DSN=postgresql://dba@db.internal/vera   # who runs migrations
    VERA_DB__GATEWAY_DSN=postgresql://vera_gateway@db.internal/vera   # the MCP server's login
    VERA_DB__DATA_DIR=/srv/vera/postgres                   # embedded server's data
    VERA_DB__TCP=true                                      # embedded: also listen on 127.0.0.1
    VERA_EMBEDDER__PROVIDER=openai                         # local | deterministic | openai | voyage | none
    VERA_EMBEDDER__API_KEY=sk-...                          # or the provider's own variable (OPENAI_API_KEY)
    VERA_EMBEDDER__RESILIENCE__TIMEOUT_SECONDS=20          # per call: breaker, bucket, retry, timeout
    VERA_RERANKER__PROVIDER=voyage                         # none | llm | voyage
    VERA_CACHE__VALKEY_URL=valkey://127.0.0.1:6379/0       # shared embedding cache beside the in-process one
    VERA_OBJECTS__BACKEND=s3                               # local | s3
    VERA_MEMORY__GRAPH_BACKEND=neo4j                       # none | falkordb | neo4j
    VERA_MEMORY__GRAPH_URL=bolt://graph.internal:7687      # falkor://127.0.0.1:6379 for FalkorDB
    VERA_MEMORY__GRAPH_USER=neo4j                          # and VERA_MEMORY__GRAPH_PASSWORD

A `.env` file in the current folder is read too (the environment wins over it). Only the
composition root (bootstrap.py), the clients' from_settings and the CLI build settings.
"""

from __future__ import annotations

import json
import os
import typing
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict, SettingsError

from vera_client.domain.errors import ConfigurationError


def default_data_dir() -> Path:
    """Where the embedded server keeps its data, per OS user.

    Root gets a dedicated folder under /var/lib: the embedded server runs as an
    unprivileged OS user and must be able to traverse every parent folder, so
    its data must never sit under /root (which would have to be opened up).
    """
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return Path("/var/lib/vera/postgres")
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg) if xdg else Path.home() / ".local" / "share"
    return base / "vera" / "postgres"


class DbSettings(BaseModel):
    """Where the database is. Without a DSN, VERA runs its embedded PostgreSQL."""

    dsn: str | None = Field(
        default=None,
        description="Application DSN of an external PostgreSQL: this application's own login "
        "(vera tenant login create NAME; a member of vera_app, which cannot log in itself)",
    )
    admin_dsn: str | None = Field(
        default=None, description="DSN used for migrations and provisioning; defaults to dsn"
    )
    worker_dsn: str | None = Field(
        default=None, description="DSN of the worker (role vera_worker); defaults to dsn"
    )
    gateway_dsn: str | None = Field(
        default=None,
        description="DSN of the MCP server's login (role vera_gateway) on an external PostgreSQL; "
        "the embedded server reaches that role without it",
    )
    data_dir: Path = Field(default_factory=default_data_dir)
    database: str = "vera"
    port: int = Field(default=54329, ge=1024, le=65535)
    tcp: bool = False
    connect_timeout: int = Field(default=10, ge=1, le=600)

    @field_validator("dsn", "admin_dsn", "worker_dsn", "gateway_dsn")
    @classmethod
    def _dsn_shape(cls, value: str | None) -> str | None:
        if value is None or value.strip() == "":
            return None
        if not (value.startswith(("postgresql://", "postgres://")) or "=" in value):
            raise ValueError("must be a postgresql:// URL or a key=value connection string")
        return value

    @property
    def embedded(self) -> bool:
        return self.dsn is None and self.admin_dsn is None


class ResilienceSettings(BaseModel):
    """The chain every call to one provider goes through, outermost first."""

    breaker_failures: int = Field(default=5, ge=1, description="consecutive failures that open the circuit")
    breaker_reset_seconds: float = Field(default=30.0, gt=0, description="how long an open circuit refuses")
    rate_per_second: float = Field(default=10.0, gt=0, description="token bucket refill rate")
    burst: int = Field(default=20, ge=1, description="token bucket capacity")
    max_retries: int = Field(default=4, ge=0, le=20)
    retry_base_seconds: float = Field(default=0.5, ge=0)
    retry_max_seconds: float = Field(default=20.0, ge=0)
    timeout_seconds: float = Field(default=30.0, gt=0, description="one attempt's deadline")
    max_response_bytes: int = Field(
        default=64 * 1024 * 1024,
        ge=1024,
        description="the largest answer read, counted as received and after decompression (64 MiB)",
    )


class EmbedderSettings(BaseModel):
    """Which embedder computes vectors; a group's pin must match its model and dimension. "none":
    this process embeds nothing, so it searches by words only (the lexical half) and writes
    passages without vectors; a group's vectors stay searchable by a process that runs its model."""

    provider: Literal["local", "deterministic", "openai", "voyage", "none"] = "local"
    model: str | None = Field(default=None, description="defaults per provider")
    dim: int | None = Field(default=None, ge=1, le=16000, description="defaults per model")
    base_url: str | None = Field(default=None, description="API base URL (a proxy or compatible server)")
    api_key: SecretStr | None = Field(default=None, description="defaults to OPENAI_API_KEY / VOYAGE_API_KEY")
    batch_size: int = Field(default=64, ge=1, le=2048)
    resilience: ResilienceSettings = Field(default_factory=ResilienceSettings)


class RerankerSettings(BaseModel):
    """Optional stage 3, on the top_n only: final = (1 - weight) * blend (min-max normalised over
    those top_n) + weight * reranker score."""

    provider: Literal["none", "llm", "voyage"] = "none"
    model: str | None = None
    base_url: str | None = None
    api_key: SecretStr | None = None
    weight: float = Field(default=0.5, ge=0, le=1)
    top_n: int = Field(default=20, ge=1, le=1000)
    resilience: ResilienceSettings = Field(default_factory=ResilienceSettings)


class LlmPrice(BaseModel):
    """A chat model's price in USD per million tokens (for the cost estimate only)."""

    input_per_million: float = Field(ge=0)
    output_per_million: float = Field(default=0.0, ge=0)


class LlmSettings(BaseModel):
    """The language models of the workers: free-text extraction and the two judges, over any
    OpenAI-compatible chat-completions API. Without base_url both are off."""

    base_url: str | None = Field(
        default=None, description="e.g. https://api.openai.com/v1, http://127.0.0.1:8080/v1"
    )
    api_key: SecretStr | None = Field(default=None, description="none for a local server without auth")
    extraction_model: str = Field(
        default="gpt-4o-mini", description="the smaller model: claims from passages"
    )
    judge_model: str = Field(
        default="gpt-4.1-mini", description="the larger model: equivalence, contradiction"
    )
    # merged over the built-in list prices (metering.LIST_PRICES); JSON in the environment:
    # VERA_LLM__PRICES='{"qwen2.5-7b": {"input_per_million": 0, "output_per_million": 0}}'
    prices: dict[str, LlmPrice] = Field(default_factory=dict)
    max_claims_per_passage: int = Field(default=50, ge=1, le=1000, description="more are cut and logged")
    max_output_tokens: int = Field(default=4000, ge=64, le=100_000)
    resilience: ResilienceSettings = Field(default_factory=ResilienceSettings)

    @property
    def enabled(self) -> bool:
        return bool(self.base_url and self.base_url.strip())


class CacheSettings(BaseModel):
    """Embedding cache: in-process LRU with TTL, optionally backed by a shared Valkey."""

    max_entries: int = Field(default=10_000, ge=0, description="0 turns the in-process cache off")
    ttl_seconds: float = Field(default=7 * 24 * 3600, gt=0)
    valkey_url: str | None = None


class ObjectStoreSettings(BaseModel):
    """Where raw source bytes go."""

    backend: Literal["local", "s3"] = "local"
    root: Path | None = Field(default=None, description="local backend folder; default: beside the database")
    bucket: str | None = None
    prefix: str = ""
    endpoint_url: str | None = Field(default=None, description="S3-compatible server; AWS when unset")
    region: str | None = None
    access_key_id: SecretStr | None = None
    secret_access_key: SecretStr | None = None
    max_object_bytes: int = Field(
        default=256 * 1024 * 1024, ge=1024, description="the largest object read back (256 MiB)"
    )
    resilience: ResilienceSettings = Field(default_factory=ResilienceSettings)


class MemorySettings(BaseModel):
    """The graph that published facts are projected into (a projection: switching backend is
    this setting plus `vera graph rebuild`)."""

    graph_backend: Literal["none", "falkordb", "neo4j"] = "none"
    graph_url: str | None = Field(
        default=None,
        description="bolt:// or neo4j:// for Neo4j; falkor://, redis:// or unix:// for FalkorDB",
    )
    graph_user: str | None = Field(default=None, description="Neo4j user / FalkorDB ACL user")
    graph_password: SecretStr | None = None
    graph_database: str = Field(default="neo4j", min_length=1, description="Neo4j database name")
    graph_batch_size: int = Field(default=1000, ge=1, le=100_000, description="nodes or edges per round trip")
    graph_timeout_seconds: float = Field(
        default=30.0, gt=0, le=3600, description="connect and query deadline"
    )

    @field_validator("graph_url")
    @classmethod
    def _graph_url_shape(cls, value: str | None) -> str | None:
        if value is None or value.strip() == "":
            return None
        if "://" not in value:
            raise ValueError("must be a URL such as bolt://host:7687 or falkor://host:6379")
        return value


class PoolSettings(BaseModel):
    """The client's connection pool."""

    min_size: int = Field(default=1, ge=0)
    max_size: int = Field(default=10, ge=1)
    timeout_seconds: float = Field(default=30.0, gt=0, description="waiting for a free connection")


_MIB = 1024 * 1024


# the documents the folder and git connectors read (vera_worker.domain.documents)
_DOCUMENT_MIMES = frozenset({
    "application/pdf", "text/html",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation",
})  # fmt: skip


class ReadLimits(BaseModel):
    """What the folder connector reads of one file (VERA_WORKER__READ_LIMITS__*): a file over its
    kind's size is skipped before a byte of it is read (a warning names it, the run goes on);
    a CSV is read up to csv_rows data rows (more could not be published: a record publishes at
    most 10,000 claims, and every row states one or more)."""

    markdown_bytes: int = Field(default=8 * _MIB, ge=1, description="largest .md/.markdown file read")
    text_bytes: int = Field(default=8 * _MIB, ge=1, description="largest .txt file read")
    csv_bytes: int = Field(default=16 * _MIB, ge=1, description="largest .csv file read")
    csv_rows: int = Field(default=10_000, ge=1, description="data rows read of one CSV file; the rest cut")
    document_bytes: int = Field(
        default=32 * _MIB, ge=1, description="largest .pdf/.docx/.pptx/.html file read"
    )

    def max_bytes(self, mime: str | None) -> int:
        """The size limit of a file of that MIME type (the smallest for an unknown one)."""
        by_mime = {
            "text/markdown": self.markdown_bytes,
            "text/csv": self.csv_bytes,
            "text/plain": self.text_bytes,
        }
        if mime in _DOCUMENT_MIMES:
            return self.document_bytes
        return by_mime.get(mime or "", min(by_mime.values()))


class WorkerSettings(BaseModel):
    """The Procrastinate worker that ingests sources and runs jobs."""

    concurrency: int = Field(default=2, ge=1, le=64)
    # Folder sources may only read at or below these folders (symbolic links resolved), and
    # within the folders an operator allowed the source's organisation (`vera tenant roots
    # add`, checked when the source is registered and again here); the default is the home
    # folder of the user the worker runs as.
    # In the environment: a JSON list, or folders separated by ':' as in PATH.
    source_roots: Annotated[tuple[Path, ...], NoDecode] = Field(
        default_factory=lambda: (Path.home(),), min_length=1
    )
    read_limits: ReadLimits = Field(default_factory=ReadLimits)
    # A job left `doing` by a worker that has sent no heartbeat for this many seconds (killed,
    # its machine lost) is queued again by another worker, which checks every half of it;
    # workers send a heartbeat every third of it. VERA_WORKER__STALLED_AFTER.
    stalled_after: float = Field(default=30.0, ge=1.0, le=3600.0)
    # When the worker calibrates the groups' ranking weights from their votes (a cron line,
    # UTC; "off" for never): each group with calibration on and enough new votes
    # (ranking.calibration_* settings, docs/operations.md). VERA_WORKER__CALIBRATION_SCHEDULE.
    calibration_schedule: str = Field(default="17 3 * * *", pattern=r"^(off|\S+( \S+){4})$")

    @field_validator("source_roots", mode="before")
    @classmethod
    def _path_list(cls, value: object) -> object:
        return path_list(value)


PATH_LIST_FORM = f'a JSON list of folders, e.g. ["/srv/a", "/srv/b"], or folders separated by {os.pathsep!r}'


def path_list(value: object) -> object:
    """A path list as the environment gives it: a JSON list, or folders separated by os.pathsep
    (as PATH; empty parts dropped). Anything but a string is left to the field's own validation."""
    if not isinstance(value, str):
        return value
    if value.lstrip().startswith("["):
        try:
            return json.loads(value)
        except ValueError:
            raise ValueError(f"must be {PATH_LIST_FORM}") from None
    return [part for part in value.split(os.pathsep) if part.strip()]


class VeraSettings(BaseSettings):
    """All of VERA's settings. Each is read from, first to last: the arguments given, the
    environment, a `.env` file in the current folder (its VERA_ lines), the defaults."""

    model_config = SettingsConfigDict(
        env_prefix="VERA_",
        env_nested_delimiter="__",
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
        frozen=True,
    )

    # VERA_API_KEY: the caller of VeraClient.from_settings() when none is passed
    api_key: SecretStr | None = None
    db: DbSettings = Field(default_factory=DbSettings)
    pool: PoolSettings = Field(default_factory=PoolSettings)
    embedder: EmbedderSettings = Field(default_factory=EmbedderSettings)
    reranker: RerankerSettings = Field(default_factory=RerankerSettings)
    llm: LlmSettings = Field(default_factory=LlmSettings)
    cache: CacheSettings = Field(default_factory=CacheSettings)
    objects: ObjectStoreSettings = Field(default_factory=ObjectStoreSettings)
    memory: MemorySettings = Field(default_factory=MemorySettings)
    worker: WorkerSettings = Field(default_factory=WorkerSettings)


def read_settings() -> VeraSettings:
    """VeraSettings from the environment (and .env); a setting in the wrong shape is a
    ConfigurationError in one line that names its variable and the form it takes."""
    try:
        return VeraSettings()
    except SettingsError as error:
        raise misshapen_setting(error, VeraSettings, "VERA_") from None
    except ValidationError as error:
        problem = error.errors(include_url=False, include_input=False)[0]
        where = "__".join(str(part) for part in problem["loc"] if not isinstance(part, int)).upper()
        message = " ".join(str(problem["msg"]).split()).removeprefix("Value error, ")
        raise ConfigurationError(f"invalid setting VERA_{where}: {message}") from None


def misshapen_setting(error: SettingsError, model: type[BaseModel], prefix: str) -> ConfigurationError:
    """Which structured setting of model (a JSON list or object in the environment) failed to parse."""
    environment = {name.upper(): value for name, value in os.environ.items()}
    for name, form in structured_settings(model, prefix):
        value = environment.get(name)
        if value is None:
            continue
        try:
            json.loads(value)
        except ValueError:
            return ConfigurationError(f"invalid setting {name}: must be {form}, not {value[:60]!r}")
    return ConfigurationError(f"invalid setting: {error} (a list or an object is written as JSON)")


def structured_settings(model: type[BaseModel], prefix: str) -> list[tuple[str, str]]:
    """The environment variables under prefix whose value is JSON (lists, objects), with their form."""
    found: list[tuple[str, str]] = []
    for name, field in model.model_fields.items():
        variable = f"{prefix}{name.upper()}"
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            found.extend(structured_settings(annotation, f"{variable}__"))
            continue
        origin = typing.get_origin(annotation)
        if any(isinstance(meta, NoDecode) or meta is NoDecode for meta in field.metadata):
            continue  # parsed by its own validator, which names it
        if origin is dict:
            found.append((variable, 'a JSON object, e.g. {"key": "value"}'))
        elif origin in (list, tuple, set, frozenset):
            found.append((variable, 'a JSON list, e.g. ["a", "b"]'))
    return found
