"""Claude Code (`claude`, npm `@anthropic-ai/claude-code`).

Hooks live in `~/.claude/settings.json` (events → groups → handlers, timeouts in
seconds). SessionStart's plain stdout reaches the model; a prompt's context goes back as
`hookSpecificOutput.additionalContext`. Its hooks send no model: the transcript
(`~/.claude/projects/<folder>/<session>.jsonl`) has it once the agent answered. MCP
servers are registered in `~/.claude.json` (top-level `mcpServers` is the user scope),
through `claude mcp add --scope user` when that CLI is here; `-p` mode runs only the
tools `permissions.allow` in settings.json names.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kenning.agents.agent import (
    HOOK_TIMEOUTS,
    MCP_NAME,
    MCP_TOOLS,
    RECALL_HELP,
    REMEMBER_HELP,
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
from kenning.agents.saved import note_files
from kenning.agents.transcript import (
    Turn,
    json_line,
    jsonl_reader,
    person_words,
    read_lines,
    text_of,
    timestamp,
)

EVENTS = {
    "SessionStart": Event.SESSION_START,
    "UserPromptSubmit": Event.PROMPT,
    "PostToolUse": Event.TOOL,
    "PostToolUseFailure": Event.TOOL,
    "PermissionDenied": Event.TOOL,
    "Stop": Event.STOP,
    "PreCompact": Event.PRE_COMPACT,
    "SessionEnd": Event.SESSION_END,
}
INSTALLS = (
    "SessionStart",
    "UserPromptSubmit",
    "PostToolUse",
    "PostToolUseFailure",
    "PermissionDenied",
    "Stop",
    "PreCompact",
    "SessionEnd",
)
# Tools that run without asking: reading, and writes the policy already keeps safe.
ALLOWED = tuple(f"mcp__{MCP_NAME}__{tool}" for tool in MCP_TOOLS)
TAIL_BYTES = 256 * 1024


def settings_path(env: Env) -> Path:
    """Claude Code's user settings: in CLAUDE_CONFIG_DIR when set, as its commands and
    projects are."""
    return config_home(env) / "settings.json"


# ------------------------------------------------------------------------- auto memory
# Claude Code saves what it learns in ~/.claude/projects/<checkout>/memory/, one Markdown
# file per memory (frontmatter: name, description, and `type` or `metadata.type`),
# with MEMORY.md as their index; <checkout> is the repo's top folder with every
# character but letters and digits written as '-'.
MEMORY_INDEX = "MEMORY.md"
_MEMORY_KINDS = {"feedback": "correction", "user": "preference", "project": "fact"}
_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]")


def checkout_name(path: str) -> str:
    """The folder name Claude gives a checkout under ~/.claude/projects."""
    return _NOT_ALNUM.sub("-", path)


def config_home(env: Env) -> Path:
    value = env.get("CLAUDE_CONFIG_DIR")
    return Path(value) if value else home(env) / ".claude"


def memory_places(env: Env) -> list[MemoryPlace]:
    """Every project's auto-memory folder."""
    projects = config_home(env) / "projects"
    try:
        folders = sorted(p for p in projects.iterdir() if (p / "memory").is_dir())
    except OSError:
        return []
    return [MemoryPlace(p / "memory", p.name, read_memory_folder) for p in folders]


def read_memory_folder(folder: Path) -> list[SavedMemory]:
    """The memories of one auto-memory folder: each Markdown file but the index."""
    return note_files(folder, _kind, skip=(MEMORY_INDEX,))


def _kind(fields: dict[str, str]) -> str:
    return _MEMORY_KINDS.get(fields.get("metadata.type") or fields.get("type") or "", "fact")


def tool_call(payload: Mapping[str, Any]) -> ToolUse | None:
    """PostToolUse (a result, maybe an error one), PostToolUseFailure (the call failed;
    `is_interrupt` when the person pressed Esc, which is no failure) or PermissionDenied."""
    match payload.get("hook_event_name"):
        case "PostToolUseFailure":
            if payload.get("is_interrupt") is True:
                return tool_use(payload, "ok")
            return tool_use(payload, "failed", payload.get("error") or "")
        case "PermissionDenied":
            return tool_use(payload, "denied", payload.get("reason") or "")
    response = payload.get("tool_response")
    if isinstance(response, dict) and (response.get("is_error") or response.get("isError")):
        return tool_use(payload, "failed", response.get("content") or response.get("error") or "")
    return tool_use(payload, "ok")


def _mcp_entry(command: str, args: list[str], env: dict[str, str]) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "stdio", "command": command, "args": args}
    if env:
        entry["env"] = env
    return entry


def _mcp_cli(
    name: str, command: str, args: list[str], env: dict[str, str]
) -> tuple[list[str], list[str]]:
    add = ["claude", "mcp", "add", name, "--scope", "user"]
    for key, value in env.items():
        add += ["--env", f"{key}={value}"]
    return ["claude", "mcp", "remove", name, "--scope", "user"], [*add, "--", command, *args]


