"""`ken repo move`: what is stored under a repo's earlier key, moved to its key now."""

from __future__ import annotations

import click

from kenning import repokeys
from kenning.cli.output import Result, say
from kenning.cli.state import KenGroup, State, example, pass_state, renders
from kenning.errors import InvalidInput
from kenning.model import ScopeType
from kenning.where import NONE_HERE


@click.group("repo", cls=KenGroup, epilog=example("ken repo move /home/me/src/app"))
def repo_group() -> None:
    """A repo's key: its origin, or without one its checkout's path."""


@repo_group.command("move", epilog=example("ken repo move /home/me/src/app"))
@click.argument("source")
@click.argument("target", required=False)
@renders
@pass_state
def repo_move(state: State, source: str, target: str | None) -> Result:
    """Move what is stored under repo SOURCE to repo TARGET (default: the repo here).

    Adding an origin to a repo (its first push), or changing it, gives the repo another
    key, and what was stored under the one before no longer applies there; `ken where`
    and `ken doctor` name that key. This moves its memories (`repo:SOURCE` and each
    `workstream:SOURCE#BRANCH`), each as a new version, and the projects added from it,
    in one step. Refused inside an agent's shell.
    """
    if target is None:
        target = state.where().repo
        if target is None:
            raise InvalidInput(f"{NONE_HERE[ScopeType.REPO]}: name the repo to move to")
    moved = repokeys.move(state.store, source, target, state.config, actor=state.actor())
    after = []
    if moved.team_copies:
        after.append(
            f"note: {moved.team_copies} team memor{'y' if moved.team_copies == 1 else 'ies'} "
            f"stay in repo:{moved.source}: the team server is where they change"
        )
    if moved.switches:
        said = repokeys.switches_left(moved.source, moved.switches, moved.target)
        after.append(f"note: {'; '.join(said)}")
    return Result(data=moved.to_dict(), text=lambda: _moved(moved), after=after)


def _moved(moved: repokeys.Moved) -> None:
    count = f"{moved.memories} memor{'y' if moved.memories == 1 else 'ies'}"
    projects = (
        f" and project{'s' if len(moved.projects) > 1 else ''} {', '.join(moved.projects)}"
        if moved.projects
        else ""
    )
    say(f"moved {count}{projects} from repo:{moved.source} to repo:{moved.target}")
    for old, new in moved.scopes.items():
        if old != f"repo:{moved.source}":
            say(f"  {old} -> {new}")
