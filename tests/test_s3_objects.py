from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest
from pydantic import SecretStr

from tests.servers import S3Server, free_port, running_seaweedfs
from vera_client.adapters.objects.s3 import S3ObjectStore
from vera_client.bootstrap import build_object_store
from vera_client.config import ObjectStoreSettings, ResilienceSettings, VeraSettings
from vera_client.domain.errors import (
    InvalidArgumentError,
    NotFoundError,
    ProviderError,
    ProviderResponseError,
    VeraError,
)

T = TypeVar("T")
BUCKET = "vera-objects"


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    with running_seaweedfs(tmp_path_factory.mktemp("seaweedfs")) as server:
        yield server


def store_for(server: S3Server, *, bucket: str = BUCKET, prefix: str = "", **options: Any) -> S3ObjectStore:
    settings: dict[str, Any] = {
        "endpoint_url": server.endpoint_url,
        "region": server.region,
        "access_key_id": server.access_key_id,
        "secret_access_key": server.secret_access_key,
    }
    return S3ObjectStore(bucket, prefix=prefix, **(settings | options))


@pytest.fixture(scope="session")
def bucket(s3_server: S3Server) -> str:
    store_for(s3_server).ensure_bucket()
    return BUCKET


@pytest.fixture(scope="session")
def store(s3_server: S3Server, bucket: str) -> S3ObjectStore:
    # one store for the session (a boto3 client takes a while to build); each test uses keys of its own
    return store_for(s3_server, bucket=bucket, prefix=f"test-{uuid.uuid4().hex[:12]}")


@pytest.fixture(scope="session")
def unreachable() -> S3ObjectStore:
    """A store whose endpoint nobody listens on (with credentials, so boto3 does not go looking for any)."""
    return S3ObjectStore(
        BUCKET,
        endpoint_url=f"http://127.0.0.1:{free_port()}",
        region="us-east-1",
        access_key_id="nobody",
        secret_access_key="nothing",
    )


def test_put_get_delete(store: S3ObjectStore) -> None:
    store.put("a/b/c.md", "Tiếng Việt".encode())
    assert store.get("a/b/c.md").decode() == "Tiếng Việt"
    assert store.delete("a/b/c.md") is True
    assert store.delete("a/b/c.md") is False
    with pytest.raises(NotFoundError, match=re.escape("no object 'a/b/c.md'")):
        store.get("a/b/c.md")


def test_put_replaces(store: S3ObjectStore) -> None:
    store.put("doc.md", b"first")
    store.put("doc.md", b"second, longer")
    assert store.get("doc.md") == b"second, longer"


def test_deleting_what_never_existed_is_false(store: S3ObjectStore) -> None:
    assert store.delete("never/was.md") is False


def test_bytes_come_back_unchanged(store: S3ObjectStore) -> None:
    data = bytes(range(256)) * 4 + b"\x00"
    store.put("blob.bin", data)
    assert store.get("blob.bin") == data
    store.put("empty", b"")
    assert store.get("empty") == b""


@pytest.mark.parametrize(
    "key", ["Tiếng Việt/ghi chú.md", "日本語/ファイル.txt", "emoji 🚀/a b+c&d=e%20?.md", "with'quote\"s.md"]
)
def test_unicode_and_odd_characters_in_keys(store: S3ObjectStore, key: str) -> None:
    store.put(key, key.encode())
    assert store.get(key) == key.encode()
    assert store.delete(key) is True


@pytest.mark.parametrize(
    "key",
    ["", "/etc/passwd", "../escape", "a/../../b", "a//b", "a\\b", "a/./b", "a/b/", ".", "x" * 1025],
)
def test_bad_keys_are_refused_before_any_request(unreachable: S3ObjectStore, key: str) -> None:
    # nothing listens there: a key that got as far as a request would fail otherwise
    for call in (
        lambda: unreachable.put(key, b"x"),
        lambda: unreachable.get(key),
        lambda: unreachable.delete(key),
    ):
        with pytest.raises(InvalidArgumentError):
            call()


def test_the_key_limit_counts_the_prefix(store: S3ObjectStore) -> None:
    fits_alone = "k" * (1025 - len(store.prefix))
    with pytest.raises(InvalidArgumentError, match="longer than"):
        store.put(fits_alone, b"x")


@pytest.mark.parametrize("prefix", ["../up", "a//b", "a/./b"])
def test_bad_prefixes_are_refused(s3_server: S3Server, prefix: str) -> None:
    with pytest.raises(InvalidArgumentError, match="invalid prefix"):
        store_for(s3_server, prefix=prefix)


