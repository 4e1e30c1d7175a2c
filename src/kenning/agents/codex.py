"""Codex CLI (`codex`, npm `@openai/codex`).

Hooks live in `$CODEX_HOME/hooks.json` (default `~/.codex`), in Claude Code's shape;
Codex skips, silently, every hook the person has not trusted. Trust is kept in
`config.toml` as `[hooks.state."<hooks.json path>:<snake_case event>:<group>:<handler>"]`
with `trusted_hash = "sha256:<hex>"`, the hex being the sha256 of the handler's compact,
key-sorted JSON. Its hooks send the model; its rollout
(`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`) is the transcript. MCP servers go in
`[mcp_servers.NAME]` of `config.toml`; a server gets only HOME, LANG, PATH and TMPDIR.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kenning.agents.agent import (
    HOOK_TIMEOUTS,
    SLASH_COMMANDS,
    Agent,
    Env,
    Event,
    HookTrust,
    LaunchSettings,
    McpRegistration,
    MemoryPlace,
    SavedMemory,
    ToolUse,
    home,
    load_object,
    standard_server,
    tool_use,
)
from kenning.agents.hook_settings import GroupedHooks, is_ours
from kenning.agents.saved import note_files
from kenning.agents.transcript import (
    Turn,
    json_line,
    jsonl_reader,
    person_words,
    read_lines,
    timestamp,
)

EVENTS = {
    "SessionStart": Event.SESSION_START,
    "UserPromptSubmit": Event.PROMPT,
    "PostToolUse": Event.TOOL,
    "Stop": Event.STOP,
    "PreCompact": Event.PRE_COMPACT,
    "SessionEnd": Event.SESSION_END,
}
INSTALLS = ("SessionStart", "UserPromptSubmit", "PostToolUse", "Stop", "PreCompact", "SessionEnd")
# The end of the rollout a PostToolUse reads for its call's exit code.
CALL_TAIL_BYTES = 64 * 1024


def codex_home(env: Env) -> Path:
    value = env.get("CODEX_HOME")
    return Path(value) if value else home(env) / ".codex"


# Codex's memories (`[features] memories = true`) live in ~/.codex/memories/. Most of it
# a model consolidates from past threads; the notes a person asked Codex to remember
# are the append-only files of extensions/ad_hoc/notes/, one Markdown note each.
AD_HOC_NOTES = ("memories", "extensions", "ad_hoc", "notes")


def memory_places(env: Env) -> list[MemoryPlace]:
    notes = codex_home(env).joinpath(*AD_HOC_NOTES)
    return [MemoryPlace(notes, None, read_notes)] if notes.is_dir() else []


def read_notes(folder: Path) -> list[SavedMemory]:
    return note_files(folder, lambda _: "preference")


def config_path(env: Env) -> Path:
    return codex_home(env) / "config.toml"


def snake(event: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", event).lower()


def trust_hash(event: str, group: Mapping[str, Any]) -> str:
    """Codex's trust hash of a group's one handler: sha256 of its compact, key-sorted
    JSON."""
    import hashlib
    import json

    handler = group["hooks"][0]
    body: dict[str, Any] = {
        "event_name": snake(event),
        "hooks": [
            {
                "type": "command",
                "command": handler["command"],
                "timeout": handler.get("timeout", 600),
                "async": bool(handler.get("async", False)),
            }
        ],
    }
    if group.get("matcher") is not None:
        body["matcher"] = group["matcher"]
    if handler.get("statusMessage") is not None:
        body["hooks"][0]["statusMessage"] = handler["statusMessage"]
    text = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def trust_entries(text: str, hooks_path: Path) -> dict[str, dict[str, Any]]:
    """The trust entry of each of kenning's handlers in the hooks file's text."""
    entries: dict[str, dict[str, Any]] = {}
    hooks = load_object(text, hooks_path).get("hooks", {})
    for event, groups in hooks.items() if isinstance(hooks, dict) else ():
        for g, group in enumerate(groups if isinstance(groups, list) else ()):
            handlers = group.get("hooks", []) if isinstance(group, dict) else []
            for h, handler in enumerate(handlers):
                if is_ours(handler):
                    key = f"{hooks_path.resolve()}:{snake(event)}:{g}:{h}"
                    single = {**group, "hooks": [handler]}
                    entries[key] = {"trusted_hash": trust_hash(event, single)}
    return entries


# What a shell sets to change what kenning does there (`memory.enabled` and where it
# is): Codex gives an MCP server only HOME, LANG, PATH and TMPDIR, and these by name.
SHELL_SWITCHES = ("KEN_ENABLED", "KEN_PROJECT", "KEN_WORKSPACE", "KEN_WORKSTREAM")


def _mcp_entry(command: str, args: list[str], env: dict[str, str]) -> dict[str, Any]:
    entry: dict[str, Any] = {"command": command, "args": args}
    if env:
        entry["env"] = env
    entry["env_vars"] = list(SHELL_SWITCHES)
    entry["startup_timeout_sec"] = 20
    entry["required"] = True
    entry["default_tools_approval_mode"] = "approve"
    return entry


def instructions(env: Env) -> str:
    """The person's own `developer_instructions` in config.toml: `-c
    developer_instructions=...` replaces them, so a handoff keeps them first."""
    import tomllib

    try:
        data = tomllib.loads(config_path(env).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return ""  # none, or a file Codex itself will complain about
    value = data.get("developer_instructions")
    return value.strip() if isinstance(value, str) else ""


def turns(lines: list[str]) -> list[Turn]:
    found: list[Turn] = []
    for line in lines:
        record = json_line(line)
        if record is None or record.get("type") != "response_item":
            continue
        payload = record.get("payload")
        if not isinstance(payload, dict) or payload.get("type") != "message":
            continue
        role = payload.get("role")
        if role not in ("user", "assistant"):
            continue
        content = payload.get("content")
        parts = [
            str(b.get("text", ""))
            for b in (content if isinstance(content, list) else [])
            if isinstance(b, dict) and b.get("type") in ("input_text", "output_text")
        ]
        text = "\n".join(parts).strip()
        if role == "user":
            text = person_words(text)
        if not text:
            continue
        found.append(Turn(str(role), text, timestamp(record)))
    return found


def tool_call(payload: Mapping[str, Any]) -> ToolUse | None:
    """PostToolUse. Its `tool_response` for a shell command is only the output, so
    whether the command failed is read from the rollout, where Codex has just written
    the call's `item_completed` (status, exit code). A command Codex refuses fires no
    PostToolUse, so a denial is not seen here."""
    response = payload.get("tool_response")
    if isinstance(response, dict) and (response.get("isError") or response.get("is_error")):
        return tool_use(payload, "failed", response.get("content") or "")
    call_id, path = payload.get("tool_use_id"), payload.get("transcript_path")
    if isinstance(call_id, str) and isinstance(path, str):
        for line in reversed(read_lines(path, CALL_TAIL_BYTES)):
            if call_id not in line:
                continue
            record = json_line(line)
            body = record.get("payload") if record else None
            item = body.get("item") if isinstance(body, dict) else None
            if not isinstance(item, dict) or item.get("id") != call_id:
                continue
            code = item.get("exit_code")
            if item.get("status") == "failed" or (isinstance(code, int) and code != 0):
                return tool_use(payload, "failed", f"exit code {code}")
            break
    return tool_use(payload, "ok")


def recognizes(payload: Mapping[str, Any]) -> bool:
    return "turn_id" in payload or "/rollout-" in str(payload.get("transcript_path") or "")


def commands(env: Env) -> dict[Path, str]:
    """Custom prompts (~/.codex/prompts, typed as /prompts:remember): each expands to the
    line itself, which `codex exec` passes as typed anyway."""
    folder = codex_home(env) / "prompts"
    return {
        folder / f"{name}.md": (
            f"---\ndescription: {help_text}\nargument-hint: words\n---\n/{name} $ARGUMENTS\n"
        )
        for name, help_text in SLASH_COMMANDS
    }


AGENT = Agent(
    name="codex",
    title="Codex",
    shows_user_messages=True,
    instruction_files=("AGENTS.md",),
    env_markers=("CODEX_THREAD_ID", "CODEX_SANDBOX", "CODEX_SANDBOX_NETWORK_DISABLED", "CODEX_CI"),
    process_names=("codex",),
    events=EVENTS,
    installs=INSTALLS,
    hooks=GroupedHooks(
        lambda env: codex_home(env) / "hooks.json",
        {name: HOOK_TIMEOUTS[EVENTS[name]] for name in INSTALLS},
    ).hook_file(),
    trust=HookTrust(
        path=config_path,
        table=("hooks", "state"),
        entries=trust_entries,
        untrusted_note=(
            "Codex skips new hooks until you trust them: open `/hooks` in Codex, or run "
            "`ken integrate codex --trust`"
        ),
    ),
    mcp=McpRegistration(
        path=config_path,
        syntax="toml",
        table=("mcp_servers",),
        entry=_mcp_entry,
        server=standard_server,
        passes_env=("HOME", "LANG", "PATH", "TMPDIR"),
        notes=(
            "required = true (else Codex may not wait for the server) and "
            'default_tools_approval_mode = "approve" (else calls are refused '
            'under approval_policy = "never")',
        ),
        client_names=("codex-mcp-client",),
        tool_form="mcp__{server}__{tool}",
    ),
    launch=LaunchSettings(
        command="codex",
        context="developer_instructions",
        model_flag="-m {model}",
        resume=("resume", "{id}"),
    ),
    start_context="plain",
    prompt_context="hook_specific",
    # Each hook's context is a developer message of its own, in no tags; the one block
    # of Codex's own a message could pass for is its `<environment_context>`.
    context_tags=("environment_context",),
    recognizes=recognizes,
    transcript=jsonl_reader(turns),
    instructions=instructions,
    memory_places=memory_places,
    commands=commands,
    tool_only_env=("CODEX_TOOL_CALL_ID", "CODEX_THREAD_ID"),
    session_env="CODEX_THREAD_ID",
    tool_use=tool_call,
    stop_decision="block",
)
