"""`ken team join|status|sync|share|leave`: this host's side of a team server."""

from __future__ import annotations

import os
import sys

import click

from kenning import policy
from kenning.cli.output import Result, say
from kenning.cli.state import KenGroup, State, example, pass_state, renders
from kenning.errors import InvalidInput
from kenning.ids import short_id
from kenning.store import now_iso
from kenning.team import client as team_client
from kenning.team import sync as team_sync

CLI_TIMEOUT = 15.0  # seconds a `ken team` command gives the server


@click.group(
    "team", cls=KenGroup, epilog=example("ken team join https://ken.acme.dev --token kt_…")
)
def team_group() -> None:
    """Team memory: share approved memory with a team server (`ken serve`) and get the
    team's. Pulled team memory is read-only here; packs and recall use it like repo
    memory. See docs/howto/team.md."""


def _member() -> team_client.Membership:
    return team_client.membership()


def _memories(count: int) -> str:
    return f"{count} team {'memory' if count == 1 else 'memories'}"


def _report(report: team_sync.Report) -> None:
    # Pulled: new and changed copies, and this host's own pushes the team approved
    # (adopted: `own` in --json), as `ken team status` counts them.
    say(
        f"pulled {_memories(report.pulled + report.own)} ("
        + (f"{report.own} of them yours, now the team's; " if report.own else "")
        + f"{report.removed} removed); pushed {report.pushed} (+{report.duplicates} already there)"
        + (f"; {report.waiting} waiting to be sent" if report.waiting else "")
        + (f"; reported uses of {report.uses}" if report.uses else "")
    )
    for refused in report.refused:
        say(f"ken: the server refused {short_id(refused['id'])}: {refused['reason']}")
    for skipped in report.skipped:
        say(f"ken: not stored here: {skipped}")
    if report.more:
        say("more team memory waits: run `ken team sync` again")


@team_group.command("join", epilog=example("ken team join https://ken.acme.dev/w/acme --token -"))
@click.argument("url")
@click.option(
    "--token", required=True, help="The token `ken serve token create` printed; - reads stdin."
)
@click.option("--workspace", "-w", help="The team's workspace (default: the token's).")
@click.option("--host", "host_name", help="This host's name on the server (default: the hostname).")
@renders
@pass_state
def team_join(
    state: State,
    url: str,
    token: str,
    workspace: str | None,
    host_name: str | None,
) -> Result:
    """Join a team: ask the server whose the token is (its workspace, role and name) and
    keep the membership in
    $XDG_CONFIG_HOME/kenning/team.json (mode 0600). Joining again replaces it (a new
    token). A person's command (refused inside an agent's shell). Then `ken team sync`
    pulls the team's memory."""
    policy.require_person(state.actor(), "joining a team")
    base, named = team_client.split_url(url)
    secret = sys.stdin.readline().strip() if token == "-" else token.strip()
    if not secret:
        raise InvalidInput("the token is empty")
    chosen = workspace or named
    client = team_client.Client(base, secret, chosen or "", timeout=CLI_TIMEOUT)
    me = client.whoami() if chosen else client.token_owner()
    member = team_client.Membership(
        url=base,
        workspace=str(me.get("workspace") or chosen),
        token=secret,
        token_id=str(me.get("token_id") or ""),
        role=str(me.get("role") or "member"),
        name=str(me.get("name") or ""),
        host=host_name or os.uname().nodename,
        joined_at=now_iso(),
    )
    path = team_client.save_membership(member)
    joined = (
        f"joined workspace {member.workspace} at {base} as {member.role}"
        + (f" ({member.name})" if member.name else "")
        + f"; membership in {path}. `ken team sync` brings in the team's memory"
    )
    return Result(data={**member.to_dict(), "file": path}, text=lambda: say(joined))


@team_group.command("status", epilog=example("ken team status --json"))
@click.option("--offline", is_flag=True, help="Do not ask the server; show what is kept here.")
@renders
@pass_state
def team_status(state: State, offline: bool) -> Result:
    """Show the team this host is in, whether the server answers, and the sync's state."""
    member = team_client.load_membership()
    if member is None:
        return Result(
            data={"member": None},
            text=lambda: say(f"this host is in no team ({team_client.JOIN} joins one)"),
        )
    kept = team_sync.load_state(state.store.path)
    server: dict[str, object] = {"reachable": None}
    if not offline:
        client = team_client.Client.of(member, timeout=5.0)
        try:
            server = {"reachable": True, "whoami": client.whoami(), "repos": client.repos()}
        except team_client.TeamError as exc:
            server = {"reachable": False, "error": str(exc)}
    pulled = len(team_sync.copies(state.store, member.workspace))
    data = {
        "member": member.to_dict(),
        "server": server,
        "copies": pulled,
        **team_sync.tally(kept),
        "cursor": kept["cursor"],
        "last_sync": kept.get("last_sync"),
        "last_error": kept.get("last_error"),
    }
    lines = [
        f"workspace  {member.workspace} at {member.url}",
        f"as         {member.role} {member.name or '-'} (token {team_client.masked(member.token)}, "
        f"host {member.host})",
    ]
    if server["reachable"] is True:
        repos = server.get("repos") or []
        lines.append(f"server     answers; covers {', '.join(map(str, repos)) or 'no repos yet'}")  # type: ignore[call-overload]
    elif server["reachable"] is False:
        lines.append(f"server     {server['error']}")
    lines += [
        f"here       {_memories(pulled)} pulled; {data['pushed']} pushed, "
        f"{data['refused']} refused, {data['waiting']} waiting to be sent, "
        f"{data['shared']} shared",
        f"last sync  {data['last_sync'] or 'never'}"
        + (f" ({data['last_error']})" if data["last_error"] else ""),
    ]
    return Result(data=data, text=lambda: click.echo("\n".join(lines)))


