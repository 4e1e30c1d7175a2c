"""Which agent and session a process serves (used by the MCP server).

The hooks record each session's agent process id. A process the agent started (its
MCP server) walks up its own process tree and takes the open session whose agent pid
is an ancestor; failing that, it names the agent from the ancestors' process names
(never a host such as node) or the environment markers, with no session.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from kenning import agents
from kenning.agentenv import detect_agent
from kenning.model import Session
from kenning.sessions import process_chain
from kenning.store import Store


@dataclass(frozen=True, slots=True)
class Identity:
    agent: str | None
    session: Session | None
    cwd: str


def identify(
    store: Store,
    chain: list[tuple[int, str]] | None = None,
    *,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
) -> Identity:
    """`chain` defaults to this process and its ancestors, `cwd` to the process's folder
    and `env` to its environment (the MCP server's tests pass all three)."""
    chain = process_chain(os.getpid()) if chain is None else chain
    cwd = os.getcwd() if cwd is None else cwd
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
    return Identity(detect_agent(env), None, cwd)
