"""Tenant isolation through the application, worker and gateway roles:
two tenants with overlapping data; reads, writes, updates, deletes and every
SQL function; unauthenticated connections; bad, revoked and expired keys.

Row-level security over the tables is read through the test inspector (the
application's privileges plus SELECT, see databases.INSPECTOR) and the
worker: the application roles themselves may not select any table
(test_side_channels)."""

from __future__ import annotations

import psycopg
import pytest
from psycopg import errors, sql

from pg_tests.support.databases import APP_LOGIN, INSPECTOR
from pg_tests.support.seed import KNOWLEDGE_TABLES, READABLE_TABLES, World, caller


def _groups_seen(conn: psycopg.Connection, table: str) -> set[str]:
    rows = conn.execute(sql.SQL("select distinct group_id from vera.{}").format(sql.Identifier(table)))
    return {row[0] for row in rows}


# -- reads ---------------------------------------------------------------------


@pytest.mark.parametrize("table", READABLE_TABLES)
def test_unauthenticated_connection_sees_nothing(world: World, table: str) -> None:
    with caller(world.db, None) as conn:
        count = conn.execute(sql.SQL("select count(*) from vera.{}").format(sql.Identifier(table))).fetchone()
        assert count == (0,)


@pytest.mark.parametrize("table", [t for t in READABLE_TABLES if t != "principals"])
def test_tenant_reads_only_its_own_groups(world: World, table: str) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        seen = _groups_seen(conn, table)
    assert seen, f"tenant A should see its own {table}"
    assert seen <= set(world.a.groups)
    assert not seen & set(world.b.groups)


def test_principals_visible_are_self_and_co_members(world: World) -> None:
    with caller(world.db, world.a.viewer_key) as conn:
        seen = {row[0] for row in conn.execute("select principal_id from vera.principals")}
    assert world.a.viewer in seen and world.a.owner in seen and world.a.service in seen
    assert not seen & {world.b.owner, world.b.viewer, world.b.service}


def test_search_style_text_query_does_not_cross_tenants(world: World) -> None:
    """The same words live in both tenants; only the caller's copy matches."""
    with caller(world.db, world.b.owner_key) as conn:
        rows = conn.execute(
            "select group_id from vera.facts where tsv @@ plainto_tsquery('simple', 'payments-api blue')"
        ).fetchall()
    assert rows
    assert {row[0] for row in rows} <= set(world.b.groups)


def test_membership_reaches_descendant_groups(world: World) -> None:
    """A viewer of the organisation reads its workspaces; the service account only its workspace."""
    with caller(world.db, world.a.viewer_key) as conn:
        assert world.a.workspace in _groups_seen(conn, "facts")
    with world.db.connect("vera_gateway") as conn:
        conn.execute("select vera.authenticate_principal(%s)", (world.a.service,))
        seen = {row[0] for row in conn.execute("select group_id from vera.read_facts(max_rows => 1000)")}
        assert seen == {world.a.workspace}
        conn.rollback()


# -- writes ----------------------------------------------------------------------


_MUTATIONS = {
    "insert": "insert into vera.{table} ({key}) values (default)",
    "update": "update vera.{table} set {key} = {key}",
    "delete": "delete from vera.{table}",
}


@pytest.mark.parametrize("operation", sorted(_MUTATIONS))
@pytest.mark.parametrize("table", READABLE_TABLES)
def test_application_role_cannot_write_tables_directly(world: World, table: str, operation: str) -> None:
    """Applications write through the SQL API only, so curation rules cannot be skipped."""
    key = "principal_id" if table == "principals" else "group_id"
    with caller(world.db, world.a.owner_key) as conn, pytest.raises(errors.InsufficientPrivilege):
        conn.execute(_MUTATIONS[operation].format(table=table, key=key))  # type: ignore[arg-type]


