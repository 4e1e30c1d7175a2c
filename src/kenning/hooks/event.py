"""The one shape every agent's hook payload is turned into."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Event(StrEnum):
    SESSION_START = "session_start"
    PROMPT = "prompt"
    STOP = "stop"
    PRE_COMPACT = "pre_compact"
    SESSION_END = "session_end"
    OTHER = "other"


# Each agent's event names (case, "_" and "-" ignored), mapped to ours.
EVENT_NAMES: dict[str, Event] = {
    "sessionstart": Event.SESSION_START,
    "userpromptsubmit": Event.PROMPT,
    "beforeagent": Event.PROMPT,
    "prompt": Event.PROMPT,
    "stop": Event.STOP,
    "afteragent": Event.STOP,
    "precompact": Event.PRE_COMPACT,
    "precompress": Event.PRE_COMPACT,
    "sessionend": Event.SESSION_END,
}


def event_from_name(name: str | None) -> Event:
    key = (name or "").replace("_", "").replace("-", "").lower()
    return EVENT_NAMES.get(key, Event.OTHER)


class BadPayload(ValueError):
    """The hook's stdin is not a payload we can use."""


@dataclass(frozen=True, slots=True)
class HookEvent:
    agent: str
    event: Event
    name: str  # the agent's own event name
    cwd: str
    session_id: str | None = None
    transcript_path: str | None = None
    prompt: str | None = None
    source: str | None = None
    model: str | None = None
    reason: str | None = None
    raw: dict[str, Any] = field(default_factory=dict)
    # The processes above the hook, nearest first, as (pid, name): the agent is among them.
    chain: tuple[tuple[int, str], ...] = ()


def text_field(payload: dict[str, Any], key: str) -> str | None:
    value = payload.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise BadPayload(f"'{key}' is {type(value).__name__}, not text")
    return value
