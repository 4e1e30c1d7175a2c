"""`ken search`: memories by their words, best first."""

from __future__ import annotations

from collections.abc import Sequence

import click

from kenning import deliver, items
from kenning.cli import options, output
from kenning.cli.output import Result, say
from kenning.cli.state import State, example, pass_state, renders, scope_filter


@click.command(epilog=example("ken search migrate staging --kind decision"))
@click.argument("query", nargs=-1, required=True)
@options.scopes_here
@options.item_filters
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

    Memories that hold every word come first; words match their stems; the last word
    matches as a prefix of the words as written and of their stems (deploy finds
    "Deployment"). When fewer than --limit hold every word, memories that hold some
    of the words (not stop words) follow. Punctuation is just text.
    """
    blocked = state.withheld()
    found = items.search(
        state.store,
        " ".join(query),
        scopes=scope_filter(state, scope, here),
        kinds=[k.value for k in map(items.parse_kind, kind) if k],
        statuses=options.statuses(status, show_all),
        tags=items.clean_tags(tag),
        include_expired=show_all,
        limit=limit,
        exclude_repos=sorted(blocked),
    )
    known = state.known()  # in an agent's shell: what memory_search gives it
    found = [
        f
        for f in found
        if not deliver.withheld(f.item, blocked) and (known is None or known(f.item))
    ]
    return Result(
        data=[
            {**f.item.to_dict(), "score": round(f.score, 4), "every_word": f.every_word}
            for f in found
        ],
        text=lambda: _found(found),
    )


def _found(found: Sequence[items.Found]) -> None:
    if not found:
        say("no memories match")
        return
    output.items_table([f.item for f in found], [f.score for f in found])
    some = sum(not f.every_word for f in found)
    if some == len(found):
        say("(no memory holds every word as typed: these fit the words best)")
    elif some:
        say(f"(the last {some} fit the words, without holding each as typed)")