def test_worker_cannot_insert_into_another_tenant(world: World) -> None:
    with world.db.connect("vera_worker") as conn:
        conn.execute("select vera.authenticate_principal(%s)", (world.a.owner,))
        with pytest.raises(errors.InsufficientPrivilege, match="row-level security"):
            conn.execute(
                "insert into vera.sources (group_id, kind, name, trust_tier) values (%s, 'markdown', 'x', 1)",
                (world.b.organisation,),
            )
        conn.rollback()


def test_worker_can_insert_into_its_own_tenant(world: World) -> None:
    with world.db.connect("vera_worker") as conn:
        conn.execute("select vera.authenticate_principal(%s)", (world.a.owner,))
        conn.execute(
            "insert into vera.sources (group_id, kind, name, trust_tier) values (%s, 'markdown', 'new', 2)",
            (world.a.organisation,),
        )
        conn.rollback()


@pytest.mark.parametrize("table", KNOWLEDGE_TABLES)
def test_worker_updates_and_deletes_touch_only_its_tenant(world: World, table: str) -> None:
    writable = {
        "sources",
        "episodes",
        "chunks",
        "entities",
        "entity_aliases",
        "predicates",
        "facts",
        "snapshot_items",
    }
    if table not in writable:
        with world.db.connect("vera_worker") as conn, pytest.raises(errors.InsufficientPrivilege):
            conn.execute(sql.SQL("delete from vera.{}").format(sql.Identifier(table)))
        return
    with world.db.connect("vera_worker") as conn:
        conn.execute("select vera.authenticate_principal(%s)", (world.a.owner,))
        target = sql.Identifier(table)
        updated_b = conn.execute(
            sql.SQL("update vera.{} set group_id = group_id where group_id = any(%s)").format(target),
            (world.b.groups,),
        ).rowcount
        updated_a = conn.execute(
            sql.SQL("update vera.{} set group_id = group_id where group_id = any(%s)").format(target),
            (world.a.groups,),
        ).rowcount
        assert (updated_b, updated_a > 0) == (0, True)
        conn.rollback()
    with world.db.connect("vera_worker") as conn:
        conn.execute("select vera.authenticate_principal(%s)", (world.a.owner,))
        conn.execute("set constraints all deferred")
        deleted = conn.execute(
            sql.SQL("delete from vera.{} where group_id = any(%s)").format(sql.Identifier(table)),
            (world.b.groups,),
        ).rowcount
        assert deleted == 0
        conn.rollback()
    with world.db.admin() as admin:
        remaining = admin.execute(
            sql.SQL("select count(*) from vera.{} where group_id = any(%s)").format(sql.Identifier(table)),
            (world.b.groups,),
        ).fetchone()
        assert remaining is not None and remaining[0] > 0


def test_worker_cannot_move_own_rows_into_another_tenant(world: World) -> None:
    with world.db.connect("vera_worker") as conn:
        conn.execute("select vera.authenticate_principal(%s)", (world.a.owner,))
        with pytest.raises(errors.InsufficientPrivilege, match="row-level security"):
            conn.execute(
                "update vera.predicates set group_id = %s where group_id = %s",
                (world.b.workspace, world.a.workspace),
            )
        conn.rollback()


def test_viewer_cannot_write_even_as_worker(world: World) -> None:
    """Writes need the member role: a viewer's context writes nothing."""
    with world.db.connect("vera_worker") as conn:
        conn.execute("select vera.authenticate_principal(%s)", (world.a.viewer,))
        assert conn.execute("delete from vera.predicates").rowcount == 0
        conn.rollback()


# -- the authentication context ----------------------------------------------------


def test_context_is_transaction_local(world: World) -> None:
    with world.db.connect(INSPECTOR) as conn:
        conn.execute("select vera.authenticate(%s)", (world.a.owner_key,))
        assert _groups_seen(conn, "facts")
        conn.commit()
        assert _groups_seen(conn, "facts") == set()
        conn.rollback()


