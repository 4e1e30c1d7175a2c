"""Every agent kenning works with, one module each, and the one registry all else reads.

An agent (`agent.Agent`) is a frozen value: its name, the environment variables and
process names that give it away, its hook events and what they are called, its hook file
and handler form, how it reads context, how `ken mcp` is registered with it, how its
payloads and transcripts read, and how `ken handoff` starts it. Adding an agent is one
module here plus its line below; nothing outside this package names an agent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kenning.agents import agent as agent_value
from kenning.agents import claude, codex, copilot, gemini, opencode
from kenning.agents.agent import Agent
from kenning.errors import InvalidInput

AGENTS: dict[str, Agent] = {
    agent.name: agent
    for agent in (
        claude.AGENT,
        codex.AGENT,
        gemini.AGENT,
        opencode.AGENT,
        copilot.AGENT,
    )
}
NAMES: tuple[str, ...] = tuple(AGENTS)
# Variables that mark a shell as an agent's, of every agent (its markers, and those set
# only in its model's shells), and a wrapper's KEN_AGENT: a model may run
# `ken hook ... --agent OTHER` from its own shell.
SHELL_ENV: tuple[str, ...] = tuple(
    dict.fromkeys(
        ["KEN_AGENT", *(v for a in AGENTS.values() for v in (*a.env_markers, *a.tool_only_env))]
    )
)

# The tags any agent wraps what kenning says in: none of them in an MCP answer, which
# goes to whichever agent asked (`agent.defused`).
CONTEXT_TAGS: tuple[str, ...] = tuple(
    dict.fromkeys(t for a in AGENTS.values() for t in a.context_tags)
)


def defused(text: str) -> str:
    """`text` with no agent's context tag in it (`agent.defused`): for what any agent
    may be given (a pack's or recall's line, an MCP answer)."""
    return agent_value.defused(text, CONTEXT_TAGS)


def get(name: str) -> Agent:
    """The agent called `name`; InvalidInput naming the known ones otherwise."""
    found = AGENTS.get(name.strip().lower())
    if found is None:
        raise InvalidInput(f"unknown agent '{name}': use {', '.join(NAMES)}")
    return found


def from_payload(payload: Mapping[str, Any]) -> Agent:
    """Which agent sent a hook payload, for a hook installed without `--agent`: the
    first that recognizes it, else the first agent listed."""
    for agent in AGENTS.values():
        if agent.recognizes is not None and agent.recognizes(payload):
            return agent
    return next(iter(AGENTS.values()))


def from_env(env: Mapping[str, str]) -> list[Agent]:
    """Every agent whose shell this environment says it is, by the variables it sets:
    more than one when several agents' are set (`agentenv.detect_agent` decides then)."""
    return [a for a in AGENTS.values() if any(env.get(var) for var in a.env_markers)]


def from_mcp_client(name: str) -> Agent | None:
    """The agent whose MCP client calls itself `name` (`clientInfo.name`), if known."""
    for agent in AGENTS.values():
        if name in agent.mcp.client_names:
            return agent
    return None


def shell_marks(agent: Agent, env: Mapping[str, str]) -> list[str]:
    """The variables of `env` that mark an agent's shell and that `agent`'s own hooks
    never carry: a hook of `agent` with any of them was not run by `agent` itself from
    a person's terminal, but from an agent's shell (by a model, or in an agent started
    from one)."""
    return [v for v in SHELL_ENV if _marks(v, env) and v not in agent.hook_markers]


def _marks(var: str, env: Mapping[str, str]) -> bool:
    """Whether `var` marks `env` as an agent's shell: set to anything, or for KEN_AGENT
    set at all (`KEN_AGENT=$NAME tool` with NAME unset is still a wrapper's)."""
    return bool(env.get(var)) or (var == "KEN_AGENT" and var in env)


def from_process(name: str) -> Agent | None:
    """The agent a process is, by its name (never by a host such as node)."""
    for agent in AGENTS.values():
        if any(name.startswith(n) for n in agent.process_names):
            return agent
    return None
