-- Opaque identifiers and secrets, from PostgreSQL's own CSPRNG
-- (gen_random_uuid), so no pgcrypto is required.
set role vera_owner;

-- 'o:' / 'w:' / 'p:' / 'u:' followed by 64 random bits in hex.
create or replace function vera.new_group_id(kind vera.group_kind)
returns text
language sql volatile
set search_path = vera, pg_temp
as $$
    select case kind when 'organisation' then 'o' when 'workspace' then 'w'
                     when 'project' then 'p' else 'u' end
           || ':' || left(replace(pg_catalog.gen_random_uuid()::text, '-', ''), 16)
$$;
comment on function vera.new_group_id(vera.group_kind) is 'Internal: a fresh opaque group id of the given kind';

-- 32 bytes with a full 256 bits of entropy: SHA-256 over three version-4
-- UUIDs (3 x 122 random bits), base64url without padding (43 characters).
create or replace function vera.new_secret()
returns text
language sql volatile
set search_path = vera, pg_temp
as $$
    select pg_catalog.rtrim(pg_catalog.translate(pg_catalog.encode(pg_catalog.sha256(
               pg_catalog.uuid_send(pg_catalog.gen_random_uuid())
            || pg_catalog.uuid_send(pg_catalog.gen_random_uuid())
            || pg_catalog.uuid_send(pg_catalog.gen_random_uuid())), 'base64'), '+/', '-_'), '=')
$$;
comment on function vera.new_secret() is 'Internal: 256 random bits, base64url (43 characters)';

reset role;
