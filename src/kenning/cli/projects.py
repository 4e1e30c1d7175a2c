"""`ken project add|list|sync|remove`."""

from __future__ import annotations

from pathlib import Path

import click

from kenning import locate, projects
from kenning.cli.output import Result, say, table_or_say
from kenning.cli.state import KenGroup, State, example, pass_state, renders


@click.group("project", cls=KenGroup, epilog=example("ken project add shop ~/notes/shop"))
def project_group() -> None:
    """Projects: folders whose decisions.md, plan.md and log.md become memory."""


def _report(report: projects.SyncReport) -> None:
    read = f"read {', '.join(report.read) or 'nothing changed'}"
    if report.missing:  # a file deleted: its memories are archived
        gone = f"{', '.join(report.missing)} not there"
        read = f"{read}; {gone}" if report.read else gone
    say(
        f"{report.slug}: {read}; {report.added} added, {report.updated} updated, "
        f"{report.archived} archived"
        + (
            f", {report.forgotten} you forgot left out (`ken forget`; its text stays in the file)"
            if report.forgotten
            else ""
        )
    )
    for reason in report.skipped:
        say(f"ken: skipped {reason}")


@project_group.command("add", epilog=example("ken project add shop ."))
@click.argument("slug")
@click.argument("folder", type=click.Path(file_okay=False))
@renders
@pass_state
def project_add(state: State, slug: str, folder: str) -> Result:
    """Register FOLDER as project SLUG and index it. It applies inside FOLDER and inside
    the repo you run this from (refused inside an agent's shell: its decisions become
    memory told to every session there)."""
    repo = state.where().repo
    report = projects.add_project(state.store, slug, folder, repo, actor=state.actor())
    after = projects.link_notes(str(Path(folder).expanduser().resolve()))
    sharing = sorted(p.slug for p in state.store.projects() if repo and p.repo == repo)
    if len(sharing) > 1:  # one project applies in a repo: ask where which one it is now
        applies = locate.here(state.store, state.config).project
        after.append(
            f"note: projects {', '.join(sharing)} were all added from {repo}; in the repo "
            f"only {applies} applies (each applies inside its own folder)"
        )
    return Result(data=report.to_dict(), text=lambda: _report(report), after=after)


@project_group.command("list", epilog=example("ken project list --json"))
@renders
@pass_state
def project_list(state: State) -> Result:
    """List registered projects, and where a file of one that is a link points."""
    found = state.store.projects()
    linked = {p.slug: projects.links(p.folder) for p in found}
    return Result(
        data=[
            {**p.to_dict(), "links": {name: target for name, (target, _) in linked[p.slug].items()}}
            for p in found
        ],
        text=table_or_say(
            ["project", "folder", "repo"],
            [[p.slug, p.folder, p.repo or "-"] for p in found],
            "no projects yet: `ken project add SLUG FOLDER` adds one",
        ),
        after=[f"{p.slug}: {line}" for p in found for line in projects.link_notes(p.folder)],
    )


@project_group.command("sync", epilog=example("ken project sync shop"))
@click.argument("slug", required=False)
@renders
@pass_state
def project_sync(state: State, slug: str | None) -> Result:
    """Index the project files that changed (all projects, or SLUG)."""
    reports = [projects.sync(state.store, slug)] if slug else projects.sync_all(state.store)
    return Result(
        data=[r.to_dict() for r in reports],
        text=lambda: _reports(reports),
        exit=1 if any(r.skipped for r in reports) else 0,  # each skipped file is reported
    )


def _reports(reports: list[projects.SyncReport]) -> None:
    for report in reports:
        _report(report)


@project_group.command("remove", epilog=example("ken project remove shop"))
@click.argument("slug")
@pass_state
def project_remove(state: State, slug: str) -> None:
    """Stop indexing a project (its memories stay; `ken forget --scope` removes them)."""
    projects.remove_project(state.store, slug, actor=state.actor())
    say(f"removed project {slug}; its memories stay in project:{slug}")