def test_prefixes_keep_stores_apart(s3_server: S3Server, bucket: str) -> None:
    run = uuid.uuid4().hex[:12]
    tenant_a = store_for(s3_server, prefix=f"{run}/tenant-a/")
    tenant_b = store_for(s3_server, prefix=f"{run}/tenant-b")
    tenant_a.put("same/key.md", b"A")
    tenant_b.put("same/key.md", b"B")
    assert (tenant_a.get("same/key.md"), tenant_b.get("same/key.md")) == (b"A", b"B")

    listed = s3_server.client().list_objects_v2(Bucket=bucket, Prefix=f"{run}/")
    assert sorted(o["Key"] for o in listed["Contents"]) == [
        f"{run}/tenant-a/same/key.md",
        f"{run}/tenant-b/same/key.md",
    ]
    assert tenant_a.delete("same/key.md") is True
    assert tenant_b.get("same/key.md") == b"B"
    with pytest.raises(NotFoundError):
        tenant_a.get("same/key.md")


def test_ensure_bucket_creates_it_once(s3_server: S3Server) -> None:
    name = f"vera-ensure-{uuid.uuid4().hex[:8]}"
    store = store_for(s3_server, bucket=name)
    assert store.ensure_bucket() is True
    assert store.ensure_bucket() is False
    store.put("k", b"v")
    assert s3_server.client().get_object(Bucket=name, Key="k")["Body"].read() == b"v"


def test_a_missing_bucket_is_a_provider_error_not_a_missing_object(s3_server: S3Server) -> None:
    store = store_for(s3_server, bucket=f"vera-absent-{uuid.uuid4().hex[:8]}")
    with pytest.raises(ProviderResponseError, match="does not exist") as caught:
        store.get("k")
    assert not isinstance(caught.value, NotFoundError)


def test_wrong_credentials_are_one_line_provider_errors(s3_server: S3Server, bucket: str) -> None:
    store = store_for(s3_server, bucket=bucket, secret_access_key="not-the-secret")
    with pytest.raises(ProviderResponseError) as caught:
        store.put("k", b"v")
    message = str(caught.value)
    assert "403" in message and "\n" not in message


def test_an_unreachable_endpoint_is_a_provider_error(unreachable: S3ObjectStore) -> None:
    with pytest.raises(ProviderError, match="S3 get failed") as caught:
        unreachable.get("k")
    assert "\n" not in str(caught.value)


def test_every_call_goes_through_the_guard_with_errors_already_translated(store_factory_guard: Any) -> None:
    store, seen = store_factory_guard
    store.put("guarded.md", b"x")
    assert store.get("guarded.md") == b"x"
    assert store.delete("guarded.md") is True
    with pytest.raises(NotFoundError):
        store.get("guarded.md")
    assert seen == ["ok", "ok", "ok", "NotFoundError"]


@pytest.fixture
def store_factory_guard(s3_server: S3Server, bucket: str) -> tuple[S3ObjectStore, list[str]]:
    seen: list[str] = []

    def guard(call: Callable[[], T]) -> T:
        try:
            result = call()
        except VeraError as exc:
            seen.append(type(exc).__name__)
            raise
        seen.append("ok")
        return result

    prefix = f"test-{uuid.uuid4().hex[:12]}"
    return store_for(s3_server, bucket=bucket, prefix=prefix, call_guard=guard), seen


def test_the_configured_s3_store_goes_through_the_resilience_chain(s3_server: S3Server, bucket: str) -> None:
    """VERA_OBJECTS__BACKEND=s3 builds this store; an unreachable endpoint is retried, then one error."""

    def settings(endpoint: str, retries: int) -> VeraSettings:
        objects = ObjectStoreSettings(
            backend="s3",
            bucket=bucket,
            prefix="configured",
            endpoint_url=endpoint,
            region=s3_server.region,
            access_key_id=SecretStr(s3_server.access_key_id),
            secret_access_key=SecretStr(s3_server.secret_access_key),
            resilience=ResilienceSettings(
                max_retries=retries, retry_base_seconds=0.01, retry_max_seconds=0.02
            ),
        )
        return VeraSettings(objects=objects)

    configured = build_object_store(settings(s3_server.endpoint_url, 0))
    configured.put("a/b.md", b"bytes")
    assert configured.get("a/b.md") == b"bytes"
    assert store_for(s3_server, prefix="configured").get("a/b.md") == b"bytes"
    down = build_object_store(settings(f"http://127.0.0.1:{free_port()}", 2))
    with pytest.raises(ProviderError, match=r"after 3 attempts"):
        down.get("a/b.md")