def test_context_does_not_outlive_an_autocommit_statement(world: World) -> None:
    with world.db.connect(INSPECTOR, autocommit=True) as conn:
        conn.execute("select vera.authenticate(%s)", (world.a.owner_key,))
        assert _groups_seen(conn, "facts") == set()


def _simple_query(conn: psycopg.Connection, query: sql.Composable) -> str | None:
    """Sends `query` as ONE simple-query message (several statements, no parameters)
    and returns the first column of the last statement's first row."""
    result = conn.pgconn.exec_(query.as_bytes(conn))
    assert result.status == psycopg.pq.ExecStatus.TUPLES_OK, result.error_message
    value = result.get_value(0, 0)
    return None if value is None else value.decode()


def test_context_ends_at_commit_within_one_simple_query(world: World) -> None:
    """The statements after COMMIT in one query string share the statement start
    time (and so transaction_timestamp()) with the transaction before it."""
    with world.db.connect(INSPECTOR, autocommit=True) as conn:
        answer = _simple_query(
            conn,
            sql.SQL(
                "begin; select vera.authenticate({}); commit; select vera.current_principal()::text"
            ).format(sql.Literal(world.a.owner_key)),
        )
        assert answer is None
        seen = _simple_query(
            conn,
            sql.SQL(
                "begin; select vera.authenticate({}); commit;"
                " select string_agg(distinct group_id, ',') from vera.facts"
            ).format(sql.Literal(world.a.owner_key)),
        )
        assert seen is None
        again = _simple_query(
            conn,
            sql.SQL(
                "begin; select vera.authenticate({}); commit;"
                " begin; select 1; select vera.current_principal()::text"
            ).format(sql.Literal(world.a.owner_key)),
        )
        assert again is None
        conn.execute("rollback")


def test_context_lasts_to_the_end_of_its_transaction_within_one_simple_query(world: World) -> None:
    with world.db.connect(autocommit=True) as conn:
        answer = _simple_query(
            conn,
            sql.SQL(
                "begin; select vera.authenticate({}); select 1; select vera.current_principal()::text"
            ).format(sql.Literal(world.a.owner_key)),
        )
        assert answer == str(world.a.owner)
        conn.execute("rollback")


def test_context_ends_with_a_rolled_back_savepoint(world: World) -> None:
    with world.db.connect() as conn:
        conn.execute("savepoint s")
        conn.execute("select vera.authenticate(%s)", (world.a.owner_key,))
        conn.execute("rollback to savepoint s")
        assert conn.execute("select vera.current_principal()").fetchone() == (None,)
        conn.execute("select vera.authenticate(%s)", (world.a.owner_key,))
        conn.execute("savepoint t")
        conn.execute("select 1")
        conn.execute("release savepoint t")
        assert conn.execute("select vera.current_principal()").fetchone() == (world.a.owner,)
        conn.commit()
        assert conn.execute("select vera.current_principal()").fetchone() == (None,)
        conn.rollback()


def test_context_cannot_be_forged(world: World) -> None:
    with world.db.connect(INSPECTOR) as conn:
        with pytest.raises(errors.InsufficientPrivilege):
            conn.execute(
                "insert into vera.auth_context values (pg_backend_pid(), pg_current_xact_id(), %s, null, %s, %s, %s)",
                (world.b.owner, world.b.groups, world.b.groups, world.b.groups),
            )
        conn.rollback()
        with pytest.raises(errors.InsufficientPrivilege):
            conn.execute("select vera.set_auth_context(%s, null)", (world.b.owner,))
        conn.rollback()
        conn.execute(
            "select set_config('vera.readable_groups', %s, true)",
            ("{" + world.b.organisation + "}",),
        )
        assert _groups_seen(conn, "facts") == set()
        conn.rollback()


def test_application_role_cannot_vouch_for_a_principal(world: World) -> None:
    with world.db.connect() as conn, pytest.raises(errors.InsufficientPrivilege):
        conn.execute("select vera.authenticate_principal(%s)", (world.b.owner,))


