"""Commands about what agents are told and what they learn: pack, recall, sessions, told,
lessons, hook."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import replace

import click

from kenning import agents, browse, deliver, sessions
from kenning.cli.app import State, cli, example, json_option, pass_state
from kenning.cli.output import echo, echo_told, emit_json, say, table
from kenning.errors import InvalidInput
from kenning.ids import short_id
from kenning.pack import MIN_BUDGET, one_line, toml_string
from kenning.printable import clean
from kenning.recall import RecallSettings
from kenning.store import SessionQuery, Signal


@cli.command(epilog=example('codex -c developer_instructions="$(ken pack --for codex --toml)"'))
@click.option(
    "--for",
    "target",
    type=click.Choice([*agents.NAMES, "markdown"]),
    default="markdown",
    show_default=True,
    help="Show exactly what this agent is told when it starts here.",
)
@click.option(
    "--toml",
    "as_toml",
    is_flag=True,
    help="Print a TOML string (for codex -c developer_instructions=...).",
)
@click.option(
    "--budget",
    type=click.IntRange(MIN_BUDGET, 100_000),
    help="Token budget (default: config memory.budget).",
)
@json_option
@pass_state
def pack(state: State, target: str, as_toml: bool, budget: int | None, as_json: bool) -> None:
    """Print the context pack for this folder: what an agent is told at start.

    With --for AGENT, exactly what that agent's SessionStart hook gives here: its own
    `agent:` memories included, nothing when memory.deliver_to leaves it out.
    """
    if target == "markdown":
        here = state.where()
        result = deliver.pack_for(state.store, state.config, here, budget=budget, record=False)
    else:
        from kenning import locate

        here = locate.here(state.store, state.config, agent=target)
        told = deliver.start_pack(
            state.store, state.config, here, target, budget=budget, record=False
        )
        if told is None:
            say(
                f"{target} is told nothing here: memory is off (memory.enabled) or {target} "
                "is not in memory.deliver_to"
            )
            if as_json:
                emit_json(None)
            elif as_toml:
                click.echo(toml_string(""))
            return
        result = told
    if as_json:
        emit_json(result.to_dict())
    elif as_toml:
        click.echo(toml_string(result.text))
    else:
        echo_told(result.text)
    if not result.items and not result.sessions and not as_json:
        say("(nothing stored here yet: an agent starting here is told only that line)")


@cli.command(epilog=example('ken recall "why do the integration tests need postgres?" --explain'))
@click.argument("prompt", nargs=-1)
@click.option("--limit", type=click.IntRange(1, 50), help="Most items (config recall.limit).")
@click.option("--min-score", type=click.FloatRange(0, 10), help="Lowest normalized score; 0: off.")
@click.option("--min-shared", type=click.IntRange(0, 20), help="Prompt words to match; 0: off.")
@click.option("--max-tokens", type=click.IntRange(10, 100_000), help="Token cap.")
@click.option("--explain", is_flag=True, help="Show every candidate's score parts.")
@click.option(
    "--queries",
    type=click.File("r", encoding="utf-8"),
    help="Answer one query per line as JSON lines.",
)
@click.option("--scope", "-s", multiple=True, help="Recall from these scopes instead of here.")
@json_option
@pass_state
def recall(
    state: State,
    prompt: tuple[str, ...],
    limit: int | None,
    min_score: float | None,
    min_shared: int | None,
    max_tokens: int | None,
    explain: bool,
    queries: object,
    scope: tuple[str, ...],
    as_json: bool,
) -> None:
    """Show the memories that fit a prompt here, as an agent would get them."""
    settings = RecallSettings.from_config(
        state.config,
        limit=limit,
        min_score=min_score,
        min_shared=min_shared,
        max_tokens=max_tokens,
    )
    here = state.where()
    if scope:
        from dataclasses import replace

        here = replace(here, scopes=tuple(here.scope(s) for s in scope), repo=None)
    if queries is not None:
        for line in queries:  # type: ignore[attr-defined]
            text = line.rstrip("\n")
            if not text.strip():
                continue
            result = deliver.recall_for(
                state.store, state.config, here, text, settings=settings, record=False
            )
            click.echo(json.dumps({"query": text, **result.to_dict()}, ensure_ascii=False))
        return
    text = " ".join(prompt)
    if not text.strip():
        if sys.stdin.isatty():
            raise click.UsageError("give a PROMPT, or --queries FILE")
        text = sys.stdin.read()
    result = deliver.recall_for(
        state.store, state.config, here, text, settings=settings, record=False
    )
    if as_json:
        data = result.to_dict()
        if explain:
            data["candidates"] = [c.to_dict() for c in result.candidates]
        emit_json(data)
        return
    if explain:
        say(f"query words: {', '.join(result.query_terms) or '(none)'}")
        table(
            ["id", "kept", "shared", "norm", "weight", "decay", "score", "title / why"],
            [
                [
                    short_id(c.item.id),
                    "yes" if c.kept else "no",
                    str(len(c.shared)),
                    f"{c.normalized:.2f}",
                    f"{c.weight:.2f}",
                    f"{c.decay:.2f}",
                    f"{c.score:.2f}",
                    c.item.title[:50] + ("" if c.kept else f"  ({c.reason})"),
                ]
                for c in result.candidates
            ],
        )
        return
    if result.text:
        echo_told(result.text)
    else:
        say("nothing here fits that prompt")


@cli.command("sessions", epilog=example("ken sessions --project billing --json"))
@click.option("--all", "show_all", is_flag=True, help="Every repo, not just this one.")
@click.option("--project", "-p", "project", help="The sessions of this project (its slug).")
@click.option("--limit", "-n", default=20, show_default=True, type=click.IntRange(1, 10_000))
@json_option
@pass_state
def sessions_cmd(
    state: State, show_all: bool, project: str | None, limit: int, as_json: bool
) -> None:
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
    found = state.store.list_sessions(query)
    if as_json:
        emit_json([s.to_dict() for s in found])
        return
    if not found:
        say(f"no sessions yet: `ken integrate AGENT` ({', '.join(agents.NAMES)}) records them")
        return
    table(
        ["id", "agent", "started", "ended", "prompts", "first prompt"],
        [
            [
                short_id(s.id),
                s.agent + (f" ({s.model})" if s.model else ""),
                s.started_at[:16].replace("T", " "),
                (s.ended_at or "open")[:16].replace("T", " "),
                str(s.prompt_count),
                one_line(s.first_prompt or "")[:60],
            ]
            for s in found
        ],
    )


@cli.command(epilog=example("ken told 4fz2ma"))
@click.argument("session")
@json_option
@pass_state
def told(state: State, session: str, as_json: bool) -> None:
    """Show exactly what a session was told: each pack and recall, with item ids."""
    found = sessions.resolve(state.store, session)
    given = browse.told(state.store, found.id)
    if as_json:
        emit_json({"session": found.to_dict(), "deliveries": [d.to_dict() for d in given]})
        return
    echo(f"session {short_id(found.id)}: {found.agent}, started {found.started_at}")
    if not given:
        click.echo("(told nothing)")
    titles = browse.titles(given)
    for entry in given:
        what = entry.what + (f' for "{one_line(entry.query)[:60]}"' if entry.query else "")
        if entry.is_compaction:
            what = "compaction: what came before may be recalled again"
        echo(f"{entry.at}  {what}")
        for item_id, _ in entry.items:
            echo(f"  {short_id(item_id)}  {clean(titles[item_id], one_line=True)}")


@cli.command(epilog=example("ken lessons --session 4fz2ma"))
@click.option("--session", "session_ref", help="Only the lessons of this session.")
@json_option
@pass_state
def lessons(state: State, session_ref: str | None, as_json: bool) -> None:
    """List the lessons sessions recorded at Stop, each with the signal that caused it.

    A lesson is proposed in the repo: `ken approve ID` makes it steer every agent.
    """
    from kenning import lessons as run_lessons

    session_id = sessions.resolve(state.store, session_ref).id if session_ref else None
    found = run_lessons.lessons_of(state.store, session_id)
    if as_json:
        emit_json(
            [
                {
                    **entry["item"].to_dict(),
                    "session": entry["session"],
                    "signal": entry["signal"].to_dict() if entry["signal"] else None,
                }
                for entry in found
            ]
        )
        return
    if not found:
        say("no lessons yet: a session with a signal is asked once at Stop (memory.lessons = ask)")
        return
    table(
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
    )


def _signal_text(signal: Signal | None) -> str:
    if not signal:
        return "-"
    return f"{signal.kind}: {clean(one_line(signal.detail), one_line=True)[:50]}"


@cli.command(
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    epilog=example("echo '{...}' | ken hook UserPromptSubmit --agent claude"),
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def hook(args: tuple[str, ...]) -> None:
    """Run an agent hook: JSON on stdin, context on stdout (installed by `ken integrate`).

    Never fails: problems go to the log (`ken doctor` shows them).
    """
    # `ken hook ...` is dispatched in kenning.entry before click is imported; this
    # command exists for `ken --help` and `ken hook --help`.
    raise click.UsageError("ken hook reads an agent's JSON on stdin; agents run it")


@cli.command(epilog=example("ken integrate claude"))
@click.argument("agent", type=click.Choice(agents.NAMES))
@click.option("--remove", is_flag=True, help="Take out exactly what kenning added.")
@click.option("--trust", is_flag=True, help="Codex: trust the hooks written (else use /hooks).")
@click.option("--mcp", "with_mcp", is_flag=True, help="Also register the `ken mcp` server.")
@json_option
def integrate(agent: str, remove: bool, trust: bool, with_mcp: bool, as_json: bool) -> None:
    """Install kenning's hooks (and with --mcp its MCP server) into an agent's settings.

    Idempotent, keeps everything else in those files, and copies a file to its one
    backup, FILE.ken-backup, before it changes it. --remove takes out exactly what
    kenning added. --remove and --trust are refused inside an agent's shell: taking
    kenning out, or trusting hooks, is a person's step.
    """
    from kenning import integrate as integrate_mod
    from kenning import policy

    actor = policy.Actor.from_env()
    if remove:
        policy.require_person(actor, f"remove kenning from {agent}")
    if trust:
        policy.require_person(actor, f"trust kenning's hooks in {agent}")

    changes = [integrate_mod.remove(agent) if remove else integrate_mod.install(agent, trust=trust)]
    if with_mcp:
        changes.append(
            integrate_mod.remove_mcp(agent) if remove else integrate_mod.install_mcp(agent)
        )
    if as_json:
        emit_json([c.to_dict() for c in changes])
        return
    verb = {
        "installed": "{what} installed in {path}",
        "unchanged": "{what} already in {path}",
        "removed": "{what} removed from {path}",
        "absent": "no kenning {what} in {path}: nothing to remove",
    }
    for change, what in zip(changes, ["hooks", "MCP server"], strict=False):
        say(f"{agent}: " + verb[change.action].format(what=what, path=change.path))
        if change.backup:
            say(f"  backup: {change.backup}")
        for event, command in change.commands.items():
            say(f"  {event}: {command}")
        for note in change.notes:
            say(f"  note: {note}")
    if not remove:
        from kenning import onboard
        from kenning import where as where_mod

        for path in onboard.files_here(where_mod.detect(os.getcwd())):
            say(
                f"found {path.name} here: `ken import --from {path}` proposes its rules as "
                "memories, so agents that do not read that file get them too"
            )


@cli.command(epilog=example("ken doctor --deep"))
@click.option(
    "--deep",
    is_flag=True,
    help="Also check the store through: SQLite's integrity, the search index, word "
    "counts, orphaned rows, scopes that no longer parse.",
)
@click.option(
    "--repair",
    is_flag=True,
    help="Rebuild the search index and word counts and drop orphaned rows (one "
    "transaction), then check deeply.",
)
@json_option
def doctor(deep: bool, repair: bool, as_json: bool) -> None:
    """Check what is installed for each agent, the store's health and recent hook errors."""
    from kenning.doctor import diagnose

    report = diagnose(deep=deep, repair=repair)
    if as_json:
        emit_json(report.to_dict())
    else:
        for agent, checks in report.agents.items():
            click.echo(f"{agent}:")
            for c in checks:
                echo(f"  {'ok ' if c.ok else 'BAD'} {c.name}: {c.detail}")
                if c.fix:
                    echo(f"      fix: {c.fix}")
        for line in report.repaired:
            say(f"repair: {line}")
        for title, group in (
            ("store", report.store),
            *((("self-check", report.deep),) if report.deep else ()),
            ("config", report.config),
            ("hook server", report.hook_server),
        ):
            click.echo(f"{title}:")
            for c in group:
                echo(f"  {'ok ' if c.ok else 'BAD'} {c.name}: {c.detail}")
                if c.fix:
                    echo(f"      fix: {c.fix}")
        click.echo("recent hook log:" + ("" if report.log else " (empty)"))
        for line in report.log:
            echo(f"  {clean(line, one_line=True)}")
    if not report.ok:
        raise SystemExit(1)