def _said(record: dict[str, Any] | None) -> tuple[str, str, dict[str, Any]] | None:
    """(kind, text, message) of a line that is part of the conversation, else None."""
    if record is None or record.get("isSidechain") or record.get("isMeta"):
        return None
    if record.get("isCompactSummary"):
        return None
    kind = record.get("type")
    message = record.get("message")
    if kind not in ("user", "assistant") or not isinstance(message, dict):
        return None
    text = text_of(message.get("content")).strip()
    if kind == "user":
        text = person_words(text)
    if not text:
        return None
    return str(kind), text, message


def turns(lines: list[str]) -> list[Turn]:
    """The conversation: the person's prompts and the agent's text, in order."""
    found: list[Turn] = []
    last_id: str | None = None
    for line in lines:
        record = json_line(line)
        said = _said(record)
        if said is None or record is None:
            continue
        kind, text, message = said
        message_id = message.get("id") if kind == "assistant" else None
        if message_id and message_id == last_id and found and found[-1].role == "assistant":
            # One API message is split over several lines, one block each.
            found[-1] = Turn("assistant", f"{found[-1].text}\n{text}", found[-1].at)
        else:
            found.append(Turn(kind, text, timestamp(record)))
        last_id = message_id
    return found


def last_prompts(path: str, session_id: str | None, limit: int) -> list[str]:
    """The person's last `limit` prompts, in order: the lines of the tail read from the
    end, and only until that many are found (each line is JSON to parse)."""
    found: list[str] = []
    for line in reversed(read_lines(path, TAIL_BYTES)):
        said = _said(json_line(line))
        if said is not None and said[0] == "user":
            found.append(said[1])
            if len(found) >= limit:
                break
    return found[::-1]


def last_model(path: str, session_id: str | None = None) -> str | None:
    """The model of the latest assistant message: Claude's hooks do not send it."""
    for line in reversed(read_lines(path, TAIL_BYTES)):
        record = json_line(line)
        message = record.get("message") if record is not None else None
        if record is None or record.get("type") != "assistant" or not isinstance(message, dict):
            continue
        model = message.get("model")
        # Claude Code marks messages it made up itself (an error, an interruption).
        if isinstance(model, str) and model.strip() and not model.startswith("<"):
            return model.strip()[:200]
    return None


def commands(env: Env) -> dict[Path, str]:
    """Custom slash commands (~/.claude/commands): Claude's prompt hook sees the line as
    typed, so each file only tells the model what kenning did."""
    folder = config_home(env) / "commands"
    return {
        folder / "remember.md": (
            f"---\ndescription: {REMEMBER_HELP}\nargument-hint: [--scope SCOPE] words\n---\n"
            "kenning's prompt hook has handled the words after /remember ($ARGUMENTS): its "
            "line above says whether they were stored, and if not, why. Tell the person what "
            "it says in one short line; do nothing else.\n"
        ),
        folder / "recall.md": (
            f"---\ndescription: {RECALL_HELP}\nargument-hint: words\n---\n"
            'kenning\'s prompt hook has put what memory holds for "$ARGUMENTS" above. Show '
            "the person that list as it is; do nothing else.\n"
        ),
    }


AGENT = Agent(
    name="claude",
    title="Claude Code",
    shows_user_messages=True,
    instruction_files=("CLAUDE.md",),
    env_markers=("CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT"),
    process_names=("claude",),
    events=EVENTS,
    installs=INSTALLS,
    hooks=GroupedHooks(
        settings_path, {name: HOOK_TIMEOUTS[EVENTS[name]] for name in INSTALLS}
    ).hook_file(),
    mcp=McpRegistration(
        path=lambda env: home(env) / ".claude.json",
        syntax="json",
        table=("mcpServers",),
        entry=_mcp_entry,
        server=standard_server,
        allow=ALLOWED,
        allow_path=settings_path,
        cli=_mcp_cli,
        client_names=("claude-code",),
        tool_form="mcp__{server}__{tool}",
    ),
    launch=LaunchSettings(
        command="claude",
        context="append_system_prompt",
        model_flag="--model {model}",
        resume=("--resume", "{id}"),
    ),
    start_context="plain",
    prompt_context="hook_specific",
    context_tags=("system-reminder",),  # around each hook's context
    transcript=jsonl_reader(turns),
    last_model=last_model,
    last_prompts=last_prompts,
    memory_places=memory_places,
    checkout_name=checkout_name,
    commands=commands,
    hook_only_env=("CLAUDE_PROJECT_DIR",),
    tool_only_env=("CLAUDE_CODE_EXECPATH",),
    hook_markers=("CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT"),
    tool_use=tool_call,
    stop_decision="block",
)
