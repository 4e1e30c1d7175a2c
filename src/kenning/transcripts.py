"""Reading agents' transcripts: the person's recent turns (for recall's query), the whole
conversation (for summaries) and the model (when an agent's hooks do not send it).

Each agent's own reader (`kenning.agents`) knows its format; this picks the reader and
redacts what comes out. For recall only the tail of a transcript is read (transcripts
grow to megabytes), and only what the person typed: tool results, hook context, slash
commands and injected instructions are skipped.
"""

from __future__ import annotations

import os
from pathlib import Path

from kenning import agents
from kenning.agents.transcript import MAX_LINE_CHARS, Turn
from kenning.redact import redact

TAIL_BYTES = 256 * 1024

__all__ = [
    "MAX_LINE_CHARS",
    "TAIL_BYTES",
    "Turn",
    "conversation",
    "last_model",
    "unreadable",
    "user_turns",
]


def _exists(path: str | None) -> bool:
    return bool(path) and Path(str(path)).is_file()


def user_turns(
    agent: str, path: str | None, limit: int = 3, session_id: str | None = None
) -> list[str]:
    """The person's last `limit` prompts in an agent's transcript."""
    known = agents.AGENTS.get(agent)
    if known is None or known.transcript is None or not path or not _exists(path):
        return []
    if known.last_prompts is not None and limit > 0:
        return known.last_prompts(path, session_id, limit)
    turns = known.transcript(path, session_id, TAIL_BYTES)
    return [t.text for t in turns if t.role == "user"][-limit:]


def last_model(agent: str, path: str | None, session_id: str | None = None) -> str | None:
    """The model an agent's transcript names, for agents whose hooks do not send it."""
    known = agents.AGENTS.get(agent)
    if known is None or known.last_model is None or not path or not _exists(path):
        return None
    return known.last_model(path, session_id)


def unreadable(agent: str, path: str | None) -> str | None:
    """Why kenning cannot read `agent`'s transcript at `path`, in a few words; None when
    it can. A summary asked for says so, rather than that there is nothing new."""
    known = agents.AGENTS.get(agent)
    if known is None or known.transcript is None:
        return f"kenning reads no transcripts of {agent}"
    if not path:
        return f"{agent} never gave its path"
    if not _exists(path):
        return f"{path} is not there (moved or deleted?)"
    if not os.access(path, os.R_OK):
        return f"{path} is not readable"
    return None


def conversation(agent: str, path: str | None, session_id: str | None = None) -> list[Turn]:
    """The conversation in a transcript: what the person and the agent wrote, redacted.

    Tool calls, tool output, thinking, hook context and injected instructions are left
    out. An agent without a transcript reader gives nothing.
    """
    known = agents.AGENTS.get(agent)
    if known is None or known.transcript is None or not path or not _exists(path):
        return []
    return [
        Turn(t.role, redact(t.text).text, t.at) for t in known.transcript(path, session_id, None)
    ]
