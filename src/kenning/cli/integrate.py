"""`ken integrate AGENT`: kenning's hooks (and MCP server) in an agent's settings."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

import click

from kenning import agents, policy
from kenning.cli.output import Result, say
from kenning.cli.state import example, renders

if TYPE_CHECKING:  # loaded by the command
    from kenning.integrate import Change


@click.command(epilog=example("ken integrate claude"))
@click.argument("agent", type=click.Choice(list(agents.AGENTS)))
@click.option("--remove", is_flag=True, help="Take out exactly what kenning added.")
@click.option("--trust", is_flag=True, help="Codex: trust the hooks written (else use /hooks).")
@click.option("--mcp", "with_mcp", is_flag=True, help="Also register the `ken mcp` server.")
@renders
def integrate(agent: str, remove: bool, trust: bool, with_mcp: bool) -> Result:
    """Install kenning's hooks (and with --mcp its MCP server) into an agent's settings.

    Idempotent, keeps everything else in those files, and copies a file to its one
    backup, FILE.ken-backup, before it first changes it (kept as it is from then on).
    --remove takes out exactly what kenning added. Refused inside an agent's shell:
    an agent's settings (its hooks, and the store its MCP server opens) are a person's
    to change, so a person runs this in their own terminal.
    """
    from kenning import integrate as integrate_mod

    actor = policy.Actor.from_env()
    if remove:
        policy.require_person(actor, f"remove kenning from {agent}")
    if trust:
        policy.require_person(actor, f"trust kenning's hooks in {agent}")
    policy.require_person(actor, f"integrate kenning with {agent}")

    if with_mcp:
        integrate_mod.check_mcp(agent, install=not remove)  # before the hooks: all, or nothing
    changes = [integrate_mod.remove(agent) if remove else integrate_mod.install(agent, trust=trust)]
    if with_mcp:
        changes.append(
            integrate_mod.remove_mcp(agent) if remove else integrate_mod.install_mcp(agent)
        )
    return Result(
        data=[c.to_dict() for c in changes], text=lambda: _integrated(agent, changes, remove)
    )


def _integrated(agent: str, changes: Sequence[Change], remove: bool) -> None:
    verb = {
        "installed": "{what} installed in {path}",
        "unchanged": "{what} already in {path}",
        "removed": "{what} removed from {path}",
        "absent": "no kenning {what} in {path}: nothing to remove",
    }
    for change, what in zip(changes, ["hooks", "MCP server"], strict=False):
        say(f"{agent}: " + verb[change.action].format(what=what, path=change.path))
        if change.backup:
            say(f"  backup: {change.backup}")
        for event, command in change.commands.items():
            say(f"  {event}: {command}")
        for note in change.notes:
            say(f"  note: {note}")
    if not remove:
        from kenning import onboard
        from kenning import where as where_mod

        for path in onboard.files_here(where_mod.detect(os.getcwd())):
            say(
                f"found {path.name} here: `ken import --from {path}` proposes its rules as "
                "memories, so agents that do not read that file get them too"
            )
