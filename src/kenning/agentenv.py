"""Is `ken` running inside a coding agent's shell, and is a person there to decide?

Agents propose; people decide. Each agent CLI marks the shells it runs commands in with
variables of its own (each agent module's `env_markers`: `CLAUDECODE` for Claude Code,
`CODEX_THREAD_ID` for Codex, ...); `KEN_AGENT=<name>` marks any other (set it in a
wrapper).

Inside such a shell the actor is that agent (`kenning.policy`): actions that need a
person (approve, forget, project add, ...) are refused there, with no question to
answer, since an agent can type into any terminal it runs on, even one it made itself.
The markers guard against an agent using `ken` as its CLI gave it; a program that
clears them has the user's rights (docs/explanation/agent-detection.md).

`KEN_AGENT` names an agent kenning does not know; it never renames one it does, nor
makes a shell a person's. So an agent's own markers win over it (Claude's model setting
`KEN_AGENT=codex` is still Claude), and a value that is no agent's name (empty, blank,
`user`, `ken`, ...: the names memory gives a person) marks an agent all the same, one
kenning cannot name.

No marker switches one agent for another either. Where the markers of two agents are set
(Codex's model setting `CLAUDECODE=1`, or one agent started from another's shell), no
order among agents could say which is there, so the shell is an agent's that kenning
cannot name (UNNAMED): it owns no note, neither agent's, and still decides nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from kenning import agents, paths

# What an agent the environment marks but does not name is called (policy.UNKNOWN_AGENT).
UNNAMED = "agent"
# Names an agent may not take: they are how memory writes a person (policy.PEOPLE), or
# kenning for one; the same for an MCP client's own name (`kenning.identity`).
NOT_AGENTS = frozenset(
    {"user", "ken", "kenning", "person", "people", "human", "me", "you", "someone", "nobody"}
)
_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,39}")


def detect_agent(env: Mapping[str, str] | None = None) -> str | None:
    """The agent whose shell this is, or None for a person's own shell: UNNAMED where
    two agents' markers are set, or KEN_AGENT (even empty) names no agent."""
    env = paths.environ() if env is None else env
    found = agents.from_env(env)
    if len(found) > 1:
        return UNNAMED
    if found:
        return found[0].name
    named = env.get("KEN_AGENT")
    return None if named is None else agent_name(named)


def agent_name(text: str) -> str:
    """The agent `KEN_AGENT=text` names: its name in lowercase, or UNNAMED when the text
    is no agent's name."""
    name = text.strip().lower()
    if _NAME.fullmatch(name) and name not in NOT_AGENTS:
        return name
    return UNNAMED


def agent_session_id(agent: str | None, env: Mapping[str, str] | None = None) -> str | None:
    """The session id `agent` gives its model's shells (Codex's CODEX_THREAD_ID), when it
    gives one and this is its shell; the id its hooks record the session under."""
    spec = agents.AGENTS.get(agent or "")
    if spec is None or spec.session_env is None:
        return None
    env = paths.environ() if env is None else env
    return (env.get(spec.session_env) or "").strip() or None
