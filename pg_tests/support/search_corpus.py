"""The search tests' shared corpus: one project of tenant A with facts from sources of
every tier (a functional 'runs on' that changed value, a pending tier-3 claim, a tier-4
proposal, a retracted page) and a runbook page with an English and a Vietnamese passage,
all embedded by pg_tests.support.searching's hashed-word embedder."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from psycopg.types.json import Jsonb

from pg_tests.support.searching import MODEL, embed
from pg_tests.support.seed import World
from pg_tests.support.writes import claim, publish, record_episode, register_source

RUNBOOK = "Billing API runbook: restart the billing pods with kubectl rollout restart after a failed deploy."
VIETNAMESE = "Dịch vụ thanh toán chạy trên cụm máy chủ ở Hà Nội và do nhóm Payments phụ trách."


@dataclass
class Corpus:
    group: str
    personal: str


def embedded_claim(subject: str, predicate: str, obj: str, **extra: Any) -> dict[str, Any]:
    """A claim whose text is its triple, with that text's embedding."""
    text = f"{subject} {predicate} {obj}"
    return claim(subject, predicate, obj, fact_text=text, embedding=embed(text), **extra)


def build_corpus(world: World) -> Corpus:
    """The corpus, committed (a test module's fixture builds it once in the module's database)."""
    with world.db.connect() as conn:
        conn.execute("select vera.authenticate(%s)", (world.a.owner_key,))
        group = conn.execute(
            "select vera.create_group(%s, 'project', 'search')", (world.a.organisation,)
        ).fetchone()[0]  # type: ignore[index]
        conn.execute("select vera.declare_predicate(%s, 'runs on', 'functional')", (group,))
        cmdb = register_source(conn, group, "cmdb", 1, kind="cmdb")
        wiki = register_source(conn, group, "wiki", 2, kind="markdown")
        chat = register_source(conn, group, "chat", 4, kind="slack")
        forum = register_source(conn, group, "forum", 3, kind="markdown")
        wrong = register_source(conn, group, "wrong wiki", 2, kind="markdown")

        export, _, _ = record_episode(conn, group, cmdb, "services.csv", "v1", observed_at="2026-01-01")
        publish(conn, group, export, [
            embedded_claim("billing-api", "runs on", "k8s-old", valid_from="2026-01-01"),
            embedded_claim("billing-api", "runs on", "k8s-new", valid_from="2026-09-01"),
            embedded_claim("billing-api", "owned by", "Payments Team"),
        ], MODEL)  # fmt: skip

        runbook, _, _ = record_episode(conn, group, wiki, "runbook.md", RUNBOOK, observed_at="2026-02-01")
        conn.execute(
            "select vera.store_chunks(%s, %s, %s, %s)",
            (group, runbook, Jsonb([
                {"heading": "Restart", "text": RUNBOOK, "embedding": embed(RUNBOOK)},
                {"heading": "Vận hành", "text": VIETNAMESE, "embedding": embed(VIETNAMESE)},
            ]), MODEL),
        )  # fmt: skip

        thread, _, _ = record_episode(conn, group, chat, "thread-1", "chat")
        publish(conn, group, thread, [embedded_claim("billing-api", "runs on", "heroku")], MODEL)
        post, _, _ = record_episode(conn, group, forum, "post-1", "forum")
        publish(conn, group, post, [embedded_claim("billing-api", "deploys with", "jenkins")], MODEL)
        bad, _, _ = record_episode(conn, group, wrong, "bad.md", "bad")
        publish(conn, group, bad, [embedded_claim("billing-api", "written in", "cobol")], MODEL)
        conn.execute("select vera.retract_episode(%s, %s, 'wrong page')", (group, bad))
        personal = world.a.owner_personal
        conn.commit()
    return Corpus(group=group, personal=personal)
