"""Where the warm hook server lives and what it says about itself.

The hook client (on every prompt) finds the server's socket here, so this module
imports nothing but `os` up front. The server (`kenning.hooks.server`) keeps a status
file beside its socket: its pid, when it started, the code it runs, how many hooks it
answered. `ken doctor` and `ken hook-server` read it, and stop the server through it:
this install's, and the other installs' whose sockets are beside it (`servers`).

Each install of kenning has a socket of its own, `hooks-<install>.sock` in kenning's
state folder, named after where its code is and the Python environment it runs in
(`install`: the folder above its Python's `bin/`, the same for `ken` and for the hook
command `ken integrate` writes): a second install (a new virtualenv, another version)
never has its hooks answered by the other's server, with the other's code. (An install
upgraded in place keeps its socket: its server finds its code changed and steps aside.)
A Unix socket's path holds about 100 bytes, so when that path is longer the socket goes
to a folder of this user's alone: `$XDG_RUNTIME_DIR/kenning/`, else `kenning-<uid>/` in
`$TMPDIR` or `/tmp`. Such a folder has a name another local user can guess, and make
first to catch every hook's prompt: it is used only when it is a real folder (no link)
owned by this user with mode 0700, and refused otherwise (`Refused`; hooks then run in
their own process). The client also checks that whoever listens runs as this user before
it sends anything.
"""

from __future__ import annotations

import os
import stat
import sys

MAX_SOCKET_PATH = 100  # AF_UNIX paths are limited to about 108 bytes


class Refused(OSError):
    """No place for the hook socket that only this user controls (the message says why)."""


