"""Installing kenning's hooks (and its MCP server) into each agent's own settings, and
taking them out.

Each agent keeps hooks in a file of its own, in a form of its own; its module in
`kenning.agents` says where and how (`Agent.hooks`), and this module reads and writes
the file. Installing is idempotent: kenning's handlers are recognised by their command
(`<path>/ken hook …`), replaced in place, and everything else in the file is kept; run
again, it writes the same bytes. Before kenning first changes a file, it is copied to
its one backup, `<name>.ken-backup`, which nothing kenning does later replaces: the
person's own file, never kenning's output (a file that is kenning's alone is simply
rewritten). `remove` takes out exactly kenning's handlers, and the groups and events
they leave empty, and then the files and folders kenning made (listed in its state
folder, `integrate-made.json`) that are left with nothing in them. A file kenning made
is backed up only once another program has written into it.

An agent that skips hooks the person has not trusted (Codex) gets, with `trust=True`,
the trust of exactly the handlers written here recorded where it keeps trust; comments
and everything else in that TOML file are kept.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import shlex
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kenning import agents, child, paths
from kenning.agents.agent import COMMAND_MARK, MCP_NAME, Agent, dump_object, load_object
from kenning.errors import InvalidInput


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


# What an agent's hook command runs, with this Python's `-S` (no `site`: no site-packages
# scan, no .pth files, a third of Python's start-up). It puts the folder that holds this
# kenning first on sys.path (instead of the agent's working folder, whose files must not
# shadow a module) and hands `ken hook EVENT ...` to `entry.hook`. Inline code rather than
# a file: a file gone (kenning removed, another Python's site-packages) would make Python
# exit 2, which Claude Code takes as "block this prompt"; a failed import exits 1.
HOOK_CODE = (
    "import sys; sys.path[0] = {root}; from kenning.entry import hook; sys.exit(hook(sys.argv[3:]))"
)
HOOK_ROOT = re.compile(r"sys\.path\[0\] = (\"(?:[^\"\\]|\\.)*\")")


def kenning_root() -> str:
    """The folder that holds this kenning's package (site-packages, or a checkout's src),
    links resolved: the one a child Python puts first (`child.root`)."""
    return str(Path(child.root()).resolve())


def hook_command(agent: str, event: str, ken: str | None = None) -> str:
    """The command an agent's settings run for `event`: `ken hook EVENT --agent AGENT`,
    started the fast way (HOOK_CODE) unless a `ken` to run is named."""
    if ken:
        return f"{shlex.quote(ken)} hook {event} --agent {agent}"
    code = HOOK_CODE.format(root=json.dumps(kenning_root()))
    python = shlex.quote(sys.executable)
    return f"{python} -S -c {shlex.quote(code)} ken hook {event} --agent {agent}"


def hook_root(command: str) -> str | None:
    """The kenning folder a fast hook command (HOOK_CODE) names; None for `ken hook ...`."""
    found = HOOK_ROOT.search(command)
    if not found:
        return None
    root: str = json.loads(found.group(1))
    return root


def settings_path(agent: str) -> Path:
    """The file an agent reads kenning's hooks from."""
    return agents.get(agent).hooks.path(os.environ)


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""
    except UnicodeDecodeError:
        raise InvalidInput(f"{path} is not UTF-8 text; fix it by hand first") from None
    except OSError as exc:  # a folder where the file belongs, no permission
        raise InvalidInput(f"cannot read {path}: {exc.strerror or exc}") from None


@contextlib.contextmanager
def _in_file(path: Path) -> Iterator[None]:
    """Name `path` in a refusal about its contents that does not name it yet."""
    try:
        yield
    except InvalidInput as exc:
        if str(path) in str(exc):
            raise
        raise InvalidInput(f"{path}: {exc}") from None


def read_json(path: Path, *, lenient: bool = False) -> dict[str, Any]:
    return load_object(read_text(path), path, lenient=lenient)


