"""`vera source add|restore|list|retract`: where knowledge comes from, and how
far it is trusted. A name is never re-pointed silently (--replace says what
changes), a retracted source can come back, and an erase asks first."""

from __future__ import annotations

import dataclasses
import json
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

import click

from vera_cli.cleanup import cleanup_graph, withdrawal_line
from vera_cli.commands.source_kinds import KIND_COMMANDS, interval_option, set_interval
from vera_cli.output import counted, echo_json
from vera_cli.plumbing import (
    api_key_option,
    client_from_env,
    database_from_env,
    fail,
    friendly_errors,
    start_if_embedded,
)
from vera_client.domain.errors import NotFoundError

if TYPE_CHECKING:
    from vera_client.api.sources import Source, SourceStatus
    from vera_client.client import VeraClient


# the kinds a connector reads (vera_worker.connectors.registry; a test keeps them the same): their
# sources have no folder and are not written through the API
CONNECTOR_KINDS = ("cmdb", "confluence", "git", "jira", "slack")


@click.group()
def source() -> None:
    """Sources: where knowledge comes from, and how far it is trusted."""


def source_holding(vera: VeraClient, path: Path, group: str | None) -> tuple[Source, str | None]:
    """The live source whose folder holds path (see VeraClient.source_for_path); when only a
    retracted one does, the error says how to bring it back."""
    try:
        return vera.source_for_path(path, group)
    except NotFoundError:
        target = path.expanduser().resolve()
        for item in vera.list_sources(group):
            root = item.config.get("root")
            if not isinstance(root, str) or item.retracted_at is None:
                continue
            if target == Path(root) or Path(root) in target.parents:
                raise NotFoundError(
                    f"source {item.name!r}, which holds {path}, was retracted: "
                    f"bring it back with `vera source restore {item.name}`"
                ) from None
        raise


def _existing(vera: VeraClient, group: str, name: str) -> Source | None:
    return next((s for s in vera.list_sources(group) if s.name == name.strip()), None)


def _changes(
    old: Source, folder: Path, *, tier: int, kind: str, uri: str | None, functional: tuple[str, ...]
) -> list[str]:
    """What registering the source again with these options changes, in words (none: nothing)."""
    notes = []
    old_root, new_root = old.config.get("root"), str(folder.expanduser().resolve())
    if old_root != new_root:
        notes.append(
            f"folder {old_root} -> {new_root}: the next ingest reads the new folder "
            f"and retracts the files of the old one that it does not hold"
        )
    if old.trust_tier != tier:
        notes.append(f"tier {old.trust_tier} -> {tier}: files read from now on are graded at tier {tier}")
    if old.kind != kind:
        notes.append(f"kind {old.kind} -> {kind}")
    if old.uri != uri:
        notes.append(f"uri {old.uri or '(none)'} -> {uri or '(none)'}")
    declared = old.config.get("functional")
    old_functional = [str(key) for key in declared] if isinstance(declared, list) else []
    if old_functional != list(functional):
        notes.append(f"functional keys {old_functional} -> {list(functional)}")
    return notes


def _names_a_folder(args: list[str]) -> bool:
    """`vera source add cmdb ./export --tier 1`: a folder source named like a kind (NAME FOLDER,
    then options), as it was registered before kinds, not a kind's NAME and URL."""
    return (
        len(args) >= 2 and Path(args[1]).expanduser().is_dir() and (len(args) == 2 or args[2].startswith("-"))
    )


