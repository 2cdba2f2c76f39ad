-- After Procrastinate's schema.sql: the worker role runs the queue.
-- (Procrastinate's functions use unqualified names: connect the worker with
-- search_path=procrastinate.)
grant usage on schema procrastinate to vera_worker;
grant select, insert, update, delete on all tables in schema procrastinate to vera_worker;
grant usage, select on all sequences in schema procrastinate to vera_worker;
grant execute on all functions in schema procrastinate to vera_worker;
reset role;
reset search_path;