def test_application_role_cannot_create_tenants(world: World) -> None:
    with world.db.connect() as conn, pytest.raises(errors.InsufficientPrivilege):
        conn.execute("select * from vera.create_tenant('Evil', 'Mallory')")


@pytest.mark.parametrize(
    ("key_attr", "sqlstate", "message"),
    [
        ("revoked_key", "VA003", "revoked"),
        ("expired_key", "VA004", "expired"),
        ("disabled_key", "VA006", "disabled"),
    ],
)
def test_unusable_keys_are_refused(world: World, key_attr: str, sqlstate: str, message: str) -> None:
    with world.db.connect() as conn, pytest.raises(psycopg.Error, match=message) as raised:
        conn.execute("select vera.authenticate(%s)", (getattr(world, key_attr),))
    assert raised.value.sqlstate == sqlstate


@pytest.mark.parametrize(
    ("key", "sqlstate"),
    [
        ("", "VA001"),
        ("not a key", "VA001"),
        ("vera_123_abc", "VA001"),
        ("vera_0123456789ab_" + "A" * 42, "VA001"),
        ("vera_0123456789ab_" + "A" * 43, "VA002"),
    ],
)
def test_malformed_or_unknown_keys_are_refused(world: World, key: str, sqlstate: str) -> None:
    with world.db.connect() as conn, pytest.raises(psycopg.Error) as raised:
        conn.execute("select vera.authenticate(%s)", (key,))
    assert raised.value.sqlstate == sqlstate


def test_right_prefix_wrong_secret_is_refused(world: World) -> None:
    forged = world.a.owner_key[:-4] + ("AAAA" if not world.a.owner_key.endswith("AAAA") else "BBBB")
    with world.db.connect() as conn, pytest.raises(psycopg.Error) as raised:
        conn.execute("select vera.authenticate(%s)", (forged,))
    assert raised.value.sqlstate == "VA002"


def test_null_key_is_malformed(world: World) -> None:
    with world.db.connect() as conn, pytest.raises(psycopg.Error) as raised:
        conn.execute("select vera.authenticate(null)")
    assert raised.value.sqlstate == "VA001"


# -- every function is covered -----------------------------------------------------

