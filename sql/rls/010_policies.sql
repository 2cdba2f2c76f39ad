-- Row-level security. Enabled and FORCED on every table, so the owner
-- (vera_owner, which the definer functions run as) is bound by it too.
--
-- Knowledge tables: the caller's groups decide, nothing else. A definer
-- function with a bug still cannot read or write another tenant's rows.
-- Identity tables (groups, principals, memberships, api_keys, api_key_usage,
-- auth_context)
-- and the audit log additionally let vera_owner through, because
-- authentication must read them before any caller context exists.
--
-- Idempotent: every policy is dropped and created again.
set role vera_owner;
set client_min_messages = warning;

do $policies$
declare
    knowledge_table text;
begin
    foreach knowledge_table in array array[
        'sources', 'episodes', 'chunks', 'entities', 'entity_aliases', 'predicates',
        'facts', 'feedback', 'ranking_weights', 'snapshots', 'snapshot_items', 'group_settings',
        'graph_checks', 'source_runs', 'model_usage']
    loop
        execute format('alter table vera.%I enable row level security', knowledge_table);
        execute format('alter table vera.%I force row level security', knowledge_table);
        execute format('drop policy if exists read_own_groups on vera.%I', knowledge_table);
        execute format('drop policy if exists insert_own_groups on vera.%I', knowledge_table);
        execute format('drop policy if exists update_own_groups on vera.%I', knowledge_table);
        execute format('drop policy if exists delete_own_groups on vera.%I', knowledge_table);
        -- the scalar subqueries make each function run once per statement
        execute format($p$create policy read_own_groups on vera.%I for select
            using (group_id = any ((select vera.readable_groups())::text[]))$p$, knowledge_table);
        execute format($p$create policy insert_own_groups on vera.%I for insert
            with check (group_id = any ((select vera.writable_groups())::text[]))$p$, knowledge_table);
        execute format($p$create policy update_own_groups on vera.%I for update
            using (group_id = any ((select vera.writable_groups())::text[]))
            with check (group_id = any ((select vera.writable_groups())::text[]))$p$, knowledge_table);
        execute format($p$create policy delete_own_groups on vera.%I for delete
            using (group_id = any ((select vera.writable_groups())::text[]))$p$, knowledge_table);
    end loop;
end
$policies$;

-- Readers vote too: a feedback row needs only read access to its hit's
-- group, and each principal writes only its own votes.
drop policy if exists insert_own_groups on vera.feedback;
drop policy if exists update_own_groups on vera.feedback;
drop policy if exists insert_own_votes on vera.feedback;
drop policy if exists update_own_votes on vera.feedback;
create policy insert_own_votes on vera.feedback for insert
    with check (group_id = any ((select vera.readable_groups())::text[])
                and principal_id = (select vera.current_principal()));
create policy update_own_votes on vera.feedback for update
    using (group_id = any ((select vera.readable_groups())::text[])
           and principal_id = (select vera.current_principal()))
    with check (group_id = any ((select vera.readable_groups())::text[])
                and principal_id = (select vera.current_principal()));

-- Proposals live in their proposer's u: scope; the admins of the scope they
-- are proposed for may see them, decide on them and erase them.
drop policy if exists read_proposals_for_administered_groups on vera.facts;
drop policy if exists update_proposals_for_administered_groups on vera.facts;
drop policy if exists delete_proposals_for_administered_groups on vera.facts;
create policy read_proposals_for_administered_groups on vera.facts for select
    using (proposed_for = any ((select vera.administrable_groups())::text[]));
create policy update_proposals_for_administered_groups on vera.facts for update
    using (proposed_for = any ((select vera.administrable_groups())::text[]))
    with check (proposed_for = any ((select vera.administrable_groups())::text[]));
create policy delete_proposals_for_administered_groups on vera.facts for delete
    using (proposed_for = any ((select vera.administrable_groups())::text[]));

-- A passage proposed from a tier-4 source stays in the shared scope beside
-- its episode (see vera.chunks), where the group's policy alone would let
-- every reader read it: until a reviewer approves it (and after a
-- rejection) only its proposer and the scope's admins may. Restrictive, so
-- it narrows read_own_groups rather than widening it.
drop policy if exists read_proposed_passages on vera.chunks;
create policy read_proposed_passages on vera.chunks as restrictive for select
    using (not proposed or lifecycle = 'published'
           or proposed_by = (select vera.current_principal())
           or group_id = any ((select vera.administrable_groups())::text[]));