class _KindGroup(click.Group):
    """`vera source add KIND ...`; without a kind it is a folder, as before kinds:
    `vera source add NAME FOLDER` reads `vera source add folder NAME FOLDER`."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and not args[0].startswith("-") and (args[0] not in self.commands or _names_a_folder(args)):
            args = ["folder", *args]
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        kinds = [
            (name, command.get_short_help_str(limit=70)) for name, command in sorted(self.commands.items())
        ]
        with formatter.section("Kinds"):
            formatter.write_dl(kinds)


@source.group("add", cls=_KindGroup)
def source_add() -> None:
    """Register a source of one KIND (below); `vera ingest NAME` reads it, `--interval` on a schedule.

    Without a KIND, `vera source add NAME FOLDER` registers a folder. docs/connectors.md
    shows each kind's config, default tier and what becomes of its data.
    """


for _kind in KIND_COMMANDS:  # cmdb, confluence, git, jira, slack (vera_cli/commands/source_kinds.py)
    source_add.add_command(_kind)


@source_add.command("folder")
@click.argument("name")
@click.argument("folder", type=click.Path(path_type=Path))
@click.option("--tier", required=True, type=click.IntRange(1, 4),
              help="1 authoritative, 2 curated (both publish), 3 informational, 4 unverified.")  # fmt: skip
@click.option(
    "--kind", default="markdown", show_default=True, help="What the source is (markdown, cmdb, ...)."
)
@click.option("--group", help="Group to register in (default: the organisation you administer).")
@click.option("--uri", help="Where people read the source; citations link its records below it.")
@click.option(
    "--functional", multiple=True, help="A key whose values replace each other over time (repeatable)."
)
@click.option("--replace", is_flag=True, help="Re-point an existing source of that name (folder, tier, ...).")
@interval_option
@api_key_option("Key of an admin of the group.")
@friendly_errors
def source_add_folder(  # noqa: PLR0917 (one parameter per option: click passes them by keyword)
    name: str,
    folder: Path,
    tier: int,
    kind: str,
    group: str | None,
    uri: str | None,
    functional: tuple[str, ...],
    replace: bool,
    interval_s: int | None,
    api_key: str,
) -> None:
    """A folder of Markdown, CSV, text, PDF, DOCX, PPTX and HTML files (the default kind): NAME FOLDER.

    A name already in use is refused unless --replace (the same options again change
    nothing); a retracted source of that name comes back (its files are read afresh
    by the next ingest).
    """
    from vera_worker.connectors.folder.scan import check_new_source, within

    database = database_from_env()
    start_if_embedded(database)
    # the embedded install's worker is this command's own settings (`vera ingest` works the queue
    # off here): what it would refuse is refused now; another worker's settings are not known
    roots = database.settings.worker.source_roots
    real = check_new_source(folder, name, roots if database.server is not None else None)
    if not within(real, roots):
        click.echo(
            f"vera: note: {real} is outside VERA_WORKER__SOURCE_ROOTS here: `vera ingest` run with these "
            "settings will refuse it; only a `vera worker` allowed to read it can",
            err=True,
        )
    with client_from_env(api_key, database) as vera:
        target = group or vera.default_group()
        old = _existing(vera, target, name)
        changes = (
            _changes(old, folder, tier=tier, kind=kind, uri=uri, functional=functional)
            if old is not None
            else []
        )
        live = old is not None and old.retracted_at is None
        if live and not changes:
            click.echo(f"source {name!r} is registered so already in {target}: nothing changed")
            if old is not None:
                set_interval(vera, old, interval_s)
            return
        if live and not replace:
            assert old is not None
            fail(
                f"source {old.name!r} already exists in {target} ({old.config.get('root') or old.uri}, "
                f"tier {old.trust_tier}): pass --replace to re-point it, or choose another name"
            )
        added = vera.register_folder(
            target, name, folder, tier=tier, kind=kind, uri=uri, functional=functional
        )
        set_interval(vera, added, interval_s)
    if live and old is not None:
        click.echo(f"replacing source {old.name!r}:")
        for note in changes:
            click.echo(f"  {note}")
    elif old is not None:
        click.echo(f"source {old.name!r} was retracted: restored; the next ingest reads its files afresh")
    click.echo(f"source {name!r} ({added.source_id}) in {target}: tier {tier}, folder {folder.resolve()}")


@source.command("restore")
@click.argument("name")
@click.option("--group", help="The group of the source (when the name is in several).")
@api_key_option("Key of an admin of the group.")
@friendly_errors
def source_restore(name: str, group: str | None, api_key: str) -> None:
    """Bring retracted source NAME back, as it was registered; the next ingest reads its files afresh."""
    with client_from_env(api_key) as vera:
        found = vera.find_source(name, group)
        if found.retracted_at is None:
            fail(f"source {found.name!r} in {found.group_id} is not retracted")
        vera.register_source(
            found.group_id, found.kind, found.name, found.trust_tier, config=found.config, uri=found.uri
        )
    click.echo(
        f"source {found.name!r} in {found.group_id} restored (tier {found.trust_tier}); "
        f"`vera ingest --source {shlex.quote(found.name)}` reads its files afresh"
    )


@source.command("list")
@click.option("--group", help="Only this group.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per source.")
@api_key_option("Key of the principal to list as.")
@friendly_errors
def source_list(group: str | None, as_json: bool, api_key: str) -> None:
    """The sources you can read."""
    with client_from_env(api_key) as vera:
        found = vera.list_sources(group)
        states = {state.source_id: state for state in vera.source_status(group)}
    if as_json:
        for item in found:
            state = states.get(item.source_id)
            echo_json({**dataclasses.asdict(item), "status": dataclasses.asdict(state) if state else None})
        return
    if not found:
        click.echo("no sources: register one with vera source add")
    for item in found:
        retracted = "  (retracted)" if item.retracted_at else ""
        where = item.config.get("root") or item.uri or ""
        # a folder's count is its files live in VERA; a source written through the API
        # (remember, record_episode) is said to be so
        held = (
            f"{counted(item.tracked_records, 'record'):>12}"
            if item.config.get("root")
            else "written through the API"
            if item.kind not in CONNECTOR_KINDS
            else ""
        )
        line = f"{item.group_id}  {item.name!r:<28} {item.kind:<10} tier {item.trust_tier}  {held}"
        click.echo(f"{line}  {where}{retracted}")
        state = states.get(item.source_id)
        if state is not None:
            for detail in run_lines(state):
                click.echo(f"    {detail}")


def run_lines(state: SourceStatus) -> list[str]:
    """What `vera source list` says of a source's connector: its schedule, cursor and last run."""
    lines = []
    if state.interval_s is not None:
        lines.append(f"every {state.interval_s} s")
    if state.cursor_position:
        lines.append("cursor " + json.dumps(state.cursor_position, ensure_ascii=False))
    if state.last_started is not None:
        when = state.last_started.isoformat(timespec="seconds")
        counts = (
            f"{state.items or 0} items, {state.unchanged or 0} unchanged, {state.retracted or 0} retracted, "
            f"{state.skipped or 0} skipped or failed"
        )
        lines.append(f"last run {when}: {state.last_status}, {counts}")
    if state.error:
        lines.append(f"error: {state.error}")
    return lines