@cli.group("hook-server", epilog=example("ken hook-server status"))
def hook_server_group() -> None:
    """The warm hook server that answers `ken hook` (started by the first hook)."""


@hook_server_group.command("status", epilog=example("ken hook-server status --json"))
@json_option
def hook_server_status(as_json: bool) -> None:
    """Show whether the hook server runs: pid, when it started, its code, hooks answered."""
    from kenning.doctor import describe_hook_server
    from kenning.hookstate import Refused, running, socket_path

    try:
        where, problem = socket_path(), None
    except Refused as exc:
        where, problem = None, str(exc)
    status = running()
    if as_json:
        emit_json(
            {"running": status is not None, "socket": where, **(status or {})}
            | ({"problem": problem} if problem else {})
        )
    elif problem:
        say(f"ken: no hook server: {problem}; each hook runs in its own process")
    elif status is None:
        say("no hook server is running (the next hook starts one)")
    else:
        echo(f"running: {describe_hook_server(status)}")
        echo(f"socket:  {status.get('socket', where)}")


@hook_server_group.command("stop", epilog=example("ken hook-server stop"))
def hook_server_stop() -> None:
    """Stop the hook server (the next hook starts a new one, on the code installed now)."""
    from kenning.hookstate import stop

    status = stop()
    if status is None:
        say("no hook server is running")
        return
    say(f"stopping the hook server (pid {status['pid']}): it exits after the hook in hand")


