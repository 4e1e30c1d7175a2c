"""Which agent and session a process serves (used by the MCP server).

The hooks record each session's agent process id. A process the agent started (its
MCP server) walks up its own process tree and takes the open session whose agent pid
is an ancestor; failing that, it names the agent from the ancestors' process names
(never a host such as node), the environment (the agent's markers, or `KEN_AGENT`,
which a person may set in the server's registration), and last from the name the MCP
client gives itself in `initialize`, with no session.

The client's name is its own word, so it comes last: it never overrides what the
process tree or the registration says, and it never names a person (`user`, `ken`).
A known agent's client name gives that agent; any other is kept as the writer's name,
cut down to a safe one. A server that still cannot tell writes as
`policy.UNKNOWN_AGENT`, which is never the same agent as anyone (`policy.is_free_for`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from kenning import agents, policy
from kenning.agentenv import NOT_AGENTS, detect_agent
from kenning.model import Session
from kenning.sessions import process_chain
from kenning.store import Store
from kenning.where import current_folder


@dataclass(frozen=True, slots=True)
class Identity:
    agent: str | None  # a known agent, or the one KEN_AGENT names
    session: Session | None
    cwd: str
    # An agent kenning does not know, by the name its MCP client gave (when nothing else
    # names the agent): it writes under that name, and is told what an agent kenning
    # cannot name is told (`memory.deliver_to` names agents, never such a client).
    client: str | None = None

    @property
    def writer(self) -> str:
        """The name its memories are written under: `policy.UNKNOWN_AGENT` when none."""
        return self.agent or self.client or policy.UNKNOWN_AGENT


MAX_CLIENT_NAME = 40
_NOT_IN_NAME = re.compile(r"[^a-z0-9._]+")  # each run of them one "-"
# Names that say which SDK a client was built with, not which program it is: the Python
# SDK's client calls itself "mcp" unless told otherwise.
SDK_DEFAULT_NAMES = frozenset({"mcp"})


def client_name(client: str | None) -> str | None:
    """An MCP client's own name (`clientInfo.name`) as a writer's name: letters, digits,
    `.`, `_` and `-`, at most 40 characters. None for no name, or for one a person or
    kenning goes by (the client's word never makes it a person), or for an SDK's default
    name, which any program may send."""
    given = (client or "").lower()
    name = _NOT_IN_NAME.sub("-", given).strip("-._")[:MAX_CLIENT_NAME].rstrip("-._")
    if name in NOT_AGENTS or name in SDK_DEFAULT_NAMES or name == policy.UNKNOWN_AGENT:
        return None
    return name or None


def identify(
    store: Store,
    chain: list[tuple[int, str]] | None = None,
    *,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    client: str | None = None,
) -> Identity:
    """`chain` defaults to this process and its ancestors, `cwd` to the process's folder
    and `env` to its environment (the MCP server's tests pass all three); `client` is the
    name the MCP client gave itself, if any."""
    chain = process_chain(os.getpid()) if chain is None else chain
    cwd = current_folder() if cwd is None else cwd
    pids = {pid for pid, _ in chain}
    open_here = [s for s, _ in store.open_sessions() if s.pid in pids]
    if open_here:
        # The nearest ancestor wins; among a pid's sessions, the newest.
        order = {pid: i for i, (pid, _) in enumerate(chain)}
        open_here.sort(key=lambda s: (order.get(s.pid or 0, 99), s.started_at), reverse=False)
        nearest = [s for s in open_here if s.pid == open_here[0].pid]
        session = max(nearest, key=lambda s: s.started_at)
        return Identity(session.agent, session, session.cwd or cwd)
    for _, name in chain:
        agent = agents.from_process(name)
        if agent is not None:
            return Identity(agent.name, None, cwd)
    named = detect_agent(env)
    if named is not None:
        return Identity(named, None, cwd)
    agent = agents.from_mcp_client((client or "").strip().lower())
    if agent is not None:
        return Identity(agent.name, None, cwd)
    return Identity(None, None, cwd, client=client_name(client))