alter table vera.groups enable row level security;
alter table vera.groups force row level security;
drop policy if exists read_own_groups on vera.groups;
drop policy if exists owner_manages on vera.groups;
create policy read_own_groups on vera.groups for select
    using (group_id = any ((select vera.readable_groups())::text[]));
create policy owner_manages on vera.groups to vera_owner using (true) with check (true);

alter table vera.memberships enable row level security;
alter table vera.memberships force row level security;
drop policy if exists read_own_groups on vera.memberships;
drop policy if exists owner_manages on vera.memberships;
create policy read_own_groups on vera.memberships for select
    using (group_id = any ((select vera.readable_groups())::text[]));
create policy owner_manages on vera.memberships to vera_owner using (true) with check (true);

-- a principal is visible to itself and to callers who share a readable group
alter table vera.principals enable row level security;
alter table vera.principals force row level security;
drop policy if exists read_self_and_members on vera.principals;
drop policy if exists owner_manages on vera.principals;
create policy read_self_and_members on vera.principals for select
    using (principal_id = (select vera.current_principal())
           or exists (select from vera.memberships m
                       where m.principal_id = principals.principal_id
                         and m.group_id = any ((select vera.readable_groups())::text[])));
create policy owner_manages on vera.principals to vera_owner using (true) with check (true);

-- keys and the context table are reached only through definer functions
alter table vera.api_keys enable row level security;
alter table vera.api_keys force row level security;
drop policy if exists owner_manages on vera.api_keys;
create policy owner_manages on vera.api_keys to vera_owner using (true) with check (true);

alter table vera.api_key_usage enable row level security;
alter table vera.api_key_usage force row level security;
drop policy if exists owner_manages on vera.api_key_usage;
create policy owner_manages on vera.api_key_usage to vera_owner using (true) with check (true);

-- the folders of each organisation's sources: operators write them, the definer
-- functions (register_source, source_roots) read them; no login role selects them
alter table vera.source_roots enable row level security;
alter table vera.source_roots force row level security;
drop policy if exists owner_manages on vera.source_roots;
create policy owner_manages on vera.source_roots to vera_owner using (true) with check (true);

-- BM25 statistics: written by the write path's triggers and read by search,
-- all definer functions; no login role selects them
do $statistics$
declare
    statistics_table text;
begin
    foreach statistics_table in array array['term_stats', 'term_stat_changes', 'term_stat_transactions',
                                           'snapshot_term_stats'] loop
        execute format('alter table vera.%I enable row level security', statistics_table);
        execute format('alter table vera.%I force row level security', statistics_table);
        execute format('drop policy if exists owner_manages on vera.%I', statistics_table);
        execute format('create policy owner_manages on vera.%I to vera_owner using (true) with check (true)',
                       statistics_table);
    end loop;
end
$statistics$;

alter table vera.auth_context enable row level security;
alter table vera.auth_context force row level security;
drop policy if exists owner_manages on vera.auth_context;
create policy owner_manages on vera.auth_context to vera_owner using (true) with check (true);

-- the audit log is appended by definer functions and read by group admins
alter table vera.audit_log enable row level security;
alter table vera.audit_log force row level security;
drop policy if exists read_administered_groups on vera.audit_log;
drop policy if exists owner_appends on vera.audit_log;
drop policy if exists owner_reads on vera.audit_log;
create policy read_administered_groups on vera.audit_log for select
    using (group_id = any ((select vera.administrable_groups())::text[]));
create policy owner_appends on vera.audit_log for insert to vera_owner with check (true);

-- External (OIDC) identities: reached only through the gateway's definer
-- functions (sql/functions/220_identities.sql); no login role reads the table.
alter table vera.external_identities enable row level security;
alter table vera.external_identities force row level security;
drop policy if exists owner_manages on vera.external_identities;
create policy owner_manages on vera.external_identities to vera_owner using (true) with check (true);

reset role;

-- ===== context packs (issue 13: sql/schema/100_context_packs.sql) =====
-- A pack lives in its principal's u: scope: the group's policies make it
-- that principal's alone. Erasure must empty the copies of erased text in
-- everyone's packs: the admins of the group an item's text came from may
-- read and update that item (only vera.erase_pack_items does, inside the
-- erasure), and the packs that searched the group (to drop the omissions,
-- warnings and conflict values naming erased items). No application role
-- selects these tables; the definer functions read them.
set role vera_owner;
do $context_packs$
declare
    pack_table text;
