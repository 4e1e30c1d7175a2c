"""What kenning knows about one agent CLI, as one frozen value.

Each agent module (`claude.py`, `codex.py`, ...) builds one `Agent`; the registry in
`kenning.agents` lists them, and everything else reads them there: the hooks (its event
names, how its payload reads, how context goes back), `ken integrate` (its hook file, its
MCP registration, trusting its hooks), detection (environment markers, process names),
transcripts, and `ken handoff` (how to start it).

An agent module imports only the standard library, `kenning.model`, `kenning.errors` and
this package: it runs on the hook path. For the same reason the descriptions here are
named tuples: immutable, and cheaper to define than frozen dataclasses, which every cold
hook would pay for. Editing TOML (Codex) needs a library that keeps the person's
comments, so an agent describes such a file (where, which table, what goes in it) and
`kenning.integrate` does the editing.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal, NamedTuple

from kenning.agents.transcript import Turn
from kenning.errors import InvalidInput


class Event(StrEnum):
    """What kenning does something on; each agent names these its own way."""

    SESSION_START = "session_start"
    PROMPT = "prompt"
    TOOL = "tool"  # a tool call has run (or failed, or was denied)
    STOP = "stop"
    PRE_COMPACT = "pre_compact"
    SESSION_END = "session_end"
    OTHER = "other"


def _key(name: str | None) -> str:
    return (name or "").replace("_", "").replace("-", "").replace(".", "").lower()


# kenning's own names work for every agent: `ken hook session-start --agent NAME`.
GENERIC_NAMES = {_key(e.value): e for e in Event if e is not Event.OTHER}

# Seconds `ken integrate` gives each hook (an agent kills a hook that outlives it).
HOOK_TIMEOUTS: dict[Event, int] = {
    Event.SESSION_START: 15,
    Event.PROMPT: 10,
    Event.TOOL: 5,
    Event.STOP: 10,
    Event.PRE_COMPACT: 10,
    Event.SESSION_END: 3,
}
# The MCP server's name in every agent's config, and its tools.
MCP_NAME = "ken"
MCP_TOOLS = (
    "memory_context",
    "memory_search",
    "memory_get",
    "memory_propose",
    "memory_update",
    "memory_handoff",
    "session_history",
    "record_reflection",
)
# Claude Code saves context over 10,000 characters to a file and shows a preview, so
# what a hook prints is kept under this for every agent.
MAX_OUTPUT_CHARS = 9000


ToolOutcome = Literal["ok", "failed", "denied"]


class ToolUse(NamedTuple):
    """One tool call as an agent's after-tool hook reports it."""

    name: str
    input: str  # its input as compact, key-sorted JSON: the same call reads the same
    outcome: ToolOutcome
    detail: str = ""  # the error, or why it was denied (cut short)


def tool_use(payload: Mapping[str, Any], outcome: ToolOutcome, detail: Any = "") -> ToolUse | None:
    """A ToolUse from the common `tool_name` / `tool_input` of a payload."""
    name = payload.get("tool_name")
    if not isinstance(name, str) or not name:
        return None
    try:
        given = json.dumps(payload.get("tool_input"), sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError):
        given = repr(payload.get("tool_input"))
    text = detail if isinstance(detail, str) else json.dumps(detail, ensure_ascii=False)
    return ToolUse(name, given, outcome, gist(text, 280))  # room for its name before it


