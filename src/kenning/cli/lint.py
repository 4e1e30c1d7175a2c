"""`ken lint`: what to fix in memory, and what repeats the instruction files."""

from __future__ import annotations

from pathlib import Path

import click

from kenning import lint as lint_mod
from kenning.cli import options, output
from kenning.cli.output import Result
from kenning.cli.state import State, example, pass_state, renders, scope_filter
from kenning.errors import KenningError
from kenning.ids import short_id


@click.command("lint", epilog=example("ken lint --against CLAUDE.md AGENTS.md GEMINI.md"))
@click.argument("files", nargs=-1, type=click.Path(dir_okay=False))
@options.unused_days("Report items unused this many days (default 90, config lint.unused_days).")
@click.option("--here", is_flag=True, help="Only the scopes that apply in this folder.")
@click.option(
    "--against",
    is_flag=True,
    help="Also report memories that repeat or contradict a line of the instruction FILES "
    "agents load (default: this repo's CLAUDE.md, AGENTS.md and GEMINI.md).",
)
@renders
@pass_state
def lint_cmd(
    state: State,
    files: tuple[str, ...],
    days: int | None,
    here: bool,
    against: bool,
) -> Result:
    """Report links to missing files, expired tasks, unused items, duplicates and
    near-duplicates, rules that contradict each other where both apply, what the cap of
    active memories per scope archived, and (--against) memories that repeat or
    contradict the instruction files, with the file and line."""
    hidden = tuple(sorted(state.withheld()))  # in an agent's shell, what it may not read
    findings = lint_mod.lint(
        state.store,
        unused_days=days or state.config.lint_unused_days,
        scopes=tuple(scope_filter(state, (), here)),
        cap=state.config.memory_max_active_per_scope,
        exclude_repos=hidden,
        known=state.known(),
    )
    if against or files:
        findings += lint_mod.against(
            state.store,
            [Path(f) for f in files] or _instruction_files(state),
            scopes=tuple(scope_filter(state, (), True)),
            exclude_repos=hidden,
        )
    return Result(
        data=[f.to_dict() for f in findings],
        text=output.table_or_say(
            ["id", "rule", "title", "detail"],
            [[short_id(f.item_id), f.rule, f.title[:50], f.detail] for f in findings],
            "nothing to report",
        ),
    )


def _instruction_files(state: State) -> list[Path]:
    """This repo's own instruction files, at its root."""
    git = state.where().git
    if git is None:
        raise KenningError(
            "lint --against needs the instruction files: name them, or run it in a repo "
            "that has CLAUDE.md, AGENTS.md or GEMINI.md at its root"
        )
    found = [git.root / name for name in lint_mod.INSTRUCTION_FILES if (git.root / name).is_file()]
    if not found:
        raise KenningError(
            f"no {', '.join(lint_mod.INSTRUCTION_FILES)} at {git.root}: name the files to "
            "check against"
        )
    return found
