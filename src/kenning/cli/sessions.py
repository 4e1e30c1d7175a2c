"""Agent sessions: `ken sessions`, `told`, `lessons`, `summarize` and `handoff`."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import click

from kenning import agents, browse, deliver, sessions
from kenning.cli.output import Result, echo, echo_told, say, table_or_say
from kenning.cli.state import State, example, pass_state, renders
from kenning.errors import InvalidInput, NotFound
from kenning.ids import short_id
from kenning.model import Session
from kenning.pack import cut_to, one_line
from kenning.printable import clean
from kenning.store import SessionQuery, Signal

if TYPE_CHECKING:  # loaded by the commands that use them
    from kenning.handoff import Launch
    from kenning.summarize import SummaryResult


@click.command("sessions", epilog=example("ken sessions --project billing --json"))
@click.option("--all", "show_all", is_flag=True, help="Every repo, not just this one.")
@click.option("--project", "-p", "project", help="The sessions of this project (its slug).")
@click.option("--limit", "-n", default=20, show_default=True, type=click.IntRange(1, 10_000))
@renders
@pass_state
def sessions_cmd(state: State, show_all: bool, project: str | None, limit: int) -> Result:
    """List agent sessions, newest first: this repo's (or this project's, outside a
    repo), a named project's with --project, every one with --all."""
    query = SessionQuery(limit=limit)
    if project is not None:
        if show_all:
            raise click.UsageError("--all and --project exclude each other")
        from kenning import projects

        query = replace(query, project=projects.get_project(state.store, project).slug)
    elif not show_all:
        here = state.where()
        if here.repo:
            query = replace(query, repo=here.repo)
        elif here.project:
            query = replace(query, project=here.project)
        else:
            raise InvalidInput(
                "this folder is not in a git repo or a project: use --all or --project SLUG"
            )
    blocked = state.withheld()
    found = [
        s for s in state.store.list_sessions(query) if not deliver.session_withheld(s, blocked)
    ]
    return Result(
        data=[s.to_dict() for s in found],
        text=table_or_say(
            ["id", "agent", "started", "ended", "prompts", "first prompt"],
            [
                [
                    short_id(s.id),
                    s.agent + (f" ({s.model})" if s.model else ""),
                    s.started_at[:16].replace("T", " "),
                    (s.ended_at or "open")[:16].replace("T", " "),
                    str(s.prompt_count),
                    cut_to(one_line(s.first_prompt or ""), 60),
                ]
                for s in found
            ],
            f"no sessions yet: `ken integrate AGENT` ({', '.join(agents.NAMES)}) records them",
        ),
    )


@click.command(epilog=example("ken told 4fz2ma"))
@click.argument("session")
@renders
@pass_state
def told(state: State, session: str) -> Result:
    """Show exactly what a session was told: each pack and recall, with item ids.

    An agent's own session id that went on in several places names each session it was
    there, and all are shown, oldest first."""
    blocked = state.withheld()
    named = sessions.resolve_all(state.store, session, blocked)
    given = [
        (
            found,
            [
                replace(
                    d,
                    items=tuple(
                        (i, it) for i, it in d.items if not (it and deliver.withheld(it, blocked))
                    ),
                )
                for d in browse.told(state.store, found.id)
            ],
        )
        for found in named
    ]

    def text() -> None:
        for found, deliveries in given:
            _told(found, deliveries)

    return Result(
        data={
            "session": named[-1].to_dict(),
            "continued_from": [s.to_dict() for s in named[:-1]],
            "deliveries": [{**d.to_dict(), "session": s.id} for s, ds in given for d in ds],
        },
        text=text,
    )


