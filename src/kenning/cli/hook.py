"""`ken hook` (dispatched before click, in `kenning.entry`) and `ken hook-server`."""

from __future__ import annotations

import click

from kenning.cli.output import Result, echo, say
from kenning.cli.state import example, renders


@click.command(
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


@click.group("hook-server", epilog=example("ken hook-server status"))
def hook_server_group() -> None:
    """The warm hook server that answers `ken hook` (started by the first hook)."""


@hook_server_group.command("status", epilog=example("ken hook-server status --json"))
@renders
def hook_server_status() -> Result:
    """Show whether the hook server runs: pid, when it started, its code, hooks answered.

    Each install of kenning (a checkout, a virtualenv) starts a server of its own: every
    one whose socket is beside this install's is listed too, with its code, its install
    and whether it answers; `*` marks this install's.
    """
    from kenning.hookstate import Refused, running, servers, socket_path

    try:
        where, problem = socket_path(), None
    except Refused as exc:
        where, problem = None, str(exc)
    status = running()
    found = servers()
    return Result(
        data={"running": status is not None, "socket": where, **(status or {})}
        | ({"problem": problem} if problem else {})
        | {"servers": found},
        text=lambda: _hook_server(status, where, problem, found),
    )


def _hook_server(
    status: dict[str, object] | None,
    where: str | None,
    problem: str | None,
    found: list[dict[str, object]],
) -> None:
    from kenning.doctor import STUCK, describe_hook_server, describe_install

    if problem:
        say(f"ken: no hook server: {problem}; each hook runs in its own process")
    elif status is None:
        say("no hook server is running (the next hook starts one)")
    else:
        stuck = "" if status.get("answers", True) else f"; {STUCK}"
        echo(f"running: {describe_hook_server(status)}{stuck}")
        echo(f"socket:  {status.get('socket', where)}")
    if any(not s["current"] for s in found):
        echo("hook servers of every install (* this one's):")
        for server in found:
            echo(f"{'*' if server['current'] else ' '} {describe_install(server)}")


@hook_server_group.command("stop", epilog=example("ken hook-server stop --all"))
@click.option(
    "--all", "every", is_flag=True, help="Stop every install's hook server, not only this one's."
)
def hook_server_stop(every: bool) -> None:
    """Stop the hook server (the next hook starts a new one, on the code installed now)."""
    from kenning.hookstate import servers, stop, stop_all

    if every:
        stopped = stop_all()
        for status in stopped:
            say(
                f"stopping the hook server (pid {status['pid']}) of the kenning in "
                f"{status.get('install') or status.get('python', '?')}: it exits after the "
                "hook in hand"
            )
        if not stopped:
            say("no hook server is running")
        return
    mine = stop()
    if mine is None:
        say("no hook server is running")
    else:
        say(f"stopping the hook server (pid {mine['pid']}): it exits after the hook in hand")
    others = sum(1 for s in servers() if s["running"] and not s["current"])
    if others:
        running = (
            "another install's hook server still runs"
            if others == 1
            else f"{others} other installs' hook servers still run"
        )
        say(f"{running}: `ken hook-server stop --all` stops them too")
