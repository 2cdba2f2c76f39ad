from __future__ import annotations

from pathlib import Path

import pydantic
import pytest

from vera_client.adapters.embedders.cache import CachedEmbedder
from vera_client.adapters.embedders.voyage import VoyageEmbedder
from vera_client.adapters.rerankers.llm import LlmReranker
from vera_client.bootstrap import build_database, build_object_store, build_providers
from vera_client.config import VeraSettings, default_data_dir
from vera_client.domain.errors import ConfigurationError


def test_nested_environment_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERA_DB__DSN", "postgresql://vera_app@db.internal/vera")
    monkeypatch.setenv("VERA_DB__ADMIN_DSN", "postgresql://dba:s3cret@db.internal/vera")
    monkeypatch.setenv("VERA_DB__TCP", "true")
    settings = VeraSettings()
    assert settings.db.dsn == "postgresql://vera_app@db.internal/vera"
    assert settings.db.tcp is True
    assert not settings.db.embedded
    database = build_database(settings)
    assert database.server is None
    assert database.app_dsn.startswith("postgresql://vera_app@")
    assert database.admin_dsn.startswith("postgresql://dba:")


def test_embedded_by_default(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("VERA_DB__DSN", raising=False)
    monkeypatch.delenv("VERA_DB__ADMIN_DSN", raising=False)
    monkeypatch.setenv("VERA_DB__DATA_DIR", str(tmp_path / "pg"))
    database = build_database(VeraSettings())
    assert database.server is not None
    assert database.app_dsn.startswith("postgresql://vera_app_local@/vera?host=")


def test_empty_dsn_means_embedded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERA_DB__DSN", "  ")
    assert VeraSettings().db.embedded


@pytest.mark.parametrize("dsn", ["not a dsn", "mysql://x@y/z"])
def test_malformed_dsn_is_refused(monkeypatch: pytest.MonkeyPatch, dsn: str) -> None:
    monkeypatch.setenv("VERA_DB__DSN", dsn)
    with pytest.raises(pydantic.ValidationError, match="postgresql://"):
        VeraSettings()


def test_port_out_of_range_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERA_DB__PORT", "80")
    with pytest.raises(pydantic.ValidationError):
        VeraSettings()


def test_root_data_dir_is_never_under_root_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 0)
    assert default_data_dir() == Path("/var/lib/vera/postgres")
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    monkeypatch.setenv("XDG_DATA_HOME", "/home/u/.data")
    assert default_data_dir() == Path("/home/u/.data/vera/postgres")


def test_providers_are_chosen_by_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("VOYAGE_API_KEY", "voyage-key-from-its-own-variable")
    monkeypatch.setenv("VERA_EMBEDDER__PROVIDER", "voyage")
    monkeypatch.setenv("VERA_EMBEDDER__MODEL", "voyage-4-lite")
    monkeypatch.setenv("VERA_RERANKER__PROVIDER", "llm")
    monkeypatch.setenv("VERA_RERANKER__BASE_URL", "http://127.0.0.1:9/v1")
    providers = build_providers(VeraSettings())
    embedder = providers.embedder()
    assert isinstance(embedder, CachedEmbedder) and (embedder.model, embedder.dim) == ("voyage-4-lite", 1024)
    assert isinstance(embedder._inner, VoyageEmbedder)
    assert isinstance(providers.reranker, LlmReranker)
    monkeypatch.setenv("VERA_EMBEDDER__PROVIDER", "openai")
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        build_providers(VeraSettings()).embedder()
    monkeypatch.setenv("VERA_OBJECTS__BACKEND", "s3")
    with pytest.raises(ConfigurationError, match="VERA_OBJECTS__BUCKET"):
        build_object_store(VeraSettings())


def test_admin_dsn_alone_gives_the_application_no_superuser_connection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With only the administrator's DSN, the application and the worker would
    connect as the superuser, and row-level security would be gone."""
    monkeypatch.delenv("VERA_DB__DSN", raising=False)
    monkeypatch.delenv("VERA_DB__WORKER_DSN", raising=False)
    monkeypatch.setenv("VERA_DB__ADMIN_DSN", "postgresql://dba:s3cret@db.internal/vera")
    database = build_database(VeraSettings())
    assert database.admin_dsn.startswith("postgresql://dba:")  # migrations still run
    with pytest.raises(ConfigurationError) as app:
        _ = database.app_dsn
    assert str(app.value).startswith("VERA_DB__ADMIN_DSN is set but VERA_DB__DSN is not: ")
    with pytest.raises(ConfigurationError) as worker:
        _ = database.worker_dsn
    assert str(worker.value).startswith(
        "VERA_DB__ADMIN_DSN is set but neither VERA_DB__WORKER_DSN nor VERA_DB__DSN: "
    )
    for error in (app.value, worker.value):
        assert "\n" not in str(error) and "s3cret" not in str(error)


def test_worker_dsn_falls_back_to_the_application_dsn_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERA_DB__DSN", "postgresql://vera_app@db.internal/vera")
    monkeypatch.setenv("VERA_DB__ADMIN_DSN", "postgresql://dba:s3cret@db.internal/vera")
    monkeypatch.delenv("VERA_DB__WORKER_DSN", raising=False)
    assert build_database(VeraSettings()).worker_dsn.startswith("postgresql://vera_app@")
    monkeypatch.setenv("VERA_DB__WORKER_DSN", "postgresql://vera_worker@db.internal/vera")
    assert build_database(VeraSettings()).worker_dsn.startswith("postgresql://vera_worker@")


def test_the_embedder_can_be_none(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before, VERA_EMBEDDER__PROVIDER=none was refused: a client without a model could not say so."""
    monkeypatch.setenv("VERA_EMBEDDER__PROVIDER", "none")
    providers = build_providers(VeraSettings())
    assert not providers.embeds
    # no group gets an embedder here, pinned or not: searches go by words, passages have no vector
    assert providers.embedder_for_model(None) is None
    assert providers.embedder_for_model("all-MiniLM-L6-v2") is None
    assert providers.embedder_for_model("deterministic-hash-384") is None
    with pytest.raises(ConfigurationError, match=r"VERA_EMBEDDER__PROVIDER=none"):
        providers.embedder()
