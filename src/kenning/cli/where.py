"""`ken path` and `ken where`: the store file, and the scopes that apply here."""

from __future__ import annotations

import click

from kenning import config
from kenning.cli import output
from kenning.cli.output import emit_json
from kenning.cli.state import State, example, json_option, pass_state


@click.command(epilog=example("ken path"))
@json_option
def path(as_json: bool) -> None:
    """Print the path of the store file."""
    target = str(config.db_path())
    if as_json:
        emit_json({"path": target, "config": str(config.config_path())})
    else:
        output.echo(str(target))


@click.command(epilog=example("cd ~/src/app && ken where"))
@json_option
@pass_state
def where(state: State, as_json: bool) -> None:
    """Show the scopes that apply in this folder, most specific first, and why."""
    here = state.where()
    if as_json:
        emit_json(here.to_dict())
        return
    output.echo(f"folder: {here.cwd}")
    if here.agent:
        output.echo(f"agent:  {here.agent} (ken is running inside its shell)")
    output.table(["scope", "why"], [[str(s), here.reasons.get(str(s), "")] for s in here.scopes])
