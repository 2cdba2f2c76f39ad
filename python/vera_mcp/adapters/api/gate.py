"""What every HTTP API request passes through, in one place (as ToolRunner.run_tool is for
MCP tools): the bearer token verified by the MCP server's verifier chain (API keys, OIDC,
the failed-token throttle), the scope the route needs, its parameters checked against
the route's models, the caller's quota for the route's class, the Idempotency-Key of a
write, the work run as the caller with a deadline, the answer's ETag, and every failure
as an RFC 9457 problem detail."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Callable, Mapping
from typing import Any

import pydantic
from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from vera_client.client import AsyncVeraClient
from vera_client.domain.errors import DatabaseUnavailableError, VeraError
from vera_mcp.adapters.api.cursors import cursor_scope
from vera_mcp.adapters.api.endpoint import ApiCall, Endpoint
from vera_mcp.adapters.logs import correlation_id
from vera_mcp.adapters.metrics import Outcome
from vera_mcp.adapters.observability import ToolCallObserver
from vera_mcp.adapters.runner import ToolCall
from vera_mcp.adapters.verifier import ChainedTokenVerifier, VeraAccessToken
from vera_mcp.domain.access import QuotaExceededError, VerifiedCaller
from vera_mcp.domain.ports import QuotaLedger
from vera_mcp.domain.problems import PROBLEM_MEDIA_TYPE, ApiProblem, problem_for
from vera_mcp.domain.quotas import organisations_of

log = logging.getLogger("vera_mcp.api")
MAX_IDEMPOTENCY_KEY = 200


class ApiGate:
    """Runs endpoints as their callers over one client (one pool), with the MCP server's verifier
    chain, quota ledger and metrics (the ledger and observer are read at each request: the app
    that mounts the API sets them once it has built its metrics)."""

    def __init__(
        self,
        client: AsyncVeraClient,
        verifier: ChainedTokenVerifier,
        *,
        ledger: Callable[[], QuotaLedger | None],
        observer: Callable[[], ToolCallObserver],
        timeout_s: float,
        max_body_bytes: int,
        resource_metadata_url: str | None = None,
    ) -> None:
        self.client = client
        self.verifier = verifier
        self._ledger = ledger
        self._observer = observer
        self.timeout_s = timeout_s
        self.max_body_bytes = max_body_bytes
        self.resource_metadata_url = resource_metadata_url

    def route(self, endpoint: Endpoint) -> Callable[[Request], Any]:
        async def serve(request: Request) -> Response:
            return await self.serve(endpoint, request)

        return serve

    async def serve(self, endpoint: Endpoint, request: Request) -> Response:
        request_id = correlation_id()
        observer = self._observer()
        try:
            with observer.tool_call(endpoint.name) as observed:
                try:
                    return await self._serve(endpoint, request)
                except QuotaExceededError as refusal:
                    observed.outcome = Outcome.REFUSED_QUOTA
                    observer.metrics.observe_quota_refusal(refusal.tool_class)
                    return problem_response(refusal, request_id)
                except ApiProblem as refusal:  # the caller's: not a fault of the server
                    observed.outcome = Outcome.REFUSED_SCOPE if refusal.status == 403 else Outcome.TOOL_ERROR
                    return problem_response(refusal, request_id)
                except DatabaseUnavailableError:
                    raise
                except VeraError as refusal:  # the SQL API's (or the client's) refusal
                    observed.outcome = Outcome.TOOL_ERROR
                    return problem_response(refusal, request_id)
        except Exception as error:  # counted and logged by the observer as a fault: answered 5xx
            return problem_response(error, request_id)

    async def invoke(
        self,
        endpoint: Endpoint,
        verified: VerifiedCaller,
        *,
        path: Mapping[str, Any] | None = None,
        query: Mapping[str, Any] | None = None,
        body: Mapping[str, Any] | None = None,
    ) -> BaseModel:
        """One endpoint run for a caller verified elsewhere (the web console's session), as a request
        to its route would be: the scope it needs, its parameters checked by its models, the quota,
        the deadline and the metrics; its answer as its model (a refusal raised as ApiProblem,
        QuotaExceededError or VeraError, for the caller to show)."""
        observer = self._observer()
        with observer.tool_call(endpoint.name) as observed:
            try:
                self._check_scope(endpoint, verified)
                call = ApiCall(
                    ToolCall(self.client.as_caller(verified.caller), verified, correlation_id() or ""),
                    path=_parsed(endpoint.path_model, dict(path or {}), "path"),
                    query=_parsed(endpoint.query_model, dict(query or {}), "query"),
                    body=_parsed(endpoint.body_model, dict(body or {}), "body"),
                    cursor_scope=cursor_scope(sorted((k, str(v)) for k, v in (query or {}).items())),
                )
                await self._take_quota(endpoint, call, verified)
                async with asyncio.timeout(self.timeout_s):
                    return await endpoint.handler(call)
            except QuotaExceededError as refusal:
                observed.outcome = Outcome.REFUSED_QUOTA
                observer.metrics.observe_quota_refusal(refusal.tool_class)
                raise
            except ApiProblem as refusal:
                observed.outcome = Outcome.REFUSED_SCOPE if refusal.status == 403 else Outcome.TOOL_ERROR
                raise
            except DatabaseUnavailableError:
                raise
            except VeraError:
                observed.outcome = Outcome.TOOL_ERROR
                raise

    @staticmethod
    def _check_scope(endpoint: Endpoint, verified: VerifiedCaller) -> None:
        if endpoint.scope not in verified.scopes:
            raise ApiProblem(
                403,
                "insufficient-scope",
                "Insufficient scope",
                f"this token lacks the scope {endpoint.scope.value!r}, which {endpoint.name} needs",
                headers={
                    "WWW-Authenticate": f'Bearer error="insufficient_scope", scope="{endpoint.scope.value}"'
                },
            )

    async def _take_quota(self, endpoint: Endpoint, call: ApiCall, verified: VerifiedCaller) -> None:
        ledger = self._ledger()
        if ledger is not None:
            organisations = verified.organisations
            if organisations is None:  # an OIDC caller: whoami says
                organisations = organisations_of(await call.call.memberships())
            await ledger.take(verified.principal_id, endpoint.route_class, organisations)

    async def _serve(self, endpoint: Endpoint, request: Request) -> Response:
        verified = await self._caller(request)
        self._check_scope(endpoint, verified)
        body_bytes = await self._body(endpoint, request)
        call = ApiCall(
            ToolCall(self.client.as_caller(verified.caller), verified, correlation_id() or ""),
            path=_parsed(endpoint.path_model, dict(request.path_params), "path"),
            query=_parsed(endpoint.query_model, _query_values(endpoint, request), "query"),
            body=_parsed_body(endpoint.body_model, body_bytes),
            cursor_scope=cursor_scope(request.query_params.multi_items()),
        )
        await self._take_quota(endpoint, call, verified)
        key = request.headers.get("idempotency-key")
        if endpoint.writes and key is not None:
            return await self._idempotent(endpoint, call, key, _request_hash(request, body_bytes))
        status, body = await self._run(endpoint, call)
        return _answer(endpoint, request, status, body)

    async def verify(self, token: str) -> VerifiedCaller | None:
        """The caller of a bearer token (an API key or an OIDC access token), None if it is refused."""
        access = await self.verifier.verify_token(token.strip())
        return access.verified if isinstance(access, VeraAccessToken) else None

    async def _caller(self, request: Request) -> VerifiedCaller:
        # mounted in the MCP server's app, the SDK's middleware has verified the token already
        already = getattr(request.scope.get("user"), "access_token", None)
        if isinstance(already, VeraAccessToken):
            return already.verified
        authorization = request.headers.get("authorization", "")
        scheme, _, token = authorization.partition(" ")
        challenge = "Bearer"
        if self.resource_metadata_url:
            challenge += f' resource_metadata="{self.resource_metadata_url}"'
        if scheme.lower() != "bearer" or not token.strip():
            raise ApiProblem(
                401,
                "unauthenticated",
                "Not authenticated",
                "send a bearer token (an API key or an OAuth access token)",
                headers={"WWW-Authenticate": challenge},
            )
        access = await self.verifier.verify_token(token.strip())
        if not isinstance(access, VeraAccessToken):
            raise ApiProblem(
                401,
                "invalid-token",
                "Invalid token",
                "the bearer token is unknown, revoked or expired",
                headers={"WWW-Authenticate": challenge + ', error="invalid_token"'},
            )
        return access.verified

    async def _body(self, endpoint: Endpoint, request: Request) -> bytes:
        if endpoint.body_model is None:
            return b""
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            raise _too_large(self.max_body_bytes)
        media = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if media != "application/json":
            raise ApiProblem(
                415, "unsupported-media-type", "Unsupported media type", "send the body as application/json"
            )
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > self.max_body_bytes:
                raise _too_large(self.max_body_bytes)
            chunks.append(chunk)
        return b"".join(chunks)

    async def _run(self, endpoint: Endpoint, call: ApiCall) -> tuple[int, Any]:
        async with asyncio.timeout(self.timeout_s):
            answer = await endpoint.handler(call)
        return endpoint.status, answer.model_dump(mode="json")

    async def _idempotent(self, endpoint: Endpoint, call: ApiCall, key: str, digest: str) -> Response:
        """A write under an Idempotency-Key: the answer recorded for it when it ran before, else run it
        once and record its answer (a refusal too: a retry gets the same refusal)."""
        if not 1 <= len(key) <= MAX_IDEMPOTENCY_KEY or not key.isprintable():
            raise ApiProblem(
                400,
                "invalid-idempotency-key",
                "Invalid Idempotency-Key",
                f"an Idempotency-Key has 1 to {MAX_IDEMPOTENCY_KEY} printable characters",
            )
        vera = call.call.vera
        recorded = await vera.begin_idempotent(key, digest)
        if recorded.status is not None:
            headers = {"Idempotent-Replayed": "true"}
            media = PROBLEM_MEDIA_TYPE if recorded.status >= 400 else "application/json"
            return JSONResponse(
                recorded.response, status_code=recorded.status, headers=headers, media_type=media
            )
        try:
            status, body = await self._run(endpoint, call)
        except DatabaseUnavailableError:
            # nothing could commit without the database: a retry may run it
            await _forget(vera, key)
            raise
        except VeraError as refusal:
            problem, _headers = problem_for(refusal, correlation_id())
            await vera.finish_idempotent(
                key, problem.status, problem.model_dump(mode="json", exclude_none=True)
            )
            raise
        # a timeout or a fault of the server leaves the key running: whether the write committed is
        # not known, so a retry is refused (409) rather than risk doing it twice; the key expires in a day
        await vera.finish_idempotent(key, status, body)
        return JSONResponse(body, status_code=status)


async def _forget(vera: AsyncVeraClient, key: str) -> None:
    try:
        await vera.forget_idempotent(key)
    except VeraError:  # the database is away: the key stays running until it expires
        log.warning("could not forget the idempotency key of a failed request")


def _too_large(limit: int) -> ApiProblem:
    return ApiProblem(413, "too-large", "Request too large", f"the body is over {limit} bytes")


def _query_values(endpoint: Endpoint, request: Request) -> dict[str, Any]:
    """The query string as the model's fields take it: a list field takes every value given."""
    model = endpoint.query_model
    if model is None:
        return {}
    values: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        given = request.query_params.getlist(name)
        if not given:
            continue
        is_list = "list[" in str(info.annotation)
        values[name] = given if is_list else given[-1]
    unknown = sorted(set(request.query_params) - set(model.model_fields))
    if unknown:
        raise ApiProblem(
            422,
            "invalid-parameters",
            "Invalid parameters",
            f"unknown query parameters: {', '.join(unknown)[:200]}",
        )
    return values


def _parsed(model: type[BaseModel] | None, values: Mapping[str, Any], where: str) -> BaseModel | None:
    if model is None:
        return None
    try:
        return model.model_validate(values)
    except pydantic.ValidationError as error:
        raise _invalid(error, where) from None


def _parsed_body(model: type[BaseModel] | None, raw: bytes) -> BaseModel | None:
    if model is None:
        return None
    try:
        return model.model_validate_json(raw or b"{}")
    except pydantic.ValidationError as error:
        raise _invalid(error, "body") from None


def _invalid(error: pydantic.ValidationError, where: str) -> ApiProblem:
    problems = [
        f"{'.'.join(str(part) for part in (where, *problem['loc']))}: {problem['msg']}"
        for problem in error.errors(include_url=False, include_input=False)
    ]
    return ApiProblem(
        422, "invalid-parameters", "Invalid parameters", "; ".join(problems)[:2000], errors=problems
    )


def _request_hash(request: Request, body: bytes) -> str:
    """What a retry must repeat exactly to be one: method, path, query and body."""
    digest = hashlib.sha256()
    for part in (request.method, request.url.path, request.url.query):
        digest.update(part.encode())
        digest.update(b"\0")
    digest.update(body)
    return digest.hexdigest()


def etag_of(body: bytes) -> str:
    return '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


def _answer(endpoint: Endpoint, request: Request, status: int, body: Any) -> Response:
    raw = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
    if not endpoint.etag:
        return Response(raw, status_code=status, media_type="application/json")
    tag = etag_of(raw)
    headers = {"ETag": tag, "Cache-Control": "private, no-cache"}
    wanted = request.headers.get("if-none-match", "")
    if tag in {value.strip().removeprefix("W/") for value in wanted.split(",")} or wanted.strip() == "*":
        return Response(status_code=304, headers=headers)
    return Response(raw, status_code=status, media_type="application/json", headers=headers)


def problem_response(error: BaseException, request_id: str | None) -> Response:
    problem, headers = problem_for(error, request_id)
    if problem.status >= 500 and not isinstance(error, (TimeoutError, DatabaseUnavailableError)):
        log.error("internal error [%s]", request_id, exc_info=error)
    body = problem.model_dump(mode="json", exclude_none=True)
    return JSONResponse(body, status_code=problem.status, headers=headers, media_type=PROBLEM_MEDIA_TYPE)


def model_json(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(mode="json")
