"""`ken path` and `ken where`: the store file, and the scopes that apply here."""

from __future__ import annotations

import click

from kenning import config, paths, repokeys
from kenning import where as where_mod
from kenning.cli import output
from kenning.cli.output import Result
from kenning.cli.state import State, example, pass_state, renders
from kenning.printable import clean


@click.command(epilog=example("ken path"))
@renders
def path() -> Result:
    """Print the path of the store file."""
    target = str(config.db_path())
    return Result(
        data={"path": target, "config": str(config.config_path())},
        text=lambda: output.echo(target),
    )


@click.command(epilog=example("cd ~/src/app && ken where"))
@renders
@pass_state
def where(state: State) -> Result:
    """Show the scopes that apply in this folder, most specific first, and why.

    A note follows when memories are stored under this repo's earlier key (from before
    its origin was added or changed, or as an older kenning read its origin), with the
    command that moves them here; and when the branch's name holds a secret, which gives
    it no workstream (a scope's name is stored as written, and a secret never is); and
    when a git file was not read (a FIFO, a device, or larger than any real one).
    """
    here = state.where()
    earlier = (
        repokeys.earlier_keys(state.store, here, state.config)
        if here.repo and config.db_path().exists()
        else []
    )
    notes = [f"{here.no_workstream}, and {where_mod.SECRET_BRANCH}"] if here.no_workstream else []
    notes += [line for e in earlier for line in e.notes()]
    notes += paths.refusals()  # a git file that was a FIFO, or too large to read
    return Result(
        data={**here.to_dict(), "earlier_keys": [e.to_dict() for e in earlier]},
        text=lambda: _where_text(here),
        after=[f"note: {line}" for line in notes],
    )


def _where_text(here: where_mod.Where) -> None:
    output.echo(f"folder: {clean(here.cwd, one_line=True)}")  # a name may hold a newline
    if here.agent:
        output.echo(f"agent:  {here.agent} (ken is running inside its shell)")
    output.table(["scope", "why"], [[str(s), here.reasons.get(str(s), "")] for s in here.scopes])