# Functions that a login role may execute, and the test module that proves their
# isolation. A new function must be added here, with its isolation tests.
ISOLATION_TESTED = {
    "administrable_groups()": "test_tenancy (policies)",
    "authenticate(text)": "test_tenancy",
    "authenticate_principal(uuid)": "test_tenancy",
    "create_api_key(text,timestamp with time zone,uuid)": "test_api_keys",
    "create_group(text,vera.group_kind,text)": "test_tenants",
    "create_principal(text,vera.principal_kind,text,vera.member_role,text)": "test_tenants",
    "current_principal()": "test_api_keys",
    "list_api_keys()": "test_api_keys",
    "readable_groups()": "test_tenancy (policies)",
    "remove_member(text,uuid)": "test_tenants",
    "require_principal()": "test_tenants (unauthenticated calls)",
    "require_role(text,vera.member_role)": "test_tenants",
    "revoke_api_key(text)": "test_api_keys",
    "disable_principal(uuid,text)": "test_offboarding",
    "enable_principal(uuid,text)": "test_offboarding",
    "list_member_keys(text,uuid)": "test_offboarding",
    "revoke_member_key(text,text)": "test_offboarding",
    "role_in(text)": "test_tenants",
    "set_member_role(text,uuid,vera.member_role)": "test_tenants",
    "whoami()": "test_tenants",
    "writable_groups()": "test_tenancy (policies)",
    "normalize_name(text)": "test_normalize (pure)",
    "normalize_predicate(text)": "test_normalize (pure)",
    "tier_authority(integer)": "test_publish (pure)",
    "claim_fact_text(text,text,text,text)": "test_remember::test_claim_fact_texts_are_the_texts_publish_stores (pure)",
    "claim_fact_texts(jsonb)": "test_remember::test_claim_fact_texts_are_the_texts_publish_stores (pure)",
    "setting_default(text)": "test_settings (pure)",
    "setting(text,text)": "test_settings",
    "set_setting(text,text,jsonb)": "test_settings",
    "register_source(text,text,text,integer,text,jsonb,text)": "test_sources",
    "source_roots(text)": "test_source_roots::test_operators_manage_the_folders_and_only_operators (worker only)",
    "record_episode(text,uuid,text,bytea,text,text,timestamp with time zone,text,text)": "test_sources",
    "store_chunks(text,uuid,jsonb,text)": "test_sources",
    "list_sources(text)": "test_ingestion",
    "source_cursor(text,uuid)": "test_ingestion",
    "advance_source_cursor(text,uuid,jsonb)": "test_ingestion",
    "facts_to_embed(text,uuid[])": "test_jobs",
    "set_fact_embeddings(text,uuid[],vector[],text)": "test_jobs",
    "request_ingest(text,uuid,text)": "test_ingestion",
    "begin_source_run(text,uuid)": "test_source_runs::test_another_tenant_reaches_no_source_run_function",
    "end_source_run(text,uuid,text,jsonb,text,boolean)": "test_source_runs::test_another_tenant_reaches_no_source_run_function",
    "source_run_settings(text,uuid)": "test_source_runs::test_another_tenant_reaches_no_source_run_function",
    "record_heads(text,uuid,text[])": "test_source_runs::test_another_tenant_reaches_no_source_run_function",
    "note_record_signatures(text,uuid,jsonb)": "test_source_runs::test_another_tenant_reaches_no_source_run_function",
    "live_records(text,uuid)": "test_source_runs::test_another_tenant_reaches_no_source_run_function",
    "set_source_interval(text,uuid,integer)": "test_source_runs::test_another_tenant_reaches_no_source_run_function",
    "source_status(text)": "test_source_runs::test_another_tenant_reaches_no_source_run_function, test_source_status_of_every_readable_group_leaves_other_tenants_out",
    "request_due_ingests()": "test_source_runs::test_the_schedule_runs_only_as_the_worker (no caller only)",
    "declare_predicate(text,text,vera.predicate_cardinality,text)": "test_tenancy (below)",
    "publish_claims(text,uuid,jsonb,text)": "test_publish",
    "pending_reviews(text)": "test_review",
    "review_claim(text,uuid,text,text)": "test_review",
    "pending_passages(text)": "test_passage_guard",
    "review_passage(text,uuid,text,text)": "test_passage_guard",
    "retract_episode(text,uuid,text)": "test_retract",
    "erase_episode(text,uuid,text)": "test_retract",
    "retract_source(text,uuid,text)": "test_retract",
    "erase_source(text,uuid,text)": "test_retract",
    "complete_cleanup(bigint)": "test_retract",
    "cleanup_work(bigint)": "test_erasure_at_once",
    "settle_cleanup(bigint,uuid[],text[])": "test_erasure_at_once",
    "search_version()": "test_snapshots (pure)",
    "default_weights()": "test_search (pure)",
    "match_calibration()": "test_match_confidence (a constant: reads no tenant's rows)",
    "good_match_threshold()": "test_match_confidence (a constant: reads no tenant's rows)",
    "match_confidence(double precision,double precision,double precision,double precision)": "test_match_confidence (pure)",
    "match_logit(double precision,double precision,double precision,double precision)": "test_match_confidence (pure)",
    "match_coefficient(text,double precision,double precision,double precision,double precision)": "test_match_confidence (pure)",
    "logistic(double precision)": "test_match_confidence (pure)",
    "query_language(text)": "test_query_language (pure)",
    "model_languages(text)": "test_query_language (a constant: reads no tenant's rows)",
    "model_reads(text,text)": "test_query_language (pure)",
    "lexical_query(text)": "test_search (pure)",
    "lexical_tsvector(text)": "test_vietnamese_pairs (pure)",
    "query_terms(text)": "test_search (pure)",
    "any_of(text[])": "test_search (pure)",
    "shown(text,integer)": "test_bad_input (pure)",
    "active_weights(text)": "test_feedback",
    "pinned_models(text[])": "test_tenancy",
    "principal_for_identity(text,text)": "test_oidc (gateway only)",
    "provision_identity(text,text,text,text,text,vera.member_role)": "test_oidc (gateway only)",
    "read_facts(text,text,text[],timestamp with time zone,integer)": "test_tenancy",
    "search(text,vector,integer,timestamp with time zone,text[],jsonb,integer,integer,text,double precision,double precision,integer,tstzrange)": "test_search",
    "record_feedback(vera.item_kind,uuid,text,text,vector,timestamp with time zone,text[],text,tstzrange)": "test_feedback",
    "calibrate_weights(text,integer)": "test_feedback",
    "reset_weights(text)": "test_feedback",
    "weight_history(text)": "test_calibration_guards::test_only_admins_roll_back_and_other_tenants_see_no_history",
    "rollback_weights(text,uuid)": "test_calibration_guards::test_only_admins_roll_back_and_other_tenants_see_no_history",
    "calibrate_due()": "test_calibration_guards::test_the_schedule_calibrates_groups_with_enough_new_votes",
    "create_snapshot(text,text)": "test_snapshots",
    "list_snapshots(text)": "test_snapshots",
    "drop_snapshot(text,text)": "test_snapshots",
    "search_snapshot(text,text,text,vector,integer,integer,integer,text,double precision,double precision,tstzrange)": "test_snapshots",
    "live_pins(text)": "test_snapshots::test_other_tenants_cannot_read_pins",
    "snapshot_pin_changes(text,text)": "test_snapshots::test_other_tenants_cannot_read_pins",
    # issue 13: the MCP server's reads, proposals and context packs
    "get_fact(uuid,text[])": "test_knowledge_reads",
    "get_evidence(uuid,text[])": "test_knowledge_reads",
    "explain_fact(uuid,text[])": "test_knowledge_reads",
    "get_entity(text,text[],timestamp with time zone,integer)": "test_knowledge_reads",
    "get_source(uuid,integer)": "test_knowledge_reads",
    "explore(text,integer,timestamp with time zone,text[],integer)": "test_knowledge_reads",
    "changes(timestamp with time zone,integer,text[])": "test_knowledge_reads",
    "conflicts(integer,text[])": "test_knowledge_reads",
    "propose(text,text,text,text,text)": "test_proposals",
    "retract_proposal(uuid)": "test_proposals",
    "list_proposals(integer)": "test_proposals",
    "remember(text,jsonb,text,timestamp with time zone,text,jsonb,jsonb,text,jsonb)": "test_remember",
    "remember_passages(text,jsonb,text)": "test_remember",
    "remember_default_tier()": "test_remember (a constant: reads no tenant's rows)",
    "store_context_pack(text,integer,jsonb,timestamp with time zone,text[],double precision,integer,jsonb,text,jsonb,jsonb,jsonb,jsonb)": "test_context_packs",
    "get_context_pack(uuid)": "test_context_packs",
    "record_pack_feedback(uuid,integer,text,vector,text)": "test_context_packs",
    # issue 14: the graph projection (worker and operators only, a principal only in its groups)
    "graph_facts(text,uuid[])": "test_graph_projection",
    "graph_group_facts(text,uuid,integer)": "test_graph_projection",
    "graph_edge_states(text)": "test_graph_projection",
    "graph_expected_nodes(text)": "test_graph_projection",
    "graph_groups(text)": "test_graph_projection",
    "record_graph_check(text,text,bigint,bigint,bigint,bigint,text,text,text)": "test_graph_projection",
    "record_graph_behind(text,integer)": "test_graph_behind",
    "request_episode_extraction(text,uuid[])": "test_extraction_backlog",
    "episode_passages_to_extract(text,text,uuid[],integer)": "test_extraction_backlog",
    "extraction_backlog(text,text,boolean)": "test_extraction_backlog",
    "graph_check_results()": "test_graph_projection (worker, operators: counts only)",
    "queue_lag()": "test_graph_projection (worker, operators: counts only)",
    "explore_starts(text,text[])": "test_graph_projection",
    "explore_facts(uuid[],integer[],timestamp with time zone,text[],integer)": "test_graph_projection",
    "request_extraction(text,boolean)": "test_extraction::test_other_tenants_cannot_read_or_record_a_groups_extractions",
    "passages_to_extract(text,text,boolean,integer)": "test_extraction::test_other_tenants_cannot_read_or_record_a_groups_extractions",
    "take_passage(text,uuid,text,boolean)": "test_extraction::test_other_tenants_cannot_read_or_record_a_groups_extractions",
    "extraction_run(text,bytea,text,boolean)": "test_extraction::test_other_tenants_cannot_read_or_record_a_groups_extractions",
    "record_extraction(text,uuid,bytea,text,text,jsonb,integer,text,integer)": "test_extraction::test_other_tenants_cannot_read_or_record_a_groups_extractions",
    "extraction_context(text,text,integer)": "test_extraction::test_other_tenants_cannot_read_or_record_a_groups_extractions",
    "judge_verdict(text,text,bytea,text,text)": "test_judges::test_other_tenants_cannot_judge_a_groups_entities_or_facts",
    "store_verdict(text,text,bytea,text,text,jsonb)": "test_judges::test_other_tenants_cannot_judge_a_groups_entities_or_facts",
    "equivalence_case(text,uuid)": "test_judges::test_other_tenants_cannot_judge_a_groups_entities_or_facts",
    "settle_entity(text,uuid,uuid,text,text,text)": "test_judges::test_other_tenants_cannot_judge_a_groups_entities_or_facts",
    "contradiction_case(text,uuid)": "test_judges::test_other_tenants_cannot_judge_a_groups_entities_or_facts",
    "replace_values(text,uuid,uuid[],text,text,text)": "test_judges::test_other_tenants_cannot_judge_a_groups_entities_or_facts",
    "passages_to_time_scope(text,integer,uuid,integer)": "test_time_scopes::test_other_tenants_and_non_admins_cannot_read_or_set_a_groups_time_scopes",
    "set_time_scopes(text,jsonb)": "test_time_scopes::test_other_tenants_and_non_admins_cannot_read_or_set_a_groups_time_scopes",
    # issue 33: the HTTP API's idempotency keys (each principal's own, in its u: scope)
    "begin_idempotent(text,text)": "test_idempotency_keys::test_a_key_is_its_principals_alone",
    "finish_idempotent(text,integer,jsonb)": "test_idempotency_keys::test_a_key_is_its_principals_alone",
    "forget_idempotent(text)": "test_idempotency_keys::test_a_key_is_its_principals_alone",
    # issue 33: a group's health for its admins (Procrastinate's tables have no RLS: counts of own groups only)
    "group_jobs(text,double precision)": "test_group_health::test_an_owner_counts_its_own_groups_jobs_and_no_other, test_another_tenants_queue_growing_leaves_an_answer_alike",
    "group_graph_checks(text)": "test_group_health::test_graph_checks_are_the_callers_groups_only",
    # issue 33: per-group model usage (written by the worker only, read by the group's admins)
    "record_model_usage(text,jsonb)": "test_model_usage::test_only_the_worker_records_usage",
    "group_model_usage(text,integer)": "test_model_usage::test_another_tenant_never_sees_it",
}