def gist(text: str, limit: int = 300) -> str:
    """A tool's error output in at most `limit` characters, on one line: its first line
    (`Exit code 7`) and as much of its end as fits, where the error is (`curl: (7) Failed
    to connect`), not the progress meter that comes before it."""
    lines = [" ".join(line.split()) for line in text.splitlines()]
    lines = [line for line in lines if line]
    whole = " ".join(lines)
    if len(whole) <= limit:
        return whole
    head = lines[0][: limit // 3]
    room = limit - len(head) - 3
    tail: list[str] = []
    for line in reversed(lines[1:]):
        if sum(len(x) + 1 for x in tail) + len(line) > room:
            if not tail:
                tail.append(line[-room:])
            break
        tail.insert(0, line)
    return f"{head} … {' '.join(tail)}"


# How an agent's Stop (or after-agent) hook asks the agent to go on: the `decision` it
# reads beside the `reason` (the reason reaches the model), or None when it cannot.
StopDecision = Literal["block", "deny"]


class BadPayload(ValueError):
    """The hook's stdin is not a payload we can use."""


@dataclass(frozen=True, slots=True)
class HookEvent:
    """The one shape every agent's hook payload is turned into."""

    agent: str
    event: Event
    name: str  # the agent's own event name
    cwd: str
    session_id: str | None = None
    transcript_path: str | None = None
    prompt: str | None = None
    source: str | None = None  # startup, resume, clear or compact (kenning's words)
    model: str | None = None
    reason: str | None = None
    raw: dict[str, Any] = field(default_factory=dict)
    # Stop: the agent goes on because a Stop hook asked it to (`stop_hook_active`).
    continuing: bool = False
    tool: ToolUse | None = None  # the tool call an after-tool hook reports
    # The processes above the hook, nearest first, as (pid, name): the agent is among them.
    chain: tuple[tuple[int, str], ...] = ()


def text_field(payload: Mapping[str, Any], key: str) -> str | None:
    value = payload.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise BadPayload(f"'{key}' is {type(value).__name__}, not text")
    return value


# How an agent reads the context a hook prints: `plain` (the text itself),
# `hook_specific` ({"hookSpecificOutput": {hookEventName, additionalContext}}) or
# `additional` ({"additionalContext": text}).
ContextForm = Literal["plain", "hook_specific", "additional"]


def clip(text: str) -> str:
    if len(text) <= MAX_OUTPUT_CHARS:
        return text
    return text[: MAX_OUTPUT_CHARS - 60].rstrip() + "\n(cut to fit; `ken pack` shows it all)"


# An agent puts what a hook says inside tags of its own (Gemini's `<hook_context>`,
# Copilot's `<system_reminder>`, Claude Code's `<system-reminder>`). A memory that holds
# such a tag could close the agent's block early and go on as if it were not kenning's:
# as the person's own prompt (Gemini hands the block back inside the next prompt, and
# kenning reads `/remember` there), or as the agent's instructions. So the tags in what
# kenning says are shown with ‹ › for their angle brackets: readable, and no tag to the
# agent, to its model or to kenning. Any case, `-` or `_` or a space between the words,
# attributes or none, with or without the closing `>`.
_TAG_PATTERNS: dict[tuple[str, ...], re.Pattern[str]] = {}


def defused(text: str, tags: tuple[str, ...]) -> str:
    """`text` with each of `tags` in it, opening or closing, shown as ‹tag› and not
    `<tag>` (see above)."""
    if not tags or "<" not in text:
        return text
    pattern = _TAG_PATTERNS.get(tags)
    if pattern is None:
        names = "|".join(r"[\s_-]*".join(map(re.escape, re.split(r"[\s_-]+", t))) for t in tags)
        pattern = re.compile(rf"<(\s*(?:/\s*)?(?:{names})(?![\w-])[^<>]*)(>?)", re.IGNORECASE)
        _TAG_PATTERNS[tags] = pattern
    return pattern.sub(_shown_tag, text)


def _shown_tag(found: re.Match[str]) -> str:
    return "\u2039" + found.group(1) + ("\u203a" if found.group(2) else "")


# --- files an agent reads ------------------------------------------------------------

Env = Mapping[str, str]


def home(env: Env) -> Path:
    return Path(env.get("HOME") or Path.home())


def load_object(text: str, path: Path, *, lenient: bool = False) -> dict[str, Any]:
    """A JSON file's text as an object ({} when empty); a clear error otherwise.

    Gemini CLI reads its settings with comments and trailing commas. `lenient` (to read,
    as doctor does) takes them; otherwise (to write) a file holding them is refused by
    name, since writing it back as JSON would lose the person's comments."""
    if not text.strip():
        return {}
    try:
        data = json.loads(text, parse_float=lambda number: _finite(number, path))
    except json.JSONDecodeError as exc:
        try:
            data = json.loads(without_comments(text), parse_float=lambda n: _finite(n, path))
        except json.JSONDecodeError:
            raise InvalidInput(
                f"{path} is not valid JSON (line {exc.lineno}: {exc.msg}); fix it by hand first"
            ) from None
        if not lenient:
            raise InvalidInput(
                f"{path} holds comments or trailing commas, which writing it would lose: "
                "take them out and run again (nothing changed)"
            ) from None
    if not isinstance(data, dict):
        raise InvalidInput(f"{path} does not hold a JSON object; fix it by hand first")
    return data


def _finite(number: str, path: Path) -> float:
    """A JSON number as Python reads it; one too large for a float would be written back
    as `Infinity`, which is not JSON: refused, so the file is never broken."""
    value = float(number)
    if value in (float("inf"), float("-inf")):
        raise InvalidInput(f"{path} holds the number {number[:40]}, too large to write back")
    return value


# (compiled by `re` at its first use: a hook that reads no settings file never needs it)
_JSONC = r'"(?:[^"\\]|\\.)*"|//[^\n]*|/\*.*?\*/|,(?=\s*[}\]])'


def without_comments(text: str) -> str:
    """JSON with comments (`//`, `/* */`) and trailing commas, as plain JSON: strings are
    kept whole, and line numbers stay as they were."""

    def keep(found: re.Match[str]) -> str:
        part = found.group()
        if part.startswith('"'):
            return part
        return "\n" * part.count("\n")

    return re.sub(_JSONC, keep, text, flags=re.S)


def dump_object(data: Mapping[str, Any]) -> str:
    return json.dumps(data, indent=2) + "\n"


class HookFile(NamedTuple):
    """Where an agent reads command hooks, and how kenning's go in and come out.

    `install(text, path, commands)` gives the file's new text with kenning's hook for
    each event (the agent's event name: the command to run) and everything else kept;
    `remove(text, path)` the text without kenning's hooks; `commands(text, path)` the
    kenning hook commands the text holds, by event. `owned` files are kenning's alone
    (generated whole, deleted on removal, no backup).
    """

    path: Callable[[Env], Path]
    install: Callable[[str, Path, Mapping[str, str]], str]
    remove: Callable[[str, Path], str]
    commands: Callable[[str, Path], dict[str, str]]
    owned: bool = False


class HookTrust(NamedTuple):
    """An agent that skips hooks the person has not trusted (Codex) and where the trust
    is kept: in `table` of the TOML file at `path`, one entry per kenning handler, as
    `entries(hook file text, hook file path)` gives them."""

    path: Callable[[Env], Path]
    table: tuple[str, ...]
    entries: Callable[[str, Path], dict[str, dict[str, Any]]]
    untrusted_note: str


class McpRegistration(NamedTuple):
    """How `ken mcp` is registered with an agent.

    `entry(command, args, env)` is the server's entry, put at `table` in the file at
    `path` (JSON or TOML); `server(entry)` reads an entry back as (command, args, env).
    `passes_env` lists the variables the agent gives its servers (None: all of its own).
    `allow` names tools to let run without asking, written to `allow_path`'s
    `permissions.allow`; `cli` gives the agent's own commands that register (and first
    unregister) a server, used when that CLI is installed. `client_names` are the names
    its MCP client gives itself (`clientInfo.name` of `initialize`): `ken mcp` names the
    agent by them when nothing else does. `tool_form` is how the agent shows a server's
    tool to its model, `{server}` and `{tool}` filled in: what a pack calls the tools.
    """

    path: Callable[[Env], Path]
    syntax: Literal["json", "toml"]
    table: tuple[str, ...]
    entry: Callable[[str, list[str], dict[str, str]], dict[str, Any]]
    server: Callable[[Mapping[str, Any]], tuple[str, list[str], dict[str, str]]]
    passes_env: tuple[str, ...] | None = None
    allow: tuple[str, ...] = ()
    allow_path: Callable[[Env], Path] | None = None
    cli: Callable[[str, str, list[str], dict[str, str]], tuple[list[str], list[str]]] | None = None
    notes: tuple[str, ...] = ()
    client_names: tuple[str, ...] = ()
    tool_form: str = "{tool}"

    def tool(self, name: str) -> str:
        """The name the agent's model knows kenning's tool `name` by."""
        return self.tool_form.format(server=MCP_NAME, tool=name)

    def registered(self, env: Env) -> bool:
        """Whether kenning's server is registered here and not turned off (`enabled:
        false`, `disabled: true`): what a pack tells the agent to reach memory with.

        On the hook path (each SessionStart), so the standard library only, and a file
        that does not name the server at all is not parsed: Claude Code's holds its
        history of every project. A file that cannot be read registers nothing."""
        path = self.path(env)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return False
        # The name as a JSON key, or as TOML's bare key; one spelled with escapes (\u)
        # is parsed all the same.
        name = MCP_NAME if self.syntax == "toml" else f'"{MCP_NAME}"'
        if name not in text and "\\u" not in text:
            return False
        try:
            if self.syntax == "toml":
                import tomllib  # only Codex's file is TOML

                data: Any = tomllib.loads(text)
            else:
                data = load_object(text, path, lenient=True)
        except (ValueError, InvalidInput):
            return False
        for key in self.table:
            data = data.get(key) if isinstance(data, dict) else None
        entry = data.get(MCP_NAME) if isinstance(data, dict) else None
        if not isinstance(entry, dict):
            return False
        return entry.get("enabled") is not False and entry.get("disabled") is not True


def standard_server(entry: Mapping[str, Any]) -> tuple[str, list[str], dict[str, str]]:
    """(command, args, env) of an entry in the common `command`/`args`/`env` form."""
    env = entry.get("env")
    return (
        str(entry.get("command", "")),
        [str(a) for a in entry.get("args", []) or []],
        {str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else {},
    )


ContextMode = Literal["append_system_prompt", "developer_instructions", "first_message", "none"]


class LaunchSettings(NamedTuple):
    """How `ken handoff` starts the agent (each overridable in `[agents.NAME]`).

    `context`: how the pack goes in (`append_system_prompt`, `developer_instructions`,
    `first_message`, `none`, or `flag:<flag>`); `model_flag`: `--model {model}`;
    `prompt_flag`: the flag before the first prompt, if any; `resume`: the arguments
    that resume a session, with `{id}`, or none when it cannot be resumed.
    """

    command: str
    context: str = "first_message"
    model_flag: str = "--model {model}"
    prompt_flag: str | None = None
    resume: tuple[str, ...] = ()

    def settings(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "command": self.command,
            "context": self.context,
            "model_flag": self.model_flag,
            "resume": list(self.resume),
        }
        if self.prompt_flag:
            out["prompt_flag"] = self.prompt_flag
        return out


# The keys of `[agents.NAME]` in config.toml.
LAUNCH_KEYS = frozenset(LaunchSettings._fields)

CONTEXT_MODES = ("append_system_prompt", "developer_instructions", "first_message", "none")
CONTEXT_ALIASES = {
    "system": "append_system_prompt",
    "developer": "developer_instructions",
    "message": "first_message",
}

# What each `[agents.NAME]` key takes, as a message says it, and a line that reads.
LAUNCH_TAKES = {
    "command": (
        'text a shell can split into the command that starts the agent ("codex '
        '--full-auto"), or a list of its words',
        'command = "codex"',
    ),
    "context": (
        f"one of {', '.join(CONTEXT_MODES)} or flag:<flag> (e.g. flag:--system-prompt)",
        'context = "first_message"',
    ),
    "model_flag": (
        'text a shell can split, with {model} where the model goes ("--model {model}")',
        'model_flag = "--model {model}"',
    ),
    "prompt_flag": ('text: the flag before the first prompt ("-i")', 'prompt_flag = "-i"'),
    "resume": (
        'a list of the arguments that resume a session, with {id} (["resume", "{id}"]), '
        "or [] for none",
        'resume = ["resume", "{id}"]',
    ),
}


def launch_example(key: str, own: LaunchSettings | None) -> str:
    """How to write `key` in `[agents.NAME]`, with that agent's own value when kenning
    knows the agent (`command = "claude"` for Claude's table, not another's)."""
    value = own.settings().get(key) if own is not None else None
    if value is None or value == []:
        return LAUNCH_TAKES[key][1]
    return f"{key} = {json.dumps(value, ensure_ascii=False)}"


def context_flag(context: Any) -> str | None:
    """The flag of a `flag:<flag>` context mode."""
    if isinstance(context, str) and context.startswith("flag:") and context[5:].strip():
        return context[5:].strip()
    return None


def words(value: Any) -> list[str] | None:
    """A command line's words: a list of non-empty text, or text split as a shell splits
    it; None when it is neither (an unclosed quote, a number, nothing)."""
    import shlex  # only `ken handoff`, `ken doctor` and `ken config list` split commands

    if isinstance(value, list):
        found = value if all(isinstance(w, str) and w for w in value) else []
    elif isinstance(value, str):
        try:
            found = shlex.split(value)
        except ValueError:  # No closing quotation
            return None
    else:
        return None
    return found or None


def launch_problem(key: str, value: Any) -> str | None:
    """What is wrong with `value` as the `[agents.NAME]` setting `key`: "must be <what it
    takes>, not <value>"; None when it reads (an unknown key is not one to judge)."""
    match key:
        case "command" | "model_flag":
            ok = (words(value) is not None) and (key == "command" or isinstance(value, str))
        case "context":
            context = CONTEXT_ALIASES.get(value, value) if isinstance(value, str) else value
            ok = context in CONTEXT_MODES or context_flag(context) is not None
        case "prompt_flag":
            ok = isinstance(value, str)
        case "resume":
            ok = isinstance(value, list) and all(isinstance(a, str) and a for a in value)
        case _:
            return None
    if ok:
        return None
    if isinstance(value, bool):
        written = str(value).lower()
    elif isinstance(value, str | list | dict):
        written = json.dumps(value, ensure_ascii=False, default=str)
    else:
        written = str(value)
    return f"must be {LAUNCH_TAKES[key][0]}, not {written}"


def _same(payload: dict[str, Any], env: Mapping[str, str]) -> dict[str, Any]:
    return payload


COMMAND_MARK = "installed by kenning"  # in every command file kenning writes
REMEMBER_HELP = f"Remember these words in kenning, exactly as typed ({COMMAND_MARK})"
RECALL_HELP = f"Show what kenning's memory holds for these words ({COMMAND_MARK})"
SLASH_COMMANDS = (("remember", REMEMBER_HELP), ("recall", RECALL_HELP))  # name, its help


class SavedMemory(NamedTuple):
    """One memory an agent saved in its own memory place: a file, or one entry of one."""

    path: str  # the file it is in
    key: str  # which entry of that file ("" when the file is one memory)
    text: str  # title line, then body
    kind: str  # kenning's kind for it
    # Why the file, there, was not read now (too large, empty, not text, a link out of
    # the memory folder): then this is no memory but a notice, text and kind empty, and
    # what was collected from the file stays as it is.
    unread: str = ""


class MemoryPlace(NamedTuple):
    """Where an agent keeps memories it saved itself: a folder or a file, whose files'
    names, sizes and times tell whether anything changed, and how to read it."""

    path: Path
    # The agent's own name for the repo checkout the place belongs to (Claude's encoded
    # project folder); None for the person's own memories, which belong everywhere.
    checkout: str | None
    read: Callable[[Path], list[SavedMemory]]


class Agent(NamedTuple):
    """One agent CLI, as kenning knows it.

    `events` maps the agent's own event names to kenning's; `installs` lists the ones
    `ken integrate` hooks, in order. `adapt` turns the agent's payload into the common
    spelling (snake_case keys, kenning's `source` words). `recognizes` says whether a
    payload is this agent's, for a hook installed without `--agent`.
    """

    name: str
    title: str  # as people write it: Claude Code, Gemini CLI
    env_markers: tuple[str, ...]  # variables the agent sets in the shells it runs
    process_names: tuple[str, ...]  # its own process, by name (a prefix)
    events: Mapping[str, Event]
    installs: tuple[str, ...]
    hooks: HookFile
    mcp: McpRegistration
    launch: LaunchSettings
    start_context: ContextForm = "plain"
    prompt_context: ContextForm = "hook_specific"
    # The tags it wraps what a hook (or an MCP tool) says in: never in what kenning says
    # (`defused`).
    context_tags: tuple[str, ...] = ()
    # Processes that may host it without naming it (node): used for its pid, never to
    # say which agent a process is.
    host_process_names: tuple[str, ...] = ()
    adapt: Callable[[dict[str, Any], Mapping[str, str]], dict[str, Any]] = _same
    recognizes: Callable[[Mapping[str, Any]], bool] | None = None
    trust: HookTrust | None = None
    # (path, the agent's session id, bytes from the end or None for all) -> turns; the
    # session id matters to an agent that keeps every session in one database.
    transcript: Callable[[str, str | None, int | None], list[Turn]] | None = None
    # (path, the agent's session id) -> the model, for agents whose hooks do not send it
    last_model: Callable[[str, str | None], str | None] | None = None
    # (path, the agent's session id, how many) -> the person's last prompts, read from the
    # end and no further than they are (recall's context, on every prompt); without it,
    # the user turns of `transcript`'s tail.
    last_prompts: Callable[[str, str | None, int], list[str]] | None = None
    # The agent's own instructions a `developer_instructions` handoff must keep.
    instructions: Callable[[Env], str] | None = None
    # The instruction files it loads by itself from a repo (CLAUDE.md): a memory
    # onboarded from one of them is never told to it again.
    instruction_files: tuple[str, ...] = ()
    # Whether a hook's JSON `systemMessage` is shown to the person and not the model.
    shows_user_messages: bool = False
    # Whether what recall told a session is still in its conversation when the agent
    # gives it a new start pack (a resume that rebuilt the start context: Copilot's and
    # OpenCode's keep every prompt's turn; Gemini's drops the turn the pack came in,
    # which in `gemini -p` is also the first prompt's, with its recall).
    resume_keeps_recall: bool = True
    # Its hooks may name a folder in another repo than the one its process works in, on
    # their own: Copilot CLI's `--resume=ID` sends the folder the session began in. Then
    # the hook is recorded where the process works; for any other agent such a payload
    # was written by hand (a model running `ken hook` from its shell) and is not recorded.
    payload_folder_lags: bool = False
    # `/remember` and `/recall` in the agent's own way: file -> content (`ken integrate`).
    commands: Callable[[Env], dict[Path, str]] | None = None
    # Other files the agent reads a command of that name from (a person's own there is
    # theirs: kenning writes none beside it).
    command_twins: Callable[[Path], tuple[Path, ...]] = lambda path: ()
    # kenning hooks a person wrote by hand where the agent also reads hooks, beside the
    # ones `ken integrate` wrote (each event would run twice): "file (event)" each.
    stray_hooks: Callable[[Env], list[str]] | None = None
    # What tells a hook the agent CLI ran (the person typed the prompt) from a command its
    # model ran: variables set only in its hooks, and only in its model's shells; and its
    # `env_markers` that its hooks carry too (the CLI sets them in its own environment,
    # as Claude Code does CLAUDECODE), which tell nothing either way.
    hook_only_env: tuple[str, ...] = ()
    tool_only_env: tuple[str, ...] = ()
    hook_markers: tuple[str, ...] = ()
    # The variable its model's shells hold its own session id in (the id its hooks send),
    # when it sets one: what `ken add` from that shell is written in.
    session_env: str | None = None
    # Where it saves memories of its own (`ken collect` reads them), and how a checkout's
    # folder is named there (Claude: every character but letters and digits as '-').
    memory_places: Callable[[Env], list[MemoryPlace]] | None = None
    checkout_name: Callable[[str], str] | None = None
    # The tool call in an after-tool payload (and whether it failed or was denied).
    tool_use: Callable[[Mapping[str, Any]], ToolUse | None] | None = None
    # How its Stop hook asks it to go on (run lessons); None: it cannot be asked.
    stop_decision: StopDecision | None = None

    def event(self, name: str | None) -> Event:
        """kenning's event for one of this agent's event names (or kenning's own)."""
        key = _key(name)
        for own, ours in self.events.items():
            if _key(own) == key:
                return ours
        return GENERIC_NAMES.get(key, Event.OTHER)

    def event_name(self, event: Event) -> str:
        """The agent's name for one of kenning's events (the first it installs)."""
        for name in (*self.installs, *self.events):
            if self.events.get(name) is event:
                return name
        return event.value

    def parse(
        self, payload: Any, event_name: str | None = None, env: Mapping[str, str] | None = None
    ) -> HookEvent:
        """The payload of one hook call as a HookEvent; BadPayload when it cannot be.
        `env` is the hook's environment (this process's unless given): where an agent
        keeps its transcripts, when its payload does not say."""
        if not isinstance(payload, dict):
            raise BadPayload(f"expected a JSON object, got {type(payload).__name__}")
        common = self.adapt(payload, os.environ if env is None else env)
        name = text_field(common, "hook_event_name") or event_name or ""
        cwd = text_field(common, "cwd")
        if not cwd:
            raise BadPayload("no 'cwd' in the payload")
        model = common.get("model")
        event = self.event(event_name or name)
        tool = None
        if event is Event.TOOL and self.tool_use is not None:
            tool = self.tool_use({**common, "hook_event_name": name})
        return HookEvent(
            agent=self.name,
            event=event,
            name=name,
            cwd=cwd,
            session_id=text_field(common, "session_id"),
            transcript_path=text_field(common, "transcript_path"),
            prompt=text_field(common, "prompt"),
            source=text_field(common, "source"),
            model=model if isinstance(model, str) else None,
            reason=text_field(common, "reason"),
            raw=payload,
            continuing=_said_yes(common.get("stop_hook_active")),
            tool=tool,
        )

    def render(self, event: HookEvent, text: str, notice: str = "") -> str:
        """Our context in the form this agent reads for this event ('' for none), and a
        notice for the person (`systemMessage`) where the agent shows one to them and not
        to the model. Every hook's answer goes out here: this is where the agent's own
        context tags are taken out of it (`defused`)."""
        notice = notice if self.shows_user_messages else ""
        if not text and not notice:
            return ""
        text = defused(clip(text), self.context_tags) if text else ""
        notice = defused(notice, self.context_tags)
        if event.event is Event.STOP:
            if self.stop_decision is None or not text:
                return ""
            answer = {"decision": self.stop_decision, "reason": text}
            return json.dumps(answer, ensure_ascii=False)
        form = self.start_context if event.event is Event.SESSION_START else self.prompt_context
        if notice and form == "plain":
            form = "hook_specific"  # the notice needs JSON, which then carries the context
        out: dict[str, Any] = {"systemMessage": notice} if notice else {}
        match form:
            case "plain":
                return text
            case "additional":
                if text:
                    out["additionalContext"] = text
            case "hook_specific":
                if text:
                    # The agent's own name for the event, also when the hook was named
                    # by an alias (`ken hook prompt`): the agent checks this field.
                    name = event.name if event.name in self.events else None
                    name = name or self.event_name(event.event)
                    out["hookSpecificOutput"] = {"hookEventName": name, "additionalContext": text}
        return json.dumps(out, ensure_ascii=False)


def _said_yes(value: object) -> bool:
    """A payload's yes/no flag: true, or the strings "true" and "1" that a shell-built
    payload may send."""
    return value is True or (isinstance(value, str) and value.strip().lower() in ("true", "1"))
