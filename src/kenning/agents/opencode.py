"""OpenCode (`opencode`, npm `opencode-ai`).

OpenCode has no command hooks: it runs JS plugins in its own runtime, loading every
`.js` file in `$XDG_CONFIG_HOME/opencode/plugins/` (default `~/.config/opencode`). So
`ken integrate opencode` writes one plugin of kenning's own, `kenning.js`, that runs
`ken hook EVENT --agent opencode` with a payload it builds from what OpenCode tells it:

- a new session (`session.created`, or the first request of a session this process did
  not start, such as `opencode run --continue`): `session_start`, whose pack goes into
  every request of the session through `experimental.chat.system.transform` (OpenCode
  rebuilds the system prompt per request and keeps no earlier one, so a continued
  session gets the pack again, as a new one does);
- each prompt (`chat.message`): `prompt`, whose recall is added to the person's message
  as one more text part, its id sorting after the prompt's;
- a compaction (`experimental.session.compacting`): `pre_compact`;
- a subagent's child session (the task tool's, with a `parentID`): nothing at all, since
  its prompt is the model's words, not the person's;
- the process exiting: `session_end` for each session it served. OpenCode has no
  session-end event (`session.idle` ends every turn), so a session killed with its
  process is closed at the next start instead, as any agent's is.

OpenCode keeps its sessions in SQLite (`$XDG_DATA_HOME/opencode/opencode.db`), which is
the transcript kenning reads (read only). MCP servers go in the `mcp` table of
`opencode.json` as `{"type": "local", "command": [...], "environment": {...}}`; the
model sees kenning's tools as `ken_<tool>`. The shells it runs have `OPENCODE=1`; the
hooks the plugin runs have `KEN_HOOK_PLUGIN` instead (`slash.from_cli`).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kenning.agents.agent import (
    HOOK_TIMEOUTS,
    SLASH_COMMANDS,
    Agent,
    Env,
    Event,
    HookFile,
    LaunchSettings,
    McpRegistration,
    home,
)
from kenning.agents.transcript import Turn, person_words

INSTALLS = ("session_start", "prompt", "pre_compact", "session_end")
EVENTS = {name: Event(name) for name in INSTALLS}
MESSAGES_READ = 400  # the latest messages read when only the end of a session is wanted


def config_dir(env: Env) -> Path:
    base = env.get("XDG_CONFIG_HOME")
    return (Path(base) if base else home(env) / ".config") / "opencode"


def database(env: Env) -> Path:
    base = env.get("XDG_DATA_HOME")
    return (Path(base) if base else home(env) / ".local" / "share") / "opencode" / "opencode.db"


# --- the plugin ----------------------------------------------------------------------

HOOKS_LINE = re.compile(r"^const HOOKS = (\{.*\})$", re.MULTILINE)
PLUGIN_MARKER = "KEN_HOOK_PLUGIN"  # set by the plugin for the hooks it runs, and only there
ENV_MARKERS = ("OPENCODE", "OPENCODE_PID")  # set in its shells; left out of its hooks'

PLUGIN = """\
// kenning's memory for OpenCode, written by `ken integrate opencode`; take it out with
// `ken integrate opencode --remove`. It runs `ken hook EVENT --agent opencode` with a JSON
// payload on stdin and gives OpenCode what the hook prints. A failing hook gives nothing.
import { spawn, spawnSync } from "node:child_process"

const HOOKS = %(hooks)s
const TIMEOUTS = %(timeouts)s
// Tells kenning a hook came from this plugin, not from a command the model ran: the
// marker is set, and OpenCode's own markers, which its model's shells carry, are not.
const HOOK_ENV = { ...process.env, %(marker)s: "opencode" }
for (const name of %(shell)s) delete HOOK_ENV[name]

function hook(event, sessionID, cwd, more) {
  const [command, ...args] = HOOKS[event]
  const body = JSON.stringify({ hook_event_name: event, session_id: sessionID, cwd, ...more })
  return new Promise((resolve) => {
    let out = ""
    let child
    try {
      child = spawn(command, args, { stdio: ["pipe", "pipe", "ignore"], env: HOOK_ENV })
    } catch {
      return resolve("")
    }
    const timer = setTimeout(() => child.kill("SIGKILL"), TIMEOUTS[event])
    child.stdout.on("data", (chunk) => { out += chunk })
    child.on("error", () => { clearTimeout(timer); resolve("") })
    child.on("close", (code) => { clearTimeout(timer); resolve(code === 0 ? out.trim() : "") })
    child.stdin.on("error", () => {})
    child.stdin.end(body)
  })
}

