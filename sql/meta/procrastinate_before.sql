-- Before Procrastinate's own schema.sql: its objects go into their own schema,
-- owned by vera_owner (the outbox functions run as it), with unqualified names
-- resolving there. Run in the same transaction as schema.sql and _after.sql.
create schema if not exists procrastinate authorization vera_owner;
set local role vera_owner;
set local search_path = procrastinate, pg_catalog;