def write_file(path: Path, text: str, *, keep_backup: bool = True) -> Path | None:
    """Write atomically; an existing file that differs is first copied to its one backup,
    `<name>.ken-backup`, unless that is there already: the file as it was before kenning
    first changed it, never replaced by what kenning wrote since (a person who wants a
    newer one deletes it). Its path is returned when the file changed (not for a file
    that is kenning's alone: `keep_backup=False`). The new file and the backup keep the
    old file's mode: an agent's settings may hold tokens.

    A symlinked file (dotfiles kept in a repo) is written through: its target gets the
    new text, and the link stays a link.
    """
    try:
        return _write_file(path, text, keep_backup)
    except OSError as exc:
        raise InvalidInput(f"cannot write {path}: {exc.strerror or exc}") from None


def _write_file(path: Path, text: str, keep_backup: bool) -> Path | None:
    backup = None
    mode = 0o600
    made = _made()
    ours = made["files"].get(str(path))  # the digest of what kenning last wrote there
    if path.exists():
        old = path.read_bytes()
        if old == text.encode("utf-8"):
            return None
        mode = stat.S_IMODE(path.stat().st_mode)  # the target's, for a link
        if keep_backup:
            backup = path.with_name(f"{path.name}.ken-backup")
            # A file kenning made holds no person's text until another program writes it.
            if not backup.exists() and _digest(old) != ours:
                _write_atomically(backup, old, mode)
            if not backup.exists():
                backup = None
    elif not os.path.lexists(path):
        ours = ""  # made now: listed below
    target = Path(os.path.realpath(path))
    make_folder(target.parent)
    _write_atomically(target, text.encode("utf-8"), mode)
    if ours is not None:
        made = _made()
        made["files"][str(path)] = _digest(text.encode("utf-8"))
        _keep_made(made)
    return backup


# --- what `ken integrate` made: taken out again by `--remove` when left empty ----------


def _made_list() -> Path:
    """The files and folders `ken integrate` made (JSON, in kenning's state folder): a
    file, with the digest of what kenning last wrote in it."""
    return Path(paths.state_dir()) / "integrate-made.json"


