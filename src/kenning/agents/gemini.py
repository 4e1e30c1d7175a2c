"""Gemini CLI (`gemini`, npm `@google/gemini-cli`).

Hooks live in `~/.gemini/settings.json` under `hooks.<Event>`, each group with a
matcher and named handlers whose timeouts are milliseconds. A hook answers with one JSON
object; context goes in `hookSpecificOutput.additionalContext`, and SessionStart's is
put in front of the person's prompt as `<hook_context>…</hook_context>`, so that is cut
off the prompt before it is used as a query. BeforeAgent is the prompt hook, AfterAgent
the end of a turn; PreCompress fires before every model call, not at a compaction.
MCP servers go in `mcpServers` of the same file; `trust: true` offers their tools and
runs them without asking.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kenning.agents.agent import (
    HOOK_TIMEOUTS,
    Agent,
    Env,
    Event,
    LaunchSettings,
    McpRegistration,
    home,
    standard_server,
)
from kenning.agents.hook_settings import GroupedHooks

EVENTS = {
    "SessionStart": Event.SESSION_START,
    "BeforeAgent": Event.PROMPT,
    "AfterAgent": Event.STOP,
    "PreCompress": Event.OTHER,
    "SessionEnd": Event.SESSION_END,
    "BeforeModel": Event.OTHER,
    "AfterModel": Event.OTHER,
    "BeforeToolSelection": Event.OTHER,
    "BeforeTool": Event.OTHER,
    "AfterTool": Event.OTHER,
    "Notification": Event.OTHER,
}
INSTALLS = ("SessionStart", "BeforeAgent", "SessionEnd")
# Event names only Gemini uses, lower case: a payload naming one is Gemini's.
OWN_NAMES = {name.lower() for name in EVENTS} - {"sessionstart", "sessionend"}
HOOK_CONTEXT = r"(?s)<hook_context>.*?</hook_context>\s*"  # compiled on first use


def settings_path(env: Env) -> Path:
    return home(env) / ".gemini" / "settings.json"


def adapt(payload: dict[str, Any]) -> dict[str, Any]:
    prompt = payload.get("prompt")
    if isinstance(prompt, str):
        # Gemini puts the SessionStart context in front of the prompt it passes on.
        return {**payload, "prompt": re.sub(HOOK_CONTEXT, "", prompt).strip()}
    return payload


def recognizes(payload: Mapping[str, Any]) -> bool:
    name = str(payload.get("hook_event_name", "")).replace("_", "").lower()
    return name in OWN_NAMES or (
        isinstance(payload.get("timestamp"), str) and "session_id" in payload
    )


def _mcp_entry(command: str, args: list[str], env: dict[str, str]) -> dict[str, Any]:
    entry: dict[str, Any] = {"command": command, "args": args}
    if env:
        entry["env"] = env
    entry["trust"] = True
    return entry


AGENT = Agent(
    name="gemini",
    title="Gemini CLI",
    instruction_files=("GEMINI.md",),
    env_markers=("GEMINI_CLI",),
    process_names=("gemini",),
    host_process_names=("node",),
    events=EVENTS,
    installs=INSTALLS,
    hooks=GroupedHooks(
        settings_path,
        {name: HOOK_TIMEOUTS[EVENTS[name]] for name in INSTALLS},
        scale=1000,
        matcher="*",
        label="kenning",
    ).hook_file(),
    mcp=McpRegistration(
        path=settings_path,
        syntax="json",
        table=("mcpServers",),
        entry=_mcp_entry,
        server=standard_server,
        notes=("set trust = true so Gemini offers the tools and runs them without asking",),
    ),
    launch=LaunchSettings(
        command="gemini", context="first_message", model_flag="-m {model}", prompt_flag="-i"
    ),
    start_context="hook_specific",
    prompt_context="hook_specific",
    adapt=adapt,
    recognizes=recognizes,
)
