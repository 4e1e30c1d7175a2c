"""`ken search`: memories by their words, best first."""

from __future__ import annotations

from collections.abc import Sequence

import click

from kenning import items
from kenning.cli import complete, output
from kenning.cli.output import Result, say
from kenning.cli.state import State, example, pass_state, renders, scope_filter
from kenning.model import Status


@click.command(epilog=example("ken search migrate staging --kind decision"))
@click.argument("query", nargs=-1, required=True)
@click.option(
    "--scope",
    "-s",
    multiple=True,
    shell_complete=complete.scopes,
    help="Only these scopes (repeatable).",
)
@click.option("--here", is_flag=True, help="Only the scopes that apply in this folder.")
@click.option(
    "--kind", "-k", multiple=True, shell_complete=complete.kinds, help="Only these kinds."
)
@click.option(
    "--status",
    multiple=True,
    default=[Status.ACTIVE.value],
    show_default=True,
    shell_complete=complete.statuses,
    help="Only these statuses.",
)
@click.option("--tag", "-t", multiple=True, help="Only items with this tag.")
@click.option("--all", "show_all", is_flag=True, help="Any status, expired tasks too.")
@click.option("--limit", "-n", default=20, show_default=True, type=click.IntRange(1, 1000))
@renders
@pass_state
def search(
    state: State,
    query: tuple[str, ...],
    scope: tuple[str, ...],
    here: bool,
    kind: tuple[str, ...],
    status: tuple[str, ...],
    tag: tuple[str, ...],
    show_all: bool,
    limit: int,
) -> Result:
    """Search memories by their words, best first.

    Every word must match; words match their stems; the last word matches as a
    prefix of the words as written and of their stems (deploy finds "Deployment").
    Punctuation is just text.
    """
    found = items.search(
        state.store,
        " ".join(query),
        scopes=scope_filter(state, scope, here),
        kinds=[k.value for k in map(items.parse_kind, kind) if k],
        statuses=() if show_all else [items.parse_status(s).value for s in status],
        tags=items.clean_tags(tag),
        include_expired=show_all,
        limit=limit,
    )
    return Result(
        data=[{**f.item.to_dict(), "score": round(f.score, 4)} for f in found],
        text=lambda: _found(found),
    )


def _found(found: Sequence[items.Found]) -> None:
    if not found:
        say("no memories match")
        return
    output.items_table([f.item for f in found], [f.score for f in found])
