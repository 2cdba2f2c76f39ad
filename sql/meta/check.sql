-- Refuses, before anything is changed, a database that this bundle cannot
-- bring up to date. Run by `vera db migrate`, `vera db status` and the script
-- of `vera db sql` alike, inside their transaction, right after the setting
-- vera_meta.bundle was set to the bundle's migrations, as JSON:
--   {"migrations": [{"version", "name", "sha256", "released"}, ...], "procrastinate": "3.10.0"}
-- and, for the embedded server, vera_meta.data_dir to its data directory.
-- Each refusal is one line with its own SQLSTATE (the client maps them to
-- typed errors, vera_client/domain/errors.py):
--   VM001 the database was built by the migrations before the baseline
--   VM002 it records migrations the bundle does not have (newer code ran)
--   VM003 an applied migration's file has changed since
--   VM004 its job queue is another Procrastinate version than the bundle's
do $check$
declare
    bundle constant jsonb := current_setting('vera_meta.bundle')::jsonb;
    -- how to start again from nothing
    recreate constant text := coalesce(
        'stop the server and remove ' || nullif(current_setting('vera_meta.data_dir', true), '')
            || ', the embedded server''s data directory',
        'drop the database and create it empty');
    unknown text;
    edited record;
    queue text;
begin
    if to_regclass('vera_meta.migrations') is null then
        return;  -- a new database: nothing recorded, nothing to refuse
    end if;

    -- 0001_initial .. 0004_ingestion pasted whole functions into run-once
    -- files; the baseline replaced them before any release. Nothing maps one
    -- layout onto the other, so such a database is rebuilt, not upgraded.
    if exists (select from vera_meta.migrations
                where name in ('0001_initial.sql', '0002_write_path.sql', '0003_read_path.sql',
                               '0004_ingestion.sql')) then
        raise exception using errcode = 'VM001', message = format(
            'this database was built by VERA''s pre-baseline migrations (0001_initial … 0004_ingestion); '
            'nothing was changed: export what you need, recreate it (%s), then run vera db migrate',
            recreate);
    end if;

    select string_agg(recorded.name, ', ' order by recorded.version) into unknown
      from vera_meta.migrations recorded
     where not exists (select from jsonb_array_elements(bundle -> 'migrations') known
                        where (known ->> 'version')::integer = recorded.version);
    if unknown is not null then
        raise exception using errcode = 'VM002', message = format(
            'the database has migrations this code does not know (%s): upgrade VERA first', unknown);
    end if;

    select known ->> 'name' as name, (known ->> 'released')::boolean as released,
           left(recorded.sha256, 12) as recorded_sha, left(known ->> 'sha256', 12) as file_sha
      into edited
      from vera_meta.migrations recorded
      join jsonb_array_elements(bundle -> 'migrations') known
        on (known ->> 'version')::integer = recorded.version
     where recorded.sha256 <> known ->> 'sha256'
     order by recorded.version
     limit 1;
    if found and edited.released then
        raise exception using errcode = 'VM003', message = format(
            '%s was edited after it was applied (recorded sha256 %s, file %s): '
            'restore it and put the change in a new migration',
            edited.name, edited.recorded_sha, edited.file_sha);
    elsif found then
        -- unreleased migrations may change until the release; a database
        -- that ran an earlier draft is a developer's, and is rebuilt
        raise exception using errcode = 'VM003', message = format(
            '%s was edited after this database applied it (recorded sha256 %s, file %s) and is not '
            'released: recreate this development database (%s), then run vera db migrate',
            edited.name, edited.recorded_sha, edited.file_sha, recreate);
    end if;

    if to_regclass('vera_meta.components') is not null then
        select version into queue from vera_meta.components where name = 'procrastinate';
        if queue <> bundle ->> 'procrastinate' then
            raise exception using errcode = 'VM004', message = format(
                'the job queue schema is Procrastinate %s but the package is %s: apply Procrastinate''s '
                'migrations between them (procrastinate schema --migrations-path)',
                queue, bundle ->> 'procrastinate');
        end if;
    end if;
end
$check$;
