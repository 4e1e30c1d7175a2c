"""Installing kenning's hooks into each agent's own settings, and taking them out.

Each agent keeps hooks in a file of its own: Claude Code in `~/.claude/settings.json`,
Codex in `$CODEX_HOME/hooks.json` (default `~/.codex`), Gemini CLI in
`~/.gemini/settings.json` (timeouts there are milliseconds). Installing is idempotent:
kenning's handlers are recognised by their command (`<path>/ken hook …`), replaced in
place, and everything else in the file is kept. Before a file changes, it is copied to
its one backup, `<name>.ken-backup`, which each change replaces.
`remove` takes out exactly kenning's handlers, and the groups and events they leave
empty.

Codex skips hooks the user has not trusted, silently. `trust=True` records, in Codex's
`config.toml`, the trust hash of exactly the handlers written here (comments and
everything else in that TOML file are kept).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import stat
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kenning import paths
from kenning.errors import InvalidInput

AGENTS = ("claude", "codex", "gemini")
HOOK_EVENTS = {
    "claude": ("SessionStart", "UserPromptSubmit", "PreCompact", "SessionEnd"),
    "codex": ("SessionStart", "UserPromptSubmit", "PreCompact", "SessionEnd"),
    "gemini": ("SessionStart", "BeforeAgent", "SessionEnd"),
}
TIMEOUT_SECONDS = {
    "SessionStart": 15,
    "UserPromptSubmit": 10,
    "BeforeAgent": 10,
    "PreCompact": 10,
    "SessionEnd": 3,
}
OURS = re.compile(r"(^|[/\s'\"])ken(\.exe)?['\"]?\s+hook\s")


@dataclass
class Change:
    agent: str
    path: Path
    action: str  # installed, unchanged, removed, absent
    commands: dict[str, str] = field(default_factory=dict)
    backup: Path | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "path": str(self.path),
            "action": self.action,
            "commands": self.commands,
            "backup": str(self.backup) if self.backup else None,
            "notes": self.notes,
        }


def home() -> Path:
    return Path(os.environ.get("HOME") or Path.home())


def codex_home() -> Path:
    value = os.environ.get("CODEX_HOME")
    return Path(value) if value else home() / ".codex"


def settings_path(agent: str) -> Path:
    if agent == "claude":
        return home() / ".claude" / "settings.json"
    if agent == "codex":
        return codex_home() / "hooks.json"
    if agent == "gemini":
        return home() / ".gemini" / "settings.json"
    raise InvalidInput(f"unknown agent '{agent}': use {', '.join(AGENTS)}")


def ken_command() -> str:
    """The absolute path of this `ken`, so hooks work whatever the agent's PATH is."""
    candidate = Path(sys.argv[0])
    if candidate.name == "ken" and candidate.exists():
        return str(candidate.resolve())
    found = shutil.which("ken")
    if found:
        return str(Path(found).resolve())
    beside = Path(sys.executable).with_name("ken")
    return str(beside)


def hook_command(agent: str, event: str, ken: str | None = None) -> str:
    return f"{shlex.quote(ken or ken_command())} hook {event} --agent {agent}"


def is_ours(handler: Any) -> bool:
    return isinstance(handler, dict) and bool(OURS.search(str(handler.get("command", ""))))


def read_json(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except UnicodeDecodeError:
        raise InvalidInput(f"{path} is not UTF-8 text; fix it by hand first") from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"{path} is not valid JSON (line {exc.lineno}: {exc.msg}); fix it by hand first"
        ) from None
    if not isinstance(data, dict):
        raise InvalidInput(f"{path} does not hold a JSON object; fix it by hand first")
    return data


