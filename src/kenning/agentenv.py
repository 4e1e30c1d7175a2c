"""Is `ken` running inside a coding agent's shell, and is a person there to decide?

Agents propose; people decide. Each agent CLI marks the shells it runs commands in with
variables of its own (each agent module's `env_markers`: `CLAUDECODE` for Claude Code,
`CODEX_THREAD_ID` for Codex, ...); `KEN_AGENT=<name>` marks any other (set it in a
wrapper).

Inside such a shell the actor is that agent (`kenning.policy`): actions that would let
an agent's words become what agents are told (approve, restore, forget, ...) ask on the
controlling terminal, which the agent cannot type into, and fail closed when there is
none.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from kenning import agents
from kenning.errors import NeedsPerson


def detect_agent(env: Mapping[str, str] | None = None) -> str | None:
    """The agent whose shell this is, or None for a person's own shell."""
    env = os.environ if env is None else env
    if env.get("KEN_AGENT"):
        return env["KEN_AGENT"].strip().lower()
    found = agents.from_env(env)
    return found.name if found else None


def confirm_on_tty(question: str, action: str = "this") -> bool:
    """Ask on the controlling terminal; False when the answer is not yes.

    Raises NeedsPerson when there is no terminal to ask on.
    """
    try:
        tty = open("/dev/tty", "r+", encoding="utf-8")  # noqa: SIM115
    except OSError:
        raise NeedsPerson(
            f"{action} needs a person at a terminal, and there is none here (agents "
            "propose, people decide): run the command yourself; nothing changed"
        ) from None
    with tty:
        tty.write(f"{question} [y/N] ")
        tty.flush()
        answer = tty.readline().strip().lower()
    return answer in ("y", "yes")


def require_person(action: str, env: Mapping[str, str] | None = None) -> None:
    """Inside an agent's shell, a person must confirm `action` on the terminal (the rule
    itself is `kenning.policy.require_person`)."""
    from kenning import policy

    policy.require_person(policy.Actor.from_env(env, confirm=confirm_on_tty), action)