@source.command("retract")
@click.argument("name")
@click.option("--group", help="The group of the source (when the name is in several).")
@click.option("--erase", is_flag=True, help="Also delete its episodes, passages, facts and raw bytes.")
@click.option("--yes", is_flag=True, help="Erase without asking (scripts).")
@click.option("--reason", help="Why; kept in the audit log.")
@api_key_option("Key of an admin of the group.")
@friendly_errors
def source_retract(  # noqa: PLR0917 (one parameter per option: click passes them by keyword)
    name: str, group: str | None, erase: bool, yes: bool, reason: str | None, api_key: str
) -> None:
    """Take source NAME out of search (facts retracted, superseded values restored); --erase deletes it.

    A retracted source can come back (`vera source restore`); an erased one cannot.
    """
    database = database_from_env()
    start_if_embedded(database)
    graph = cleanup_graph(database)
    try:
        with client_from_env(api_key, database) as vera:
            target = vera.find_source(name, group)
            if erase and not yes:
                question = (
                    f"Erase source {target.name!r} in {target.group_id} for good: its episodes, passages, "
                    "facts and raw bytes?"
                )
                try:
                    confirmed = click.confirm(question, default=False, err=True)
                except click.Abort:
                    confirmed = False
                if not confirmed:
                    fail("nothing erased (pass --yes to erase without being asked)")
            withdraw = vera.erase_source if erase else vera.retract_source
            done = withdraw(target.group_id, target.source_id, reason, graph=graph)
    finally:
        if graph is not None:
            graph.close()
    verb = "erased" if erase else "retracted"
    click.echo(f"source {target.name!r} in {target.group_id} {verb}; {withdrawal_line(done)}")
