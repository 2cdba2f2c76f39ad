"""Per-group model usage (sql/functions/266_model_usage.sql, vera_worker/adapters/usage.py):
a real worker ingests a folder and extracts its free text with a stand-in extraction model
and a stand-in hosted embedder (an OpenAI-compatible server in this process, answering with
token counts); what its calls used is recorded for that group alone, once per job, and
equals what the models' own meter counted. Another tenant never sees it (42501 as for a
group that exists nowhere), only the worker writes it, and its inputs are bounded."""

from __future__ import annotations

import json
import time
from typing import Any

import psycopg
import pytest
from psycopg import errors, sql
from tests.standins import API_KEY, StandinServer

from pg_tests.jobs.test_extraction import _work, reading_model
from pg_tests.support.clients import client_for
from pg_tests.support.databases import APP_LOGIN, INSPECTOR
from pg_tests.support.seed import World, caller
from vera_client.adapters.embedders.openai import OpenAIEmbedder
from vera_client.adapters.providers.chat import ChatModel
from vera_client.adapters.providers.metering import Meter, MeterKey, Price
from vera_client.adapters.providers.resilience import ResilienceChain
from vera_client.config import ResilienceSettings
from vera_client.domain.errors import InvalidArgumentError, PermissionDeniedError

pytestmark = pytest.mark.pg

FAST = ResilienceSettings(max_retries=1, retry_base_seconds=0.001, timeout_seconds=5.0)
TEXT = (
    "# Services\n\nbilling-api runs on pg-cluster-7. It is busy at night.\n\n"
    "ledger-db is owned by team green.\n\nqueue-api runs on pg-cluster-9.\n"
)
# prices per million tokens: big enough that the stand-in's few tokens cost a visible amount
PRICES = {"extractor-usage": Price(input_per_million=1000.0, output_per_million=2000.0),
          "text-embedding-3-small": Price(input_per_million=500.0)}  # fmt: skip


@pytest.fixture(scope="module")
def worked(
    world: World, tmp_path_factory: pytest.TempPathFactory, standin_server: StandinServer
) -> dict[str, Any]:
    """A's workspace: a folder of free text ingested and extracted by a real worker whose
    models (chat and embeddings) are the stand-in server; the meter they share counts what
    they used, for comparison."""
    standin_server.reset()
    standin_server.chat_responder = reading_model
    tmp = tmp_path_factory.mktemp("usage")
    folder = tmp / "notes"
    folder.mkdir()
    (folder / "notes.md").write_text(TEXT)
    with client_for(world, world.a.owner_key) as vera:
        group = vera.create_group(world.a.organisation, "project", "usage-metered")
        vera.declare_predicate(group, "RUNS_ON", "functional")
        source = vera.register_folder(group, "notes", folder, tier=1)
        vera.request_ingest(group, source.source_id)
    meter = Meter(PRICES)
    model = ChatModel(base_url=f"{standin_server.url}/openai/v1", model="extractor-usage", api_key=API_KEY,
                      chain=ResilienceChain("llm", FAST), meter=meter)  # fmt: skip
    embedder = OpenAIEmbedder(api_key=API_KEY, base_url=f"{standin_server.url}/openai/v1",
                              model="text-embedding-3-small", dim=16, meter=meter,
                              chain=ResilienceChain("openai", FAST))  # fmt: skip
    with world.db.admin() as admin:  # count the calls of vera.record_model_usage (sessions from now on)
        admin.execute(
            sql.SQL("alter database {} set track_functions = 'pl'").format(sql.Identifier(world.db.name))
        )
    _work(world, tmp, model, embedder=embedder)
    with world.db.admin() as admin:
        admin.execute(
            sql.SQL("alter database {} reset track_functions").format(sql.Identifier(world.db.name))
        )
        records = 0
        for _ in range(50):  # a backend's function counts reach the statistics when it ends
            admin.execute("select pg_stat_clear_snapshot()")
            row = admin.execute(
                "select calls from pg_stat_user_functions where schemaname = 'vera' and funcname = 'record_model_usage'"
            ).fetchone()
            records = int(row[0]) if row else 0
            if records:
                break
            time.sleep(0.1)
    return {"group": group, "meter": meter.totals(), "records": records}


def _rows(world: World, key: str, group: str | None = None, days: int = 30) -> list[tuple[Any, ...]]:
    with caller(world.db, key) as conn:
        return conn.execute(
            "select group_id, provider, model, purpose, calls, failed_calls, input_tokens, output_tokens,"
            " cost_usd, unpriced_calls, first_day = last_day"
            " from vera.group_model_usage(%s, %s) order by purpose",
            (group, days),
        ).fetchall()


