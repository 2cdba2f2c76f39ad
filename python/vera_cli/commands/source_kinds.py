"""`vera source add KIND`: the kinds a connector reads (docs/connectors.md), one command each,
and the options every add command shares. vera_cli.commands.sources adds them to its group."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from vera_cli.plumbing import api_key_option, client_from_env, fail, friendly_errors

if TYPE_CHECKING:
    from vera_client.api.sources import Source
    from vera_client.client import VeraClient


def interval_option(function: Any) -> Any:
    return click.option(
        "--interval", "interval_s", type=click.IntRange(60, 31_536_000),
        help="Read it on a schedule, every this many seconds (a running `vera worker`).",
    )(function)  # fmt: skip


def set_interval(vera: VeraClient, source: Source, interval_s: int | None) -> None:
    """The source's schedule, when asked for (an unset --interval keeps the one it has)."""
    if interval_s is not None:
        vera.set_source_interval(source.group_id, source.source_id, interval_s)
        click.echo(f"source {source.name!r} is read every {interval_s} s by a running `vera worker`")


@click.command("cmdb")
@click.argument("name")
@click.argument("url")
@click.option("--token-env", help="The environment variable holding its token (never the token itself).")
@click.option(
    "--field", "fields", multiple=True, metavar="FIELD=PHRASE", required=True,
    help='An item field and the claim it makes: owner="owned by" (repeatable).',
)  # fmt: skip
@click.option("--functional", multiple=True, help="A phrase whose values replace each other (repeatable).")
@click.option("--id-field", default="id", show_default=True, help="The field that identifies an item.")
@click.option(
    "--name-field", default="name", show_default=True, help="The field that names it (the subject)."
)
@click.option("--updated-field", default="updated", show_default=True, help="When it last changed (ISO).")
@click.option("--description-field", help="A free-text field that becomes a passage.")
@click.option("--tier", type=click.IntRange(1, 4), default=1, show_default=True, help="Trust tier.")
@click.option("--group", help="Group to register in (default: the organisation you administer).")
@interval_option
@api_key_option("Key of an admin of the group.")
@friendly_errors
def source_add_cmdb(  # noqa: PLR0917 (one parameter per option: click passes them by keyword)
    name: str,
    url: str,
    token_env: str | None,
    fields: tuple[str, ...],
    functional: tuple[str, ...],
    id_field: str,
    name_field: str,
    updated_field: str,
    description_field: str | None,
    tier: int,
    group: str | None,
    interval_s: int | None,
    api_key: str,
) -> None:
    """Configuration items as JSON over HTTP (tier 1): NAME URL, fields mapped to claims."""
    mapping = {}
    for pair in fields:
        field, sep, phrase = pair.partition("=")
        if not sep or not field.strip() or not phrase.strip():
            fail(f'--field {pair!r}: expected FIELD=PHRASE, e.g. owner="owned by"')
        mapping[field.strip()] = phrase.strip()
    config: dict[str, Any] = {
        "url": url, "fields": mapping, "functional": list(functional), "id_field": id_field,
        "name_field": name_field, "updated_field": updated_field,
    }  # fmt: skip
    if description_field:
        config["description_field"] = description_field
    _add_connector(name, "cmdb", tier, token_env, config, url, group, interval_s, api_key, url)


@click.command("confluence")
@click.argument("name")
@click.argument("url")
@click.option("--space-id", required=True, help="The space's numeric id: its pages are read.")
@click.option("--token-env", required=True,
              help="The environment variable holding the API token (never the token itself).")  # fmt: skip
@click.option("--email", help="The Atlassian account's email: Basic auth with the token (else Bearer).")
@click.option("--no-labels", is_flag=True, help="Do not ask for the changed pages' labels.")
@click.option(
    "--requests-per-second", "rate", type=click.FloatRange(0.1, 1000),
    help="The most requests a second it sends to the site (default: the worker's, 10).",
)  # fmt: skip
@click.option("--tier", type=click.IntRange(1, 4), default=2, show_default=True, help="Trust tier.")
@click.option("--group", help="Group to register in (default: the organisation you administer).")
@interval_option
@api_key_option("Key of an admin of the group.")
@friendly_errors
def source_add_confluence(  # noqa: PLR0917 (one parameter per option: click passes them by keyword)
    name: str,
    url: str,
    space_id: str,
    token_env: str,
    email: str | None,
    no_labels: bool,
    rate: float | None,
    tier: int,
    group: str | None,
    interval_s: int | None,
    api_key: str,
) -> None:
    """A Confluence Cloud space's pages (tier 2): NAME URL, storage format made Markdown."""
    config: dict[str, Any] = {"url": url, "space_id": space_id}
    if email:
        config["email"] = email
    if no_labels:
        config["labels"] = False
    if rate is not None:
        config["requests_per_second"] = rate
    _add_connector(name, "confluence", tier, token_env, config, url, group, interval_s, api_key,
                   f"space {space_id}")  # fmt: skip


@click.command("jira")
@click.argument("name")
@click.argument("url")
@click.option("--project", required=True, help="The project's key (PROJ): its issues are read.")
@click.option("--token-env", required=True,
              help="The environment variable holding the API token (never the token itself).")  # fmt: skip
