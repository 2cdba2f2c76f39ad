"""`vera weights history|rollback`: the calibrated weight sets of a group, and going back to
an earlier one (sql/functions/195_weights.sql)."""

from __future__ import annotations

import dataclasses
from uuid import UUID

import click

from vera_cli.output import echo_json, echo_json_lines
from vera_cli.plumbing import api_key_option, client_from_env, friendly_errors


def _weights_line(weights: dict[str, object]) -> str:
    shown = {name: value for name, value in weights.items() if name != "half_life"}
    return "  ".join(f"{name} {float(str(value)):.3f}" for name, value in shown.items())


@click.group("weights")
def weights() -> None:
    """A group's blend weights: the calibrated sets' history, and rollback to an earlier set."""


@weights.command("history")
@click.argument("group")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
@api_key_option("Key of a member of GROUP.")
@friendly_errors
def history_command(group: str, as_json: bool, api_key: str) -> None:
    """GROUP's calibrated weight sets, newest first (* the active one)."""
    with client_from_env(api_key) as vera:
        sets = vera.weight_history(group)
    if as_json:
        echo_json_lines(sets)
        return
    if not sets:
        click.echo(f"{group} has no calibrated weight set: it ranks with the defaults")
        return
    for weight_set in sets:
        mark = "*" if weight_set.active else " "
        by = "schedule" if weight_set.created_by is None else str(weight_set.created_by)
        click.echo(
            f"{mark} {weight_set.weight_set_id}  {weight_set.created_at:%Y-%m-%d %H:%M}  "
            f"{weight_set.sample_count} votes  by {by}"
        )
        click.echo("    " + _weights_line(weight_set.weights))


@weights.command("rollback")
@click.argument("group")
@click.option("--to", "to_set", type=click.UUID, help="The set to make active (default: the one before).")
@click.option("--json", "as_json", is_flag=True, help="The result as one JSON object.")
@api_key_option("Key of an admin of GROUP.")
@friendly_errors
def rollback_command(group: str, to_set: UUID | None, as_json: bool, api_key: str) -> None:
    """Make an earlier weight set GROUP's active one (by default the set before the active one)."""
    with client_from_env(api_key) as vera:
        result = vera.rollback_weights(group, to_set)
    if as_json:
        echo_json(dataclasses.asdict(result))
        return
    active = result.active_set or "the defaults"
    click.echo(f"{group} now ranks with {active}")
    click.echo("  " + _weights_line(result.weights))
