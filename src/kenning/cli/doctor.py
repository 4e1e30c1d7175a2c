"""`ken doctor`: what is installed for each agent, the store's health, hook errors."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from kenning.cli.output import Result, echo, say
from kenning.cli.state import example, renders
from kenning.printable import clean

if TYPE_CHECKING:  # loaded by the command
    from kenning.doctor import Check, Report


@click.command(epilog=example("ken doctor --deep"))
@click.option(
    "--deep",
    is_flag=True,
    help="Also check the store through: SQLite's integrity, the search index, word "
    "counts, orphaned rows, scopes that no longer parse.",
)
@click.option(
    "--repair",
    is_flag=True,
    help="Rebuild the search index and word counts and drop orphaned rows (one "
    "transaction), then check deeply.",
)
@renders
def doctor(deep: bool, repair: bool) -> Result:
    """Check what is installed for each agent, the store's health and recent hook errors."""
    from kenning.doctor import diagnose

    report = diagnose(deep=deep, repair=repair)
    return Result(
        data=report.to_dict(), text=lambda: _diagnosed(report), exit=0 if report.ok else 1
    )


def _diagnosed(report: Report) -> None:
    for agent, checks in report.agents.items():
        click.echo(f"{agent}:")
        for c in checks:
            echo(f"  {_mark(c)} {c.name}: {c.detail}")
            if c.fix:
                echo(f"      fix: {c.fix}")
    for line in report.repaired:
        say(f"repair: {line}")
    for title, group in (
        ("store", report.store),
        *((("self-check", report.deep),) if report.deep else ()),
        ("config", report.config),
        ("hook server", report.hook_server),
        *((("this repo", report.here),) if report.here else ()),
    ):
        click.echo(f"{title}:")
        for c in group:
            echo(f"  {_mark(c)} {c.name}: {c.detail}")
            if c.fix:
                echo(f"      fix: {c.fix}")
    click.echo("recent hook log:" + ("" if report.log else " (empty)"))
    for line in report.log:
        echo(f"  {clean(line, one_line=True)}")


def _mark(check: Check) -> str:
    """ok, BAD (a failed check: exit 1), or busy (the store locked by another process:
    not checked, and nothing says it is broken)."""
    if check.ok:
        return "ok "
    return "busy" if check.busy else "BAD"
