-- 0007_source_roots: the folders each organisation's folder sources may lie
-- in, configured by operators (`vera tenant roots add ORG PATH`). Until now
-- the only bound was the worker's VERA_WORKER__SOURCE_ROOTS, which is per
-- worker: with two tenants' shares in it, one tenant could register the
-- other's share as a source and ingest it. vera.register_source checks a
-- folder source's root against this table (VR001) and the worker checks it
-- again before it reads. An organisation with no rows may register no folder
-- source: after upgrading, an operator adds each organisation's folders (no
-- backfill: the existing sources' roots are exactly what cannot be trusted).
--
-- Unreleased until sql/migrations/RELEASED lists it; from then on frozen.
set role vera_owner;

-- The folders an organisation's folder sources may name as their root (and what
-- lies below them), set by operators only (`vera tenant roots add`): a source's
-- root is a path on the worker's machine, and a worker serving several tenants
-- must not read one tenant's share for another. Checked by vera.register_source
-- (a root outside these: VR001) and again by the worker before it reads, on real
-- paths and within its own VERA_WORKER__SOURCE_ROOTS. A root group (organisation
-- or personal scope) with none may register no folder source (0007_source_roots).
create table vera.source_roots (
    group_id   text not null references vera.groups (group_id) on delete cascade,
    root       text not null
               constraint source_roots_absolute check (
                   root ~ '^/' and char_length(root) <= 4096
                   and (root = '/' or right(root, 1) <> '/')
                   and root !~ '//' and root !~ '(^|/)\.\.?(/|$)'),
    added_at   timestamptz not null default now(),
    added_by   text not null default session_user,
    primary key (group_id, root)
);
comment on table vera.source_roots is
    'Folders (absolute, normalised) below which an organisation''s folder sources may lie; operators only';

reset role;
