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
"""

from __future__ import annotations

from collections.abc import Mapping

from kenning import agents, paths


def detect_agent(env: Mapping[str, str] | None = None) -> str | None:
    """The agent whose shell this is, or None for a person's own shell."""
    env = paths.environ() if env is None else env
    if env.get("KEN_AGENT"):
        return env["KEN_AGENT"].strip().lower()
    found = agents.from_env(env)
    return found.name if found else None
