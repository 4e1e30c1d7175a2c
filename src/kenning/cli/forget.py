"""`ken forget`: the one command that deletes."""

from __future__ import annotations

import contextlib

import click

from kenning import items, policy, sessions, tombstones
from kenning.cli import complete
from kenning.cli.output import confirm, memories, say
from kenning.cli.state import State, example, pass_state
from kenning.errors import NotFound
from kenning.ids import short_id


@click.command(epilog=example("ken forget --scope repo:github.com/acme/app --since 2026-01-01"))
@click.argument("refs", nargs=-1, shell_complete=complete.item_ids())
@click.option(
    "--scope", "-s", shell_complete=complete.scopes, help="Forget every memory in this scope."
)
@click.option("--since", help="Forget memories created on or after YYYY-MM-DD.")
@click.option("--session", help="Forget memories written in this session.")
@click.option(
    "--everywhere",
    is_flag=True,
    help="Also forget the memories (summaries, handoffs, any other) that quote them, and "
    "blank the session prompts and recall queries that do.",
)
@click.option("--yes", "-y", is_flag=True, help="Do not ask first.")
@pass_state
def forget(
    state: State,
    refs: tuple[str, ...],
    scope: str | None,
    since: str | None,
    session: str | None,
    everywhere: bool,
    yes: bool,
) -> None:
    """Delete memories for good, with every version: the only command that deletes.

    Afterwards their text is gone from the database file, its WAL, the search index, the
    hook log, the team outbox (never sent) and the edits and plans kept for you, and so
    are the proposed copies that would have replaced them; the copies of the store kept
    from before an upgrade that hold them are removed, and named. The writes hooks kept in the
    spool while the store was locked are made first, and forgotten as the rest. With
    --everywhere, so is every other memory that quotes a line of theirs, of any version
    (12 characters or more), and the session prompts and recall queries that quote one
    are blanked.
    A memory kept in sync from a file (a project's decisions.md, plan.md or log.md, an
    agent's memory file `ken collect` reads) is named with its file: the text stays there,
    so remove it from the file too. Kenning keeps a digest of the entry (no text), so the
    next sync or collection does not bring the same text back; edited there, it is new.
    With --session, the session's own record (its prompts, what it was told) goes too.
    """
    # Refused in an agent's shell before anything is looked up: a count or a title
    # would tell it what a repo kept from agents, or another agent, holds.
    policy.require_person(state.actor(), "forget")
    items.write_spooled(state.store)  # what hooks wrote under a lock is forgotten too
    session_ids: list[str] = []
    if session:
        # An agent's session that went on in several places: every one of them. With
        # no record, memories may still name it.
        with contextlib.suppress(NotFound):
            session_ids = [s.id for s in sessions.resolve_all(state.store, session)]
    wanted: list[str | None] = [*session_ids] or [session]
    chosen = list(
        {
            item.id: item
            for named in wanted
            for item in items.select_for_forget(
                state.store,
                refs=refs,
                scope=state.scope(scope, to_find=True) if scope else None,
                since=since,
                session=named,
            )
        }.values()
    )
    if not chosen and not session_ids:
        say("nothing matches; nothing forgotten")
        return
    plan = items.plan_forget(state.store, chosen, everywhere=everywhere)
    actor = policy.require_person(
        state.actor(),
        f"forget {memories(len(plan.items))}" + (" and a session's prompts" if session_ids else ""),
    )
    files = list(
        dict.fromkeys(
            f for item in plan.items if (f := tombstones.source_file(state.store, item.source))
        )
    )
    if not yes:
        for item in plan.items[:10]:
            why = (
                ""
                if item in plan.chosen
                else (
                    "  (a copy waiting to replace it)" if item in plan.copies else "  (quotes it)"
                )
            )
            say(f"  {short_id(item.id)}  {item.title}{why}")
        if len(plan.items) > 10:
            say(f"  ... and {len(plan.items) - 10} more")
        if files:
            say(_kept_in(files))
        records = "the session's record" if len(session_ids) < 2 else "the sessions' records"
        what = memories(len(plan.items)) + (f" and {records}" if session_ids else "")
        if not confirm(f"Forget {what} for good?"):
            say("nothing forgotten")
            raise SystemExit(1)
    done = items.forget(state.store, plan, session_id=session_ids, actor=actor)
    # What the copies replace: the one memory chosen, one of those chosen, or them.
    them = "it" if len(plan.chosen) == 1 else "one" if len(plan.copies) == 1 else "them"
    extra = [
        f"{n} {one if n == 1 else more}"
        for n, one, more in (
            (
                len(plan.copies),
                f"copy waiting to replace {them}",
                f"copies waiting to replace {them}",
            ),
            (
                len(plan.quoting),
                f"memory that quoted {'it' if len(plan.chosen) == 1 else 'them'}",
                f"memories that quoted {'it' if len(plan.chosen) == 1 else 'them'}",
            ),
            (
                done.quotes,
                "session prompt or recall query blanked",
                "session prompts and recall queries blanked",
            ),
            (done.log_lines, "hook log line dropped", "hook log lines dropped"),
            (done.unsent, "waiting team push dropped", "waiting team pushes dropped"),
            (
                done.drafts,
                "kept edit or drafted plan removed",
                "kept edits and drafted plans removed",
            ),
        )
        if n
    ]
    say(
        f"forgot {memories(done.memories)}"
        + (" and the session's record" if session_ids else "")
        + (f" ({'; '.join(extra)})" if extra else "")
    )
    if files:
        say(_kept_in(files))
    if done.kept_copies:
        n = len(done.kept_copies)
        say(
            f"removed {n} cop{'y' if n == 1 else 'ies'} of the store kept from before an "
            f"upgrade ({', '.join(done.kept_copies)}): {'it' if n == 1 else 'they'} held "
            "what was forgotten"
        )
    if state.store.wipe_pending():
        readers = ", ".join(state.store.readers()) or "another process"
        say(
            f"ken: the forgotten text is out of the store, but older copies of its pages stay "
            f"in {state.store.path} and its -wal file while {readers} keeps reading the store; "
            "the first ken command after that process stops reading wipes them"
        )


def _kept_in(files: list[str]) -> str:
    """What forget leaves of memories kept in sync from a file: the file's text."""
    shown = ", ".join(files[:5]) + (f" and {len(files) - 5} more" if len(files) > 5 else "")
    return (
        f"note: the text stays in {shown}: kenning will not bring the same entry back, "
        f"but remove it from {'that file' if len(files) == 1 else 'those files'} for it "
        "to be gone (edited there, it comes back as new)"
    )
