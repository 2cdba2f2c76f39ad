"""The blend's weight sets beyond one calibration: their history, a rollback to an earlier
one, and the worker's scheduled calibration (sql/functions/195_weights.sql; queries in
weights.sql; tests in pg_tests/search/test_calibration_guards.py)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from vera_client.api.call import Call, record, records


@dataclass(frozen=True, kw_only=True, slots=True)
class WeightSet:
    """One calibrated weight set of a group, as its history lists it (newest first)."""

    weight_set_id: UUID
    active: bool
    created_at: datetime
    created_by: UUID | None  # None: made by the worker's schedule
    sample_count: int
    weights: dict[str, Any]


@dataclass(frozen=True, kw_only=True, slots=True)
class RolledBack:
    """The weight set a rollback made active (None: the defaults) and its weights."""

    active_set: UUID | None
    weights: dict[str, Any]


@dataclass(frozen=True, kw_only=True, slots=True)
class ScheduledCalibration:
    """One group the scheduled calibration looked at: its new votes, whether it ran, whether it kept a set."""

    group_id: str
    new_votes: int
    calibrated: bool
    persisted: bool
    weight_set_id: UUID | None
    sample_count: int | None


def weight_history(group: str) -> Call[list[WeightSet]]:
    """The group's calibrated weight sets, newest first (viewers)."""
    return Call("weight_history", {"group": group}, records(WeightSet))


def rollback_weights(group: str, weight_set_id: UUID | None = None) -> Call[RolledBack]:
    """Make an earlier weight set active again: the one named, else the one before the active set (admins)."""
    return Call("rollback_weights", {"group": group, "weight_set_id": weight_set_id}, record(RolledBack))


def calibrate_due() -> Call[list[ScheduledCalibration]]:
    """The scheduled calibration of every group with enough new votes (the worker, with no caller)."""
    return Call("calibrate_due", {}, records(ScheduledCalibration))
