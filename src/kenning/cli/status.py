"""A memory's status and pin: `ken approve`, `reject`, `restore`, `archive`, `dismiss`,
`pin` and `unpin`."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import click

from kenning import items, policy, review
from kenning.cli import complete
from kenning.cli.output import Result, confirm, memories, say
from kenning.cli.state import State, example, guard_change, pass_state, renders, scope_filter
from kenning.ids import short_id
from kenning.model import DismissReason, Item


def _each_once(state: State, refs: Sequence[str]) -> list[Item]:
    """The memories the ids name, in order, each once: an id given twice (or its short and
    whole forms) is one memory, changed once."""
    return list({i.id: i for i in (state.memory(ref, deciding=True) for ref in refs)}.values())


def _all_or_nothing(state: State, refs: Sequence[str], action: str) -> list[Item]:
    """Resolve every id and check every change before making any."""
    chosen = _each_once(state, refs)
    for item in chosen:
        items.check_status_change(item, action)
    return chosen


def _status_command(action: str, past: str, doc: str, *, batch: bool = False) -> click.Command:
    def command(
        state: State,
        refs: tuple[str, ...],
        all_waiting: bool = False,
        scope: tuple[str, ...] = (),
        kind: tuple[str, ...] = (),
        yes: bool = False,
    ) -> Result:
        if all_waiting:
            if refs:
                raise click.UsageError("give ids or --all, not both")
            # Who may decide comes before the question: an agent is refused, not asked.
            actor = policy.require_person(state.actor(), f"{action} the waiting memories")
            chosen = _waiting_batch(state, action, scope, kind, yes)
            if not chosen:
                return Result()
        else:
            if not refs:
                raise click.UsageError(
                    "give the ids of the memories" + (" (or --all)" if batch else "")
                )
            if scope or kind:
                raise click.UsageError("--scope and --kind choose what --all decides")
            # A person's to decide, whatever the ids name: said before they are read.
            actor = policy.require_person(state.actor(), f"{action} {' '.join(refs)}")
            chosen = _all_or_nothing(state, refs, action)
        # What approving a replacement retires, said with it: approving does only what the
        # person is told.
        retires: dict[str, Item] = {}
        stale: dict[str, Item] = {}  # replacements whose original was retired already
        if action == "approve":
            for i in chosen:
                if (old := items.replaced_by(state.store, i)) is None:
                    continue
                if old.status in items.RETIRED_BY_REPLACEMENT:
                    retires[i.id] = old
                else:
                    stale[i.id] = old
            # An original named beside its replacement is retired by it, not approved.
            retired = {old.id for old in retires.values()}
            chosen = [i for i in chosen if i.id not in retired]
        capped: list[Item] = []
        skipped: list[items.Skipped] = []  # changed by another since it was read
        if action == "approve":
            done = items.approve_all(
                state.store,
                chosen,
                actor=actor,
                archived=capped,
                progress=_progress(past),
                skipped=skipped,
                covered=all_waiting,
            )
        elif all_waiting:  # reject --all; by ids (and restore), each decided or refused
            done = items.reject_all(
                state.store, chosen, actor=actor, progress=_progress(past), skipped=skipped
            )
        else:
            done = [
                items.set_status(state.store, i.id, action, actor=actor, archived=capped)
                for i in chosen
            ]
        return Result(
            data=[i.to_dict() for i in done],
            text=lambda: _decided(past, done, retires, stale),
            after=[
                *(f"skipped {short_id(s.item.id)}: {s.item.title} ({s.why})" for s in skipped),
                *items.cap_said(capped),
            ],
        )

    def _decided(
        past: str, done: Sequence[Item], retires: dict[str, Item], stale: dict[str, Item]
    ) -> None:
        for item in done:
            status = f" as {item.status.value}" if action == "restore" else ""
            say(f"{past} {short_id(item.id)}{status}: {item.title}")
            if item.id in retires:
                old = retires[item.id]
                say(
                    f"  superseded {short_id(old.id)} ({old.scope}), which it replaces: {old.title}"
                )
            if item.id in stale:
                old = stale[item.id]
                say(
                    f"  it replaces {short_id(old.id)}, which is {old.status.value} already: "
                    "nothing else retired"
                )

    if batch:
        command = click.option("--yes", "-y", is_flag=True, help="Do not ask first.")(command)
        command = click.option(
            "--kind",
            "-k",
            multiple=True,
            shell_complete=complete.kinds,
            help="With --all: only these kinds.",
        )(command)
        command = click.option(
            "--scope",
            "-s",
            multiple=True,
            shell_complete=complete.scopes,
            help="With --all: only these scopes (repeatable; a bare `repo` is this repo's).",
        )(command)
        command = click.option(
            "--all",
            "all_waiting",
            is_flag=True,
            help="Every waiting memory (that --scope and --kind name), after a count to confirm.",
        )(command)
    example_text = f"ken {action} --all --scope repo" if batch else f"ken {action} 3kq9zd"
    return click.command(action, help=doc, epilog=example(example_text))(
        click.argument(
            "refs", nargs=-1, required=not batch, shell_complete=complete.item_ids(action)
        )(renders(pass_state(command)))
    )


def _progress(past: str) -> Callable[[int, int], None]:
    """Say how far a long batch is, after each chunk but the last (which its result says)."""

    def said(done: int, total: int) -> None:
        if done < total:
            say(f"{past} {done}/{total}")

    return said


def _waiting_batch(
    state: State, action: str, scope: Sequence[str], kind: Sequence[str], yes: bool
) -> list[Item]:
    """What `--all` decides: every waiting memory the filters name, counted and confirmed
    first (an empty list when nothing waits or the person says no)."""
    scopes = scope_filter(state, scope, False)
    kinds = [k.value for k in map(items.parse_kind, kind) if k]
    chosen = review.select(state.store, scopes, kinds)
    filters = (f" in {', '.join(scopes)}" if scopes else "") + (
        f" of kind {', '.join(kinds)}" if kinds else ""
    )
    if not chosen:
        say(f"nothing waits for review{filters}")
        return []
    if not yes:
        for item in chosen[:10]:
            old = items.to_supersede(state.store, item) if action == "approve" else None
            retires = f"  (supersedes {short_id(old.id)}: {old.title})" if old else ""
            say(f"  {short_id(item.id)}  {item.kind.value:<10}  {item.title}{retires}")
        if len(chosen) > 10:
            say(f"  ... and {len(chosen) - 10} more")
        what = memories(len(chosen), "waiting") + filters
        if not confirm(f"{action.capitalize()} {what}?"):
            say("nothing changed")
            raise SystemExit(1)
    return chosen


approve = _status_command(
    "approve",
    "approved",
    "Approve proposed memories: agents are told them. --all approves every waiting memory "
    "(that --scope and --kind name) after a count to confirm.",
    batch=True,
)
reject = _status_command(
    "reject",
    "rejected",
    "Reject proposed memories (kept, never told). --all rejects every waiting memory "
    "(that --scope and --kind name) after a count to confirm.",
    batch=True,
)
restore = _status_command(
    "restore",
    "restored",
    "Restore archived, rejected or dismissed memories (a proposal is proposed again).",
)


@click.command(epilog=example('ken archive 3kq9zd --reason "the service is gone"'))
@click.argument("refs", nargs=-1, required=True, shell_complete=complete.item_ids("archive"))
@click.option("--reason", help="Why, in a line (shown by `ken show`).")
@renders
@pass_state
def archive(state: State, refs: tuple[str, ...], reason: str | None) -> Result:
    """Archive memories: kept, no longer told; `restore` brings them back."""
    items.archive_reason_of(reason)  # a bad reason is refused before anything changes
    actor = policy.require_person(state.actor(), f"archive {' '.join(refs)}")  # ids unread
    chosen = _all_or_nothing(state, refs, "archive")
    done = [
        items.set_status(state.store, i.id, "archive", reason=reason, actor=actor) for i in chosen
    ]
    return Result(data=[i.to_dict() for i in done], text=lambda: _archived(done))


def _archived(done: Sequence[Item]) -> None:
    for item in done:
        why = f" ({item.archive_reason})" if item.archive_reason else ""
        say(f"archived {short_id(item.id)}{why}: {item.title}")


@click.command(epilog=example("ken dismiss 3kq9zd --reason one_off"))
@click.argument("refs", nargs=-1, required=True, shell_complete=complete.item_ids("dismiss"))
@click.option(
    "--reason",
    default="other",
    show_default=True,
    type=click.Choice([r.value for r in DismissReason]),
    help="covered (another memory says it), wrong, one_off (true once) or other.",
)
@renders
@pass_state
def dismiss(state: State, refs: tuple[str, ...], reason: str) -> Result:
    """Dismiss memories, with a reason (kept, never told; `restore` undoes it)."""
    actor = policy.require_person(state.actor(), f"dismiss {' '.join(refs)}")  # ids unread
    chosen = _all_or_nothing(state, refs, "dismiss")
    done = [
        items.set_status(state.store, i.id, "dismiss", reason=reason, actor=actor) for i in chosen
    ]
    return Result(data=[i.to_dict() for i in done], text=lambda: _dismissed(reason, done))


def _dismissed(reason: str, done: Sequence[Item]) -> None:
    for item in done:
        say(f"dismissed {short_id(item.id)} ({reason}): {item.title}")


def _pin_command(name: str, value: bool) -> click.Command:
    @click.command(
        name,
        help=f"{'Pin' if value else 'Unpin'} memories "
        f"({'always' if value else 'no longer always'} in context packs).",
        epilog=example(f"ken {name} 3kq9zd"),
    )
    @click.argument("refs", nargs=-1, required=True, shell_complete=complete.item_ids())
    @pass_state
    def command(state: State, refs: tuple[str, ...]) -> None:
        # A pin is a person's to give or take: refused before the ids are read.
        actor = policy.require_person(state.actor(), f"{name} {' '.join(refs)}")
        chosen = _each_once(state, refs)
        for item in chosen:
            actor = guard_change(state, item, name, actor=actor)
        for item in chosen:
            items.set_pinned(state.store, item.id, value, actor=actor)
            say(f"{name}ned {short_id(item.id)}: {item.title}")

    return command


pin = _pin_command("pin", True)
unpin = _pin_command("unpin", False)