def test_every_function_a_login_role_can_call_has_isolation_tests(world: World) -> None:
    with world.db.admin() as conn:
        callable_by_login_roles = {
            row[0].removeprefix("vera.")
            for row in conn.execute(
                """select p.oid::regprocedure::text from pg_proc p
                   where p.pronamespace = 'vera'::regnamespace
                     and (has_function_privilege('vera_app', p.oid, 'execute')
                          or has_function_privilege('vera_worker', p.oid, 'execute')
                          or has_function_privilege('vera_gateway', p.oid, 'execute'))"""
            )
        }
    assert callable_by_login_roles == set(ISOLATION_TESTED)


@pytest.mark.parametrize("key_of", ["viewer", "other tenant"])
def test_declare_predicate_needs_admin_in_the_group(world: World, key_of: str) -> None:
    key = world.a.viewer_key if key_of == "viewer" else world.b.owner_key
    with caller(world.db, key) as conn, pytest.raises(errors.InsufficientPrivilege):
        conn.execute("select vera.declare_predicate(%s, 'runs on', 'functional')", (world.a.organisation,))


@pytest.mark.parametrize("role", [APP_LOGIN, "vera_worker", "vera_gateway"])
@pytest.mark.parametrize(
    "call",
    [
        "pg_advisory_lock(1)",
        "pg_advisory_lock_shared(1, 2)",
        "pg_try_advisory_lock(k) from generate_series(0, 1023) k",
        "pg_advisory_xact_lock(1)",
        "pg_try_advisory_xact_lock_shared(1)",
    ],
)
def test_login_roles_cannot_hold_the_writers_advisory_locks(world: World, role: str, call: str) -> None:
    """Advisory locks are one keyspace for all tenants: a login role that could take them
    could hold every bucket publish_claims serialises on and stall every tenant."""
    with world.db.connect(role) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute(f"select {call}")


