"""`ken project add|list|sync|remove`."""

from __future__ import annotations

import click

from kenning import projects
from kenning.cli.app import KenGroup, State, cli, example, json_option, pass_state
from kenning.cli.output import emit_json, say, table


@cli.group("project", cls=KenGroup, epilog=example("ken project add shop ~/notes/shop"))
def project_group() -> None:
    """Projects: folders whose decisions.md, plan.md and log.md become memory."""


def _report(report: projects.SyncReport) -> None:
    read = ", ".join(report.read) or "nothing changed"
    say(
        f"{report.slug}: read {read}; {report.added} added, {report.updated} updated, "
        f"{report.archived} archived"
    )
    for reason in report.skipped:
        say(f"ken: skipped {reason}")


@project_group.command("add", epilog=example("ken project add shop ."))
@click.argument("slug")
@click.argument("folder", type=click.Path(file_okay=False))
@json_option
@pass_state
def project_add(state: State, slug: str, folder: str, as_json: bool) -> None:
    """Register FOLDER as project SLUG and index it. It applies inside FOLDER and inside
    the repo you run this from (refused inside an agent's shell: its decisions become
    memory told to every session there)."""
    report = projects.add_project(
        state.store, slug, folder, state.where().repo, actor=state.actor()
    )
    if as_json:
        emit_json(report.to_dict())
    else:
        _report(report)


@project_group.command("list", epilog=example("ken project list --json"))
@json_option
@pass_state
def project_list(state: State, as_json: bool) -> None:
    """List registered projects."""
    found = state.store.projects()
    if as_json:
        emit_json([p.to_dict() for p in found])
        return
    if not found:
        say("no projects yet: `ken project add SLUG FOLDER` adds one")
        return
    table(
        ["project", "folder", "repo"],
        [[p.slug, p.folder, p.repo or "-"] for p in found],
    )


@project_group.command("sync", epilog=example("ken project sync shop"))
@click.argument("slug", required=False)
@json_option
@pass_state
def project_sync(state: State, slug: str | None, as_json: bool) -> None:
    """Index the project files that changed (all projects, or SLUG)."""
    reports = [projects.sync(state.store, slug)] if slug else projects.sync_all(state.store)
    if as_json:
        emit_json([r.to_dict() for r in reports])
    else:
        for report in reports:
            _report(report)
    if any(r.skipped for r in reports):
        raise SystemExit(1)  # each file skipped was said above


@project_group.command("remove", epilog=example("ken project remove shop"))
@click.argument("slug")
@pass_state
def project_remove(state: State, slug: str) -> None:
    """Stop indexing a project (its memories stay; `ken forget --scope` removes them)."""
    projects.remove_project(state.store, slug, actor=state.actor())
    say(f"removed project {slug}; its memories stay in project:{slug}")