def write_file(path: Path, text: str) -> Path | None:
    """Write atomically; an existing file that differs is first copied to its one backup,
    `<name>.ken-backup` (the file as it was before kenning last changed it), which is
    returned. The new file and the backup keep the old file's mode: an agent's settings
    may hold tokens.

    A symlinked file (dotfiles kept in a repo) is written through: its target gets the
    new text, and the link stays a link.
    """
    backup = None
    mode = 0o600
    if path.exists():
        old = path.read_bytes()
        if old == text.encode("utf-8"):
            return None
        mode = stat.S_IMODE(path.stat().st_mode)  # the target's, for a link
        backup = path.with_name(f"{path.name}.ken-backup")
        _write_atomically(backup, old, mode)
    target = Path(os.path.realpath(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    _write_atomically(target, text.encode("utf-8"), mode)
    return backup


def _write_atomically(path: Path, data: bytes, mode: int) -> None:
    tmp = path.with_name(path.name + ".ken-tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, mode)  # whatever the umask took away
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _strip_ours(hooks: dict[str, Any]) -> None:
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept_groups = []
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                had = len(group["hooks"])
                group["hooks"] = [h for h in group["hooks"] if not is_ours(h)]
                if not group["hooks"] and had:
                    continue
            kept_groups.append(group)
        if kept_groups:
            hooks[event] = kept_groups
        else:
            del hooks[event]


def _handler(agent: str, event: str, ken: str) -> dict[str, Any]:
    seconds = TIMEOUT_SECONDS.get(event, 10)
    handler: dict[str, Any] = {"type": "command", "command": hook_command(agent, event, ken)}
    if agent == "gemini":
        handler = {"name": "kenning", **handler, "timeout": seconds * 1000}
    else:
        handler["timeout"] = seconds
    return handler


def _copy(data: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of parsed JSON (plain dicts, lists and scalars)."""
    copied: dict[str, Any] = json.loads(json.dumps(data))
    return copied


def _replace_ours(groups: list[Any], handler: dict[str, Any]) -> bool:
    """Put `handler` where the first of kenning's handlers in `groups` stands, and drop
    any others; False when there was none. Staying in place keeps every other handler
    at its position, which Codex's trust entries are keyed by."""
    placed = False
    emptied = []
    for group in groups:
        if not (isinstance(group, dict) and isinstance(group.get("hooks"), list)):
            continue
        kept = []
        for old in group["hooks"]:
            if not is_ours(old):
                kept.append(old)
            elif not placed:
                kept.append(handler)
                placed = True
        if group["hooks"] and not kept:
            emptied.append(group)
        group["hooks"] = kept
    groups[:] = [g for g in groups if not any(g is e for e in emptied)]
    return placed


def check_hooks(data: dict[str, Any], path: Path) -> None:
    """Refuse settings whose `hooks` is not shaped as the agents read it: changing a file
    kenning cannot read right could lose the person's own hooks."""
    problem = _hooks_problem(data.get("hooks", {}))
    if problem:
        raise InvalidInput(f"{path}: {problem}; fix it by hand first (nothing changed)")


def _hooks_problem(hooks: Any) -> str | None:
    """What is wrong with `hooks`: an object of events, each a list of groups, each group
    an object whose `hooks` is a list of handler objects."""
    if not isinstance(hooks, dict):
        return f"'hooks' is a {_json_type(hooks)}, not an object"
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            return f"'hooks.{event}' is a {_json_type(groups)}, not a list"
        for g, group in enumerate(groups):
            where = f"hooks.{event}[{g}]"
            if not isinstance(group, dict):
                return f"'{where}' is a {_json_type(group)}, not an object"
            handlers = group.get("hooks", [])
            if not isinstance(handlers, list):
                return f"'{where}.hooks' is a {_json_type(handlers)}, not a list"
            if not all(isinstance(h, dict) for h in handlers):
                return f"'{where}.hooks' holds a handler that is not an object"
    return None


def _json_type(value: Any) -> str:
    names = {dict: "object", list: "list", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), "number")


def desired(agent: str, data: dict[str, Any], ken: str) -> dict[str, Any]:
    """`data` with kenning's hooks for `agent` in place (a new dict)."""
    check_hooks(data, settings_path(agent))
    result = _copy(data)
    hooks = result.setdefault("hooks", {})
    stale = {e: g for e, g in hooks.items() if e not in HOOK_EVENTS[agent]}
    _strip_ours(stale)  # kenning's handlers on events it no longer uses
    for event in [e for e in hooks if e not in HOOK_EVENTS[agent]]:
        if event in stale:
            hooks[event] = stale[event]
        else:
            del hooks[event]
    for event in HOOK_EVENTS[agent]:
        handler = _handler(agent, event, ken)
        groups = hooks.get(event)
        if isinstance(groups, list) and _replace_ours(groups, handler):
            continue
        group: dict[str, Any] = {"hooks": [handler]}
        if agent == "gemini":
            group = {"matcher": "*", **group}
        hooks.setdefault(event, []).append(group)
    return result


def install(agent: str, *, trust: bool = False, ken: str | None = None) -> Change:
    path = settings_path(agent)
    ken = ken or ken_command()
    data = read_json(path)
    new = desired(agent, data, ken)
    backup = write_file(path, json.dumps(new, indent=2) + "\n")
    change = Change(
        agent,
        path,
        "installed" if backup or data != new else "unchanged",
        {e: hook_command(agent, e, ken) for e in HOOK_EVENTS[agent]},
        backup,
    )
    if agent == "codex":
        if trust:
            write_codex_trust(data, new, path)
            change.notes.append(f"trusted these hooks in {codex_home() / 'config.toml'}")
        else:
            change.notes.append(
                "Codex skips new hooks until you trust them: open `/hooks` in Codex, or run "
                "`ken integrate codex --trust`"
            )
    return change


def remove(agent: str) -> Change:
    path = settings_path(agent)
    data = read_json(path)
    if not data:
        return Change(agent, path, "absent")
    check_hooks(data, path)
    new = _copy(data)
    hooks = new.get("hooks")
    if isinstance(hooks, dict):
        _strip_ours(hooks)
        if not hooks:
            del new["hooks"]
    if new == data:
        return Change(agent, path, "absent")
    backup = write_file(path, json.dumps(new, indent=2) + "\n")
    if agent == "codex":
        remove_codex_trust(data, path)
    return Change(agent, path, "removed", backup=backup)


def installed_commands(agent: str) -> dict[str, str]:
    """The kenning hook commands an agent's settings hold, by event."""
    try:
        data = read_json(settings_path(agent))
    except InvalidInput:
        return {}
    found: dict[str, str] = {}
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return found
    for event, groups in hooks.items():
        for group in groups if isinstance(groups, list) else []:
            for handler in group.get("hooks", []) if isinstance(group, dict) else []:
                if is_ours(handler):
                    found[event] = str(handler["command"])
    return found


# --- Codex hook trust ----------------------------------------------------------------


def snake(event: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", event).lower()


def trust_hash(event: str, group: dict[str, Any]) -> str:
    """Codex's trust hash of one handler: sha256 of its compact, key-sorted JSON."""
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


def _trust_entries(data: dict[str, Any], hooks_path: Path) -> dict[str, str]:
    entries = {}
    for event, groups in data.get("hooks", {}).items():
        for g, group in enumerate(groups):
            for h, handler in enumerate(group.get("hooks", [])):
                if is_ours(handler):
                    single = {**group, "hooks": [handler]}
                    key = f"{hooks_path.resolve()}:{snake(event)}:{g}:{h}"
                    entries[key] = trust_hash(event, single)
    return entries


def _load_toml(path: Path) -> Any:
    import tomlkit

    try:
        return (
            tomlkit.parse(path.read_text(encoding="utf-8")) if path.exists() else tomlkit.document()
        )
    except Exception as exc:  # noqa: BLE001 - tomlkit raises several kinds
        raise InvalidInput(f"{path} is not valid TOML ({exc}); fix it by hand first") from None


def _drop_entries(state: Any, entries: dict[str, str]) -> int:
    dropped = 0
    for key, digest in entries.items():
        entry = state.get(key)
        if entry is not None and entry.get("trusted_hash") == digest:
            del state[key]
            dropped += 1
    return dropped


def write_codex_trust(old: dict[str, Any], new: dict[str, Any], hooks_path: Path) -> None:
    """Trust exactly kenning's handlers in `new`, dropping the trust of those in `old`."""
    import tomlkit

    config_path = codex_home() / "config.toml"
    doc = _load_toml(config_path)
    hooks = doc.setdefault("hooks", tomlkit.table())
    state = hooks.setdefault("state", tomlkit.table())
    _drop_entries(state, _trust_entries(old, hooks_path))
    for key, digest in _trust_entries(new, hooks_path).items():
        table = tomlkit.table()
        table["trusted_hash"] = digest
        state[key] = table
    write_file(config_path, tomlkit.dumps(doc))


def remove_codex_trust(old: dict[str, Any], hooks_path: Path) -> None:
    """Drop the trust entries of kenning's handlers in `old`, and nothing else."""
    import tomlkit

    config_path = codex_home() / "config.toml"
    if not config_path.exists():
        return
    doc = _load_toml(config_path)
    state = doc.get("hooks", {}).get("state")
    if state is None or not _drop_entries(state, _trust_entries(old, hooks_path)):
        return
    if not state:
        del doc["hooks"]["state"]
    if not doc["hooks"]:
        del doc["hooks"]
    write_file(config_path, tomlkit.dumps(doc))


# --- MCP server registration -----------------------------------------------------------

MCP_NAME = "ken"
# Tools that run without asking: reading, and writes the policy already keeps safe.
CLAUDE_ALLOWED = tuple(
    f"mcp__{MCP_NAME}__{tool}"
    for tool in (
        "memory_context",
        "memory_search",
        "memory_get",
        "memory_propose",
        "memory_update",
        "memory_handoff",
        "session_history",
        "record_reflection",
    )
)
PASS_ENV = ("KEN_DB", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME")


MCP_REQUIREMENT = "mcp>=2.3,<3"  # as the `mcp` extra in pyproject.toml


def mcp_install_hint(python: str | None = None) -> str:
    """The command that installs the MCP SDK for the kenning that runs with `python`."""
    return f"{shlex.quote(python or sys.executable)} -m pip install '{MCP_REQUIREMENT}'"


def mcp_env() -> dict[str, str]:
    """The variables the server needs to find the same store and config as this `ken`.

    Codex passes a server only HOME, LANG, PATH and TMPDIR, so they are written out.
    """
    return {k: os.environ[k] for k in PASS_ENV if os.environ.get(k)}


def claude_json_path() -> Path:
    return home() / ".claude.json"


def mcp_entry(agent: str, ken: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"command": ken, "args": ["mcp"]}
    env = mcp_env()
    if env:
        entry["env"] = env
    if agent == "claude":
        entry = {"type": "stdio", **entry}
    if agent == "gemini":
        entry["trust"] = True
    return entry


def _claude_allow(settings: dict[str, Any], add: bool) -> dict[str, Any]:
    result = _copy(settings)
    perms = result.setdefault("permissions", {})
    allow = [a for a in perms.get("allow", []) if a not in CLAUDE_ALLOWED]
    if add:
        allow += list(CLAUDE_ALLOWED)
    if allow:
        perms["allow"] = allow
    else:
        perms.pop("allow", None)
    if not perms:
        del result["permissions"]
    return result


def _claude_cli_add(ken: str) -> bool:
    """Register through `claude mcp add --scope user` when the claude CLI is here."""
    import subprocess

    claude = shutil.which("claude")
    if not claude:
        return False
    command = [claude, "mcp", "add", MCP_NAME, "--scope", "user"]
    for key, value in mcp_env().items():
        command += ["--env", f"{key}={value}"]
    command += ["--", ken, "mcp"]
    try:
        subprocess.run(
            [claude, "mcp", "remove", MCP_NAME, "--scope", "user"],
            capture_output=True,
            timeout=30,
            check=False,
        )
        done = subprocess.run(command, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def install_mcp(agent: str, ken: str | None = None) -> Change:
    """Register `ken mcp` with `agent`. The KEN_DB and XDG_* set here are written into the
    registration (Codex would not pass them on), and the change's notes say so."""
    change = _install_mcp(agent, ken)
    env = mcp_env()
    if env:
        fixed = ", ".join(f"{k}={v}" for k, v in env.items())
        temporary = [
            v for v in env.values() if _inside(v, tempfile.gettempdir()) or _inside(v, "/tmp")
        ]
        change.notes.append(
            f"this registration bakes in {fixed}: {agent}'s MCP server always opens the store "
            f"{paths.db_path()}, whatever the environment {agent} runs in"
            + (", and that is a temporary folder" if temporary else "")
            + f"; run `ken integrate {agent} --mcp` again without them to use the default store"
        )
    return change


def _inside(path: str, folder: str) -> bool:
    real, base = os.path.realpath(os.path.expanduser(path)), os.path.realpath(folder)
    return real == base or real.startswith(base.rstrip(os.sep) + os.sep)


def _install_mcp(agent: str, ken: str | None = None) -> Change:
    ken = ken or ken_command()
    if agent == "claude":
        path = claude_json_path()
        data = read_json(path)
        new = _copy(data)
        new.setdefault("mcpServers", {})[MCP_NAME] = mcp_entry(agent, ken)
        backup = None
        if (
            not _claude_cli_add(ken)
            or read_json(path).get("mcpServers", {}).get(MCP_NAME) != new["mcpServers"][MCP_NAME]
        ):
            backup = write_file(path, json.dumps(new, indent=2) + "\n")
        settings = settings_path("claude")
        write_file(settings, json.dumps(_claude_allow(read_json(settings), True), indent=2) + "\n")
        return Change(
            agent,
            path,
            "installed" if new != data else "unchanged",
            {"mcp": f"{ken} mcp"},
            backup,
            [f"allowed kenning's MCP tools to run without asking in {settings}"],
        )
    if agent == "gemini":
        path = settings_path("gemini")
        data = read_json(path)
        new = _copy(data)
        new.setdefault("mcpServers", {})[MCP_NAME] = mcp_entry(agent, ken)
        backup = write_file(path, json.dumps(new, indent=2) + "\n")
        return Change(
            agent,
            path,
            "installed" if new != data else "unchanged",
            {"mcp": f"{ken} mcp"},
            backup,
            ["set trust = true so Gemini offers the tools and runs them without asking"],
        )
    import tomlkit

    path = codex_home() / "config.toml"
    doc = _load_toml(path)
    servers = doc.setdefault("mcp_servers", tomlkit.table(is_super_table=True))
    table = tomlkit.table()
    table["command"] = ken
    table["args"] = ["mcp"]
    env = mcp_env()
    if env:
        table["env"] = env
    table["startup_timeout_sec"] = 20
    table["required"] = True
    table["default_tools_approval_mode"] = "approve"
    servers[MCP_NAME] = table
    before = path.read_text(encoding="utf-8") if path.exists() else ""
    backup = write_file(path, tomlkit.dumps(doc))
    return Change(
        agent,
        path,
        "installed" if tomlkit.dumps(doc) != before else "unchanged",
        {"mcp": f"{ken} mcp"},
        backup,
        [
            "required = true (else Codex may not wait for the server) and "
            'default_tools_approval_mode = "approve" (else calls are refused '
            'under approval_policy = "never")'
        ],
    )


def remove_mcp(agent: str) -> Change:
    if agent in ("claude", "gemini"):
        path = claude_json_path() if agent == "claude" else settings_path("gemini")
        data = read_json(path)
        servers = data.get("mcpServers")
        if agent == "claude":
            settings = settings_path("claude")
            old = read_json(settings)
            if old:
                new_settings = _claude_allow(old, False)
                if new_settings != old:
                    write_file(settings, json.dumps(new_settings, indent=2) + "\n")
        if not isinstance(servers, dict) or MCP_NAME not in servers:
            return Change(agent, path, "absent")
        del servers[MCP_NAME]
        if not servers:
            del data["mcpServers"]
        backup = write_file(path, json.dumps(data, indent=2) + "\n")
        return Change(agent, path, "removed", backup=backup)
    path = codex_home() / "config.toml"
    if not path.exists():
        return Change(agent, path, "absent")
    doc = _load_toml(path)
    servers = doc.get("mcp_servers")
    if servers is None or MCP_NAME not in servers:
        return Change(agent, path, "absent")
    del servers[MCP_NAME]
    if not servers:
        del doc["mcp_servers"]
    import tomlkit

    backup = write_file(path, tomlkit.dumps(doc))
    return Change(agent, path, "removed", backup=backup)


def installed_mcp(agent: str) -> dict[str, Any] | None:
    """kenning's MCP server entry in an agent's config, if any."""
    try:
        if agent == "codex":
            path = codex_home() / "config.toml"
            if not path.exists():
                return None
            entry = _load_toml(path).get("mcp_servers", {}).get(MCP_NAME)
            return dict(entry) if entry is not None else None
        path = claude_json_path() if agent == "claude" else settings_path("gemini")
        servers = read_json(path).get("mcpServers")
        found = servers.get(MCP_NAME) if isinstance(servers, dict) else None
        return found if isinstance(found, dict) else None
    except InvalidInput:
        return None
