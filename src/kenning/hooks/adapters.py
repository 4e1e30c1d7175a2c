"""One small adapter per agent: its stdin JSON in, one HookEvent out; our text in, the
output form that agent reads out.

| agent  | context at start               | context on a prompt                      |
|--------|--------------------------------|------------------------------------------|
| claude | plain stdout                   | hookSpecificOutput.additionalContext JSON |
| codex  | plain stdout                   | hookSpecificOutput.additionalContext JSON |
| gemini | hookSpecificOutput JSON        | hookSpecificOutput JSON (BeforeAgent)     |

Claude Code saves context over 10,000 characters to a file and shows a preview, so
output is kept under MAX_OUTPUT_CHARS for every agent.
"""

from __future__ import annotations

import json
import re
from typing import Any

from kenning.hooks.event import BadPayload, Event, HookEvent, event_from_name, text_field

AGENTS = ("claude", "codex", "gemini")
MAX_OUTPUT_CHARS = 9000
GEMINI_EVENTS = {
    "beforeagent",
    "afteragent",
    "precompress",
    "beforemodel",
    "aftermodel",
    "beforetoolselection",
    "beforetool",
    "aftertool",
    "notification",
}
_HOOK_CONTEXT = re.compile(r"<hook_context>.*?</hook_context>\s*", re.DOTALL)


def detect_agent(payload: dict[str, Any]) -> str:
    """Which agent sent this payload, when the hook command did not say."""
    name = str(payload.get("hook_event_name", "")).replace("_", "").lower()
    if name in GEMINI_EVENTS or "timestamp" in payload:
        return "gemini"
    transcript = str(payload.get("transcript_path") or "")
    if "turn_id" in payload or "/rollout-" in transcript:
        return "codex"
    return "claude"


def parse(agent: str, payload: Any, event_name: str | None) -> HookEvent:
    if not isinstance(payload, dict):
        raise BadPayload(f"expected a JSON object, got {type(payload).__name__}")
    name = text_field(payload, "hook_event_name") or event_name or ""
    event = event_from_name(event_name or name)
    cwd = text_field(payload, "cwd")
    if not cwd:
        raise BadPayload("no 'cwd' in the payload")
    prompt = text_field(payload, "prompt")
    if prompt is not None and agent == "gemini":
        # Gemini puts the SessionStart context in front of the prompt it passes on.
        prompt = _HOOK_CONTEXT.sub("", prompt).strip()
    model = payload.get("model")
    return HookEvent(
        agent=agent,
        event=event,
        name=name,
        cwd=cwd,
        session_id=text_field(payload, "session_id"),
        transcript_path=text_field(payload, "transcript_path"),
        prompt=prompt,
        source=text_field(payload, "source"),
        model=model if isinstance(model, str) else None,
        reason=text_field(payload, "reason"),
        raw=payload,
    )


def clip(text: str) -> str:
    if len(text) <= MAX_OUTPUT_CHARS:
        return text
    return text[: MAX_OUTPUT_CHARS - 60].rstrip() + "\n(cut to fit; `ken pack` shows it all)"


def render(event: HookEvent, text: str) -> str:
    """Our context in the form this agent reads for this event ('' for none)."""
    if not text:
        return ""
    text = clip(text)
    if event.agent != "gemini" and event.event is Event.SESSION_START:
        return text
    name = event.name or ("BeforeAgent" if event.agent == "gemini" else "UserPromptSubmit")
    return json.dumps(
        {"hookSpecificOutput": {"hookEventName": name, "additionalContext": text}},
        ensure_ascii=False,
    )
