"""`ken curate`: what waits for review, and what to fold, supersede or retire."""

from __future__ import annotations

import json
from pathlib import Path

import click

from kenning import curate, outfile, plans
from kenning.cli import options
from kenning.cli.output import Result, echo, say, table
from kenning.cli.state import State, example, pass_state, renders, scope_filter
from kenning.ids import short_id


@click.command("curate", epilog=example("ken curate --plan cleanup.json"))
@options.scopes_here
@options.unused_days("Retire what was unused this many days (default: config lint.unused_days).")
@click.option(
    "--plan",
    "plan_file",
    type=click.Path(dir_okay=False),
    help="Write the proposals as a maintenance plan to this file (`ken plan apply` it).",
)
@renders
@pass_state
def curate_cmd(
    state: State,
    scope: tuple[str, ...],
    here: bool,
    days: int | None,
    plan_file: str | None,
) -> Result:
    """Rank what waits for review and propose what to fold, supersede and retire.

    Nothing changes: copies (the same statement in other words, in any scope) are
    proposed to fold into one record that cites them all; an older rule that a newer
    one reverses, to be superseded by it; expired tasks and memories unused for
    lint.unused_days with no pin, to be retired. --plan writes it all as a plan to
    preview and apply.
    """
    found = curate.curate(
        state.store,
        scopes=scope_filter(state, scope, here),
        unused_days=days or state.config.lint_unused_days,
        exclude_repos=tuple(sorted(state.withheld())),  # in an agent's shell
        known=state.known(),
    )
    left: list[tuple[curate.Proposal, str]] = []
    plan = curate.plan_for(found, left=left) if plan_file else None
    digest = ""
    if plan is not None and plan_file and plan["operations"]:
        digest = plans.parse_plan(plan, plan_file).digest  # what it writes is a valid plan
        _write(Path(plan_file), plan)
    after = []
    if plan is not None and not plan["operations"]:
        after.append("nothing to change: no plan written")
    elif plan is not None:
        after.append(
            f"wrote plan {plan['id']} ({len(plan['operations'])} operations) to {plan_file}: "
            f"`ken plan preview {plan_file}`, then `ken plan apply {plan_file}`; "
            f"digest {digest[:19]}"
        )
    for proposal, why in left:
        ids = ", ".join(short_id(i.id) for i in proposal.items)
        after.append(
            f"note: left out of the plan: {proposal.action} of {ids} ({why}); "
            "`ken curate` again once the plan is applied"
        )
    return Result(data={**found.to_dict(), "plan": plan}, text=lambda: _render(found), after=after)


def _write(path: Path, plan: dict[str, object]) -> None:
    with outfile.replacing(path) as fh:
        fh.write(json.dumps(plan, indent=2, ensure_ascii=False) + "\n")


def _render(found: curate.Curation) -> None:
    if found.waiting:
        echo(f"waiting for review ({len(found.waiting)}), best first:")
        table(
            ["id", "kind", "scope", "uses", "title"],
            [
                [short_id(i.id), i.kind.value, str(i.scope), str(i.use_count), i.title[:60]]
                for i in found.waiting
            ],
        )
    else:
        echo("nothing waits for review")
    if not found.proposals:
        echo("nothing to fold, supersede or retire")
    else:
        echo(f"proposals ({len(found.proposals)}):")
        for p in found.proposals:
            gone = ", ".join(short_id(i.id) for i in p.items)
            match p.action:
                case "fold":
                    into = short_id(p.keep.id) if p.keep else f"a new record in {p.into_scope}"
                    echo(f"  fold {gone} into {into}: {p.why}")
                    echo(f'       "{(p.keep or p.items[0]).title[:70]}"')
                case "supersede":
                    assert p.keep is not None
                    echo(f"  supersede {gone} by {short_id(p.keep.id)}: {p.why}")
                    echo(f'       "{p.items[0].title[:70]}" -> "{p.keep.title[:70]}"')
                case _:
                    echo(f'  retire {gone}: {p.why}: "{p.items[0].title[:60]}"')
    for note in found.notes:
        say(f"note: {note}")
