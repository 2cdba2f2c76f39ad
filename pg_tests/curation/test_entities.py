"""Entity resolution (sql/functions/120_entities.sql) through publish_claims:
exact -> trigram -> semantic, provisional entities and the judge's job."""

from __future__ import annotations

import math

import psycopg
import pytest
from psycopg.types.json import Jsonb

from pg_tests.support.seed import World, caller
from pg_tests.support.writes import claim, publish, record_episode, register_source


def _scope(conn: psycopg.Connection, world: World) -> tuple[str, object]:
    group = conn.execute(
        "select vera.create_group(%s, 'project', 'resolution')", (world.a.organisation,)
    ).fetchone()
    assert group is not None
    source = register_source(conn, group[0], "cmdb", 1, kind="cmdb")
    episode, _, _ = record_episode(conn, group[0], source, "export.csv", "x")
    return group[0], episode


def _unit(*components: float) -> list[float]:
    norm = math.sqrt(sum(c * c for c in components))
    return [c / norm for c in components]


def test_exact_normalised_names_resolve_to_one_entity(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        group, episode = _scope(conn, world)
        first = publish(conn, group, episode, [claim("Payments-API", "runs on", "blue")])
        again = publish(
            conn, group, episode, [claim("payments api", "owned by", "red"), claim("PAYMENTS_API", "x", "y")]
        )
        assert first[0]["resolution"] == "new"
        assert [r["resolution"] for r in again] == ["exact", "exact"]
        assert {r["subject_entity_id"] for r in first + again} == {first[0]["subject_entity_id"]}


def test_a_typo_resolves_by_trigram_and_its_form_becomes_an_alias(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        group, episode = _scope(conn, world)
        [known] = publish(conn, group, episode, [claim("customer-billing-service", "runs on", "blue")])
        [typo] = publish(conn, group, episode, [claim("customer-biling-service", "owned by", "red")])
        assert typo["resolution"] == "fuzzy"
        assert typo["subject_entity_id"] == known["subject_entity_id"]
        aliases = {row[0] for row in conn.execute(
            "select alias_norm from vera.entity_aliases where group_id = %s and entity_id = %s",
            (group, known["subject_entity_id"]))}  # fmt: skip
        assert aliases == {"customer billing service", "customer biling service"}


def test_sibling_names_do_not_merge(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        group, episode = _scope(conn, world)
        rows = publish(conn, group, episode, [claim("payments-api", "runs on", "blue")])
        siblings = publish(
            conn,
            group,
            episode,
            [claim("payments-worker", "runs on", "blue"), claim("payments-api-v2", "runs on", "green"),
             claim("payment-api", "runs on", "green")],
        )  # fmt: skip
        assert [s["resolution"] for s in siblings[:2]] == ["new", "new"]
        assert rows[0]["subject_entity_id"] not in {s["subject_entity_id"] for s in siblings[:2]}


def test_a_very_close_name_embedding_links_at_once(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        group, episode = _scope(conn, world)
        [known] = publish(
            conn,
            group,
            episode,
            [claim("Kubernetes", "kind", "platform", subject_embedding=_unit(1, 0.1, 0))],
            "toy-3",
        )
        [close] = publish(
            conn,
            group,
            episode,
            [claim("k8s", "kind", "orchestrator", subject_embedding=_unit(1, 0.12, 0.01))],
            "toy-3",
        )
        assert close["resolution"] == "semantic"
        assert close["subject_entity_id"] == known["subject_entity_id"]  # fmt: skip


def test_every_mention_of_a_name_in_one_batch_gets_the_one_answer(world: World) -> None:
    """A record's claims repeat their subject: the trigram and embedding rungs search once per
    (group, name[, vector]) and give every mention, whatever its spelling, that one answer."""
    with caller(world.db, world.a.owner_key) as conn:
        group, episode = _scope(conn, world)
        [kube, ledger] = publish(
            conn, group, episode,
            [claim("Kubernetes", "kind", "platform", subject_embedding=_unit(1, 0.1, 0)),
             claim("the ledger exporter of the night batch", "runs on", "blue")],
            "toy-3",
        )  # fmt: skip
        close = _unit(1, 0.12, 0.01)
        rows = publish(
            conn, group, episode,
            [claim("k8s", "kind", "orchestrator", subject_embedding=close),
             claim("K8S", "owner", "platform team", subject_embedding=close),
             claim("the ledger exporters of the night batch", "runs on", "green"),
             claim("k8s", "version", "1.31", subject_embedding=close),
             claim("The Ledger Exporters of the night batch", "owner", "payments")],
            "toy-3",
        )  # fmt: skip
    assert [(r["resolution"], r["subject_entity_id"]) for r in rows] == [
        ("semantic", kube["subject_entity_id"]), ("semantic", kube["subject_entity_id"]),
        ("fuzzy", ledger["subject_entity_id"]), ("semantic", kube["subject_entity_id"]),
        ("fuzzy", ledger["subject_entity_id"]),
    ]  # fmt: skip


def test_a_looser_match_is_provisional_and_goes_to_the_judge(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        group, episode = _scope(conn, world)
        [known] = publish(
            conn,
            group,
            episode,
            [claim("Postgres", "kind", "database", subject_embedding=_unit(1, 0, 0))],
            "toy-3",
        )
        [loose] = publish(conn, group, episode,
                          [claim("primary db", "kind", "database", subject_embedding=_unit(1, 1, 0))], "toy-3")  # fmt: skip
        assert loose["resolution"] == "provisional"
        assert loose["subject_entity_id"] != known["subject_entity_id"]
        status = conn.execute(
            "select status from vera.entities where entity_id = %s", (loose["subject_entity_id"],)
        )
        assert status.fetchone() == ("provisional",)
        conn.commit()
    with world.db.admin() as admin:
        jobs = admin.execute(
            "select args from procrastinate.procrastinate_jobs where task_name = 'vera.judge_equivalence' "
            "and args ->> 'group_id' = %s", (group,)).fetchall()  # fmt: skip
    assert len(jobs) == 1
    [entity] = jobs[0][0]["entities"]
    assert entity["entity_id"] == str(loose["subject_entity_id"])
    assert entity["candidates"] == [str(known["subject_entity_id"])]


def test_an_unrelated_embedding_makes_a_new_active_entity(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        group, episode = _scope(conn, world)
        publish(
            conn, group, episode, [claim("Redis", "kind", "cache", subject_embedding=_unit(1, 0, 0))], "toy-3"
        )
        [other] = publish(
            conn,
            group,
            episode,
            [claim("Oslo office", "kind", "site", subject_embedding=_unit(0, 0, 1))],
            "toy-3",
        )
        assert other["resolution"] == "new"


def test_thresholds_are_settings(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        group, episode = _scope(conn, world)
        [known] = publish(conn, group, episode, [claim("payments-api", "runs on", "blue")])
        [strict] = publish(conn, group, episode, [claim("the payment api", "runs on", "blue")])
        loose, loose_episode = _scope(conn, world)
        conn.execute("select vera.set_setting(%s, 'er.trigram_link', %s)", (loose, Jsonb(0.3)))
        [known_here] = publish(conn, loose, loose_episode, [claim("payments-api", "runs on", "blue")])
        [linked] = publish(conn, loose, loose_episode, [claim("the payment api", "runs on", "blue")])
        [sibling] = publish(conn, loose, loose_episode, [claim("payments-worker", "runs on", "blue")])
    # the default (0.85) links only very close names; at 0.3 a spelling and a function word
    # link, while a sibling (a content word of its own) never does (names_differ_trivially)
    assert strict["resolution"] == "new" and strict["subject_entity_id"] != known["subject_entity_id"]
    assert (linked["resolution"], linked["subject_entity_id"]) == ("fuzzy", known_here["subject_entity_id"])
    assert sibling["resolution"] == "new"


def test_resolution_on_a_reused_connection_restores_the_trigram_threshold(world: World) -> None:
    """A transaction-local setting of pg_trgm's threshold made before the module is loaded in a
    backend leaves an empty placeholder behind; the next resolution must not 'restore' that
    empty value (22023 invalid value for parameter) on the same pooled connection."""
    with world.db.connect() as conn:  # a fresh backend: pg_trgm's module not loaded yet
        conn.execute("select set_config('pg_trgm.similarity_threshold', '0.5', true)")
        conn.commit()
        conn.execute("select vera.authenticate(%s)", (world.a.owner_key,))
        [row] = publish(conn, world.a.organisation, None, [claim("reused-connection-api", "runs on", "blue")])
        assert row["lifecycle"] in {"published", "proposal"}
        conn.rollback()


_ASKED = "when do the new episodes of supernatural start"


@pytest.mark.parametrize(
    ("a", "b", "trivial"),
    [
        # a function word, or its inflection: the same subject
        (_ASKED, _ASKED.replace("when do", "when does"), True),
        ("the billing service", "billing service", True),
        ("mayor of hanoi", "mayor hanoi", True),
        # spellings of one word: an inflection, a typo, spacing
        ("customer billing service", "customer biling service", True),
        ("new episode of supernatural", "new episodes of supernatural", True),
        ("e mail gateway", "email gateway", True),
        ("kubernetes cluster", "kuberentes cluster", True),
        # a content word or a number of its own: another subject
        (_ASKED, _ASKED.replace("start", "end"), False),
        (_ASKED, _ASKED.replace("supernatural", "the flash"), False),
        ("adobe photoshop elements 5", "adobe photoshop lightroom 5", False),
        ("payments api", "payments worker", False),
        ("season 12 of supernatural", "season 13 of supernatural", False),
        ("db 1", "db 2", False),
        ("cats", "cat", False),  # a word of 3 letters has no spelling variants: too short to tell
        ("adobe soundbooth cs3", "adobe soundbooth cs3", True),
    ],
)
def test_names_differ_trivially_only_in_function_words_and_spellings(
    world: World, a: str, b: str, trivial: bool
) -> None:
    """vera.names_differ_trivially over normalised names, both ways round."""
    with world.db.admin() as conn:
        row = conn.execute(
            "select vera.names_differ_trivially(vera.normalize_name(%s), vera.normalize_name(%s)), "
            "vera.names_differ_trivially(vera.normalize_name(%s), vera.normalize_name(%s))",
            (a, b, b, a),
        ).fetchone()
    assert row == (trivial, trivial)


def test_a_trigram_link_never_merges_a_different_content_word(world: World) -> None:
    """Even at a loose trigram threshold, a name with a content word of its own is a new entity;
    one that differs by a function word links (issue 28: one question's fact replaced another's)."""
    with caller(world.db, world.a.owner_key) as conn:
        group, episode = _scope(conn, world)
        conn.execute("select vera.set_setting(%s, 'er.trigram_link', %s)", (group, Jsonb(0.5)))
        [start] = publish(
            conn,
            group,
            episode,
            [claim("when do the new episodes of supernatural start", "answer", "October")],
        )
        [does, end, flash] = publish(conn, group, episode, [
            claim("when does the new episodes of supernatural start", "answer", "in October"),
            claim("when do the new episodes of supernatural end", "answer", "May"),
            claim("when do the new episodes of the flash start", "answer", "January"),
        ])  # fmt: skip
    assert (does["resolution"], does["subject_entity_id"]) == ("fuzzy", start["subject_entity_id"])
    assert [end["resolution"], flash["resolution"]] == ["new", "new"]
    assert len({start["subject_entity_id"], end["subject_entity_id"], flash["subject_entity_id"]}) == 3


def test_the_trigram_probe_reads_only_the_names_trigrams_or_numbers_of_its_group(world: World) -> None:
    """Issue 32: in a group of 3,000 analysed aliases the probe of a new name without digits is a
    bitmap scan of the trigram index with both the group and the trigrams as its condition (the
    planner used to scan the whole group through the btree on (group_id, alias_norm) and compare
    the name with every alias); a name with digits, which links only to an alias with the same
    numbers, reads those through the numbers' index (the trigram index rechecked every sibling
    that differs in its numbers alone). Both still link a typo and keep a sibling apart."""
    with caller(world.db, world.a.owner_key) as conn:
        group, _ = _scope(conn, world)
        conn.commit()
    with world.db.admin() as admin:
        admin.execute(
            "with e as (insert into vera.entities (group_id, canonical_name) "
            "           select %s, 'service ' || n || ' of the ' || translate(md5(n::text), '0123456789', 'ghijklmnop') "
            "           from generate_series(1, 3000) n "
            "           union all select %s, 'the ledger exporter of the night batch' "
            "           returning entity_id, canonical_name) "
            "insert into vera.entity_aliases (group_id, entity_id, alias, alias_norm) "
            "select %s, entity_id, canonical_name, vera.normalize_name(canonical_name) from e",
            (group, group, group),
        )
        admin.execute("analyze vera.entity_aliases")
        admin.execute("load 'auto_explain'")
        admin.execute("set auto_explain.log_min_duration = 0")
        admin.execute("set auto_explain.log_nested_statements = on")
        admin.execute("set auto_explain.log_analyze = on")
        admin.execute("set auto_explain.log_level = notice")
        plans: list[str] = []
        admin.add_notice_handler(lambda d: plans.append(d.message_primary or ""))
        with admin.transaction():
            admin.execute("select vera.authenticate(%s)", (world.a.owner_key,))
            known = admin.execute("select translate(md5('17'), '0123456789', 'ghijklmnop')").fetchone()
            assert known is not None
            names = [f"service 17 of the {known[0][:-1]}q", f"service 18 of the {known[0]}",
                     "the ledger exporters of the night batch", "the ledger importer of a day"]  # fmt: skip
            rows = admin.execute(
                "select s.ordinal, a.alias_norm from vera.similar_aliases(array[1, 2, 3, 4], %s, %s, "
                "array[0.85, 0.85, 0.85, 0.85]::float8[]) s "
                "join vera.entity_aliases a on a.entity_id = s.entity_id order by 1",
                ([group] * 4, names),
            ).fetchall()
    # the typos link; another number does not, nor another name
    assert rows == [(1, f"service 17 of the {known[0]}"), (3, "the ledger exporter of the night batch")]
    probes = [p for p in plans if "from vera.entity_aliases a" in p and "Bitmap" in p]
    assert len(probes) == 4
    for plan in probes[:2]:
        assert "Bitmap Index Scan on entity_aliases_group_numbers_idx" in plan
        assert 'COLLATE "C")' in plan and "regexp_replace(alias_norm" in plan
        assert "entity_aliases_group_trgm_idx" not in plan
    for plan in probes[2:]:
        assert "Bitmap Index Scan on entity_aliases_group_trgm_idx" in plan
        assert "Index Cond: ((group_id = " in plan and 'COLLATE "C") AND (alias_norm %' in plan
        assert "entity_aliases_group_numbers_idx" not in plan
    for plan in probes:
        assert "entity_aliases_norm_idx" not in plan and "entity_aliases_pkey" not in plan