// At exit only a synchronous child runs to the end.
function hookNow(event, sessionID, cwd, more) {
  const [command, ...args] = HOOKS[event]
  const body = JSON.stringify({ hook_event_name: event, session_id: sessionID, cwd, ...more })
  try {
    spawnSync(command, args, { input: body, stdio: ["pipe", "ignore", "ignore"],
      timeout: TIMEOUTS[event], env: HOOK_ENV })
  } catch {}
}

export const Kenning = async ({ directory, client }) => {
  const folders = new Map() // sessionID -> its folder
  const packs = new Map() // sessionID -> Promise of its pack
  // sessionID -> Promise of whether it is a subagent's (the task tool's child session):
  // its prompt is the model's, not the person's, and it is no session of theirs.
  const children = new Map()
  const folder = (sessionID) => folders.get(sessionID) ?? directory
  const isChild = (sessionID) => {
    if (!children.has(sessionID)) {
      children.set(sessionID, (async () => {
        try {
          const found = await client.session.get({ path: { id: sessionID }, sessionID })
          return Boolean((found?.data ?? found)?.parentID)
        } catch {
          return false
        }
      })())
    }
    return children.get(sessionID)
  }
  const start = (sessionID) => {
    if (!packs.has(sessionID)) {
      packs.set(sessionID, hook("session_start", sessionID, folder(sessionID),
        { source: "startup" }))
    }
    return packs.get(sessionID)
  }
  process.on("exit", () => {
    for (const sessionID of packs.keys()) {
      hookNow("session_end", sessionID, folder(sessionID), { reason: "exit" })
    }
  })
  return {
    event: async ({ event }) => {
      if (event.type === "session.created") {
        const info = event.properties?.info ?? {}
        if (!info.id) return
        children.set(info.id, Promise.resolve(Boolean(info.parentID)))
        if (info.parentID) return
        if (info.directory) folders.set(info.id, info.directory)
        start(info.id)
      }
    },
    "chat.message": async (input, output) => {
      const sessionID = input.sessionID ?? output.message?.sessionID
      if (!sessionID || await isChild(sessionID)) return
      await start(sessionID)
      const parts = output.parts ?? []
      const prompt = parts
        .filter((p) => p.type === "text" && !p.synthetic)
        .map((p) => p.text)
        .join("\\n")
      const model = output.message?.model
      const recall = await hook("prompt", sessionID, folder(sessionID), {
        prompt,
        model: model?.modelID ? `${model.providerID}/${model.modelID}` : undefined,
      })
      if (!recall || !output.message?.id) return
      // Parts are ordered by id: one past the last keeps the recall after the prompt.
      const last = parts.map((p) => p.id).filter(Boolean).sort().pop() ?? "prt_"
      parts.push({ id: last + "z", sessionID, messageID: output.message.id, type: "text",
        text: recall, synthetic: true })
    },
    "experimental.chat.system.transform": async (input, output) => {
      if (!input.sessionID || await isChild(input.sessionID)) return
      const pack = await start(input.sessionID)
      if (pack) output.system.push(pack)
    },
    "experimental.session.compacting": async (input) => {
      if (!input.sessionID || await isChild(input.sessionID)) return
      await hook("pre_compact", input.sessionID, folder(input.sessionID), { trigger: "auto" })
    },
  }
}
"""


def plugin_path(env: Env) -> Path:
    return config_dir(env) / "plugins" / "kenning.js"


def install_plugin(text: str, path: Path, commands: Mapping[str, str]) -> str:
    """The plugin, running these hook commands (each `ken hook EVENT --agent opencode`)."""
    hooks = {event: shlex.split(command) for event, command in commands.items()}
    timeouts = {event: HOOK_TIMEOUTS[EVENTS[event]] * 1000 for event in commands}
    return PLUGIN % {
        "hooks": json.dumps(hooks),
        "timeouts": json.dumps(timeouts),
        "marker": PLUGIN_MARKER,
        "shell": json.dumps(list(ENV_MARKERS)),
    }


def plugin_commands(text: str, path: Path) -> dict[str, str]:
    """The hook commands the plugin runs, by event."""
    found = HOOKS_LINE.search(text)
    if not found:
        return {}
    try:
        hooks = json.loads(found.group(1))
    except ValueError:
        return {}
    return {
        str(event): shlex.join(str(a) for a in argv)
        for event, argv in hooks.items()
        if isinstance(argv, list) and argv
    }


# --- payloads, transcripts -----------------------------------------------------------


def adapt(payload: dict[str, Any], env: Mapping[str, str]) -> dict[str, Any]:
    """The plugin sends the common form; the transcript is OpenCode's database."""
    if payload.get("transcript_path") is None:
        return {**payload, "transcript_path": str(database(env))}
    return payload


