"""GitHub Copilot CLI (`copilot`, npm `@github/copilot`).

Copilot reads personal hooks from every `*.json` in `$COPILOT_HOME/hooks/` (default
`~/.copilot`), with no trust step, also in `copilot -p`. `ken integrate copilot` writes
one file there that is kenning's alone, `kenning.json`: `{"version": 1, "hooks":
{event: [{"type": "command", "bash": ..., "timeoutSec": ...}]}}`, with the camelCase
event names `sessionStart`, `userPromptSubmitted`, `preCompact` and `sessionEnd`
(`agentStop` ends each turn, as Claude's Stop does). The person's own files and
`settings.json` are never touched.

- Only a JSON object with a top-level `additionalContext` reaches the model, for every
  event: plain text and Claude's `hookSpecificOutput` are dropped without a word.
  sessionStart's context becomes a user message of its own before the conversation,
  userPromptSubmitted's is appended to the prompt in `<system_reminder>` tags.
- sessionStart and userPromptSubmitted are started together, and the model request
  waits for both.
- Payloads are camelCase (`sessionId`, `transcriptPath`, `initialPrompt`), timestamps
  epoch milliseconds; `source` is `new` or `startup`, or `resume`. Copilot regenerates
  session-start context on a resume and keeps no earlier one in the conversation, so a
  resumed session is given the pack again: its `resume` reads as kenning's `startup`.
- No hook sends the model or (but agentStop and preCompact) the transcript, which is
  `session-state/<sessionId>/events.jsonl` under Copilot's home: typed JSON lines
  (`session.start` with `selectedModel`, `user.message` with the person's `content`,
  `assistant.message` with `content` and `model`, hooks, tools, usage).

MCP servers go in `mcpServers` of `$COPILOT_HOME/mcp-config.json` (what `copilot mcp
add` writes); the model sees kenning's tools as `ken-<tool>`. In `copilot -p` a tool
runs only with `--allow-tool=ken` (or `--allow-all-tools`); there is no setting that
allows it for good. Shells and servers Copilot starts have `COPILOT_CLI=1` and
`COPILOT_AGENT_SESSION_ID`. On Linux its process is named `MainThread`, not `copilot`.
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
    HookFile,
    LaunchSettings,
    McpRegistration,
    dump_object,
    home,
    load_object,
    standard_server,
)
from kenning.agents.hook_settings import is_ours
from kenning.agents.transcript import (
    Turn,
    json_line,
    jsonl_reader,
    person_words,
    read_lines,
    timestamp,
)
from kenning.errors import InvalidInput

EVENTS = {
    "sessionStart": Event.SESSION_START,
    "userPromptSubmitted": Event.PROMPT,
    "agentStop": Event.STOP,
    "preCompact": Event.PRE_COMPACT,
    "sessionEnd": Event.SESSION_END,
    # The names of hooks written in Claude's PascalCase, which Copilot also runs.
    "UserPromptSubmit": Event.PROMPT,
    "Stop": Event.STOP,
}
INSTALLS = ("sessionStart", "userPromptSubmitted", "preCompact", "sessionEnd")
# camelCase keys of Copilot's payloads, in the common spelling.
KEYS = {
    "sessionId": "session_id",
    "transcriptPath": "transcript_path",
    "initialPrompt": "initial_prompt",
    "stopReason": "stop_reason",
    "hookEventName": "hook_event_name",
}
SOURCES = {"new": "startup", "startup": "startup", "resume": "startup"}
SESSION_ID = r"[A-Za-z0-9][A-Za-z0-9_-]*"  # a session folder's name (a UUID)
TAIL_BYTES = 256 * 1024


def copilot_home(env: Env) -> Path:
    value = env.get("COPILOT_HOME")
    return Path(value) if value else home(env) / ".copilot"


def events_file(env: Env, session_id: str) -> Path:
    return copilot_home(env) / "session-state" / session_id / "events.jsonl"


# --- the hook file -------------------------------------------------------------------


def hooks_path(env: Env) -> Path:
    return copilot_home(env) / "hooks" / "kenning.json"


def install_hooks(text: str, path: Path, commands: Mapping[str, str]) -> str:
    """The whole file, running these hook commands (each `ken hook EVENT --agent
    copilot`)."""
    hooks = {
        event: [{"type": "command", "bash": command, "timeoutSec": HOOK_TIMEOUTS[EVENTS[event]]}]
        for event, command in commands.items()
    }
    return dump_object({"version": 1, "hooks": hooks})


def hook_commands(text: str, path: Path) -> dict[str, str]:
    """The kenning hook commands in the file, by event ({} for a file that is not one)."""
    try:
        hooks = load_object(text, path).get("hooks")
    except InvalidInput:
        return {}
    found: dict[str, str] = {}
    for event, handlers in hooks.items() if isinstance(hooks, dict) else ():
        for handler in handlers if isinstance(handlers, list) else ():
            if is_ours(handler, "bash"):
                found[str(event)] = str(handler["bash"])
    return found


# --- payloads ------------------------------------------------------------------------


_KEN_HOOK = re.compile(r"(?:^|[\s/\\])ken(?:\.exe)?\s+hook\b")


def stray_hooks(env: Env) -> list[str]:
    """kenning hooks written by hand in settings.json or another hooks file (as Copilot's
    own docs lead people to): Copilot runs them beside kenning.json's, and every prompt
    is recorded twice."""
    import json

    home = copilot_home(env)
    ours = hooks_path(env)
    found = []
    for path in [home / "settings.json", *sorted((home / "hooks").glob("*.json"))]:
        if path == ours:
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        hooks = data.get("hooks") if isinstance(data, dict) else None
        for event, entries in (hooks if isinstance(hooks, dict) else {}).items():
            for entry in entries if isinstance(entries, list) else []:
                if not isinstance(entry, dict):
                    continue
                commands = [entry.get(k) for k in ("bash", "command", "powershell")]
                if any(isinstance(c, str) and _KEN_HOOK.search(c) for c in commands):
                    found.append(f"{path} ({event})")
    return found


def adapt(payload: dict[str, Any], env: Mapping[str, str]) -> dict[str, Any]:
    """Copilot's payload in the common spelling, with kenning's `source` words and the
    transcript's path, which sessionStart and userPromptSubmitted do not send."""
    common = dict(payload)
    for theirs, ours in KEYS.items():
        if theirs in common and ours not in common:
            common[ours] = common[theirs]
    source = common.get("source")
    if isinstance(source, str):
        common["source"] = SOURCES.get(source.lower(), source.lower())
    session_id = common.get("session_id")
    if (
        common.get("transcript_path") is None
        and isinstance(session_id, str)
        and re.fullmatch(SESSION_ID, session_id)
    ):
        common["transcript_path"] = str(events_file(env, session_id))
    return common


