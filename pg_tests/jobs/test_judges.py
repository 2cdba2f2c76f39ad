"""The two judges against a real PostgreSQL and a stand-in judge model: a provisional
entity merged or activated through SQL (audited), a replacing value superseding the
values it names (audited), verdicts stored with model, prompt version and inputs' hash
and reused on replay, a model's answer that names something it was not shown deciding
nothing, and other tenants' ids refused."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any
from uuid import UUID

import psycopg
import pytest
from tests.standins import API_KEY, StandinServer

from pg_tests.support.clients import client_for
from pg_tests.support.ingesting import worker_executor
from pg_tests.support.seed import World, caller
from vera_client.adapters.objects.local import LocalObjectStore
from vera_client.adapters.postgres.executor import Executor
from vera_client.adapters.providers.chat import ChatModel
from vera_client.adapters.providers.resilience import ResilienceChain
from vera_client.config import ResilienceSettings
from vera_worker.adapters.judges import JudgeJob, Judges
from vera_worker.adapters.queue import build_app
from vera_worker.adapters.serving import drain

FAST = ResilienceSettings(max_retries=1, retry_base_seconds=0.001, timeout_seconds=5.0)
Decide = Callable[[str, dict[str, Any]], dict[str, Any]]


def _unit(*values: float) -> list[float]:
    norm = sum(v * v for v in values) ** 0.5
    return [v / norm for v in values]


def _claim(subject: str, predicate: str, obj: str, **extra: object) -> dict[str, object]:
    return {"subject": subject, "predicate": predicate, "object": obj, "embedding": _unit(0, 0, 1), **extra}


def judge_answering(decide: Decide) -> Callable[[dict[str, Any]], str]:
    """A stand-in judge: decide(judge, case) gives the verdict for the case the worker sent."""

    def answer(body: dict[str, Any]) -> str:
        judge = body["response_format"]["json_schema"]["name"]
        return json.dumps(decide(judge, json.loads(body["messages"][-1]["content"])))

    return answer


def _judges(sql: Executor, standin: StandinServer) -> Judges:
    model = ChatModel(base_url=f"{standin.url}/openai/v1", model="judge-l", api_key=API_KEY,
                      chain=ResilienceChain("llm", FAST))  # fmt: skip
    return Judges(sql, model=model)


def _work(world: World, tmp_path: Path, standin: StandinServer) -> None:
    store = LocalObjectStore(tmp_path / "objects")
    with closing(worker_executor(world.db)) as sql:
        drain(build_app(world.db.dsn("vera_worker"), objects=store, judges=_judges(sql, standin)))


def _provisional(world: World, name: str) -> tuple[str, UUID, UUID]:
    """A group where 'primary db' is a provisional entity close to 'Postgres' (cosine 0.71)."""
    with client_for(world, world.a.owner_key) as vera:
        group = vera.create_group(world.a.organisation, "project", name)
        cmdb = vera.register_source(group, "cmdb", "cmdb", 1)
        export = vera.record_episode(
            group, cmdb, "export.csv", hashlib.sha256(name.encode()).digest()
        ).episode_id
        [known] = vera.publish(group, export, [_claim("Postgres", "kind", "database",
                                                      subject_embedding=_unit(1, 0, 0))], "toy-3")  # fmt: skip
        [loose] = vera.publish(group, export, [_claim("primary db", "backs", "billing-api",
                                                      subject_embedding=_unit(1, 1, 0))], "toy-3")  # fmt: skip
    assert loose.resolution == "provisional"
    return group, known.subject_entity_id, loose.subject_entity_id


def _entity(world: World, group: str, entity: UUID) -> tuple[Any, ...]:
    with world.db.admin() as admin:
        row = admin.execute(
            "select status, merged_into from vera.entities where group_id = %s and entity_id = %s",
            (group, entity),
        ).fetchone()
    assert row is not None
    return tuple(row)


def _audit(world: World, group: str, action: str) -> list[Any]:
    with world.db.admin() as admin:
        return [r[0] for r in admin.execute(
            "select detail from vera.audit_log where group_id = %s and action = %s", (group, action)).fetchall()]  # fmt: skip


def test_same_entity_merges_the_provisional_entity_into_the_candidate(
    world: World, worker_sql: Executor, tmp_path: Path, standin: StandinServer
) -> None:
    group, postgres, primary = _provisional(world, "judge-merge")
    seen: list[dict[str, Any]] = []

    def decide(judge: str, case: dict[str, Any]) -> dict[str, Any]:
        seen.append(case)
        [candidate] = case["candidates"]
        return {"same_entity": True, "entity_id": candidate["entity_id"], "reason": "another name of it"}

    standin.chat_responder = judge_answering(decide)
    _work(world, tmp_path, standin)
    # the judge saw the entity with its aliases and facts, and the candidate with its own
    assert seen[0]["entity"]["aliases"] == ["primary db"]
    assert seen[0]["entity"]["facts"] == ["primary db backs billing-api"]
    assert seen[0]["candidates"][0]["name"] == "Postgres"
    assert _entity(world, group, primary) == ("merged", postgres)
    with world.db.admin() as admin:
        subjects = admin.execute(
            "select distinct subject_entity_id from vera.facts where group_id = %s", (group,)
        ).fetchall()
        aliases = admin.execute(
            "select alias from vera.entity_aliases where group_id = %s and entity_id = %s order by 1",
            (group, postgres),
        ).fetchall()
        verdicts = admin.execute(
            "select judge, model, prompt_version, octet_length(inputs_sha256) from vera.judge_verdicts"
            " where group_id = %s",
            (group,),
        ).fetchall()
    assert subjects == [(postgres,)]
    assert aliases == [("Postgres",), ("primary db",)]
    assert verdicts == [("equivalence", "judge-l", "equivalence-1", 32)]
    [merge] = _audit(world, group, "entity.merge")
    assert merge["into"] == str(postgres) and merge["model"] == "judge-l" and merge["facts"] == 1
    # a replay finds nothing provisional: no model call, nothing changes
    calls = len(standin.requests)
    report = _judges(worker_sql, standin).equivalence(JudgeJob.equivalence({
        "group_id": group, "principal_id": str(world.a.owner), "entities": [{"entity_id": str(primary)}]}))  # fmt: skip
    assert len(standin.requests) == calls and report.cases == 0


def test_not_the_same_activates_it(world: World, tmp_path: Path, standin: StandinServer) -> None:
    group, _, primary = _provisional(world, "judge-activate")
    standin.chat_responder = judge_answering(
        lambda _j, _c: {"same_entity": False, "entity_id": None, "reason": "a different database"}
    )
    _work(world, tmp_path, standin)
    assert _entity(world, group, primary) == ("active", None)
    assert [d["reason"] for d in _audit(world, group, "entity.activate")] == ["a different database"]


def test_a_verdict_naming_an_entity_it_was_not_shown_decides_nothing_and_is_replayed(
    world: World, worker_sql: Executor, tmp_path: Path, standin: StandinServer
) -> None:
    group, _, primary = _provisional(world, "judge-unknown")
    other_tenant_entity = "00000000-0000-4000-8000-000000000001"
    standin.chat_responder = judge_answering(
        lambda _j, _c: {"same_entity": True, "entity_id": other_tenant_entity, "reason": "trust me"}
    )
    _work(world, tmp_path, standin)
    assert _entity(world, group, primary) == ("provisional", None)  # never a wrong merge
    calls = len(standin.requests)
    job = JudgeJob.equivalence(
        {"group_id": group, "principal_id": str(world.a.owner), "entities": [{"entity_id": str(primary)}]}
    )
    report = _judges(worker_sql, standin).equivalence(job)
    # the same inputs: the stored verdict is reused, the model not asked again
    assert (report.cases, report.reused, report.model_calls) == (1, 1, 0)
    assert len(standin.requests) == calls


def _values(world: World, name: str) -> tuple[str, UUID, UUID]:
    """billing-api RUNS_ON pg-1 (January), then pg-2 (March): a multi-valued predicate, judged."""
    with client_for(world, world.a.owner_key) as vera:
        group = vera.create_group(world.a.organisation, "project", name)
        vera.set_setting(group, "judge.contradiction", True)
        cmdb = vera.register_source(group, "cmdb", "cmdb", 1)
        export = vera.record_episode(
            group, cmdb, "export.csv", hashlib.sha256(name.encode()).digest()
        ).episode_id
        [old] = vera.publish(group, export, [_claim("billing-api", "runs on", "pg-1",
                                                    valid_from="2026-01-01T00:00:00Z")], "toy-3")  # fmt: skip
        [new] = vera.publish(group, export, [_claim("billing-api", "runs on", "pg-2",
                                                    valid_from="2026-03-01T00:00:00Z")], "toy-3")  # fmt: skip
    return group, old.fact_id, new.fact_id


def _fact(world: World, fact: UUID) -> tuple[Any, ...]:
    with world.db.admin() as admin:
        row = admin.execute(
            "select lifecycle::text, superseded_by, valid_to::date::text from vera.facts where fact_id = %s",
            (fact,),
        ).fetchone()
    assert row is not None
    return tuple(row)


def test_a_replacing_value_supersedes_the_values_it_names(
    world: World, tmp_path: Path, standin: StandinServer
) -> None:
    group, old, new = _values(world, "judge-replace")

    def decide(_judge: str, case: dict[str, Any]) -> dict[str, Any]:
        assert case["fact"]["object"] == "pg-2"
        return {
            "verdict": "replaces",
            "replaced": [v["fact_id"] for v in case["current"]],
            "reason": "migrated",
        }

    standin.chat_responder = judge_answering(decide)
    _work(world, tmp_path, standin)
    assert _fact(world, old) == ("superseded", new, "2026-03-01")
    assert _fact(world, new) == ("published", None, None)
    [replace] = _audit(world, group, "fact.replace")
    assert replace["replaced"] == [str(old)] and replace["prompt_version"] == "contradiction-1"


@pytest.mark.parametrize(
    "verdict",
    [
        {"verdict": "coexists", "replaced": [], "reason": "both hold"},
        {"verdict": "replaces", "replaced": ["00000000-0000-4000-8000-000000000002"], "reason": "not shown"},
        {"verdict": "maybe", "replaced": [], "reason": "unsure"},
    ],
)
def test_coexisting_or_unusable_verdicts_leave_both_values(
    world: World, tmp_path: Path, standin: StandinServer, verdict: dict[str, Any]
) -> None:
    group, old, new = _values(world, f"judge-keep-{verdict['verdict']}-{len(verdict['replaced'])}")
    standin.chat_responder = judge_answering(lambda _j, _c: verdict)
    _work(world, tmp_path, standin)
    assert _fact(world, old)[0] == "published" and _fact(world, new)[0] == "published"
    assert _audit(world, group, "fact.replace") == []


def test_other_tenants_cannot_judge_a_groups_entities_or_facts(world: World) -> None:
    group, postgres, primary = _provisional(world, "judge-tenancy")
    _, old, new = _values(world, "judge-tenancy-values")
    digest = hashlib.sha256(b"x").digest()
    attempts = [
        ("select vera.equivalence_case(%s, %s)", (group, primary)),
        ("select vera.settle_entity(%s, %s, %s, 'r', 'm', 'p')", (group, primary, postgres)),
        ("select vera.contradiction_case(%s, %s)", (group, new)),
        ("select vera.replace_values(%s, %s, %s, 'r', 'm', 'p')", (group, new, [old])),
        ("select vera.judge_verdict(%s, 'equivalence', %s, 'm', 'p')", (group, digest)),
        ("select vera.store_verdict(%s, 'equivalence', %s, 'm', 'p', '{}')", (group, digest)),
    ]
    for sql, params in attempts:
        with (
            caller(world.db, world.b.owner_key, role="vera_worker") as conn,
            pytest.raises(psycopg.Error) as raised,
        ):
            conn.execute(sql, params)
        assert raised.value.sqlstate == "42501", sql
    assert _entity(world, group, primary) == ("provisional", None)
