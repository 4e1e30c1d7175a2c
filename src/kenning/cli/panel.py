"""`ken panel`: the terminal app for browsing memory and deciding what waits.

The command checks for a person (like every command that decides), then imports the
app: textual is an extra, loaded only here, so `ken` without it still works and says
how to add it.
"""

from __future__ import annotations

import shlex
import sys

import click

from kenning import policy
from kenning.cli.state import State, example, pass_state
from kenning.errors import KenningError

TUI_REQUIREMENT = "textual>=8.2,<9"


def tui_install_hint() -> str:
    """The command that installs textual for the kenning that runs now."""
    return f"{shlex.quote(sys.executable)} -m pip install '{TUI_REQUIREMENT}'"


@click.command("panel", epilog=example("ken panel"))
@pass_state
def panel_cmd(state: State) -> None:
    """Browse memory and decide what waits, in a terminal app.

    Tabs: Here (the pack an agent starting here is told, with its tokens), Waiting,
    Repo, Project, Global, All and Sessions (Enter shows what a session was told).
    Keys: a approve, x reject or archive, d dismiss, p pin, e edit, D twice forget,
    / search, u undo, ? help, q quit. Needs the tui extra (textual).
    """
    actor = policy.require_person(state.actor(), "the panel (it approves and forgets)")
    try:
        from kenning.tui import panel
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] != "textual":
            raise
        raise KenningError(
            "`ken panel` needs textual, which is not installed for this kenning: "
            f"{tui_install_hint()} (or install kenning with its tui extra, kenning[tui])"
        ) from None
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise KenningError("`ken panel` is a terminal app: run it in a terminal")
    panel.run(state.store, state.config, state.where(), actor)
