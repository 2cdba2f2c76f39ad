-- The folders each organisation's folder sources may lie in (vera.source_roots):
-- operators set them, vera.register_source checks a source's root against them,
-- and the worker reads them again before it reads a folder (it also resolves
-- links and keeps within its own VERA_WORKER__SOURCE_ROOTS).
set role vera_owner;

-- Internal: an absolute, normalised folder path (no trailing '/', no '.', '..'
-- or empty component), or 22023 naming what.
create or replace function vera.normalised_folder(path text, what text)
returns text
language plpgsql immutable
set search_path = vera, pg_temp
as $$
declare
    trimmed text := case when path = '/' then path else rtrim(path, '/') end;
begin
    if path is null or path !~ '^/' then
        raise exception '% must be an absolute path, not %', what, coalesce(vera.shown(path), 'null')
            using errcode = '22023';
    end if;
    perform vera.check_length(path, what, 4096);
    if trimmed = '' then
        trimmed := '/';
    end if;
    if trimmed ~ '//' or trimmed ~ '(^|/)\.\.?(/|$)' or trimmed ~ '[\x01-\x1f]' then
        raise exception '% % is not a normalised path (no "//", "." or ".." components, no control characters)',
            what, vera.shown(path) using errcode = '22023';
    end if;
    return trimmed;
end
$$;
comment on function vera.normalised_folder(text, text) is
    'Internal: an absolute path without trailing slash, ".", ".." or "//", or 22023';

-- Internal: the organisation (or personal scope) an operator names, by id or by
-- its name when one organisation has it (VN001 none, 22023 several).
create or replace function vera.operator_target(organisation text)
returns text
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
declare
    found_ids text[];
begin
    select array_agg(g.group_id order by g.created_at) into found_ids
      from vera.groups g
     where g.parent_group_id is null
       and (g.group_id = operator_target.organisation
            or (g.kind = 'organisation' and g.name = btrim(operator_target.organisation)));
    if coalesce(cardinality(found_ids), 0) = 0 then
        raise exception 'no organisation %', coalesce(vera.shown(organisation), 'null') using errcode = 'VN001';
    end if;
    if cardinality(found_ids) > 1 then
        raise exception 'several organisations are named %: give its id (%)', vera.shown(organisation),
            array_to_string(found_ids, ', ') using errcode = '22023';
    end if;
    return found_ids[1];
end
$$;
comment on function vera.operator_target(text) is
    'Internal: an organisation (or personal scope) by id or unique name';

-- Contract (operators only): allows an organisation's folder sources to lie at
-- or below root (an absolute path on the workers' machines; the CLI passes its
-- real path). Idempotent. Returns the organisation's id.
create or replace function vera.add_source_root(organisation text, root text)
returns text
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    org text := vera.operator_target(add_source_root.organisation);
    folder text := vera.normalised_folder(add_source_root.root, 'root');
begin
    insert into vera.source_roots (group_id, root) values (org, folder) on conflict do nothing;
    if found then
        insert into vera.audit_log (group_id, principal_id, action, target_kind, target_id, detail)
        values (org, null, 'source_root.add', 'folder', folder, jsonb_build_object('operator', session_user));
    end if;
    return org;
end
$$;
comment on function vera.add_source_root(text, text) is
    'Operators: lets an organisation''s folder sources lie at or below a folder';
grant execute on function vera.add_source_root(text, text) to vera_operator;

-- Contract (operators only): withdraws a folder from an organisation; true when
-- it was there. Sources already registered below it are refused by the worker
-- from their next run on.
create or replace function vera.remove_source_root(organisation text, root text)
returns boolean
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    org text := vera.operator_target(remove_source_root.organisation);
    folder text := vera.normalised_folder(remove_source_root.root, 'root');
begin
    delete from vera.source_roots r where r.group_id = org and r.root = folder;
    if not found then
        return false;
    end if;
    insert into vera.audit_log (group_id, principal_id, action, target_kind, target_id, detail)
    values (org, null, 'source_root.remove', 'folder', folder, jsonb_build_object('operator', session_user));
    return true;
end
$$;
comment on function vera.remove_source_root(text, text) is
    'Operators: withdraws a folder from an organisation''s source roots';
grant execute on function vera.remove_source_root(text, text) to vera_operator;

-- Contract (operators only): the source roots of one organisation (null: all).
create or replace function vera.list_source_roots(organisation text default null)
returns table (group_id text, organisation_name text, root text, added_at timestamptz, added_by text)
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
declare
    org text := case when list_source_roots.organisation is null then null
                     else vera.operator_target(list_source_roots.organisation) end;
begin
    return query
    select r.group_id, g.name, r.root, r.added_at, r.added_by
      from vera.source_roots r
      join vera.groups g on g.group_id = r.group_id
     where org is null or r.group_id = org
     order by g.name, r.group_id, r.root;
end
$$;
comment on function vera.list_source_roots(text) is 'Operators: the folders each organisation''s sources may lie in';
grant execute on function vera.list_source_roots(text) to vera_operator;

-- Contract (the worker): the folders the sources of a group the caller reads may
-- lie in: its organisation's (or personal scope's) source roots. The worker
-- intersects them with its own VERA_WORKER__SOURCE_ROOTS before reading.
create or replace function vera.source_roots(group_id text)
returns setof text
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
begin
    perform vera.require_role(source_roots.group_id, 'viewer');
    return query
    select r.root from vera.source_roots r
     where r.group_id = vera.root_group(source_roots.group_id)
     order by r.root;
end
$$;
comment on function vera.source_roots(text) is
    'The worker: the folders a readable group''s folder sources may lie in (its organisation''s)';
grant execute on function vera.source_roots(text) to vera_worker;

-- Internal: raises VR001 unless a source config's "root" (when it has one) lies
-- at or below one of the group's organisation's source roots; 22023 when the
-- root is not an absolute, normalised path. Paths are compared as text: the
-- client registers real paths, and the worker resolves links before it reads.
create or replace function vera.check_source_root(target_group text, config jsonb)
returns void
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
declare
    org text := vera.root_group(target_group);
    folder text;
    allowed text[];
begin
    if config is null or not config ? 'root' then
        return;
    end if;
    if jsonb_typeof(config -> 'root') <> 'string' then
        raise exception 'config root must be a folder path (a string)' using errcode = '22023';
    end if;
    folder := vera.normalised_folder(config ->> 'root', 'config root');
    select coalesce(array_agg(r.root order by r.root), '{}') into allowed
      from vera.source_roots r where r.group_id = org;
    if cardinality(allowed) = 0 then
        raise exception 'no folder source may be registered in % yet: an operator allows its folders with `vera tenant roots add % PATH`',
            org, org using errcode = 'VR001';
    end if;
    if not exists (select from unnest(allowed) a
                    where a = '/' or folder = a or starts_with(folder, a || '/')) then
        raise exception 'folder % is outside the folders allowed for % (%): an operator adds one with `vera tenant roots add % PATH`',
            vera.shown(folder, 300), org, vera.shown(array_to_string(allowed, ', '), 300), org
            using errcode = 'VR001';
    end if;
end
$$;
comment on function vera.check_source_root(text, jsonb) is
    'Internal: VR001 unless a folder source''s root lies below its organisation''s source roots';

reset role;
