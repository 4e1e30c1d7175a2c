"""`ken promote`: approved memories to a steering repo's branch, for review."""

from __future__ import annotations

import click

from kenning import promote
from kenning.cli import options
from kenning.cli.output import Result, memories, say
from kenning.cli.state import State, example, pass_state, renders, scope_filter


@click.command("promote", epilog=example("ken promote --repo ~/src/team-memory --batch 10"))
@click.option(
    "--repo",
    "repo",
    required=True,
    type=click.Path(file_okay=False),
    help="The steering repo to write the branch in.",
)
@click.option(
    "--batch",
    default=20,
    show_default=True,
    type=click.IntRange(1, 1000),
    help="How many of the best-ranked approved memories.",
)
@options.scopes
@renders
@pass_state
def promote_cmd(state: State, repo: str, batch: int, scope: tuple[str, ...]) -> Result:
    """Write the best approved memories as Markdown records (memory/<id>.md, with id,
    kind, scope, sources, who approved them and when) on a new branch memory/<date> of
    a steering repo: one commit listing them, ready for a pull request.

    Your current branch, index and working tree are left as they are: when memory/<date>
    itself is checked out (here or in a worktree), promote refuses and changes nothing;
    switch that checkout to another branch first. Memories already
    promoted as they are now are skipped, so running it again adds nothing.
    """
    done = promote.promote(
        state.store,
        repo,
        batch=batch,
        scopes=scope_filter(state, scope, False),
        exclude_repos=tuple(sorted(state.withheld())),  # an agent's shell: what it may read
    )
    return Result(data=done.to_dict(), text=lambda: _promoted(done))


def _promoted(done: promote.Promoted) -> None:
    if done.commit is None:
        say(
            f"nothing to promote: the {done.skipped} best approved memories are on a memory/ "
            f"branch (or checked out) in {done.repo} as they are now"
        )
        return
    for item in done.added:
        say(f"  {promote.record_path(item)}  {item.title[:70]}")
    say(
        f"promoted {memories(len(done.added))} to {done.branch} (commit {done.commit[:12]}) "
        f"in {done.repo}; skipped {done.skipped} already there. "
        f"See it: git -C {done.repo} log {done.branch}"
    )
