-- After Procrastinate's schema.sql: the worker role runs the queue.
-- (Procrastinate's functions use unqualified names: connect the worker with
-- search_path=procrastinate.)
grant usage on schema procrastinate to vera_worker;
grant select, insert, update, delete on all tables in schema procrastinate to vera_worker;
grant usage, select on all sequences in schema procrastinate to vera_worker;
grant execute on all functions in schema procrastinate to vera_worker;

-- No notifications: Procrastinate announces every new job (its id and queue)
-- on channels any connection of the database may LISTEN to, which would show
-- one tenant the rhythm of the others' writes, and any connection may NOTIFY
-- them. VERA's workers poll the queue instead (vera_worker.adapters.queue).
drop trigger if exists procrastinate_jobs_notify_queue_job_inserted_v1 on procrastinate_jobs;
drop trigger if exists procrastinate_jobs_notify_queue_job_aborted_v1 on procrastinate_jobs;
reset role;
reset search_path;
