"""Where the warm hook server lives and what it says about itself.

The hook client (on every prompt) finds the server's socket here, so this module
imports nothing but `os` up front. The server (`kenning.hooks.server`) keeps a status
file beside its socket: its pid, when it started, the code it runs, how many hooks it
answered. `ken doctor` and `ken hook-server` read it, and stop the server through it.
"""

from __future__ import annotations

import os

MAX_SOCKET_PATH = 100  # AF_UNIX paths are limited to about 108 bytes


def socket_path() -> str:
    """The server's socket: in kenning's state folder, or /tmp when that path is long."""
    from kenning import paths

    path = os.path.join(paths.state_dir(), "hooks.sock")
    if len(path.encode()) <= MAX_SOCKET_PATH:
        return path
    import hashlib

    digest = hashlib.sha1(path.encode()).hexdigest()[:16]
    return os.path.join("/tmp", f"kenning-{os.getuid()}-{digest}.sock")


def status_path(socket: str) -> str:
    """The status file of the server at `socket`: `hooks-server.json` beside
    `hooks.sock`."""
    base = socket[: -len(".sock")] if socket.endswith(".sock") else socket
    return base + "-server.json"


def code_stamp() -> int:
    """The newest modification time of kenning's modules: it moves when code changes."""
    root = os.path.dirname(os.path.abspath(__file__))
    newest = 0
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in files:
            if name.endswith(".py"):
                newest = max(newest, os.stat(os.path.join(folder, name)).st_mtime_ns)
    return newest


def running() -> dict[str, object] | None:
    """The running server's status (pid, started_at, version, code_changed_at, served,
    ..., and current_code: whether it runs the code installed now), or None."""
    import json

    try:
        with open(status_path(socket_path()), encoding="utf-8") as fh:
            status = json.load(fh)
        pid = int(status["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not _is_hook_server(pid):
        return None  # a server that died without tidying up
    status["current_code"] = status.get("code_stamp") == code_stamp()
    return dict(status)


def stop() -> dict[str, object] | None:
    """Ask the running server to stop (SIGTERM: it finishes the hook in hand, then
    exits and tidies up); its status, or None when none runs."""
    import signal

    status = running()
    if status is None:
        return None
    try:
        os.kill(int(str(status["pid"])), signal.SIGTERM)
    except ProcessLookupError:
        return None
    return status


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
