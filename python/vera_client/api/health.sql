-- Named queries of vera_client.api.health: a group's jobs and graph checks, for its admins.
-- Each starts with "-- name: NAME" and a one-line description (api/queries.py loads them).

-- name: group_jobs
-- The jobs queued or running for the groups the caller administers (or one), per queue and state, with the stalled.
select *
from vera.group_jobs(%(group)s, %(stalled_after)s);

-- name: group_graph_checks
-- The last graph check of each group the caller administers (or one), drift first.
select *
from vera.group_graph_checks(%(group)s);

-- name: group_model_usage
-- The model calls, tokens and estimated cost of the groups the caller administers (or one) over the last days.
select *
from vera.group_model_usage(%(group)s, %(days)s);
