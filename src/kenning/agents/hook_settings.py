"""Hook settings in the shape Claude Code, Codex and Gemini CLI share.

`{"hooks": {EVENT: [{"matcher": ..., "hooks": [{"type": "command", "command": ...}]}]}}`:
events, each a list of groups, each group a list of handlers. kenning's handlers are
recognised by their command (`<path>/ken hook …`), replaced where they stand (Codex keys
its trust by position), and everything else is kept. A file kenning cannot read that way
is refused rather than changed: changing it could lose the person's own hooks.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from kenning.agents.agent import Env, HookFile, dump_object, load_object
from kenning.errors import InvalidInput

# A kenning hook command: `<path>/ken hook …` (compiled on first use: not on the hook path).
OURS = r"(^|[/\s'\"])ken(\.exe)?['\"]?\s+hook\s"


def is_ours(handler: Any, key: str = "command") -> bool:
    return isinstance(handler, dict) and bool(re.search(OURS, str(handler.get(key, ""))))


def copy(data: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of parsed JSON (plain dicts, lists and scalars)."""
    copied: dict[str, Any] = json.loads(json.dumps(data))
    return copied


def _json_type(value: Any) -> str:
    names = {dict: "object", list: "list", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), "number")


def hooks_problem(hooks: Any) -> str | None:
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
            for n, handler in enumerate(handlers):
                command = handler.get("command")
                if handler.get("type", "command") == "command" and not isinstance(command, str):
                    said = (
                        "has no command"
                        if command is None
                        else (f"has a command that is a {_json_type(command)}, not text")
                    )
                    return f"'{where}.hooks[{n}]' {said}"
    return None


def checked(text: str, path: Path) -> dict[str, Any]:
    """The settings in `text`, refused when `hooks` is not shaped as agents read it."""
    data = load_object(text, path)
    problem = hooks_problem(data.get("hooks", {}))
    if problem:
        raise InvalidInput(f"{path}: {problem}; fix it by hand first (nothing changed)")
    return data


def strip_ours(hooks: dict[str, Any]) -> None:
    """Take kenning's handlers out, and the groups and events they leave empty."""
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


def replace_ours(groups: list[Any], handler: dict[str, Any]) -> bool:
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


class GroupedHooks(NamedTuple):
    """One agent's grouped hook settings file.

    `timeouts`: seconds per event kenning installs; `scale` turns them into the unit
    the agent reads (1000 for milliseconds); `matcher`, when set, goes on each group
    kenning adds; `label`, when set, names each handler.
    """

    path: Callable[[Env], Path]
    timeouts: Mapping[str, int]
    scale: int = 1
    matcher: str | None = None
    label: str | None = None

    def handler(self, event: str, command: str) -> dict[str, Any]:
        handler: dict[str, Any] = {"type": "command", "command": command}
        if self.label:
            handler = {"name": self.label, **handler}
        handler["timeout"] = self.timeouts.get(event, 10) * self.scale
        return handler

    def installed(self, data: dict[str, Any], commands: Mapping[str, str]) -> dict[str, Any]:
        """`data` with kenning's hooks for `commands` in place (a new dict)."""
        result = copy(data)
        hooks = result.setdefault("hooks", {})
        stale = {e: g for e, g in hooks.items() if e not in commands}
        strip_ours(stale)  # kenning's handlers on events it no longer uses
        for event in [e for e in hooks if e not in commands]:
            if event in stale:
                hooks[event] = stale[event]
            else:
                del hooks[event]
        for event, command in commands.items():
            handler = self.handler(event, command)
            groups = hooks.get(event)
            if isinstance(groups, list) and replace_ours(groups, handler):
                continue
            group: dict[str, Any] = {"hooks": [handler]}
            if self.matcher is not None:
                group = {"matcher": self.matcher, **group}
            hooks.setdefault(event, []).append(group)
        return result

    def install(self, text: str, path: Path, commands: Mapping[str, str]) -> str:
        return dump_object(self.installed(checked(text, path), commands))

    def remove(self, text: str, path: Path) -> str:
        data = checked(text, path)
        if not data:
            return text
        new = copy(data)
        hooks = new.get("hooks")
        if isinstance(hooks, dict):
            strip_ours(hooks)
            if not hooks:
                del new["hooks"]
        return text if new == data else dump_object(new)

    def commands(self, text: str, path: Path) -> dict[str, str]:
        """The kenning hook commands in the settings, by event; refused, as installing
        is, when `hooks` is not shaped as agents read it (then nobody can tell)."""
        data = load_object(text, path, lenient=True)
        found: dict[str, str] = {}
        if "hooks" not in data:
            return found
        hooks = data["hooks"]
        problem = hooks_problem(hooks)
        if problem:
            raise InvalidInput(
                f"{path}: its hooks are malformed: {problem}; `ken integrate` will not "
                "change it until that is fixed by hand"
            )
        for event, groups in hooks.items():
            for group in groups if isinstance(groups, list) else []:
                for handler in group.get("hooks", []) if isinstance(group, dict) else []:
                    if is_ours(handler):
                        found[event] = str(handler["command"])
        return found

    def hook_file(self) -> HookFile:
        return HookFile(self.path, self.install, self.remove, self.commands)