begin
    foreach pack_table in array array['context_packs', 'context_pack_items'] loop
        execute format('alter table vera.%I enable row level security', pack_table);
        execute format('alter table vera.%I force row level security', pack_table);
        execute format('drop policy if exists read_own_groups on vera.%I', pack_table);
        execute format('drop policy if exists insert_own_groups on vera.%I', pack_table);
        execute format('drop policy if exists update_own_groups on vera.%I', pack_table);
        execute format('drop policy if exists delete_own_groups on vera.%I', pack_table);
        execute format($p$create policy read_own_groups on vera.%I for select
            using (group_id = any ((select vera.readable_groups())::text[]))$p$, pack_table);
        execute format($p$create policy insert_own_groups on vera.%I for insert
            with check (group_id = any ((select vera.writable_groups())::text[]))$p$, pack_table);
        execute format($p$create policy update_own_groups on vera.%I for update
            using (group_id = any ((select vera.writable_groups())::text[]))
            with check (group_id = any ((select vera.writable_groups())::text[]))$p$, pack_table);
        execute format($p$create policy delete_own_groups on vera.%I for delete
            using (group_id = any ((select vera.writable_groups())::text[]))$p$, pack_table);
    end loop;
end
$context_packs$;
drop policy if exists read_items_of_administered_groups on vera.context_pack_items;
drop policy if exists erase_items_of_administered_groups on vera.context_pack_items;
create policy read_items_of_administered_groups on vera.context_pack_items for select
    using (item_group_id = any ((select vera.administrable_groups())::text[]));
create policy erase_items_of_administered_groups on vera.context_pack_items for update
    using (item_group_id = any ((select vera.administrable_groups())::text[]))
    with check (item_group_id = any ((select vera.administrable_groups())::text[]) and erased and text = '');
drop policy if exists read_packs_of_administered_groups on vera.context_packs;
drop policy if exists erase_packs_of_administered_groups on vera.context_packs;
create policy read_packs_of_administered_groups on vera.context_packs for select
    using (searched_groups && (select vera.administrable_groups())::text[]);
create policy erase_packs_of_administered_groups on vera.context_packs for update
    using (searched_groups && (select vera.administrable_groups())::text[])
    with check (searched_groups && (select vera.administrable_groups())::text[]);

reset role;

-- ===== extractions and judge verdicts (issue 15: sql/schema/130_extractions.sql) =====
-- Reached only through the definer functions of sql/functions/240_extraction.sql,
-- which check the caller's role in the group themselves; no login role reads them.
set role vera_owner;
do $extractions$
declare
    worker_table text;
begin
    foreach worker_table in array array['extraction_runs', 'chunk_extractions', 'judge_verdicts'] loop
        execute format('alter table vera.%I enable row level security', worker_table);
        execute format('alter table vera.%I force row level security', worker_table);
        execute format('drop policy if exists owner_manages on vera.%I', worker_table);
        execute format('create policy owner_manages on vera.%I to vera_owner using (true) with check (true)',
                       worker_table);
    end loop;
end
$extractions$;
reset role;

-- ===== idempotency keys (issue 33: sql/schema/140_idempotency.sql) =====
-- A key lives in its principal's u: scope: the group's policies make it that
-- principal's alone. No application role selects the table; the definer
-- functions of sql/functions/260_idempotency.sql read and write it.
set role vera_owner;
alter table vera.idempotency_keys enable row level security;
alter table vera.idempotency_keys force row level security;
drop policy if exists read_own_groups on vera.idempotency_keys;
drop policy if exists insert_own_groups on vera.idempotency_keys;
drop policy if exists update_own_groups on vera.idempotency_keys;
drop policy if exists delete_own_groups on vera.idempotency_keys;
create policy read_own_groups on vera.idempotency_keys for select
    using (group_id = any ((select vera.readable_groups())::text[]));
create policy insert_own_groups on vera.idempotency_keys for insert
    with check (group_id = any ((select vera.writable_groups())::text[]));
create policy update_own_groups on vera.idempotency_keys for update
    using (group_id = any ((select vera.writable_groups())::text[]))
    with check (group_id = any ((select vera.writable_groups())::text[]));
create policy delete_own_groups on vera.idempotency_keys for delete
    using (group_id = any ((select vera.writable_groups())::text[]));
reset role;
