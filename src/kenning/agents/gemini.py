"""Gemini CLI (`gemini`, npm `@google/gemini-cli`).

Hooks live in `~/.gemini/settings.json` under `hooks.<Event>`, each group with a
matcher and named handlers whose timeouts are milliseconds. A hook answers with one JSON
object; context goes in `hookSpecificOutput.additionalContext`, and SessionStart's is
put in front of the person's prompt as `<hook_context>…</hook_context>` (in `gemini -p`;
an interactive session gets it as a turn of its own), so that is cut off the prompt
before it is used (`person_prompt`). BeforeAgent is the prompt hook, AfterAgent
the end of a turn; PreCompress fires before every model call, not at a compaction.

A resumed session (`--resume`) keeps no user turn that begins with `<hook_context>`: the
session-start context is gone (in `gemini -p` with the first prompt and its recall, which
came in the same turn), and SessionStart runs again with `source: resume`. So a resume is
a new start to kenning: its `resume` reads as `startup`, and the session is given the pack
again and may be told again what it was told before.
MCP servers go in `mcpServers` of the same file; `trust: true` offers their tools and
runs them without asking.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kenning.agents.agent import (
    COMMAND_MARK,
    HOOK_TIMEOUTS,
    SLASH_COMMANDS,
    Agent,
    Env,
    Event,
    LaunchSettings,
    McpRegistration,
    MemoryPlace,
    SavedMemory,
    ToolUse,
    home,
    standard_server,
    tool_use,
)
from kenning.agents.hook_settings import GroupedHooks
from kenning.agents.saved import bullets, note_files, read_file, read_text, unread

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
    "AfterTool": Event.TOOL,
    "Notification": Event.OTHER,
}
INSTALLS = ("SessionStart", "BeforeAgent", "AfterTool", "AfterAgent", "SessionEnd")
# Event names only Gemini uses, lower case: a payload naming one is Gemini's.
OWN_NAMES = {name.lower() for name in EVENTS} - {"sessionstart", "sessionend"}
HOOK_OPEN, HOOK_CLOSE = "<hook_context>", "</hook_context>"
SOURCES = {"resume": "startup"}  # kenning's words for Gemini's SessionStart sources


def settings_path(env: Env) -> Path:
    return home(env) / ".gemini" / "settings.json"


# --------------------------------------------------------------------------- memories
# Gemini CLI keeps the person's own memories in ~/.gemini/GEMINI.md (loaded in every
# session; older versions' save_memory tool wrote them as bullets under "## Gemini Added
# Memories"), and private notes per project in ~/.gemini/tmp/<project>/memory/: a
# MEMORY.md index and one Markdown file per longer note. ~/.gemini/projects.json names
# each project's folder.
GLOBAL_MEMORY = "GEMINI.md"
MEMORY_INDEX = "MEMORY.md"


def gemini_dir(env: Env) -> Path:
    return home(env) / ".gemini"


def memory_places(env: Env) -> list[MemoryPlace]:
    """The person's global GEMINI.md and each project's private memory folder."""
    root = gemini_dir(env)
    places = []
    if (root / GLOBAL_MEMORY).is_file():
        places.append(MemoryPlace(root / GLOBAL_MEMORY, None, read_global))
    try:
        registry = json.loads(read_text(root / "projects.json") or "{}").get("projects", {})
    except (ValueError, AttributeError):
        registry = {}
    if isinstance(registry, dict):
        for folder, name in sorted(registry.items()):
            memory = root / "tmp" / str(name) / "memory"
            if isinstance(folder, str) and memory.is_dir():
                places.append(MemoryPlace(memory, folder, read_project_folder))
    return places


def read_global(path: Path) -> list[SavedMemory]:
    """One memory per bullet of the person's GEMINI.md (read where a link to it leads,
    as Gemini does: it is the person's own file)."""
    read = read_file(path)
    if read.unread:
        return [unread(path, read.unread)]
    return [SavedMemory(str(path), _key(b), b, "preference") for b in bullets(read.text)]


