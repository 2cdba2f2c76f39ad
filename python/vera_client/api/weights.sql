-- Named queries of vera_client.api.weights: the history of a group's weight sets, rollback, the schedule.
-- Each starts with "-- name: NAME" and a one-line description (api/queries.py loads them).

-- name: weight_history
-- A group's calibrated weight sets, newest first.
select * from vera.weight_history(%(group)s);

-- name: rollback_weights
-- Makes an earlier weight set the group's active one (by default the one before the active set).
select * from vera.rollback_weights(%(group)s, %(weight_set_id)s);

-- name: calibrate_due
-- The worker's scheduled calibration: every group with enough new votes.
select * from vera.calibrate_due();