def _digest(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def _made() -> dict[str, Any]:
    try:
        found = json.loads(_made_list().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        found = {}
    folders = found.get("folders") if isinstance(found, dict) else None
    files = found.get("files") if isinstance(found, dict) else None
    return {
        "folders": [f for f in folders if isinstance(f, str)] if isinstance(folders, list) else [],
        "files": {k: v for k, v in files.items() if isinstance(v, str)}
        if isinstance(files, dict)
        else {},
    }


def _keep_made(made: dict[str, Any]) -> None:
    """Keep the list; a state folder kenning cannot write (doctor says so) only means
    that what it made stays when it is removed."""
    with contextlib.suppress(OSError):
        if not made["folders"] and not made["files"]:
            _made_list().unlink(missing_ok=True)
            return
        _made_list().parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        _write_atomically(_made_list(), json.dumps(made, indent=1).encode(), 0o600)


def make_folder(folder: Path) -> None:
    """Make `folder` and the folders above it that are missing, and list each one made."""
    missing = []
    step = folder
    while not os.path.lexists(step) and step != step.parent:
        missing.append(str(step))
        step = step.parent
    folder.mkdir(parents=True, exist_ok=True)
    if missing:
        made = _made()
        made["folders"] = [*dict.fromkeys([*made["folders"], *missing])]
        _keep_made(made)


def remove_made(agent: Agent) -> list[str]:
    """Take out what `ken integrate` made for `agent` and left with nothing in it: a file
    that holds only an empty object or table, as kenning last wrote it, and then the
    folders left empty (deepest first). Anything that was there before kenning, or that
    holds anything, stays."""
    env = os.environ
    files = [agent.hooks.path(env), agent.mcp.path(env)]
    files += list(agent.commands(env)) if agent.commands else []
    files += [agent.trust.path(env)] if agent.trust is not None else []
    above = {str(parent) for f in files for parent in f.parents}
    made = _made()
    removed = []
    for name in dict.fromkeys(str(f) for f in files if str(f) in made["files"]):
        try:
            data = Path(name).read_bytes()
        except FileNotFoundError:
            del made["files"][name]
            continue
        except OSError:
            continue
        if _digest(data) == made["files"][name] and data.strip() in (b"", b"{}"):
            os.unlink(name)
            del made["files"][name]
            removed.append(name)
    for folder in sorted(
        (f for f in made["folders"] if f in above), key=lambda f: -f.count(os.sep)
    ):
        try:
            os.rmdir(folder)
        except FileNotFoundError:
            pass
        except OSError:
            continue  # not empty: stays listed
        made["folders"].remove(folder)
        removed.append(folder)
    _keep_made(made)
    return removed


def _removed_notes(removed: list[str]) -> list[str]:
    return [f"removed {f}: kenning made it, and nothing else is in it" for f in removed]


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


def install(name: str, *, trust: bool = False, ken: str | None = None) -> Change:
    agent = agents.get(name)
    path = agent.hooks.path(os.environ)
    old = read_text(path)
    commands = {event: hook_command(agent.name, event, ken) for event in agent.installs}
    new = agent.hooks.install(old, path, commands)
    backup = write_file(path, new, keep_backup=not agent.hooks.owned)
    change = Change(agent.name, path, "installed" if new != old else "unchanged", commands, backup)
    if agent.trust is not None:
        if trust:
            trust_path = write_trust(agent, old, new, path)
            change.notes.append(f"trusted these hooks in {trust_path}")
        else:
            change.notes.append(agent.trust.untrusted_note)
    change.notes += install_commands(agent)
    return change


def install_commands(agent: Agent) -> list[str]:
    """Write `/remember` and `/recall` in the agent's own form; a file of the person's
    own by that name is left as it is, and said so."""
    notes = []
    for path, text in (agent.commands(os.environ) if agent.commands else {}).items():
        old = read_text(path)
        if old == text:
            continue
        if old and COMMAND_MARK not in old:
            notes.append(f"{path} is your own command: left as it is, so /{path.stem} is yours")
            continue
        twin = next((t for t in agent.command_twins(path) if t.is_file()), None)
        if twin is not None and COMMAND_MARK not in read_text(twin):
            notes.append(f"{twin} is your own command: none written, so /{path.stem} is yours")
            continue
        write_file(path, text, keep_backup=False)
        notes.append(f"/{path.stem} installed: {path}")
    return notes


def remove_commands(agent: Agent) -> list[str]:
    """Delete the command files kenning wrote (and only those)."""
    notes = []
    for path in agent.commands(os.environ) if agent.commands else {}:
        if path.exists() and COMMAND_MARK in read_text(path):
            path.unlink()
            notes.append(f"/{path.stem} removed: {path}")
    return notes


def remove(name: str) -> Change:
    agent = agents.get(name)
    change = _remove_hooks(agent)
    change.notes += remove_commands(agent)
    change.notes += _removed_notes(remove_made(agent))
    return change


def _remove_hooks(agent: Agent) -> Change:
    path = agent.hooks.path(os.environ)
    old = read_text(path)
    if agent.hooks.owned:
        if not path.exists() or not agent.hooks.commands(old, path):
            return Change(agent.name, path, "absent")
        path.unlink()
        return Change(agent.name, path, "removed")
    new = agent.hooks.remove(old, path)
    if new == old:
        return Change(agent.name, path, "absent")
    backup = write_file(path, new)
    if agent.trust is not None:
        remove_trust(agent, old, path)
    return Change(agent.name, path, "removed", backup=backup)


def installed_commands(name: str) -> dict[str, str]:
    """The kenning hook commands an agent's settings hold, by event; InvalidInput when
    the file cannot be read (so nobody can tell)."""
    agent = agents.get(name)
    path = agent.hooks.path(os.environ)
    with _in_file(path):
        return agent.hooks.commands(read_text(path), path)


def outdated(name: str) -> bool:
    """Whether a hook file of kenning's own (OpenCode's plugin) is not what this kenning
    writes for the commands it holds: another version of kenning wrote it."""
    agent = agents.get(name)
    if not agent.hooks.owned:
        return False
    path = agent.hooks.path(os.environ)
    with _in_file(path):
        text = read_text(path)
    commands = agent.hooks.commands(text, path)
    return bool(commands) and agent.hooks.install(text, path, commands) != text


# --- TOML files (Codex): edited with tomlkit, which keeps the person's comments -------


def _load_toml(path: Path) -> Any:
    import tomlkit

    try:
        return (
            tomlkit.parse(path.read_text(encoding="utf-8")) if path.exists() else tomlkit.document()
        )
    except Exception as exc:  # noqa: BLE001 - tomlkit raises several kinds
        raise InvalidInput(f"{path} is not valid TOML ({exc}); fix it by hand first") from None


def _not_a_table(keys: tuple[str, ...], key: str) -> InvalidInput:
    """A settings file holding something else where a table of settings belongs."""
    name = ".".join((*keys[: keys.index(key)], key)) if key in keys else key
    return InvalidInput(f"'{name}' in that file is not a table of settings; fix it by hand first")


def _toml_table(doc: Any, keys: tuple[str, ...], *, create: bool, super_table: bool) -> Any:
    """The table at `keys` in `doc` (made when `create`), or None; InvalidInput when
    something other than a table is there."""
    import tomlkit

    table = doc
    for key in keys:
        if key not in table:
            if not create:
                return None
            table[key] = tomlkit.table(is_super_table=super_table)
        table = table[key]
        if not isinstance(table, dict):  # tomlkit's tables are dicts; a number is not
            raise _not_a_table(keys, key)
    return table


def _drop_empty(doc: Any, keys: tuple[str, ...]) -> None:
    """Remove the tables at `keys` (innermost first) that are left empty."""
    for depth in range(len(keys), 0, -1):
        parent = _toml_table(doc, keys[: depth - 1], create=False, super_table=False)
        if parent is not None and keys[depth - 1] in parent and not parent[keys[depth - 1]]:
            del parent[keys[depth - 1]]


def _keeping_comments(before: str, after: str) -> str:
    """`after` (a TOML file with kenning's tables taken out of `before`), with the
    comments and blank lines that ended a removed table put back: tomlkit keeps a comment
    written above a table with the table before it, so taking ours out took the person's
    comment on theirs too."""
    import difflib

    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    out: list[str] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        out += new[j1:j2]
        if tag in ("delete", "replace"):
            removed = old[i1:i2]
            kept = [n for n, line in enumerate(removed) if not _comment_or_blank(line)]
            tail = removed[kept[-1] + 1 :] if kept else removed
            if any(line.strip() for line in tail):
                out += tail
    text = "".join(out)
    ends = matcher.get_opcodes()[-1:]
    if ends and ends[0][0] == "delete" and text.endswith("\n\n"):
        # tomlkit set the tables kenning added at the end off with a blank line: it goes
        # with them (a file that ended in a blank line itself is written the same way)
        text = text[:-1]
    return text


def _comment_or_blank(line: str) -> bool:
    return not line.strip() or line.lstrip().startswith("#")


def _drop_entries(table: Any, entries: dict[str, dict[str, Any]]) -> int:
    dropped = 0
    for key, value in entries.items():
        entry = table.get(key)
        if entry is not None and all(entry.get(k) == v for k, v in value.items()):
            del table[key]
            dropped += 1
    return dropped


def write_trust(agent: Agent, old: str, new: str, hooks_path: Path) -> Path:
    """Trust exactly kenning's handlers in `new`, dropping the trust of those in `old`."""
    import tomlkit

    assert agent.trust is not None
    path = agent.trust.path(os.environ)
    doc = _load_toml(path)
    table = _toml_table(doc, agent.trust.table, create=True, super_table=False)
    wanted = agent.trust.entries(new, hooks_path)
    stale = agent.trust.entries(old, hooks_path)
    _drop_entries(table, {k: v for k, v in stale.items() if k not in wanted})
    for key, value in wanted.items():
        if dict(table.get(key) or {}) == value:
            continue  # left where it stands: taken out and put back, its blank lines move
        entry = tomlkit.table()
        for k, v in value.items():
            entry[k] = v
        table[key] = entry
    write_file(path, tomlkit.dumps(doc))
    return path


def remove_trust(agent: Agent, old: str, hooks_path: Path) -> None:
    """Drop the trust entries of kenning's handlers in `old`, and nothing else."""
    import tomlkit

    assert agent.trust is not None
    path = agent.trust.path(os.environ)
    if not path.exists():
        return
    doc = _load_toml(path)
    table = _toml_table(doc, agent.trust.table, create=False, super_table=False)
    before = tomlkit.dumps(doc)
    if table is None or not _drop_entries(table, agent.trust.entries(old, hooks_path)):
        return
    _drop_empty(doc, agent.trust.table)
    write_file(path, _keeping_comments(before, tomlkit.dumps(doc)))


# --- MCP server registration -----------------------------------------------------------

PASS_ENV = ("KEN_DB", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME")


MCP_REQUIREMENT = "mcp>=2.3,<3"  # as the `mcp` extra in pyproject.toml


def mcp_install_hint(python: str | None = None) -> str:
    """The command that installs the MCP SDK for the kenning that runs with `python`."""
    return f"{shlex.quote(python or sys.executable)} -m pip install '{MCP_REQUIREMENT}'"


def mcp_env() -> dict[str, str]:
    """The variables the server needs to find the same store and config as this `ken`.

    Some agents (Codex) pass a server only a few variables, so they are written out. A
    relative KEN_DB is refused (InvalidInput, `paths.db_path`): the agent starts its
    server in whatever folder it runs in, where that name is another file.
    """
    env = {k: os.environ[k] for k in PASS_ENV if os.environ.get(k)}
    if "KEN_DB" in env:
        paths.db_path()
    return env


def install_mcp(agent: str, ken: str | None = None) -> Change:
    """Register `ken mcp` with `agent`. The KEN_DB and XDG_* set here are written into the
    registration (some agents would not pass them on), and the change's notes say so.
    Without the MCP SDK in this Python the server is registered all the same (installing
    the SDK later makes it start), and a note names the command that installs it."""
    change = _install_mcp(agent, ken)
    if ken is None and importlib.util.find_spec("mcp") is None:
        change.notes.append(
            f"the MCP SDK is not installed for {sys.executable}, so {agent}'s MCP server "
            f"cannot start until it is: {mcp_install_hint()}"
        )
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


def _json_table(data: dict[str, Any], keys: tuple[str, ...], *, create: bool) -> Any:
    """The object at `keys` in `data` (made when `create`), or None; InvalidInput when
    something other than an object is there (`"mcpServers": []`)."""
    table: Any = data
    for key in keys:
        if key not in table:
            if not create:
                return None
            table[key] = {}
        table = table[key]
        if not isinstance(table, dict):
            raise _not_a_table(keys, key)
    return table


def _allow(settings: dict[str, Any], tools: tuple[str, ...], add: bool) -> dict[str, Any]:
    """`settings` with `tools` in (or out of) `permissions.allow`."""
    result: dict[str, Any] = json.loads(json.dumps(settings))
    perms = _json_table(result, ("permissions",), create=True)
    given = perms.get("allow", [])
    if not (isinstance(given, list) and all(isinstance(a, str) for a in given)):
        raise InvalidInput(
            "'permissions.allow' in that file is not a list of rules; fix it by hand first"
        )
    allow = [a for a in given if a not in tools]
    if add:
        allow += list(tools)
    if allow:
        perms["allow"] = allow
    else:
        perms.pop("allow", None)
    if not perms:
        del result["permissions"]
    return result


def _cli_register(agent: Agent, ken: str) -> bool:
    """Register through the agent's own CLI when it is installed here."""
    import subprocess

    if agent.mcp.cli is None:
        return False
    unregister, register = agent.mcp.cli(MCP_NAME, ken, ["mcp"], mcp_env())
    program = shutil.which(register[0])
    if not program:
        return False
    try:
        subprocess.run([program, *unregister[1:]], capture_output=True, timeout=30, check=False)
        done = subprocess.run(
            [program, *register[1:]], capture_output=True, timeout=30, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def check_mcp(name: str, *, install: bool = True) -> None:
    """Refuse, in one line naming the file, what `install_mcp` could not write into: a
    file it cannot read, or something else where its tables belong (and, to `install`,
    a relative KEN_DB). Nothing is written, so a command can check before it changes
    anything."""
    if install:
        mcp_env()
    reg = agents.get(name).mcp
    path = reg.path(os.environ)
    with _in_file(path):
        if reg.syntax == "toml":
            _toml_table(_load_toml(path), reg.table, create=False, super_table=True)
        else:
            _json_table(read_json(path), reg.table, create=False)
    if reg.allow and reg.allow_path is not None:
        with _in_file(reg.allow_path(os.environ)):
            _allow(read_json(reg.allow_path(os.environ)), reg.allow, True)


def _install_mcp(name: str, ken: str | None = None) -> Change:
    agent = agents.get(name)
    ken = ken or ken_command()
    check_mcp(name)
    path = agent.mcp.path(os.environ)
    with _in_file(path):
        return _register(agent, ken, path)


def _register(agent: Agent, ken: str, path: Path) -> Change:
    reg = agent.mcp
    entry = reg.entry(ken, ["mcp"], mcp_env())
    notes = list(reg.notes)
    if reg.syntax == "toml":
        import tomlkit

        doc = _load_toml(path)
        servers = _toml_table(doc, reg.table, create=True, super_table=True)
        table = tomlkit.table()
        for key, value in entry.items():
            table[key] = value
        servers[MCP_NAME] = table
        before = read_text(path)
        backup = write_file(path, tomlkit.dumps(doc))
        changed = tomlkit.dumps(doc) != before
    else:
        data = read_json(path)
        new = json.loads(json.dumps(data))
        _json_table(new, reg.table, create=True)[MCP_NAME] = entry
        backup = None
        if (
            not _cli_register(agent, ken)
            or _json_table(read_json(path), reg.table, create=False) is None
            or _json_table(read_json(path), reg.table, create=False).get(MCP_NAME) != entry
        ):
            backup = write_file(path, dump_object(new))
        changed = new != data
    if reg.allow and reg.allow_path is not None:
        settings = reg.allow_path(os.environ)
        write_file(settings, dump_object(_allow(read_json(settings), reg.allow, True)))
        notes.insert(0, f"allowed kenning's MCP tools to run without asking in {settings}")
    return Change(
        agent.name,
        path,
        "installed" if changed else "unchanged",
        {"mcp": f"{ken} mcp"},
        backup,
        notes,
    )


def remove_mcp(name: str) -> Change:
    agent = agents.get(name)
    reg = agent.mcp
    path = reg.path(os.environ)
    if reg.allow and reg.allow_path is not None:
        settings = reg.allow_path(os.environ)
        with _in_file(settings):
            old = read_json(settings)
            if old:
                new_settings = _allow(old, reg.allow, False)
                if new_settings != old:
                    write_file(settings, dump_object(new_settings))
    with _in_file(path):
        change = _unregister(agent, path)
    change.notes += _removed_notes(remove_made(agent))
    return change


def _unregister(agent: Agent, path: Path) -> Change:
    reg = agent.mcp
    if reg.syntax == "toml":
        import tomlkit

        if not path.exists():
            return Change(agent.name, path, "absent")
        doc = _load_toml(path)
        servers = _toml_table(doc, reg.table, create=False, super_table=True)
        if servers is None or MCP_NAME not in servers:
            return Change(agent.name, path, "absent")
        before = tomlkit.dumps(doc)
        del servers[MCP_NAME]
        _drop_empty(doc, reg.table)
        backup = write_file(path, _keeping_comments(before, tomlkit.dumps(doc)))
        return Change(agent.name, path, "removed", backup=backup)
    data = read_json(path)
    servers = _json_table(data, reg.table, create=False)
    if servers is None or MCP_NAME not in servers:
        return Change(agent.name, path, "absent")
    del servers[MCP_NAME]
    if not servers:
        parent = _json_table(data, reg.table[:-1], create=False)
        del parent[reg.table[-1]]
    backup = write_file(path, dump_object(data))
    return Change(agent.name, path, "removed", backup=backup)


def installed_mcp(name: str) -> dict[str, Any] | None:
    """kenning's MCP server entry in an agent's config, if any; InvalidInput when the
    file cannot be read."""
    reg = agents.get(name).mcp
    path = reg.path(os.environ)
    with _in_file(path):
        if reg.syntax == "toml":
            if not path.exists():
                return None
            servers = _toml_table(_load_toml(path), reg.table, create=False, super_table=True)
            entry = servers.get(MCP_NAME) if servers is not None else None
            return dict(entry) if entry is not None else None
        servers = _json_table(read_json(path, lenient=True), reg.table, create=False)
        found = servers.get(MCP_NAME) if servers is not None else None
        return found if isinstance(found, dict) else None
