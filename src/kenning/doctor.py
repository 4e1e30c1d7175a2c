"""`ken doctor`: what is installed for each agent, the store's health, recent hook
errors, and what to do about each problem."""

from __future__ import annotations

import os
import shlex
import stat
from dataclasses import dataclass, field
from typing import Any

from kenning import config as config_mod
from kenning import integrate
from kenning.errors import KenningError
from kenning.store import open_store


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "detail": self.detail, "fix": self.fix}


@dataclass
class Report:
    agents: dict[str, list[Check]] = field(default_factory=dict)
    store: list[Check] = field(default_factory=list)
    log: list[str] = field(default_factory=list)
    config: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        checks = [c for group in self.agents.values() for c in group] + self.store + self.config
        return all(c.ok for c in checks)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "agents": {a: [c.to_dict() for c in cs] for a, cs in self.agents.items()},
            "store": [c.to_dict() for c in self.store],
            "config": [c.to_dict() for c in self.config],
            "recent_errors": self.log,
        }


def _agent_checks(agent: str) -> list[Check]:
    path = integrate.settings_path(agent)
    commands = integrate.installed_commands(agent)
    wanted = integrate.HOOK_EVENTS[agent]
    checks: list[Check] = []
    if not commands:
        checks.append(
            Check(
                f"{agent} hooks",
                True,
                f"not installed in {path}",
                f"to give {agent} memory: ken integrate {agent}",
            )
        )
        return checks
    missing = [e for e in wanted if e not in commands]
    checks.append(
        Check(
            f"{agent} hooks",
            not missing,
            f"{len(commands)} of {len(wanted)} events in {path}"
            + (f"; missing {', '.join(missing)}" if missing else ""),
            f"ken integrate {agent}" if missing else "",
        )
    )
    server = integrate.installed_mcp(agent)
    checks.append(
        Check(
            f"{agent} mcp",
            True,
            f"server registered: {server.get('command')} {' '.join(server.get('args', []))}"
            if server
            else "MCP server not registered",
            "" if server else f"to let {agent} search and save memory: ken integrate {agent} --mcp",
        )
    )
    for event, command in sorted(commands.items()):
        binary = shlex.split(command)[0]
        runnable = os.path.isfile(binary) and os.access(binary, os.X_OK)
        checks.append(
            Check(
                f"{agent} {event}",
                runnable,
                f"runs: {command}",
                "" if runnable else f"{binary} is gone: run `ken integrate {agent}` again",
            )
        )
    return checks


def _store_checks() -> list[Check]:
    path = config_mod.db_path()
    checks: list[Check] = []
    if not path.exists():
        checks.append(Check("store", True, f"{path} does not exist yet (made on first use)"))
        return checks
    try:
        store = open_store(path, create=False)
    except KenningError as exc:
        return [Check("store", False, str(exc), "restore a backup or point KEN_DB elsewhere")]
    try:
        result = store.integrity_check()
        counts = store.counts()
    finally:
        store.close()
    checks.append(
        Check(
            "store",
            result == "ok",
            f"{path}: integrity {result}, "
            f"{sum(counts.values())} items ({counts.get('proposed', 0)} proposed)",
            "" if result == "ok" else "restore a backup",
        )
    )
    mode = stat.S_IMODE(path.stat().st_mode)
    checks.append(
        Check(
            "store file mode",
            mode & 0o077 == 0,
            f"{mode:04o}",
            f"chmod 600 {path}" if mode & 0o077 else "",
        )
    )
    folder_mode = stat.S_IMODE(path.parent.stat().st_mode)
    checks.append(
        Check(
            "store folder mode",
            folder_mode & 0o077 == 0,
            f"{folder_mode:04o}",
            f"chmod 700 {path.parent}" if folder_mode & 0o077 else "",
        )
    )
    return checks


def _config_checks() -> list[Check]:
    """What config.toml holds that kenning does not read as written."""
    path = config_mod.config_path()
    try:
        data = config_mod.read_file(path)
    except KenningError as exc:
        return [Check("config", False, str(exc), f"fix or remove {path}")]
    problems = config_mod.file_problems(data)
    if not problems:
        return [Check("config", True, f"{path}: every table and key is read")]
    # The old switch table still works: a nudge, not a failure.
    return [
        Check(f"config {p.key}", p.detail.startswith("is the old place"), p.detail, p.fix)
        for p in problems
    ]


def recent_errors(limit: int = 10) -> list[str]:
    path = config_mod.log_path()
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    return lines[-limit:]


def diagnose(agents: tuple[str, ...] = integrate.AGENTS) -> Report:
    report = Report()
    for agent in agents:
        report.agents[agent] = _agent_checks(agent)
    report.store = _store_checks()
    report.config = _config_checks()
    report.log = recent_errors()
    return report