@team_group.command("sync", epilog=example("ken team sync"))
@click.option(
    "--timeout",
    type=click.FloatRange(0.1, 600),
    default=CLI_TIMEOUT,
    show_default=True,
    help="Seconds for the whole sync.",
)
@click.option(
    "--from-start", is_flag=True, help="Pull all team memory again (after a server restore)."
)
@renders
@pass_state
def team_sync_cmd(state: State, timeout: float, from_start: bool) -> Result:
    """Pull the team memory approved since the last sync, and push what you approved here
    in the repos and workspace the team covers (and what you shared). SessionStart does
    the same, within team.start_timeout_secs."""
    report = team_sync.sync(state.store, _member(), timeout=timeout, from_start=from_start)
    failed = (
        team_client.TeamError(
            f"{report.error}; what was done stays done, the rest goes at the next sync"
        )
        if report.error
        else None
    )
    return Result(data=report.to_dict(), text=lambda: _report(report), error=failed)


@team_group.command("share", epilog=example("ken team share 3kq9zd"))
@click.argument("ref")
@click.option(
    "--scope",
    "-s",
    help="The team scope: repo:KEY or workspace:NAME (default: the one it went to, else chosen).",
)
@renders
@pass_state
def team_share(state: State, ref: str, scope: str | None) -> Result:
    """Share a memory with the team (a preference, correction, decision, fact, lesson
    or note, approved here or a proposal; not a task, handoff or summary): it is pushed
    (as a proposal for the team's admins) now, or at the next sync when the server does
    not answer. A refusal (a scope the team does not cover) exits 1 with its reason:
    share it again with another --scope. A memory the team holds keeps its scope (the
    default then). A person's command."""
    policy.require_person(state.actor(), "sharing with the team")
    member = _member()
    item = state.memory(ref)
    team_sync.check_shareable(item)
    kept = team_sync.load_state(state.store.path)
    sent = kept["pushed"].get(item.id) or {}
    chosen = (
        state.scope(scope) if scope else team_sync.share_scope(item, member, kept["repos"], sent)
    )
    what = team_sync.share_what(item)
    team_sync.share(state.store, item, chosen, what)
    report = team_sync.sync(state.store, member, timeout=CLI_TIMEOUT, do_pull=False)
    sent = team_sync.load_state(state.store.path)["pushed"].get(item.id) or {}
    data = {"id": item.id, "scope": str(chosen), "what": what, **report.to_dict()}
    if sent.get("status") == "refused":
        refused = InvalidInput(
            f"the team server refused {short_id(item.id)}: {sent.get('reason')}; "
            "`ken team share ID --scope SCOPE` sends it to another scope"
        )
        return Result(data=data, error=refused)
    done = sent.get("revision") == item.revision
    # A version whose words the team holds already (a pin changed here, or nothing) is
    # never sent: say so, not that it goes, or that the admins review it now.
    held = not report.pushed and bool(sent.get("server_id"))
    held = held and team_sync.holds_words(sent, item, chosen)

    def shown() -> None:
        say(
            f"shared {short_id(item.id)} as a {what} in {chosen}: "
            + (
                "the team holds these words already (sent before); nothing new to send"
                if held
                else "the team's admins review it"
                if done
                else "it goes at the next `ken team sync`"
            )
            + (f" ({report.error})" if report.error else "")
        )

    return Result(data=data, text=shown)


@team_group.command("leave", epilog=example("ken team leave"))
@renders
@pass_state
def team_leave(state: State) -> Result:
    """Leave the team: remove the membership file, the sync's state and the team
    memories sync brought into this store. Your own memories stay, and so does the record
    of what you pushed: joining the same team again sends none of it twice. A person's
    command."""
    policy.require_person(state.actor(), "leaving a team")
    member = _member()
    gone = team_sync.leave(state.store, member)
    team_client.remove_membership()
    left = (
        f"left workspace {member.workspace}: {_memories(gone)} removed from this store; "
        "your own memories stay"
    )
    return Result(data={"workspace": member.workspace, "removed": gone}, text=lambda: say(left))
