"""`ken plan validate|preview|apply|receipt FILE`: maintenance plans (kenning.plans)."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from kenning import items, plans, policy
from kenning.cli.output import Result, confirm, echo, say
from kenning.cli.state import KenGroup, State, example, pass_state, renders
from kenning.errors import InvalidInput, PlanConflict
from kenning.ids import short_id
from kenning.store import PlanReceipt


@click.group("plan", cls=KenGroup, epilog=example("ken plan preview cleanup.json"))
def plan_group() -> None:
    """Maintenance plans: change many memories at once, checked, previewed, all or nothing.

    A plan is a JSON file: {"schema": 1, "id": ..., "owner": ..., "operations": [...]},
    with 1 to 100 revise, create, retire and retire_into operations.
    `ken curate --plan FILE` writes one; docs/howto/curation.md shows the format.
    """


def read(file: str) -> plans.Plan:
    """The plan in FILE (`-`: stdin), checked; at most 1 MiB is read."""
    try:
        if file == "-":
            data = sys.stdin.buffer.read(plans.MAX_PLAN_BYTES + 1)
        else:
            with Path(file).open("rb") as fh:
                data = fh.read(plans.MAX_PLAN_BYTES + 1)
    except OSError as exc:
        raise InvalidInput(f"cannot read {file}: {exc.strerror or exc}") from None
    return plans.read_plan(data, "stdin" if file == "-" else file)


def _counts(plan: plans.Plan) -> str:
    found: dict[str, int] = {}
    for op in plan.operations:
        found[op.op] = found.get(op.op, 0) + 1
    return ", ".join(f"{n} {op}" for op, n in found.items())


@plan_group.command("validate", epilog=example("ken plan validate cleanup.json"))
@click.argument("file")
@renders
def validate(file: str) -> Result:
    """Check a plan's shape and limits (no store needed): one line for the first problem."""
    plan = read(file)
    data = {
        "valid": True,
        "id": plan.id,
        "owner": plan.owner,
        "operations": len(plan.operations),
        "digest": plan.digest,
    }
    return Result(data=data, text=lambda: _valid(plan))


def _valid(plan: plans.Plan) -> None:
    echo(
        f"valid: plan {plan.id} by {plan.owner}, {len(plan.operations)} operations "
        f"({_counts(plan)})"
    )
    echo(f"digest: {plan.digest}")


def _short(view: dict[str, Any]) -> str:
    title = view["text"].split("\n", 1)[0]
    return f"{view['short_id']} {view['kind']} {view['scope']} [{view['status']}]: {title[:70]}"


def render(preview: plans.Preview) -> str:
    plan = preview.plan
    lines = [
        f"plan {plan.id} by {plan.owner}: {len(plan.operations)} operations ({_counts(plan)})",
        f"digest: {plan.digest}",
    ]
    lines += [f"CONFLICT {c.code}: {c.detail}" for c in preview.conflicts if c.index < 0]
    for step in preview.steps:
        lines.append(f"[{step.index}] {step.op}")
        lines += [f"    before: {_short(view)}" for view in step.before]
        for view in step.after:
            lines.append(f"    after:  {_short(view)}")
            if view.get("archive_reason"):
                lines.append(f"            reason: {view['archive_reason']}")
        lines += [f"    CONFLICT {c.code}: {c.detail}" for c in step.conflicts]
    return "\n".join(lines)


@plan_group.command("preview", epilog=example("ken plan preview cleanup.json"))
@click.argument("file")
@renders
@pass_state
def preview_cmd(state: State, file: str) -> Result:
    """Show what each operation changes (before and after), the plan's digest, and the
    conflicts that block applying it: revision_changed, target_missing, already_retired, id_applied.

    Exits 1 when a conflict blocks it.
    """
    plan = read(file)
    # In an agent's shell, as MCP's memory_plan_draft: no plan naming a private memory,
    # and its ids name only what `ken show` would show it.
    known = items.known_to(state.actor(), state.withheld())
    plans.visible_targets(state.store, plan, state.withheld(), known)
    seen = plans.preview(state.store, plan, file, known)
    if seen.receipt is None:
        plans.check_scopes(state.store, plan, state.actor())  # what apply would refuse
    shown = Result(data=seen.to_dict(), text=lambda: echo(render(seen)))
    if seen.receipt is not None:
        # Its items have moved on since: the plan's before/after and "conflicts" now
        # describe nothing to do. Say what happened instead.
        said = (
            f"plan {plan.id} was applied at {seen.receipt.applied_at}; nothing left to do "
            f"(`ken plan receipt {file}` shows what it wrote)"
        )
        return Result(data=seen.to_dict(), text=lambda: say(said))
    if seen.conflicts:
        count = len(seen.conflicts)
        said = f"ken: {count} conflict{'s' if count > 1 else ''} block applying this plan"
        return replace(shown, after=[said], exit=1)
    return shown