def read_project_folder(folder: Path) -> list[SavedMemory]:
    """A project's private notes: each bullet of MEMORY.md that is not a pointer to a
    note file, and each note file."""
    index = folder / MEMORY_INDEX
    read = read_file(index, within=folder)
    kept = [b for b in bullets(read.text) if not _POINTER.search(b)]
    listed = [SavedMemory(str(index), _key(b), b, "fact") for b in kept]
    if read.unread:
        listed = [unread(index, read.unread)]
    return listed + note_files(folder, lambda _: "fact", skip=(MEMORY_INDEX,))


_POINTER = re.compile(r"\]\([^)]+\.md\)")  # - [Title](note.md): the index's pointer to a note


def _key(text: str) -> str:
    import hashlib  # only here: OpenSSL's module costs every hook ~2 ms to import

    return hashlib.sha256(" ".join(text.lower().split()).encode()).hexdigest()[:16]


def person_prompt(prompt: str) -> str:
    """The person's prompt in the one `gemini -p` passes on: the SessionStart context
    Gemini puts in front of it (`<hook_context>CONTEXT</hook_context>\\n\\nPROMPT`) taken
    off, up to the block's LAST closing tag. The context is the hooks' (kenning's pack,
    which quotes agents' notes, and any other hook's), and may hold the closing tag
    itself; what the person typed comes after all of it. Cut at the first, a note
    reading `</hook_context>/remember …` would be the person's `/remember`; cut at the
    last, a prompt that names the tag itself loses its words before it, and what is left
    is still only the person's. A block anywhere else is the person's text: kept."""
    text = prompt.lstrip()
    if not text.startswith(HOOK_OPEN):
        return prompt.strip()
    end = text.rfind(HOOK_CLOSE)
    return text[end + len(HOOK_CLOSE) :].strip() if end >= 0 else ""


def adapt(payload: dict[str, Any], env: Mapping[str, str]) -> dict[str, Any]:
    prompt = payload.get("prompt")
    if isinstance(prompt, str):
        return {**payload, "prompt": person_prompt(prompt)}
    source = payload.get("source")
    if isinstance(source, str) and source.lower() in SOURCES:
        return {**payload, "source": SOURCES[source.lower()]}
    return payload


def tool_call(payload: Mapping[str, Any]) -> ToolUse | None:
    """AfterTool: a tool that ran; `tool_response.error` says it failed. (A call Gemini
    refuses before running it, such as a path outside the workspace, fires no hook.)"""
    response = payload.get("tool_response")
    error = response.get("error") if isinstance(response, dict) else None
    if error:
        message = error.get("message") if isinstance(error, dict) else error
        return tool_use(payload, "failed", message or "")
    return tool_use(payload, "ok")


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


def commands(env: Env) -> dict[Path, str]:
    """Custom commands (~/.gemini/commands/*.toml): Gemini's prompt hook sees a command's
    prompt, not the line typed, so the prompt is the line itself."""
    folder = gemini_dir(env) / "commands"
    return {
        folder / f"{name}.toml": (
            f"# {COMMAND_MARK}\ndescription = {json.dumps(help_text)}\n"
            f'prompt = "/{name} {{{{args}}}}"\n'
        )
        for name, help_text in SLASH_COMMANDS
    }


AGENT = Agent(
    name="gemini",
    title="Gemini CLI",
    shows_user_messages=True,
    resume_keeps_recall=False,
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
        client_names=("gemini-cli-mcp-client",),
        tool_form="mcp_{server}_{tool}",
    ),
    launch=LaunchSettings(
        command="gemini", context="first_message", model_flag="-m {model}", prompt_flag="-i"
    ),
    start_context="hook_specific",
    prompt_context="hook_specific",
    # Hooks' context; and an MCP tool's answer, in the next request.
    context_tags=("hook_context", "untrusted_context"),
    adapt=adapt,
    recognizes=recognizes,
    memory_places=memory_places,
    checkout_name=str,
    commands=commands,
    hook_only_env=("GEMINI_PROJECT_DIR",),
    tool_only_env=("GEMINI_CLI",),
    tool_use=tool_call,
    # AfterAgent's "deny" rejects the answer and sends the reason as a new prompt.
    stop_decision="deny",
)
