"""`ken doctor`: what is installed for each agent, the store's health, the settings,
the hook server, recent hook errors, and what to do about each problem.

It tells the truth about what an agent will get: memory turned off, a config.toml
that does not parse or holds a value out of its range, an MCP server that cannot
start (its command gone, or the MCP SDK missing from the Python it runs with) or that
opens another store than this one (a KEN_DB or XDG_* written into its registration),
and hooks or an MCP server that run another install's kenning than this one (an old
venv left behind by an upgrade, whose code may not even open the store this one
migrated) each fail, with the line that fixes them. The hook server is read from the
status file it keeps beside its socket.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import stat
import subprocess
import sys
from dataclasses import dataclass, field
from importlib.metadata import distributions
from pathlib import Path
from typing import Any

from kenning import agentenv, agents, hookstate, integrate, locate, paths, policy, repokeys, spool
from kenning import config as config_mod
from kenning.errors import InvalidInput, KenningError, NewerStore, StoreBusy
from kenning.store import ItemQuery, Store, held_by, migrations, open_store


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    # Not checked because another process holds the store's lock: not ok, yet nothing is
    # broken, so it does not fail the report.
    busy: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "ok": self.ok,
            "busy": self.busy,
            "detail": self.detail,
            "fix": self.fix,
        }


@dataclass
class Report:
    agents: dict[str, list[Check]] = field(default_factory=dict)
    store: list[Check] = field(default_factory=list)
    log: list[str] = field(default_factory=list)
    config: list[Check] = field(default_factory=list)
    hook_server: list[Check] = field(default_factory=list)
    here: list[Check] = field(default_factory=list)  # the repo here: its earlier keys
    deep: list[Check] = field(default_factory=list)  # --deep: the store's self-check
    repaired: list[str] = field(default_factory=list)  # --repair: what it did

    @property
    def ok(self) -> bool:
        """No check failed; a busy one (the store locked by another process) is no failure."""
        checks = [c for group in self.agents.values() for c in group]
        return all(
            c.ok or c.busy
            for c in [*checks, *self.store, *self.config, *self.hook_server, *self.here, *self.deep]
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "agents": {a: [c.to_dict() for c in cs] for a, cs in self.agents.items()},
            "store": [c.to_dict() for c in self.store],
            "config": [c.to_dict() for c in self.config],
            "hook_server": [c.to_dict() for c in self.hook_server],
            "here": [c.to_dict() for c in self.here],
            "recent_errors": self.log,
            "deep": [c.to_dict() for c in self.deep],
            "repaired": self.repaired,
        }


def _agent_checks(agent: str) -> list[Check]:
    path = integrate.settings_path(agent)
    try:
        commands = integrate.installed_commands(agent)
    except KenningError as exc:  # nobody can tell what is installed: not "not installed"
        return [Check(f"{agent} hooks", False, str(exc), f"fix {path} by hand")] + _mcp_checks(
            agent
        )
    wanted = agents.get(agent).installs
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
        return checks + _mcp_checks(agent)
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
    if integrate.outdated(agent):
        checks.append(
            Check(
                f"{agent} hooks up to date",
                False,
                f"{path} was written by another version of kenning: its hooks may not work "
                "as this one's (an older OpenCode plugin's /remember is only proposed)",
                f"ken integrate {agent}",
            )
        )
    spec = agents.get(agent)
    stray = spec.stray_hooks(os.environ) if spec.stray_hooks else []
    if stray:
        checks.append(
            Check(
                f"{agent} hooks written by hand",
                False,
                f"kenning's hooks also in {', '.join(stray)}: {agent} runs both, so each "
                "prompt is recorded twice",
                f"remove them there: {path} holds kenning's hooks",
            )
        )
    programs = {integrate.hook_root(c) or shlex.split(c)[0]: c for c in commands.values()}
    others = {
        found for found in map(_kenning_run_by, programs.values()) if found not in (None, _ours())
    }
    if others:
        older = [f"; {said}" for root in sorted(others) if (said := _older_than_store(root))]
        checks.append(
            Check(
                f"{agent} hooks kenning",
                False,
                f"the hooks run {_another(sorted(others))}" + "".join(older),
                f"{shlex.quote(integrate.ken_command())} integrate {agent}",
            )
        )
    checks += _mcp_checks(agent)
    for event, command in sorted(commands.items()):
        binary = shlex.split(command)[0]
        root = integrate.hook_root(command)
        if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
            gone = f"{binary} is gone"
        elif root is not None and not os.path.isfile(os.path.join(root, "kenning", "entry.py")):
            gone = f"no kenning in {root}"
        else:
            gone = ""
        checks.append(
            Check(
                f"{agent} {event}",
                not gone,
                f"runs: {command}",
                f"{gone}: run `ken integrate {agent}` again" if gone else "",
            )
        )
    return checks


def _mcp_checks(agent: str) -> list[Check]:
    """Whether the MCP server registered for `agent` can start, and on which store."""
    try:
        server = integrate.installed_mcp(agent)
    except KenningError as exc:
        where = agents.get(agent).mcp.path(os.environ)
        return [Check(f"{agent} mcp", False, str(exc), f"fix {where} by hand")]
    if not server:
        return [
            Check(
                f"{agent} mcp",
                True,
                "MCP server not registered",
                f"to let {agent} search and save memory: ken integrate {agent} --mcp",
            )
        ]
    command, args, env = agents.get(agent).mcp.server(server)
    again = f"ken integrate {agent} --mcp"
    if not (os.path.isfile(command) and os.access(command, os.X_OK)):
        return [Check(f"{agent} mcp", False, f"{command} is gone", f"run `{again}` again")]
    checks = [Check(f"{agent} mcp", True, f"server registered: {shlex.join([command, *args])}")]
    python = _interpreter(command)
    theirs = _find_kenning(python) if python else None
    if theirs == "":
        checks.append(
            Check(
                f"{agent} mcp kenning",
                False,
                f"kenning is not installed for {python}, the Python {command} runs with, "
                "so the server cannot start",
                f"{shlex.quote(integrate.ken_command())} integrate {agent} --mcp",
            )
        )
    elif theirs not in (None, _ours()):
        checks.append(
            Check(
                f"{agent} mcp kenning",
                False,
                f"the MCP server runs {_another([str(theirs)])}",
                f"{shlex.quote(integrate.ken_command())} integrate {agent} --mcp",
            )
        )
    # Without kenning there the SDK would not help: the server is kenning's own code.
    if python and theirs != "" and not _has_mcp(python):
        checks.append(
            Check(
                f"{agent} mcp sdk",
                False,
                f"the MCP SDK is not installed for {python}, the Python {command} runs "
                "with, so the server cannot start",
                integrate.mcp_install_hint(python),
            )
        )
    ours = os.path.realpath(config_mod.db_path())
    try:
        store = os.path.realpath(paths.db_path({**_agent_env(agent), **env}))
    except InvalidInput as exc:  # a relative KEN_DB, written in by an older kenning
        fix = f"run `{again}` with KEN_DB a full path, or unset"
        checks.append(Check(f"{agent} mcp store", False, f"its registration: {exc}", fix))
        return checks
    if store != ours:
        how = ", ".join(f"{k}={v}" for k, v in env.items()) or "the agent's environment"
        checks.append(
            Check(
                f"{agent} mcp store",
                False,
                f"the MCP server opens {store} ({how}), not this store, {ours}",
                f"run `{again}` in the environment whose store {agent} should use "
                "(it writes KEN_DB and XDG_* as they are set there)",
            )
        )
    return checks


def _agent_env(agent: str) -> dict[str, str]:
    """The environment an agent gives its MCP server, before the entry's own `env`: some
    (Codex) pass only a few variables; the others pass their own (assumed to be this
    shell's)."""
    passes = agents.get(agent).mcp.passes_env
    if passes is None:
        return dict(os.environ)
    return {k: v for k, v in os.environ.items() if k in passes}


def _interpreter(command: str) -> str | None:
    """The Python a console script runs with (its #! line), when it is one. A script
    whose Python's path is too long for a #! line starts with `#!/bin/sh` and names
    it on the next line, as pip writes it (SH_EXEC)."""
    try:
        with open(command, "rb") as fh:
            first, second = fh.readline(512), fh.readline(4096)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    parts = first[2:].decode(errors="replace").split()
    if parts and os.path.basename(parts[0]) == "sh":
        named = SH_EXEC.match(second.decode(errors="replace"))
        parts = [named.group(1)] if named else []
    return parts[0] if parts and os.path.isfile(parts[0]) else None


SH_EXEC = re.compile("^'''exec' \"([^\"]+)\"")  # pip's #!/bin/sh start


def _ours() -> str:
    """The folder holding this kenning (site-packages, or a checkout's src), resolved."""
    return os.path.realpath(integrate.kenning_root())


def _kenning_run_by(command: str) -> str | None:
    """The folder holding the kenning a hook command runs, resolved; None when it
    cannot tell (its program gone, not a Python script: each event's check says so)."""
    root = integrate.hook_root(command)
    if root is not None:
        there = os.path.isfile(os.path.join(root, "kenning", "entry.py"))
        return os.path.realpath(root) if there else None
    python = _interpreter(shlex.split(command)[0])
    return _kenning_of(python) if python else None


def _kenning_of(python: str) -> str | None:
    """The folder holding the kenning `python` imports, resolved; None when it has none
    or cannot tell."""
    return _find_kenning(python) or None


def _find_kenning(python: str) -> str | None:
    """The folder holding the kenning `python` imports, resolved, asked of it (with this
    environment, as an agent started here passes it on); "" when it answers that it has
    none, None when it cannot tell. A Python of this one's environment imports this
    one's."""
    if _this_environment(python):
        return _ours()
    code = (
        "import importlib.util as u, os; s = u.find_spec('kenning'); "
        "print(os.path.dirname(os.path.dirname(s.origin)) if s and s.origin else '')"
    )
    try:
        done = subprocess.run(
            [python, "-c", code], capture_output=True, text=True, timeout=10, check=False, cwd="/"
        )
    except (OSError, subprocess.SubprocessError):
        return None
    root = done.stdout.strip()
    if done.returncode != 0:
        return None
    return os.path.realpath(root) if root else ""


def _version_at(root: str) -> str | None:
    """The version of the kenning installed in `root`, when its metadata is there."""
    return next((d.version for d in distributions(name="kenning", path=[root])), None)


def _another(roots: list[str]) -> str:
    """`the kenning in ROOT (version V), not this one (in ROOT)`: what another
    install's hooks or MCP server run, for a check's detail."""
    ours = _ours()
    mine = _version_at(ours)
    said = []
    for root in roots:
        version = _version_at(root)
        said.append(f"{root}{f' (version {version})' if version and version != mine else ''}")
    return (
        f"the kenning in {', '.join(said)}, not this one (in {ours}): another install, whose "
        "code may not work as this one's, nor open a store this one has migrated"
    )


MIGRATION_NAME = re.compile(r"^\s+(m\d{4}_\w+),\s*$", re.MULTILINE)


def _older_than_store(root: str) -> str:
    """What to say when the kenning in `root` is older than the store (its migrations
    lack one the store has, read from its `store/migrations.py`): it refuses the store,
    so its hooks fail, in the hook log only. "" when it is not, or cannot tell."""
    if not config_mod.db_path().exists():
        return ""
    try:
        text = Path(root, "kenning", "store", "migrations.py").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""
    _, listed, rest = text.partition("MIGRATIONS")
    known = set(MIGRATION_NAME.findall(rest.partition(")")[0])) if listed else set()
    missing = sorted(migrations.KNOWN - known)
    if not known or not missing:
        return ""
    return (
        f"that kenning is older than the store (it lacks migration {missing[-1]}), so it "
        "refuses the store: every hook it runs fails, and says so only in the hook log "
        "(`this store was written by a newer kenning`)"
    )


def _this_environment(python: str) -> bool:
    """Whether `python` is a Python of the environment (venv) this one runs in: the
    folder above its bin/, as the script names it. Not the Python itself resolved: every
    venv made from one base Python links to the same executable, each with its own
    site-packages."""
    home = os.path.dirname(os.path.dirname(os.path.abspath(python)))
    return os.path.realpath(home) == os.path.realpath(sys.prefix)


def _has_mcp(python: str) -> bool:
    """Whether `python` (the MCP server's, from its script's #! line) imports the MCP SDK,
    asked of it unless it is this environment's."""
    if _this_environment(python):
        return importlib.util.find_spec("mcp") is not None
    try:
        done = subprocess.run(
            [python, "-c", "import importlib.util as u, sys; sys.exit(u.find_spec('mcp') is None)"],
            capture_output=True,
            timeout=30,
            check=False,
            cwd="/",  # a folder named mcp where doctor runs is not the server's
        )
    except (OSError, subprocess.SubprocessError):
        return True  # cannot tell: say nothing rather than something wrong
    return done.returncode == 0


RECOVER = "sqlite3 FILE .recover"
# A store a newer kenning wrote is whole: going back to a backup would lose what it holds.
UPGRADE = (
    "upgrade kenning to the version that wrote it, the way you installed it (e.g. "
    "`pipx install --force .` in a checkout of that version); the store itself is fine"
)
# How long doctor waits for another process's lock on the store: it reports a held lock
# as busy (not as a failed check: a busy store is not a broken one), it does not queue
# behind it (a write waits BUSY_TIMEOUT_MS, and doctor opens the store more than once).
WAIT_SECONDS = 2.0


HELD = "stayed locked by another process"
UNREAD = "so it could not be checked"  # a lock that keeps readers out, not only writers


def _held(path: Path, read: str = "") -> Check:
    """The store another process keeps locked: nothing says it is damaged, so the fix is
    to free it, never to replace it. `read`: what was read of it when only writes are
    shut out (`BEGIN EXCLUSIVE` in WAL)."""
    what = (
        f"it reads ({read}), but nothing can be written to it: hooks keep their writes "
        "for later, and a `ken` command that writes waits"
        if read
        else UNREAD
    )
    return Check(
        "store",
        False,
        f"{path} {HELD} for {WAIT_SECONDS:g} s ({held_by(str(path))}), {what}; "
        "a lock is not damage",
        "close that program or let it finish, then run `ken doctor` again "
        "(keep the store: nothing says it is damaged)",
        busy=True,
    )


def _write_lock_free(store: Store) -> bool:
    """Whether a write could start: False while another process keeps the write lock
    (`BEGIN EXCLUSIVE` in WAL shuts out writers, not readers), when writes wait and hooks
    keep theirs for later. An empty transaction takes the lock and gives it back, writing
    nothing; a store this user cannot write says so in its own check, not as a lock."""
    try:
        with store.together():
            pass
    except StoreBusy:
        return False
    except KenningError:
        pass
    return True


def _write_fix(path: Path, elsewhere: str) -> str:
    """What makes `path`, which this user cannot write, writable again (or `elsewhere`)."""
    try:
        if os.statvfs(path).f_flag & os.ST_RDONLY:
            return f"remount the file system {path} is on read-write, or {elsewhere}"
        info = path.stat()
    except OSError:
        return elsewhere
    if info.st_uid != os.getuid():
        return f"chown it back to you (it belongs to uid {info.st_uid}), or {elsewhere}"
    if not info.st_mode & stat.S_IWUSR:
        return f"chmod u+w {path}"
    # Its mode lets its owner write, yet it cannot be written: an immutable file.
    return f"chattr -i {path}, or {elsewhere}"


def _writable(path: Path) -> bool:
    want = os.W_OK | (os.X_OK if path.is_dir() else 0)
    return os.access(path, want)


def _store_write_checks(path: Path) -> list[Check]:
    """The store and its folder, when this user cannot write them: every write (a hook's,
    `ken add`, the MCP server's) then fails, while reading still works."""
    elsewhere = "point KEN_DB at a store you can write"
    checks = []
    for target, what in (
        (path, "the store file"),
        (path.parent, "the store's folder (SQLite makes the -wal and -shm files there)"),
    ):
        if not _writable(target):
            checks.append(
                Check(
                    "store writable",
                    False,
                    f"{target}, {what}, cannot be written: nothing can be saved (hooks, "
                    "`ken add`, the MCP server)",
                    _write_fix(target, elsewhere),
                )
            )
    return checks


def _integrity(result: str) -> str:
    """SQLite's integrity check in one line: its first problem, and how many more."""
    if result == "ok":
        return result
    lines = [ln.strip() for ln in result.splitlines() if ln.strip() and not ln.startswith("***")]
    if not lines:
        return "damaged"
    more = len(lines) - 1
    return f"damaged: {lines[0]}" + (f" (and {more} more problems)" if more else "")


def _counted(store: Any) -> str:  # the SQLite store: `counts` is its own
    """How many memories the store holds, and how many wait for review; in an agent's
    shell only the memories it may know of (`items.may_know`: none withheld from it, no
    other's proposal), and not what waits (an agent is not told whether anything does)."""
    who = policy.Actor.from_env()
    if who.is_person:
        counts = store.counts()
        return f"{sum(counts.values())} items ({counts.get('proposed', 0)} proposed)"
    from kenning import items  # the redactor and the rest: only for an agent's count

    try:
        blocked = config_mod.Config().repos_not_delivered()
    except KenningError:
        return "items not counted (config.toml does not parse)"
    every = store.list_items(ItemQuery(statuses=(), include_expired=True))
    return f"{sum(items.may_know(who, i, blocked) for i in every)} items"


def _store_checks() -> list[Check]:
    path = config_mod.db_path()
    checks: list[Check] = []
    if not path.exists():
        checks.append(Check("store", True, f"{path} does not exist yet (made on first use)"))
        return checks
    unwritable = _store_write_checks(path)
    try:
        store = open_store(path, create=False, busy_seconds=WAIT_SECONDS)
    except StoreBusy:
        return [_held(path), *unwritable]
    except NewerStore as exc:
        return [Check("store", False, str(exc), UPGRADE), *unwritable]
    except KenningError as exc:
        fix = unwritable[0].fix if unwritable else "restore a backup or point KEN_DB elsewhere"
        return [Check("store", False, str(exc), fix), *unwritable]
    try:
        result = store.integrity_check()
        counted = _counted(store)
        writable = _write_lock_free(store)
    except StoreBusy:
        checks.append(_held(path))
    except KenningError as exc:  # pages damaged past the header: report it, go on
        checks.append(Check("store", False, str(exc), f"restore a backup (or `{RECOVER}`)"))
    else:
        read = f"integrity {_integrity(result)}, {counted}"
        if result == "ok" and not writable:
            checks.append(_held(path, read))
        else:
            checks.append(
                Check(
                    "store",
                    result == "ok",
                    f"{path}: {read}",
                    "" if result == "ok" else f"restore a backup (or `{RECOVER}`)",
                )
            )
    finally:
        store.close()
    checks += unwritable
    waiting = len(spool.pending(str(path)))
    if waiting:
        checks.append(
            Check(
                "spool",
                True,
                f"{waiting} write{'s' if waiting > 1 else ''} that hooks could not make "
                f"(the store was locked) wait in {spool.folder()}; "
                "the next `ken` command or hook makes them",
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


def state_folder_problem() -> tuple[str, str] | None:
    """Why kenning's state folder (the hook log, the spool, kept edits, the hook socket)
    cannot be used, and the fix; None when it can, or can be made on first use."""
    folder = str(config_mod.state_dir())
    fix = "set XDG_STATE_HOME to a folder of your own, or move {} out of the way"
    path = folder
    while not os.path.lexists(path):  # the nearest part of its path that is there
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent
    if not os.path.isdir(path):
        return f"{path} is not a folder", fix.format(path)
    if not _writable(Path(path)):
        return f"{path} cannot be written", _write_fix(
            Path(path), "set XDG_STATE_HOME to a folder you can write"
        )
    return None


def _state_checks() -> list[Check]:
    folder = config_mod.state_dir()
    problem = state_folder_problem()
    if problem is None:
        made = "" if folder.is_dir() else " (made on first use)"
        return [Check("state folder", True, f"{folder}{made}")]
    why, fix = problem
    return [
        Check(
            "state folder",
            False,
            f"{folder} cannot be made or written: {why}; hook errors are not logged (so the "
            "log below says nothing), writes a hook could not make are lost, and no hook "
            "server can start",
            fix,
        )
    ]


def _config_checks() -> list[Check]:
    """Whether memory is on, and what config.toml holds that kenning does not read."""
    path = config_mod.config_path()
    try:
        data = config_mod.read_file(path)
    except KenningError as exc:
        return [Check("config", False, str(exc), f"fix or remove {path}")]
    config = config_mod.Config(data)
    # Every value as a command would read it: one out of its range stops each command
    # that reads it, and every hook (which then records and tells nothing). Each is
    # named: fixing one to find the next is a round trip per value.
    failed: dict[str, Check] = {}
    for setting in config_mod.SETTINGS:
        try:
            config.value_of(setting)
        except KenningError as exc:
            default = setting.default
            shown = str(default).lower() if isinstance(default, bool) else str(default)
            fix = (
                f"ken config set {setting.key} {shown}"
                if isinstance(default, int | float | str) and default != ""
                else f"fix {setting.key} in {path}"
            )
            failed[setting.key] = Check("config", False, str(exc), fix)
    memory = Check("memory", True, "on: agents are told memories and sessions are recorded")
    setting = config_mod.Config.memory_enabled.setting
    if setting.key in failed:
        unread = failed[setting.key]
        memory = Check("memory", False, f"cannot tell: {unread.detail}", unread.fix)
    elif not config.memory_enabled:
        source = config.source(setting)
        memory = Check(
            "memory",
            False,
            f"turned off ({source}): agents are told nothing and nothing is recorded",
            "unset KEN_ENABLED"
            if source.startswith("env")
            else "ken config set memory.enabled true",
        )
    problems = config_mod.file_problems(data, for_agent=agentenv.detect_agent() is not None)
    if not problems and not failed:
        said = (
            f"{path}: every table and key is read"
            if path.exists()
            else f"no {path}: every setting is its default (`ken config list` shows them)"
        )
        return [memory, Check("config", True, said)]
    # The old switch table still works: a nudge, not a failure.
    return [memory, *failed.values()] + [
        Check(f"config {p.key}", p.detail.startswith("is the old place"), p.detail, p.fix)
        for p in problems
    ]


def _here_checks() -> list[Check]:
    """What is stored under an earlier key of the repo here (before its origin was
    added or changed): memories and projects that no longer apply are a nudge with the
    command that moves them; privacy switches that no longer apply are a failure."""
    path = config_mod.db_path()
    if not path.exists():
        return []
    try:
        store = open_store(path, create=False, busy_seconds=WAIT_SECONDS)
    except KenningError:
        return []  # the store's own check says why
    try:
        config = config_mod.Config()
        found = repokeys.earlier_keys(store, locate.here(store, config), config)
    except KenningError:
        return []  # the store's, the config's or the folder's own check says why
    finally:
        store.close()
    checks = []
    for earlier in found:
        key = earlier.stored.key
        if earlier.stored.what():
            checks.append(Check(f"repo:{key}", True, earlier.notes()[0], earlier.command))
        if earlier.switches_lost:
            detail, fix = repokeys.switches_left(key, earlier.stored.switches, earlier.now)
            checks.append(Check(f"switches of {key}", False, detail, fix))
    return checks


def _origin_checks() -> list[Check]:
    """The origin of the repo here, when its URL holds a secret (a token pasted into it):
    an origin whose key would hold it keys no repo (its path does, so other clones and
    the team do not share its memories); a credential in the URL's user part is left out
    of the key, yet sits in the repo's git config in plain text. The secret is never
    shown: the kinds found, and the key used."""
    try:
        here = locate.here(None, config_mod.Config())
    except KenningError:
        return []  # the config's or the folder's own check says why
    git = here.git
    if git is None or not git.origin:
        return []
    from kenning.redact import redact  # only here: doctor's other checks need none of it

    remote = git.remote or "origin"
    fix = f"git remote set-url {remote} <url without the credential>"
    if here.origin_secret is not None:
        detail = (
            f"the origin of this repo holds a secret ({here.origin_secret}), so it is not used "
            f"as the repo key: memories here are kept under the repo's path, {here.repo}, "
            "which no other clone shares"
        )
        return [Check("repo origin", False, detail, fix)]
    found = redact(git.origin)
    if not found.kinds:
        return []
    detail = (
        f"the origin's URL holds a secret ({', '.join(found.kinds)}); the repo key "
        f"({here.repo}) leaves it out, but git keeps it in plain text in its config"
    )
    return [Check("repo origin", True, detail, fix)]


STUCK = "does not answer (stopped or stuck): hooks run in their own process"


def describe_hook_server(status: dict[str, Any]) -> str:
    """One line about the running hook server, from its status."""
    digest = f" ({status['code_digest']})" if status.get("code_digest") else ""
    code = f"code {status.get('version', '?')}{digest} of {status.get('code_changed_at', '?')}"
    stale = (
        ""
        if status.get("current_code")
        else " (older than the code installed now: it steps aside at the next hook)"
    )
    return (
        f"pid {status['pid']}, started {status.get('started_at', '?')}, {code}{stale}, "
        f"{status.get('served', 0)} hooks answered"
    )


def describe_install(server: dict[str, Any]) -> str:
    """One line about any install's hook server (`hookstate.servers`): what it runs,
    which install started it, and whether it answers."""
    if not server.get("running"):
        said = "not running: its socket was left behind"
    else:
        digest = f" ({server['code_digest']})" if server.get("code_digest") else ""
        said = (
            f"pid {server['pid']}, started {server.get('started_at', '?')}, "
            f"code {server.get('version', '?')}{digest}"
        )
    where = f"kenning in {server['install']}, " if server.get("install") else ""
    python = server.get("python", "?")
    answers = "answers" if server.get("answers") else "does not answer"
    return f"{said}; {where}python {python}; {answers} at {server['socket']}"


def _hook_server_checks() -> list[Check]:
    blocked = state_folder_problem() is not None  # said once, under the store
    others = [
        Check(
            "hook server of another install",
            not older,
            describe_install(server) + (f"; {older}" if older else ""),
            "ken hook-server stop --all; and `ken integrate AGENT` for each agent whose hooks "
            "run that kenning"
            if older
            else "",
        )
        for server in hookstate.servers()
        if not server["current"] and server["running"]
        for older in [_older_than_store(os.path.dirname(str(server.get("install") or "/")))]
    ]
    if os.environ.get("KEN_HOOK_SERVER", "1") in ("0", "false", "no", "off"):
        off = "off (KEN_HOOK_SERVER=0): each hook runs alone"
        return [Check("hook server", True, off), *others]
    try:
        hookstate.socket_path()
    except hookstate.Refused as exc:
        if (problem := state_folder_problem()) is not None:  # the folder the socket is in
            why, fix = problem
            detail = (
                f"no hook socket: the state folder cannot be made ({why}); each hook runs alone"
            )
            return [Check("hook server", False, detail, fix), *others]
        return [
            Check(
                "hook server",
                False,
                f"{exc}; each hook runs alone",
                "remove that folder if it is not yours, or set XDG_RUNTIME_DIR to a folder "
                "of your own (mode 0700)",
            ),
            *others,
        ]
    status = hookstate.running()
    if status is None:
        starts = "none can start: see the state folder" if blocked else "the next hook starts it"
        return [Check("hook server", True, f"not running ({starts})"), *others]
    if not status.get("answers", True):
        pid = status["pid"]
        detail = f"{describe_hook_server(status)}; {STUCK}"
        fix = f"end it: `kill -CONT {pid}; kill {pid}` (the next hook starts another)"
        return [Check("hook server", False, detail, fix), *others]
    return [Check("hook server", True, describe_hook_server(status)), *others]


def recent_errors(limit: int = 10) -> list[str]:
    path = config_mod.log_path()
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    return lines[-limit:]


def _not_checked() -> Check:
    return Check(
        "self-check",
        False,
        f"not run: the store {HELD} (the store check names it)",
        "close that program or let it finish, then run `ken doctor --deep` again",
        busy=True,
    )


DEEP_NAMES = {
    "pages": "sqlite integrity",
    "search_index": "search index",
    "terms": "stemmed word counts",
    "words": "word counts",
    "orphans": "orphaned rows",
    "scopes": "scopes",
}


def _deep_checks(repair: bool) -> tuple[list[Check], list[str]]:
    """The store's self-check, after a repair when asked: one check per kind of problem
    (see `kenning.store.health`), and what the repair did."""
    path = config_mod.db_path()
    if not path.exists():
        return [Check("self-check", True, f"{path} does not exist yet: nothing to check")], []
    try:
        store = open_store(path, create=False, busy_seconds=WAIT_SECONDS)
    except StoreBusy:
        return [_not_checked()], []
    except NewerStore as exc:
        return [Check("self-check", False, str(exc), UPGRADE)], []
    except KenningError as exc:
        return [Check("self-check", False, str(exc), "restore a backup")], []
    try:
        done = list(store.repair().done) if repair else []
        health = store.deep_check()
    except StoreBusy:
        return [_not_checked()], []
    except KenningError as exc:
        return [Check("self-check", False, str(exc), f"restore a backup (or `{RECOVER}`)")], []
    finally:
        store.close()
    checks = []
    for name in health.checks:
        found = [p for p in health.problems if p.check == name]
        if not found:
            checks.append(Check(DEEP_NAMES[name], True, "ok"))
        for problem in found:
            fix = (
                "ken doctor --repair"
                if problem.repairable
                else f"restore a backup (or `{RECOVER}`)"
                if name == "pages"
                else ""
            )
            checks.append(Check(DEEP_NAMES[name], False, problem.detail, fix))
    return checks, done


def _refused_checks() -> list[Check]:
    """The files git and ssh name that were refused while doctor looked at the repo here
    (`paths.read_file`: a FIFO, a device, a file larger than any real one): kenning took
    each as missing, so the repo key may not be the one git would give."""
    return [
        Check(
            "file not read",
            False,
            paths.refusal(path, why),
            f"make {paths.as_text(path)} a regular file of a usual size, or remove it: "
            "until then kenning reads this repo as if it were not there",
        )
        for path, why in paths.refused().items()
    ]


def diagnose(
    names: tuple[str, ...] = agents.NAMES, *, deep: bool = False, repair: bool = False
) -> Report:
    """What `ken doctor` says; `deep` adds the store's self-check, `repair` first
    rebuilds what can be rebuilt."""
    report = Report()
    for agent in names:
        report.agents[agent] = _agent_checks(agent)
    report.store = _store_checks() + _state_checks()
    # A store another process keeps locked is not waited for again: once is enough to say
    # so. The self-check writes (FTS5's own check does), so a lock on writes alone keeps it
    # from running; what only reads waits for a lock that shuts out readers too.
    busy = any(c.name == "store" and c.busy for c in report.store)
    held = busy and any(UNREAD in c.detail for c in report.store)
    if deep or repair:
        report.deep, report.repaired = ([_not_checked()], []) if busy else _deep_checks(repair)
    report.config = _config_checks()
    report.hook_server = _hook_server_checks()
    report.here = _origin_checks() + ([] if held else _here_checks()) + _refused_checks()
    report.log = recent_errors()
    return report