def test_a_worker_job_records_its_groups_usage_as_its_meter_counted(
    world: World, worked: dict[str, Any]
) -> None:
    group, meter = worked["group"], worked["meter"]
    chat = meter[MeterKey(provider="llm", model="extractor-usage", operation="extract")]
    embed = meter[MeterKey(provider="openai", model="text-embedding-3-small", operation="embed")]
    assert chat.requests >= 1 and chat.input_tokens > 0 and chat.output_tokens > 0
    assert embed.requests >= 2 and embed.input_tokens > 0  # the passages' batch, then the claims'
    rows = _rows(world, world.a.owner_key, group)
    assert rows == [
        (group, "openai", "text-embedding-3-small", "embed", embed.requests, 0, embed.input_tokens, 0,
         pytest.approx(embed.estimated_cost_usd), 0, True),
        (group, "llm", "extractor-usage", "extract", chat.requests, 0, chat.input_tokens, chat.output_tokens,
         pytest.approx(chat.estimated_cost_usd), 0, True),
    ]  # fmt: skip
    assert chat.estimated_cost_usd == pytest.approx(
        (chat.input_tokens * 1000.0 + chat.output_tokens * 2000.0) / 1_000_000
    )
    # once per job, not per call: the ingest job and the extract job each wrote once, however
    # many requests they made; one row per group, day, provider, model and purpose (the ingest
    # job's embeddings and the extract job's were added to the same row)
    assert worked["records"] == 2 and chat.requests + embed.requests > 2
    with world.db.admin() as admin:
        [(stored,)] = admin.execute("select count(*) from vera.model_usage where group_id = %s", (group,))
    assert stored == 2
    # without a group named, the owner's answer holds the same rows among its other groups'
    every = _rows(world, world.a.owner_key)
    assert [r for r in every if r[0] == group] == rows
    assert {r[0] for r in every} <= set(world.a.groups) | {group}


def test_another_tenant_never_sees_it(world: World, worked: dict[str, Any]) -> None:
    group = worked["group"]
    assert all(r[0] != group for r in _rows(world, world.b.owner_key))
    messages = []
    for key, named in ((world.b.owner_key, group), (world.b.owner_key, "g:does-not-exist"),
                       (world.a.viewer_key, group)):  # fmt: skip
        with caller(world.db, key) as conn, pytest.raises(errors.InsufficientPrivilege) as refused:
            conn.execute("select * from vera.group_model_usage(%s)", (named,))
        messages.append(str(refused.value).split("\n")[0].replace(named, "<group>"))
    assert len(set(messages)) == 1, messages
    with client_for(world, world.b.owner_key) as vera, pytest.raises(PermissionDeniedError):
        vera.group_model_usage(group)
    with caller(world.db, None) as conn, pytest.raises(psycopg.Error) as unauthenticated:
        conn.execute("select * from vera.group_model_usage()")
    assert unauthenticated.value.sqlstate == "VA005"


def test_the_health_answer_carries_it(world: World, worked: dict[str, Any]) -> None:
    with client_for(world, world.a.owner_key) as vera:
        health = vera.group_health(worked["group"], usage_days=7)
        assert health.usage_days == 7
        # the largest cost first (the stand-in's extraction costs more than its embeddings)
        assert [(u.purpose, u.calls, u.cost_usd) for u in health.model_usage] == sorted(
            ((row[3], row[4], row[8]) for row in _rows(world, world.a.owner_key, worked["group"], 7)),
            key=lambda row: -row[2],
        )
        for days in (0, 367):
            with pytest.raises(InvalidArgumentError):
                vera.group_model_usage(days=days)


def test_only_the_worker_records_usage(world: World, worked: dict[str, Any]) -> None:
    entry = json.dumps([{"provider": "llm", "model": "m", "purpose": "extract", "calls": 1}])
    for role in (INSPECTOR, APP_LOGIN):  # an owner of the group, through the application's logins
        with (
            caller(world.db, world.a.owner_key, role=role) as conn,
            pytest.raises(errors.InsufficientPrivilege),
        ):
            conn.execute("select vera.record_model_usage(%s, %s::jsonb)", (worked["group"], entry))
    with world.db.connect("vera_gateway") as conn:
        conn.execute("select vera.authenticate_principal(%s)", (world.a.owner,))
        with pytest.raises(errors.InsufficientPrivilege):
            conn.execute("select vera.record_model_usage(%s, %s::jsonb)", (worked["group"], entry))
        conn.rollback()
    with world.db.connect("vera_worker") as conn:
        with pytest.raises(errors.InsufficientPrivilege):  # the table itself: no role writes it
            conn.execute(
                "insert into vera.model_usage (group_id, day, provider, model, purpose)"
                " values (%s, current_date, 'x', 'y', 'z')",
                (worked["group"],),
            )
        conn.rollback()
        with pytest.raises(psycopg.Error) as unknown:
            conn.execute("select vera.record_model_usage('g:does-not-exist', %s::jsonb)", (entry,))
        assert unknown.value.sqlstate == "VN001"
        conn.rollback()


@pytest.mark.parametrize(
    "usage",
    [
        "{}",
        json.dumps([{"provider": "llm", "model": "m", "purpose": "extract"}] * 101),
        json.dumps([{"provider": "llm", "model": "m"}]),
        json.dumps([{"provider": "", "model": "m", "purpose": "extract"}]),
        json.dumps([{"provider": "llm", "model": "m" * 201, "purpose": "extract"}]),
        json.dumps([{"provider": "llm", "model": "m", "purpose": "extract", "calls": -1}]),
        json.dumps([{"provider": "llm", "model": "m", "purpose": "extract", "calls": 1.5}]),
        json.dumps([{"provider": "llm", "model": "m", "purpose": "extract", "cost_usd": "1"}]),
    ],
)
def test_bad_usage_is_refused_and_stores_nothing(world: World, worked: dict[str, Any], usage: str) -> None:
    with world.db.connect("vera_worker") as conn:
        with pytest.raises(errors.InvalidParameterValue):
            conn.execute("select vera.record_model_usage(%s, %s::jsonb)", (worked["group"], usage))
        conn.rollback()
    with world.db.admin() as admin:
        [(stored,)] = admin.execute(
            "select count(*) from vera.model_usage where group_id = %s and model = 'm'", (worked["group"],)
        )
    assert stored == 0