def _told(found: Session, given: Sequence[browse.Delivery]) -> None:
    echo(f"session {short_id(found.id)}: {found.agent}, started {found.started_at}")
    if not given:
        click.echo("(told nothing)")
    titles = browse.titles(given)
    for entry in given:
        what = entry.what + (f' for "{one_line(entry.query)[:60]}"' if entry.query else "")
        if entry.is_compaction:
            what = "compaction: what came before may be recalled again"
        elif entry.is_repack:
            what = "a new start pack: what earlier packs told may be recalled again"
        elif entry.is_restart:
            what = "a resume dropped what the session was told: all may be recalled again"
        echo(f"{entry.at}  {what}")
        for item_id, _ in entry.items:
            echo(f"  {short_id(item_id)}  {clean(titles[item_id], one_line=True)}")


@click.command(epilog=example("ken lessons --session 4fz2ma"))
@click.option("--session", "session_ref", help="Only the lessons of this session.")
@renders
@pass_state
def lessons(state: State, session_ref: str | None) -> Result:
    """List the lessons sessions recorded at Stop, each with the signal that caused it.

    A lesson is proposed in the repo: `ken approve ID` makes it steer every agent.
    """
    from kenning import lessons as run_lessons

    blocked = state.withheld()
    if session_ref is not None:  # an agent's session id that went on in several places
        named = sessions.resolve_all(state.store, session_ref, blocked)
        found = [e for s in named for e in run_lessons.lessons_of(state.store, s.id)]
    else:
        found = run_lessons.lessons_of(state.store, None)
    if blocked:  # an agent's shell: no lesson, nor signal, of a repo it may not be told
        hidden = {sid for sid in {e["session"] for e in found} if _ran_in(state, sid, blocked)}
        found = [
            entry
            for entry in found
            if not deliver.withheld(entry["item"], blocked) and entry["session"] not in hidden
        ]
    return Result(
        data=[
            {
                **entry["item"].to_dict(),
                "session": entry["session"],
                "signal": entry["signal"].to_dict() if entry["signal"] else None,
            }
            for entry in found
        ],
        text=table_or_say(
            ["id", "status", "lesson", "evidence", "signal"],
            [
                [
                    short_id(entry["item"].id),
                    entry["item"].status.value,
                    clean(entry["item"].title, one_line=True)[:60],
                    clean(one_line(entry["item"].evidence), one_line=True)[:50],
                    _signal_text(entry["signal"]),
                ]
                for entry in found
            ],
            "no lessons yet: a session with a signal is asked once at Stop (memory.lessons = ask)",
        ),
    )


def _ran_in(state: State, session_id: str | None, blocked: frozenset[str]) -> bool:
    """Whether the session ran in one of the `blocked` repos (a forgotten one: no)."""
    if not session_id:
        return False
    try:
        return deliver.session_withheld(state.store.get_session(session_id), blocked)
    except NotFound:
        return False


def _signal_text(signal: Signal | None) -> str:
    if not signal:
        return "-"
    return f"{signal.kind}: {clean(one_line(signal.detail), one_line=True)[:50]}"


@click.command("handoff", epilog=example("ken handoff --to codex --prompt 'finish the CSV export'"))
@click.option("--to", "to", required=True, help="The agent to continue in (claude, codex, ...).")
@click.option("--model", help="The model to start it with.")
@click.option("--prompt", help="What to ask first (default: check the state and carry on).")
@click.option("--fresh", is_flag=True, help="Start a new session even if it could resume.")
@click.option("--print", "show", is_flag=True, help="Print the command and pack; start no agent.")
@renders
@pass_state
def handoff_cmd(
    state: State,
    to: str,
    model: str | None,
    prompt: str | None,
    fresh: bool,
    show: bool,
) -> Result:
    """Continue the latest agent session here in another agent.

    Starts AGENT with a "Continuing from" pack (the previous agent's prompts, commits,
    uncommitted change, handoff and transcript). Going back to an agent already used in
    this line of work resumes its own session with a "Since your last turn" update.
    """
    from kenning import handoff

    launch = handoff.plan(
        state.store,
        state.config,
        state.where(),
        to.lower(),
        model=model,
        prompt=prompt,
        fresh=fresh,
    )
    # The text form of a launch is the launch: the command and pack with --print, else
    # the agent itself, started in this process's place. --json only says what it would do.
    return Result(data=launch.to_dict(), text=lambda: _launch(state, launch, to, show))