def test_writers_still_serialise_on_their_advisory_locks(world: World) -> None:
    with caller(world.db, world.a.owner_key) as conn:
        conn.execute(
            "select vera.publish_claims(%s, null, %s::jsonb)",
            (
                world.a.organisation,
                '[{"subject": "lock-probe", "predicate": "runs on", "object": "x", "functional": true}]',
            ),
        )
        held = conn.execute(
            "select count(*) from pg_locks where locktype = 'advisory' and pid = pg_backend_pid()"
        )
        assert held.fetchone()[0] > 0  # type: ignore[index]
        conn.rollback()


def test_read_facts_answers_from_the_callers_groups_only(world: World) -> None:
    for tenant, other in ((world.a, world.b), (world.b, world.a)):
        with caller(world.db, tenant.owner_key, role=APP_LOGIN) as conn:
            seen = {row[0] for row in conn.execute("select group_id from vera.read_facts(max_rows => 1000)")}
            texts = [
                row[0]
                for row in conn.execute(
                    "select fact_text from vera.read_facts(of_predicate => 'runs on', max_rows => 1000)"
                )
            ]
            with pytest.raises(errors.InsufficientPrivilege):
                conn.execute("select * from vera.read_facts(groups => %s)", ([other.organisation],))
        assert seen and seen <= set(tenant.groups)
        assert texts == ["payments-api runs on cluster blue"] * len(texts) and len(texts) == len(seen)


def test_pinned_models_of_another_tenant_are_not_seen(world: World) -> None:
    with world.db.admin() as conn:
        conn.execute(
            "update vera.groups set embedding_model = 'probe-model', embedding_dim = 7 where group_id = %s",
            (world.b.organisation,),
        )
    try:
        with caller(world.db, world.a.owner_key, role=APP_LOGIN) as conn:
            assert (
                conn.execute("select * from vera.pinned_models(%s)", ([world.b.organisation],)).fetchall()
                == []
            )
            assert ("probe-model", 7) not in conn.execute("select * from vera.pinned_models()").fetchall()
        with caller(world.db, world.b.owner_key, role=APP_LOGIN) as conn:
            assert conn.execute(
                "select * from vera.pinned_models(%s)", ([world.b.organisation],)
            ).fetchall() == [("probe-model", 7)]
    finally:
        with world.db.admin() as conn:
            conn.execute(
                "update vera.groups set embedding_model = null, embedding_dim = null where group_id = %s",
                (world.b.organisation,),
            )
