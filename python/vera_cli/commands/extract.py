"""`vera extract --backlog`: the group's passages no model has been through (stored before a model
was configured, say), sent to the extraction model only when asked, after an estimate of what it
costs. An ingestion sends the model only the passages it wrote itself (issue 29)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from vera_cli.plumbing import api_key_option, client_from_env, database_from_env, fail, friendly_errors

if TYPE_CHECKING:
    from vera_client.bootstrap import Database
    from vera_worker.domain.extraction_estimate import ExtractionEstimate


def backlog_estimate(api_key: str, database: Database, group: str) -> ExtractionEstimate:
    """What sending the group's backlog to the configured extraction model would cost."""
    from vera_client.adapters.providers.metering import LIST_PRICES
    from vera_worker.domain.extraction_estimate import estimate_extraction, extraction_model_version

    llm = database.settings.llm
    with client_from_env(api_key, database) as vera:
        backlog = vera.extraction_backlog(group, extraction_model_version(llm.extraction_model))
    configured = llm.prices.get(llm.extraction_model)
    listed = LIST_PRICES.get(llm.extraction_model)
    price = (
        (configured.input_per_million, configured.output_per_million) if configured is not None
        else (listed.input_per_million, listed.output_per_million) if listed is not None
        else None
    )  # fmt: skip
    return estimate_extraction(backlog.passages, backlog.characters, price)


def mention_backlog(api_key: str, database: Database, group: str) -> None:
    """After an ingestion: a line on stderr when older passages of the group wait for a model."""
    estimate = backlog_estimate(api_key, database, group)
    if estimate.passages:
        click.echo(
            f"vera: note: {estimate.passages:,} passages of {group} have not been through a model; "
            f"`vera extract --group {group} --backlog` says what that would cost, then sends them",
            err=True,
        )


@click.command("extract")
@click.option("--group", required=True, help="The group whose passages to send to the model.")
@click.option("--backlog", is_flag=True, help="Every passage of the group no model has been through.")
@click.option("--yes", is_flag=True, help="Send them without asking (after printing the estimate).")
@click.option("--no-wait", is_flag=True, help="Only queue the job for a running `vera worker`.")
@api_key_option("Key of a member of the group.")
@friendly_errors
def extract_command(group: str, backlog: bool, yes: bool, no_wait: bool, api_key: str) -> None:
    """Send a group's passages no model has been through to the extraction model, after an estimate.

    First says how many passages, about how many tokens and what it would cost at
    the configured prices (VERA_LLM__PRICES over the list prices), then asks
    (--yes: does not). An ingestion sends only the passages it wrote; the older
    backlog waits for this command. Without --no-wait the job runs here, with progress.
    """
    from vera_cli.commands.ingest import drain_with_progress
    from vera_cli.plumbing import start_if_embedded
    from vera_cli.progress import summarize_extraction

    if not backlog:
        fail("say what to extract: --backlog (every passage of the group no model has been through)")
    database = database_from_env()
    if not database.settings.llm.enabled:
        fail("no extraction model is configured: set VERA_LLM__BASE_URL (see docs/extraction.md)")
    start_if_embedded(database)
    estimate = backlog_estimate(api_key, database, group)
    click.echo(estimate.describe(database.settings.llm.extraction_model))
    if not estimate.passages:
        click.echo(f"nothing to extract in {group}")
        return
    if not yes:
        try:
            confirmed = click.confirm("Send them?", default=False, err=True)
        except click.Abort:
            confirmed = False
        if not confirmed:
            fail("nothing sent (pass --yes to send them without being asked)")
    with client_from_env(api_key, database) as vera:
        job = vera.request_extraction(group)
    click.echo(f"queued extraction of {group}'s backlog: job {job}")
    if not no_wait:
        drained = drain_with_progress(database)
        click.echo(summarize_extraction(drained.extractions))
