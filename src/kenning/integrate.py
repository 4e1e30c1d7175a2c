"""Installing kenning's hooks into each agent's own settings, and taking them out.

Each agent keeps hooks in a file of its own: Claude Code in `~/.claude/settings.json`,
Codex in `$CODEX_HOME/hooks.json` (default `~/.codex`), Gemini CLI in
`~/.gemini/settings.json` (timeouts there are milliseconds). Installing is idempotent:
kenning's handlers are recognised by their command (`<path>/ken hook …`), replaced in
place, and everything else in the file is kept. A file is backed up before it changes.
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
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kenning.errors import InvalidInput

AGENTS = ("claude", "codex", "gemini")
HOOK_EVENTS = {
    "claude": ("SessionStart", "UserPromptSubmit", "SessionEnd"),
    "codex": ("SessionStart", "UserPromptSubmit", "SessionEnd"),
    "gemini": ("SessionStart", "BeforeAgent", "SessionEnd"),
}
TIMEOUT_SECONDS = {"SessionStart": 15, "UserPromptSubmit": 10, "BeforeAgent": 10,
                   "SessionEnd": 3}
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
    """Write atomically, backing up an existing file that differs; returns the backup."""
    backup = None
    if path.exists():
        old = path.read_bytes()
        if old == text.encode("utf-8"):
            return None
        backup = path.with_name(f"{path.name}.ken-backup-{time.strftime('%Y%m%d-%H%M%S')}")
        backup.write_bytes(old)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".ken-tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return backup


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


def desired(agent: str, data: dict[str, Any], ken: str) -> dict[str, Any]:
    """`data` with kenning's hooks for `agent` in place (a new dict)."""
    result = json.loads(json.dumps(data))
    hooks = result.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise InvalidInput("the settings' 'hooks' is not an object; fix it by hand first")
    _strip_ours(hooks)
    for event in HOOK_EVENTS[agent]:
        group: dict[str, Any] = {"hooks": [_handler(agent, event, ken)]}
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
    change = Change(agent, path, "installed" if backup or data != new else "unchanged",
                    {e: hook_command(agent, e, ken) for e in HOOK_EVENTS[agent]}, backup)
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
    new = json.loads(json.dumps(data))
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
        "hooks": [{
            "type": "command",
            "command": handler["command"],
            "timeout": handler.get("timeout", 600),
            "async": bool(handler.get("async", False)),
        }],
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
        return tomlkit.parse(path.read_text(encoding="utf-8")) if path.exists() else \
            tomlkit.document()
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
