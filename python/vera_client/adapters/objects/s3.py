"""Raw bytes in an S3 bucket (AWS, or any S3-compatible server), one object per key."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import boto3
from botocore.config import Config
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectTimeoutError,
    NoCredentialsError,
    PartialCredentialsError,
    ReadTimeoutError,
)

from vera_client.adapters.providers.bounded import read_bounded, too_large
from vera_client.domain.errors import (
    ConfigurationError,
    InvalidArgumentError,
    NotFoundError,
    ProviderError,
    ProviderRateLimitedError,
    ProviderResponseError,
    ProviderTimeoutError,
    VeraError,
)

T = TypeVar("T")

# the largest object get() reads (ObjectStoreSettings.max_object_bytes); larger ones are refused
DEFAULT_MAX_OBJECT_BYTES = 256 * 1024 * 1024
_CHUNK_BYTES = 256 * 1024

# S3's limit on a key, counted in UTF-8 bytes
MAX_KEY_BYTES = 1024
_MISSING_KEY = frozenset({"NoSuchKey", "404", "NotFound"})
_THROTTLED = frozenset(
    {"SlowDown", "Throttling", "ThrottlingException", "TooManyRequests", "RequestLimitExceeded"}
)
_TIMED_OUT = frozenset({"RequestTimeout", "RequestTimeoutException"})


class CallGuard(Protocol):
    """Runs one call to the provider and returns its result (breaker, rate limit, retry, timeout)."""

    def __call__(self, call: Callable[[], T], /) -> T: ...


def _call_directly(call: Callable[[], T], /) -> T:
    return call()


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


class S3ObjectStore:
    """Keys are relative POSIX paths below an optional prefix of one bucket
    (the prefix's surrounding slashes are dropped: 'tenant-a/' and 'tenant-a' are one prefix).

    Retries belong to `call_guard` (the provider's resilience chain), so
    botocore's own retries are off: the two would multiply. Errors reach the
    guard already translated, so a missing object (NotFoundError) is never
    mistaken for a failing provider.
    """

    def __init__(
        self,
        bucket: str,
        *,
        prefix: str = "",
        endpoint_url: str | None = None,
        region: str | None = None,
        access_key_id: str | None = None,
        secret_access_key: str | None = None,
        path_style: bool | None = None,
        connect_timeout_seconds: float = 5.0,
        read_timeout_seconds: float = 30.0,
        call_guard: CallGuard = _call_directly,
        max_object_bytes: int = DEFAULT_MAX_OBJECT_BYTES,
    ) -> None:
        if not bucket:
            raise InvalidArgumentError("an S3 object store needs a bucket")
        self.bucket = bucket
        prefix = prefix.strip("/")
        self.prefix = f"{_checked(prefix, 'prefix')}/" if prefix else ""
        self.region = region
        # S3-compatible servers rarely resolve <bucket>.<host>; AWS prefers virtual hosts
        if path_style is None:
            path_style = endpoint_url is not None
        config = Config(
            region_name=region,
            s3={"addressing_style": "path" if path_style else "virtual"},
            retries={"total_max_attempts": 1, "mode": "standard"},
            connect_timeout=connect_timeout_seconds,
            read_timeout=read_timeout_seconds,
        )
        # a session of its own: boto3's default session is shared and not thread-safe
        session = boto3.session.Session(
            aws_access_key_id=access_key_id,
            aws_secret_access_key=secret_access_key,
            region_name=region,
        )
        self._client: Any = session.client("s3", endpoint_url=endpoint_url, config=config)
        self._guard = call_guard
        self.max_object_bytes = max_object_bytes

    def _key(self, key: str) -> str:
        full = self.prefix + _checked(key, "object key")
        if len(full.encode("utf-8")) > MAX_KEY_BYTES:
            raise InvalidArgumentError(f"object key {key!r} is longer than S3's {MAX_KEY_BYTES} bytes")
        return full

    def put(self, key: str, data: bytes) -> None:
        full = self._key(key)
        self._run("put", key, lambda: self._client.put_object(Bucket=self.bucket, Key=full, Body=data))

    def get(self, key: str) -> bytes:
        full = self._key(key)

        def read() -> bytes:
            # the body is read inside the guard: a connection lost mid-stream is the provider's failure too;
            # botocore does not decode Content-Encoding, so the bytes counted are the bytes received
            answer = self._client.get_object(Bucket=self.bucket, Key=full)
            body = answer["Body"]
            try:
                declared = answer.get("ContentLength")
                if isinstance(declared, int) and declared > self.max_object_bytes:
                    raise too_large("s3", self.max_object_bytes, "max_object_bytes")
                return read_bounded(
                    body.iter_chunks(_CHUNK_BYTES), provider="s3", limit=self.max_object_bytes,
                    setting="max_object_bytes",
                )  # fmt: skip
            finally:
                body.close()

        return self._run("get", key, read)

    def delete(self, key: str) -> bool:
        full = self._key(key)

        def head_then_delete() -> bool:
            # S3 answers 204 whether or not the key existed, so ask first; a
            # concurrent delete between the two calls still reports True, and a
            # missing bucket (HEAD says 404 either way) reads as already gone
            try:
                self._client.head_object(Bucket=self.bucket, Key=full)
            except ClientError as exc:
                if _code(exc) in _MISSING_KEY:
                    return False
                raise
            self._client.delete_object(Bucket=self.bucket, Key=full)
            return True

        return self._run("delete", key, head_then_delete)

    def ensure_bucket(self) -> bool:
        """Create the bucket unless it exists; True when this call created it."""

        def head_or_create() -> bool:
            try:
                self._client.head_bucket(Bucket=self.bucket)
                return False
            except ClientError as exc:
                if _code(exc) not in {"404", "NoSuchBucket", "NotFound"}:
                    raise
            arguments: dict[str, Any] = {"Bucket": self.bucket}
            # us-east-1 is the default location and AWS refuses it as an explicit constraint
            if self.region and self.region != "us-east-1":
                arguments["CreateBucketConfiguration"] = {"LocationConstraint": self.region}
            try:
                self._client.create_bucket(**arguments)
            except ClientError as exc:
                if _code(exc) == "BucketAlreadyOwnedByYou":
                    return False
                raise
            return True

        return self._run("create bucket", None, head_or_create)

    def _run(self, action: str, key: str | None, call: Callable[[], T]) -> T:
        def translated() -> T:
            try:
                return call()
            except ClientError as exc:
                raise self._client_error(action, key, exc) from exc
            except BotoCoreError as exc:
                raise _transport_error(action, exc) from exc

        return self._guard(translated)

    def _client_error(self, action: str, key: str | None, exc: ClientError) -> VeraError:
        code = _code(exc)
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        message = _one_line(exc.response.get("Error", {}).get("Message") or code)
        if key is not None and code in _MISSING_KEY:
            return NotFoundError(f"no object {key!r}")
        if code == "NoSuchBucket":
            return ProviderResponseError(f"S3 bucket {self.bucket!r} does not exist")
        if status == 429 or code in _THROTTLED:
            return ProviderRateLimitedError(f"S3 {action} throttled: {code}: {message}")
        if status in {408, 504} or code in _TIMED_OUT:
            return ProviderTimeoutError(f"S3 {action} timed out: {code}: {message}")
        return ProviderResponseError(f"S3 {action} failed with {status} {code}: {message}")


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def _transport_error(action: str, exc: BotoCoreError) -> VeraError:
    message = _one_line(exc)
    if isinstance(exc, ConnectTimeoutError | ReadTimeoutError):
        return ProviderTimeoutError(f"S3 {action} timed out: {message}")
    if isinstance(exc, NoCredentialsError | PartialCredentialsError):
        return ConfigurationError(f"S3 credentials are missing: {message}")
    return ProviderError(f"S3 {action} failed: {message}")


def _checked(path: str, what: str) -> str:
    """The path itself when it is relative, of non-empty segments, none of them '.' or '..'.

    Stricter than a filesystem, which would quietly fold 'a/./b' and 'a/b/' into
    'a/b': S3 would keep them as distinct keys, and the two backends must agree.
    """
    if not path or "\\" in path or any(segment in {"", ".", ".."} for segment in path.split("/")):
        raise InvalidArgumentError(f"invalid {what} {path!r}: a relative path without '..' or empty segments")
    return path