def recognizes(payload: Mapping[str, Any]) -> bool:
    transcript = str(payload.get("transcriptPath") or payload.get("transcript_path") or "")
    return "sessionId" in payload or "/.copilot/session-state/" in transcript


# --- the transcript ------------------------------------------------------------------


def _data(record: dict[str, Any]) -> dict[str, Any]:
    data = record.get("data")
    return data if isinstance(data, dict) else {}


def turns(lines: list[str]) -> list[Turn]:
    """The person's prompts and the main agent's text, in order: hook context (kept in a
    message's `transformedContent`, not its `content`), tool calls and sub-agents are
    left out."""
    found: list[Turn] = []
    for line in lines:
        record = json_line(line)
        if record is None:
            continue
        kind = record.get("type")
        data = _data(record)
        if kind not in ("user.message", "assistant.message") or data.get("parentToolCallId"):
            continue
        content = data.get("content")
        text = content.strip() if isinstance(content, str) else ""
        if not text:
            continue  # an assistant message that only calls tools
        role = "user" if kind == "user.message" else "assistant"
        if role == "user":
            text = person_words(text)
            if not text:
                continue
        found.append(Turn(role, text, timestamp(record)))
    return found


def last_model(path: str, session_id: str | None = None) -> str | None:
    """The model of the latest answer, else the one the session started with: Copilot's
    hooks do not send it."""
    for line in reversed(read_lines(path, TAIL_BYTES)):
        record = json_line(line)
        if record is None:
            continue
        data = _data(record)
        model = {
            "assistant.message": data.get("model"),
            "session.model_change": data.get("newModel"),
            "session.start": data.get("selectedModel"),
        }.get(str(record.get("type")))
        if isinstance(model, str) and model.strip():
            return model.strip()[:200]
    return None


# --- MCP -----------------------------------------------------------------------------


def _mcp_entry(command: str, args: list[str], env: dict[str, str]) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "local", "command": command, "args": args}
    if env:
        entry["env"] = env
    entry["tools"] = ["*"]
    return entry


AGENT = Agent(
    name="copilot",
    title="GitHub Copilot CLI",
    instruction_files=("AGENTS.md", "copilot-instructions.md"),
    env_markers=("COPILOT_CLI", "COPILOT_AGENT_SESSION_ID"),
    process_names=("copilot",),
    # Its native binary names its process MainThread; started through npm's loader, the
    # loader is node.
    host_process_names=("MainThread", "node"),
    events=EVENTS,
    installs=INSTALLS,
    hooks=HookFile(
        path=hooks_path,
        install=install_hooks,
        remove=lambda text, path: "",
        commands=hook_commands,
        owned=True,
    ),
    mcp=McpRegistration(
        path=lambda env: copilot_home(env) / "mcp-config.json",
        syntax="json",
        table=("mcpServers",),
        entry=_mcp_entry,
        server=standard_server,
        notes=(
            "`copilot -p` runs the tools only with --allow-tool=ken (or --allow-all-tools): "
            "no setting of Copilot's allows them for good",
        ),
        client_names=("copilot-cli",),
        tool_form="{server}-{tool}",
    ),
    launch=LaunchSettings(
        command="copilot",
        context="first_message",
        model_flag="--model {model}",
        prompt_flag="-i",
        resume=("--resume={id}",),
    ),
    start_context="additional",
    prompt_context="additional",
    payload_folder_lags=True,
    context_tags=("system_reminder",),  # around userPromptSubmitted's context
    adapt=adapt,
    recognizes=recognizes,
    stray_hooks=stray_hooks,
    transcript=jsonl_reader(turns),
    last_model=last_model,
    # No command file: in `copilot -p` a typed /remember reaches the prompt hook as is.
    hook_only_env=("COPILOT_HOOK_DIR",),
    tool_only_env=("COPILOT_AGENT_SESSION_ID",),
    session_env="COPILOT_AGENT_SESSION_ID",
    hook_markers=("COPILOT_CLI",),
)