@cli.command(epilog=example("claude mcp add --scope user ken -- ken mcp"))
def mcp() -> None:
    """Serve memory to agents over MCP (stdio). Agents start this themselves."""
    # `ken mcp` is dispatched in kenning.entry before click is imported (the server
    # should answer quickly); this command exists for `ken --help` and `ken mcp --help`.
    raise click.UsageError("run the server as `ken mcp`, with no other options")


@cli.command("handoff", epilog=example("ken handoff --to codex --prompt 'finish the CSV export'"))
@click.option("--to", "to", required=True, help="The agent to continue in (claude, codex, ...).")
@click.option("--model", help="The model to start it with.")
@click.option("--prompt", help="What to ask first (default: check the state and carry on).")
@click.option("--fresh", is_flag=True, help="Start a new session even if it could resume.")
@click.option("--print", "show", is_flag=True, help="Print the command and pack; run nothing.")
@json_option
@pass_state
def handoff_cmd(
    state: State,
    to: str,
    model: str | None,
    prompt: str | None,
    fresh: bool,
    show: bool,
    as_json: bool,
) -> None:
    """Continue the latest agent session here in another agent.

    Starts AGENT with a "Continuing from" pack (the previous agent's prompts, commits,
    uncommitted change, handoff and transcript). Going back to an agent already used in
    this line of work resumes its own session with a "Since your last turn" update.
    """
    import os

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
    if as_json:
        emit_json(launch.to_dict())
        return
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


@cli.command("summarize", epilog=example("ken summarize 4fz2ma"))
@click.argument("session", required=False)
@click.option("--part", is_flag=True, hidden=True, help="A part before a compaction.")
@click.option("--from-hook", is_flag=True, hidden=True, help="Run by a hook: log, don't fail.")
@json_option
@pass_state
def summarize_cmd(
    state: State, session: str | None, part: bool, from_hook: bool, as_json: bool
) -> None:
    """Summarize a session now (the latest here by default) with memory.summarize.command.

    Stores the summary and proposed items, and says how much transcript it sent.
    """
    from kenning import sessions as sessions_mod
    from kenning import summarize
    from kenning.hooklog import log

    target = None
    try:
        if session:
            target = sessions_mod.resolve(state.store, session)
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
        result = summarize.summarize(
            state.store, state.config, target, final=not part, force=not from_hook
        )
    except Exception as exc:  # noqa: BLE001 - from a hook, like a hook: log and stay quiet
        if not from_hook:
            raise
        log(target.agent if target else "", "summarize", f"{type(exc).__name__}: {exc}")
        return
    if result is None:
        say("nothing new to summarize" if not from_hook else "")
        return
    if as_json:
        emit_json(result.to_dict())
        return
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
