"""`ken collect`: the memories agents saved in their own places, as proposals."""

from __future__ import annotations

import os

import click

from kenning import collect
from kenning.cli.output import Result, memories, say
from kenning.cli.state import State, example, pass_state, renders
from kenning.ids import short_id
from kenning.printable import clean


@click.command("collect", epilog=example("ken collect --dry-run"))
@click.option("--dry-run", is_flag=True, help="Say what would change; store nothing.")
@renders
@pass_state
def collect_cmd(state: State, dry_run: bool) -> Result:
    """Bring in what Claude Code, Gemini CLI and Codex saved in their own memory.

    One file (or one entry of a file) is one memory, proposed for a person to approve,
    in the repo its folder belongs to, in the agent's own scope when kenning does not
    know that repo, or in global for the person's own memories. A changed file updates
    its waiting proposal, or proposes a revision of the approved memory; a removed file
    archives its memory. A file there but not read now (over 256 KB, empty, not text, a
    link out of the agent's folder) changes nothing, and a line says why. A statement
    you rejected or dismissed, found again, is set aside (stored dismissed). Each
    SessionStart does the same for what changed unless memory.collect is false.
    """
    done = collect.collect(state.store, dry_run=dry_run, cwd=os.getcwd())
    return Result(
        data={"dry_run": dry_run, **done.to_dict()}, text=lambda: _collected(done, dry_run)
    )


def _collected(done: collect.Collected, dry_run: bool) -> None:
    for label, found in (
        ("new", done.added),
        ("changed", done.updated),
        ("revision", done.revised),
        ("archived", done.archived),
        ("set aside", done.set_aside),
    ):
        for item in found:
            short = "" if dry_run else f"{short_id(item.id)}  "
            who = item.provenance.who
            click.echo(
                f"{short}{label:<9} {who:<7} {item.scope}  {clean(item.title, one_line=True)}"
            )
    for note in done.notes:
        say(clean(note, one_line=True))
    verb, archived = ("would bring", "would archive") if dry_run else ("brought", "archived")
    news = len(done.added) + len(done.updated) + len(done.revised)
    say(
        f"{verb} in {memories(news)} to review and {archived} {len(done.archived)} "
        f"({done.unchanged} unchanged; {done.places_read} places read)"
        + (f"; {len(done.set_aside)} set aside, turned down before" if done.set_aside else "")
        + ("; review them with `ken review`" if news and not dry_run else "")
    )