def _launch(state: State, launch: Launch, to: str, show: bool) -> None:
    if show:
        import shlex

        click.echo(f"$ {shlex.join(launch.argv)}\n")
        echo_told(launch.pack)
        return
    say(
        f"{'resuming' if launch.mode == 'resume' else 'starting'} {to} "
        f"(continuing {launch.continues.agent} session {short_id(launch.continues.id)})"
    )
    state.close()
    env = {**os.environ, **launch.env}
    try:
        os.execvpe(launch.argv[0], launch.argv, env)
    except OSError as exc:
        raise InvalidInput(
            f"cannot start {launch.argv[0]}: {exc.strerror}; set [agents.{to}] command in "
            "config.toml"
        ) from None


@click.command("summarize", epilog=example("ken summarize 4fz2ma"))
@click.argument("session", required=False)
@click.option("--part", is_flag=True, hidden=True, help="A part before a compaction.")
@click.option("--from-hook", is_flag=True, hidden=True, help="Run by a hook: log, don't fail.")
@renders
@pass_state
def summarize_cmd(state: State, session: str | None, part: bool, from_hook: bool) -> Result:
    """Summarize a session now (the latest here by default) with memory.summarize.command.

    Stores the summary and proposed items, and says how much transcript it sent.
    """
    from kenning import sessions as sessions_mod
    from kenning import summarize
    from kenning.hooklog import log

    target = None
    note: list[str] = []
    try:
        if session:
            # An agent's session that went on in several places: the newest, as its hook
            # would. Each place's summary lands under that place's switches, so each is
            # summarized on its own, named by its id.
            # a hook's own summary is the store's, whatever the switches tell agents
            hidden = frozenset[str]() if from_hook else state.withheld()
            named = sessions_mod.resolve_all(state.store, session, hidden)
            target = named[-1]
            if len(named) > 1:
                earlier = ", ".join(short_id(s.id) for s in named[:-1])
                note.append(
                    f"agent session {session} went on in {len(named)} places: summarizing "
                    f"the newest, {short_id(target.id)}; name an earlier one by its id "
                    f"({earlier}) to summarize it"
                )
        else:
            here = state.where()
            found = (
                state.store.list_sessions(SessionQuery(repo=here.repo, limit=1))
                if here.repo
                else []
            )
            if not found:
                raise InvalidInput("no session here to summarize; name one (ken sessions)")
            target = found[0]
        if not from_hook:  # an agent's shell is not told a private repo's session
            deliver.check_session_visible(target, state.withheld())
        result = summarize.summarize(
            state.store, state.config, target, final=not part, force=not from_hook
        )
    except Exception as exc:  # noqa: BLE001 - from a hook, like a hook: log and stay quiet
        if not from_hook:
            raise
        log(target.agent if target else "", "summarize", f"{type(exc).__name__}: {exc}")
        return Result()
    if result is None:
        return Result(before=["nothing new to summarize" if not from_hook else ""])
    if from_hook:  # nothing to show: the hooks run it detached (and an agent passing the
        return Result()  # flag is shown nothing of a session it may not be told)
    return Result(data=result.to_dict(), text=lambda: _summarized(result, target), before=note)


def _summarized(result: SummaryResult, target: Session) -> None:
    say(
        f"sent {result.turns_sent} turns ({result.chars_sent:,} characters, about "
        f"{result.tokens_sent:,} tokens) of session {short_id(target.id)}"
    )
    if result.summary:
        say(
            f"stored {result.summary.kind.value} {short_id(result.summary.id)} in "
            f"{result.summary.scope} ({result.summary.status.value}): {result.summary.title}"
        )
    for item in result.items:
        # A statement a person dismissed before is set aside, not proposed (kenning.items).
        verb = "set aside" if item.status.value == "dismissed" else "proposed"
        say(f"{verb} {item.kind.value} {short_id(item.id)} in {item.scope}: {item.title}")