def _digest(text: str) -> str:
    """A short name for `text` (FNV-1a): one per state folder, with no import."""
    value = 0xCBF29CE484222325
    for byte in text.encode("utf-8", "surrogateescape"):
        value = ((value ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{value:016x}"


def _fits(path: str) -> bool:
    return len(path.encode("utf-8", "surrogateescape")) <= MAX_SOCKET_PATH


def install() -> str:
    """This install of kenning: the folder its code is in (links resolved) and the Python
    environment it runs in, the folder above its Python's `bin/` (a virtualenv's, as
    named, not the base Python it links to). Not `sys.prefix`: the hook command `ken
    integrate` writes runs Python without `site` (`-S`), and there it is the base
    Python's, where `ken` itself has the virtualenv's; both faces must name one server."""
    python = os.path.dirname(os.path.dirname(os.path.abspath(sys.executable)))
    return f"{os.path.realpath(code_folder())}\0{python}"


def socket_path() -> str:
    """This install's server's socket: in kenning's state folder, or, when that path is
    too long for a socket, in this user's private runtime folder. Raises Refused when
    that folder is not this user's alone."""
    from kenning import paths

    state = paths.state_dir()
    path = os.path.join(state, f"hooks-{_digest(install())}.sock")
    if _fits(path):
        check_folder(state, private=False)
        return path
    name = f"hooks-{_digest(state + chr(0) + install())}.sock"
    uid = os.getuid()
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    temp = os.environ.get("TMPDIR", "")
    folders = [os.path.join(runtime, "kenning")] if os.path.isabs(runtime) else []
    folders += [os.path.join(temp, f"kenning-{uid}")] if os.path.isabs(temp) else []
    for folder in [*folders, f"/tmp/kenning-{uid}"]:
        if _fits(os.path.join(folder, name)):
            check_folder(folder)
            return os.path.join(folder, name)
    raise Refused("no folder with a path short enough for the hook socket")  # pragma: no cover


def check_folder(folder: str, private: bool = True, create: bool = False) -> None:
    """Raise Refused unless `folder` is a folder (not a link) of this user's, and with
    `private`, open to no one else (0700). A folder not made yet passes (the server
    makes it, with `create`, and checks it again)."""
    if create and not os.path.lexists(folder):
        import contextlib

        with contextlib.suppress(OSError):  # made by another server meanwhile: checked below
            os.makedirs(folder, mode=0o700)
    try:
        found = os.lstat(folder)
    except FileNotFoundError:
        if create:
            raise Refused(f"cannot make {folder} for the hook socket") from None
        return
    except OSError as exc:  # a file where a folder of its path should be, or no access
        raise Refused(f"{folder} cannot be read ({exc.strerror}): no hook socket there") from None
    uid = os.getuid()
    if not stat.S_ISDIR(found.st_mode):
        raise Refused(f"{folder} is not a folder (a link or a file): no hook socket there")
    if found.st_uid != uid:
        raise Refused(
            f"{folder} belongs to uid {found.st_uid}, not to you (uid {uid}): another user "
            "may have made it to catch your hooks; no hook socket there"
        )
    if private and found.st_mode & 0o077:
        raise Refused(
            f"{folder} is open to other users (mode {stat.S_IMODE(found.st_mode):04o}, "
            "not 0700): no hook socket there"
        )


def status_path(socket: str) -> str:
    """The status file of the server at `socket`: `hooks-<install>-server.json` beside
    `hooks-<install>.sock`."""
    base = socket[: -len(".sock")] if socket.endswith(".sock") else socket
    return base + "-server.json"


def pid_path(socket: str) -> str:
    """The pid file of the server at `socket`: `hooks-<install>-server.pid` beside
    `hooks-<install>.sock`, holding its pid and a newline while it listens there."""
    base = socket[: -len(".sock")] if socket.endswith(".sock") else socket
    return base + "-server.pid"


def code_stamp() -> int:
    """The newest modification time of kenning's modules: it moves when code changes."""
    root = code_folder()
    newest = 0
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in files:
            if name.endswith(".py"):
                newest = max(newest, os.stat(os.path.join(folder, name)).st_mtime_ns)
    return newest


def code_digest() -> str:
    """A digest of kenning's modules as they are on disk, their paths and contents (12 hex
    digits): which code runs, said by `ken --version`, and by a hook server for the code
    it started on. Two installs of the same code give the same digest; an editable
    checkout that has moved on gives another."""
    import hashlib

    root = code_folder()
    found: list[str] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        found += [os.path.join(folder, name) for name in files if name.endswith(".py")]
    digest = hashlib.sha256()
    for path in sorted(found):
        digest.update(os.path.relpath(path, root).encode("utf-8", "surrogateescape") + b"\0")
        with open(path, "rb") as fh:
            digest.update(fh.read())
        digest.update(b"\0")
    return digest.hexdigest()[:12]


def code_folder() -> str:
    """The folder of the kenning code that runs (the first half of `install`)."""
    return os.path.dirname(os.path.abspath(__file__))


def _status_at(socket: str) -> dict[str, object] | None:
    """The status of the server whose socket is `socket`, when it runs."""
    import json

    try:
        with open(status_path(socket), encoding="utf-8") as fh:
            status = json.load(fh)
        pid = int(status["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not _is_hook_server(pid):
        return None  # a server that died without tidying up
    return dict(status)


def running() -> dict[str, object] | None:
    """This install's running server's status (pid, started_at, version, code_digest,
    code_changed_at, served, ..., current_code: whether it runs the code installed
    now, and answers: whether it answers a probe), or None."""
    try:
        status = _status_at(socket_path())
    except Refused:
        return None  # no socket of this user's alone: no server either
    if status is not None:
        status["current_code"] = status.get("code_stamp") == code_stamp()
        status["answers"] = answers(str(status.get("socket") or socket_path()))
    return status


def servers() -> list[dict[str, object]]:
    """Every hook server of kenning's state folder: one per install that started one (two
    checkouts, two virtualenvs), this install's first, found by their sockets
    (`hooks*.sock`) in the state folder, and in the runtime folder this install's socket
    is in when that path is too long (there, only those whose status names this state
    folder: the folder is shared by every state folder of this user's). Each is its
    status (when its server runs: pid, started_at, version, code_digest, install,
    python, ...) with `socket`, `current` (this install's), `running` and `answers`
    (whether its socket takes a connection now)."""
    from kenning import paths

    state = paths.state_dir()
    try:
        mine: str | None = socket_path()
    except Refused:
        mine = None
    found: dict[str, dict[str, object] | None] = {}
    for folder in dict.fromkeys([state, *([os.path.dirname(mine)] if mine else [])]):
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            if not (name.startswith("hooks") and name.endswith(".sock")):
                continue
            socket = os.path.join(folder, name)
            status = _status_at(socket)
            theirs = status is not None and status.get("state") == state
            if folder == state or socket == mine or theirs:
                found[socket] = status
    out: list[dict[str, object]] = []
    for socket in sorted(found, key=lambda path: (path != mine, path)):
        status = found[socket]
        entry: dict[str, object] = {**(status or {}), "socket": socket}
        entry |= {"current": socket == mine, "running": status is not None}
        entry["answers"] = answers(socket)
        if socket == mine and status is not None:
            entry["current_code"] = status.get("code_stamp") == code_stamp()
        out.append(entry)
    return out


def answers(path: str, seconds: float = 1.0) -> bool:
    """Whether a server at `path` answers now: it is sent an empty request (a probe) and
    says within `seconds` that it read it. A server stopped or stuck does not, though
    the kernel takes its connections."""
    import socket

    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(seconds)
    try:
        probe.connect(path)
        probe.shutdown(socket.SHUT_WR)
        probe.recv(1)  # ACCEPTED, or the end (an older server closes a probe unanswered)
    except OSError:
        return False
    finally:
        probe.close()
    return True


def stop() -> dict[str, object] | None:
    """Ask this install's running server to stop (SIGTERM: it finishes the hook in
    hand, then exits and tidies up); its status, or None when none runs."""
    status = running()
    return status if status is not None and _terminate(status) else None


def stop_all() -> list[dict[str, object]]:
    """Ask every running hook server (`servers`) to stop, whichever install started
    it; the status of each one asked."""
    return [s for s in servers() if s["running"] and _terminate(s)]


def _terminate(status: dict[str, object]) -> bool:
    import signal

    try:
        os.kill(int(str(status["pid"])), signal.SIGTERM)
    except ProcessLookupError:
        return False
    return True


def _is_hook_server(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False  # gone, or another user's process: not our server
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return b"kenning.hooks.server" in fh.read()
    except OSError:
        return True  # no /proc: the live pid is taken at its word