def _rows(path: str, session_id: str, latest: int | None) -> list[tuple[str, str, str]]:
    """(message id, message JSON, part JSON) of a session's latest messages, oldest
    first, from OpenCode's database opened read only."""
    import sqlite3
    from urllib.parse import quote

    query = (
        "SELECT m.id, m.data, p.data FROM message m JOIN part p ON p.message_id = m.id "
        "WHERE m.id IN (SELECT id FROM message WHERE session_id = ? "
        "ORDER BY time_created DESC, id DESC LIMIT ?) "
        "ORDER BY m.time_created, m.id, p.id"
    )
    try:
        db = sqlite3.connect(f"file:{quote(path)}?mode=ro", uri=True, timeout=1.0)
    except sqlite3.Error:
        return []
    try:
        found = db.execute(query, (session_id, -1 if latest is None else latest))
        return [(str(i), str(m), str(p)) for i, m, p in found]
    except sqlite3.Error:
        return []
    finally:
        db.close()


def _load(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def read_transcript(path: str, session_id: str | None, tail: int | None) -> list[Turn]:
    """The person's prompts and the agent's text, in order (kenning's injected parts,
    tool calls and reasoning left out)."""
    if not session_id:
        return []
    turns: list[Turn] = []
    last = ""  # the message the latest turn came from: its text parts make one turn
    for message_id, message_json, part_json in _rows(
        path, session_id, MESSAGES_READ if tail is not None else None
    ):
        part = _load(part_json)
        if part.get("type") != "text" or part.get("synthetic") or not part.get("text"):
            continue
        message = _load(message_json)
        role = message.get("role")
        if role not in ("user", "assistant"):
            continue
        text = str(part["text"]).strip()
        if message_id == last and turns:
            turns[-1] = Turn(role, f"{turns[-1].text}\n{text}", turns[-1].at)
            continue
        if role == "user":
            text = person_words(text)
            if not text:
                continue
        created = (message.get("time") or {}).get("created")
        at = _iso(created) if isinstance(created, int | float) else None
        turns.append(Turn(role, text, at))
        last = message_id
    return turns


def _iso(millis: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(millis / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def last_model(path: str, session_id: str | None) -> str | None:
    """`provider/model` of the session's latest message that names one."""
    if not session_id:
        return None
    for _, message_json, _ in reversed(_rows(path, session_id, 20)):
        message = _load(message_json)
        model = message.get("model")
        provider, name = (
            (model.get("providerID"), model.get("modelID"))
            if isinstance(model, dict)
            else (message.get("providerID"), message.get("modelID"))
        )
        if isinstance(name, str) and name:
            return f"{provider}/{name}"[:200] if isinstance(provider, str) else name[:200]
    return None


# --- MCP -----------------------------------------------------------------------------


def _mcp_entry(command: str, args: list[str], env: dict[str, str]) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "local", "command": [command, *args], "enabled": True}
    if env:
        entry["environment"] = env
    return entry


def _mcp_server(entry: Mapping[str, Any]) -> tuple[str, list[str], dict[str, str]]:
    argv = entry.get("command")
    argv = [str(a) for a in argv] if isinstance(argv, list) else [str(argv or "")]
    env = entry.get("environment")
    variables = {str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else {}
    return (argv[0] if argv else "", argv[1:], variables)


def commands(env: Env) -> dict[Path, str]:
    """Custom commands (~/.config/opencode/command): each expands to the line itself,
    which the plugin hands to the prompt hook."""
    folder = config_dir(env) / "command"
    return {
        folder / f"{name}.md": f"---\ndescription: {help_text}\n---\n/{name} $ARGUMENTS\n"
        for name, help_text in SLASH_COMMANDS
    }


def command_twins(path: Path) -> tuple[Path, ...]:
    """OpenCode reads commands from `commands/` as well as `command/`."""
    return (path.parent.parent / "commands" / path.name,)


AGENT = Agent(
    name="opencode",
    title="OpenCode",
    instruction_files=("AGENTS.md",),
    env_markers=ENV_MARKERS,
    process_names=("opencode",),
    events=EVENTS,
    installs=INSTALLS,
    hooks=HookFile(
        path=plugin_path,
        install=install_plugin,
        remove=lambda text, path: "",
        commands=plugin_commands,
        owned=True,
    ),
    mcp=McpRegistration(
        path=lambda env: config_dir(env) / "opencode.json",
        syntax="json",
        table=("mcp",),
        entry=_mcp_entry,
        server=_mcp_server,
        client_names=("opencode",),
        tool_form="{server}_{tool}",
    ),
    launch=LaunchSettings(
        command="opencode",
        context="first_message",
        model_flag="-m {model}",
        prompt_flag="--prompt",
        resume=("--session", "{id}"),
    ),
    start_context="plain",
    prompt_context="plain",
    # kenning's plugin puts the context in as it is: a text part, in no tags.
    adapt=adapt,
    transcript=read_transcript,
    last_model=last_model,
    commands=commands,
    command_twins=command_twins,
    hook_only_env=(PLUGIN_MARKER,),
)