@plan_group.command(
    "apply", epilog=example("ken plan apply cleanup.json --yes --digest 3f1c0a9e7b21")
)
@click.argument("file")
@click.option("--yes", "-y", is_flag=True, help="Do not ask (needs --digest).")
@click.option(
    "--digest",
    "prefix",
    help="The start of the digest `ken plan preview` shows (12 characters at least).",
)
@renders
@pass_state
def apply_cmd(state: State, file: str, yes: bool, prefix: str | None) -> Result:
    """Apply a plan: every operation and a receipt in one transaction, or nothing.

    A person is shown what each operation changes, then confirms; non-interactively,
    --yes with --digest PREFIX, which must match. Every expected revision is checked
    again inside the transaction. Applying the same plan again returns its receipt and
    writes nothing.
    """
    if yes and not prefix:
        raise click.UsageError("--yes needs --digest PREFIX: the digest `ken plan preview` shows")
    plan = read(file)
    digest = prefix
    actor = policy.require_person(  # refused in an agent's shell before anything is asked
        state.actor(), f"apply plan '{plan.id}' ({len(plan.operations)} operations)"
    )
    if not yes:
        if not sys.stdin.isatty():
            raise InvalidInput(
                "applying a plan needs a person: run it at a terminal, or pass --yes "
                "--digest PREFIX (the digest `ken plan preview` shows)"
            )
        # What is asked about is shown first, from the very plan that is applied (the
        # file is read once): a plan rewritten after `ken plan preview` is seen as it is.
        for line in render(plans.preview(state.store, plan, file)).splitlines():
            say(line)
        question = (
            f"Apply plan {plan.id} by {plan.owner}: {len(plan.operations)} operations, "
            f"digest {plan.digest.removeprefix('sha256:')[:12]}?"
        )
        if not confirm(question):
            say("nothing applied")
            raise SystemExit(1)
        digest = digest or plan.digest
    assert digest is not None
    try:
        done = plans.apply(state.store, plan, digest=digest, actor=actor, name=file)
    except PlanConflict as exc:  # the text form shows where, then the error says what
        return Result(text=lambda: echo(render(plans.preview(state.store, plan, file))), error=exc)
    return Result(
        data={**done.receipt.to_dict(), "replayed": done.replayed},
        text=lambda: _applied(plan, done),
        after=[
            f"archived {short_id(item.id)} (cap of {item.scope}): {item.title}"
            for item in done.archived
        ],
    )


def _applied(plan: plans.Plan, done: plans.Applied) -> None:
    if done.replayed:
        say(
            f"plan {plan.id} was applied at {done.receipt.applied_at}; nothing written "
            "now (the receipt says what it did)"
        )
    else:
        written = sum(len(op.items) for op in done.receipt.operations)
        say(
            f"applied plan {plan.id}: {len(plan.operations)} operations, {written} items "
            f"written; receipt {plan.digest[:19]}"
        )


@plan_group.command("receipt", epilog=example("ken plan receipt cleanup.json"))
@click.argument("file")
@renders
@pass_state
def receipt_cmd(state: State, file: str) -> Result:
    """Say whether a plan was applied (after a crash, say): its receipt, or exit 1.

    The receipt is written in the plan's own transaction, so it exists exactly when the
    plan's changes do.
    """
    plan = read(file)
    done, others = plans.receipt(state.store, plan)
    return Result(
        data={
            "applied": done is not None,
            "digest": plan.digest,
            "receipt": done.to_dict() if done else None,
            "others": [r.to_dict() for r in others],
        },
        text=lambda: _receipt(plan, done, others),
        exit=0 if done is not None else 1,
    )


def _receipt(plan: plans.Plan, done: PlanReceipt | None, others: list[PlanReceipt]) -> None:
    if done is not None:
        written = sum(len(op.items) for op in done.operations)
        echo(
            f"applied: plan {plan.id} ({plan.digest[:19]}...) committed at "
            f"{done.applied_at}: {len(done.operations)} operations, {written} items"
        )
        for op in done.operations:
            changed = ", ".join(f"{short_id(i.id)} ({i.change})" for i in op.items)
            echo(f"  [{op.index}] {op.op}: {changed}")
    else:
        say(
            f"ken: plan {plan.id} ({plan.digest[:19]}...) was not applied: none of it is "
            "in the store"
        )
        for other in others:
            say(
                f"note: other contents under the id {plan.id} were applied at "
                f"{other.applied_at} ({other.digest[:19]}...)"
            )