@click.option("--email", help="The Atlassian account's email: Basic auth with the token (else Bearer).")
@click.option("--time-zone", default="UTC", show_default=True, help="The Jira user's time zone (JQL times).")
@click.option("--tier", type=click.IntRange(1, 4), default=2, show_default=True, help="Trust tier.")
@click.option("--group", help="Group to register in (default: the organisation you administer).")
@interval_option
@api_key_option("Key of an admin of the group.")
@friendly_errors
def source_add_jira(  # noqa: PLR0917 (one parameter per option: click passes them by keyword)
    name: str,
    url: str,
    project: str,
    token_env: str,
    email: str | None,
    time_zone: str,
    tier: int,
    group: str | None,
    interval_s: int | None,
    api_key: str,
) -> None:
    """A Jira Cloud project's issues (tier 2): NAME URL, fields as claims, text as passages."""
    config: dict[str, Any] = {"url": url, "project": project, "time_zone": time_zone}
    if email:
        config["email"] = email
    _add_connector(
        name, "jira", tier, token_env, config, url, group, interval_s, api_key, f"project {project}"
    )


@click.command("slack")
@click.argument("name")
@click.argument("channel")
@click.option("--token-env", required=True,
              help="The variable holding the bot or user token (never the token itself).")  # fmt: skip
@click.option("--channel-name", help="The channel's name, for the passages' headings (#general).")
@click.option("--workspace-url", help="https://WORKSPACE.slack.com: citations link each message there.")
@click.option("--url", default="https://slack.com/api", show_default=True, help="The Web API's base URL.")
@click.option("--tier", type=click.IntRange(1, 4), default=4, show_default=True,
              help="Trust tier (4: what is extracted from messages are proposals).")  # fmt: skip
@click.option("--group", help="Group to register in (default: the organisation you administer).")
@interval_option
@api_key_option("Key of an admin of the group.")
@friendly_errors
def source_add_slack(  # noqa: PLR0917 (one parameter per option: click passes them by keyword)
    name: str,
    channel: str,
    token_env: str,
    channel_name: str | None,
    workspace_url: str | None,
    url: str,
    tier: int,
    group: str | None,
    interval_s: int | None,
    api_key: str,
) -> None:
    """A Slack channel's messages and threads (tier 4): NAME CHANNEL_ID."""
    config: dict[str, Any] = {"url": url, "channel": channel}
    if channel_name:
        config["channel_name"] = channel_name.removeprefix("#")
    if workspace_url:
        config["workspace_url"] = workspace_url
    _add_connector(name, "slack", tier, token_env, config, workspace_url or url, group, interval_s, api_key,
                   f"channel {channel}")  # fmt: skip


def _add_connector(  # noqa: PLR0917 (the options of a kind's command, passed on)
    name: str, kind: str, tier: int, token_env: str | None, config: dict[str, Any], uri: str,
    group: str | None, interval_s: int | None, api_key: str, what: str,
) -> None:  # fmt: skip
    with client_from_env(api_key) as vera:
        target = group or vera.default_group()
        source_id = vera.register_source(
            target, kind, name, tier, token_env=token_env, config=config, uri=uri
        )
        added = next(s for s in vera.list_sources(target) if s.source_id == source_id)
        set_interval(vera, added, interval_s)
    secret = f", token from ${token_env}" if token_env else ""
    click.echo(f"source {name!r} ({source_id}) in {target}: {kind}, tier {tier}, {what}{secret}")


@click.command("git")
@click.argument("name")
@click.argument("repo")
@click.option("--branch", help="The branch to read (default: the repository's HEAD).")
@click.option(
    "--file-uri", metavar="TEMPLATE",
    help="What an episode cites, with {commit} and {path}: https://git.example/r/blob/{commit}/{path}.",
)  # fmt: skip
@click.option("--functional", multiple=True, help="A key whose values replace each other (repeatable).")
@click.option("--tier", type=click.IntRange(1, 4), default=2, show_default=True, help="Trust tier.")
@click.option("--group", help="Group to register in (default: the organisation you administer).")
@interval_option
@api_key_option("Key of an admin of the group.")
@friendly_errors
def source_add_git(  # noqa: PLR0917 (one parameter per option: click passes them by keyword)
    name: str,
    repo: str,
    branch: str | None,
    file_uri: str | None,
    functional: tuple[str, ...],
    tier: int,
    group: str | None,
    interval_s: int | None,
    api_key: str,
) -> None:
    """A git repository by path or URL (tier 2): NAME REPO, the files changed since the last commit read."""
    from vera_worker.connectors.git.repository import check_ref, check_repo, is_url

    if not is_url(repo) and not repo.startswith("-") and "::" not in repo:
        repo = str(Path(repo).expanduser().resolve())
    check_repo(repo)
    if not is_url(repo) and not Path(repo).is_dir():
        fail(f"repository {repo}: not a folder (a local repository is a work tree or a bare repository)")
    config: dict[str, Any] = {"repo": repo, "functional": list(functional)}
    if branch:
        config["branch"] = check_ref(branch)
    if file_uri:
        config["file_uri"] = file_uri
    with client_from_env(api_key) as vera:
        target = group or vera.default_group()
        uri = repo if is_url(repo) else Path(repo).as_uri()
        source_id = vera.register_source(target, "git", name, tier, config=config, uri=uri)
        added = next(s for s in vera.list_sources(target) if s.source_id == source_id)
        set_interval(vera, added, interval_s)
    click.echo(f"source {name!r} ({source_id}) in {target}: git, tier {tier}, {repo}"
               f"{' branch ' + branch if branch else ''}")  # fmt: skip


# every kind's command, in the order `vera source add --help` shows them
KIND_COMMANDS = (source_add_cmdb, source_add_confluence, source_add_git, source_add_jira, source_add_slack)
