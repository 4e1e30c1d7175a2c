"""The hook client: what `ken hook EVENT` runs on every prompt of every agent.

Starting Python and importing kenning costs several times what answering a hook
does, so a warm hook server (`server.py`) answers instead when one is running: this
client imports only os, sys and _socket (not even json), hands the server its argv, environment
and stdin over a Unix socket, and prints the answer. When no server answers, it
handles the hook itself (`run.py`) and starts a server for the next prompt. A server
that finds kenning's code changed under it steps aside, and is replaced the same way.

`KEN_HOOK_SERVER=0` turns the server off (every hook runs in its own process).
"""

from __future__ import annotations

import _socket  # the C module: `socket` costs more to import than this whole client
import os
import sys

from kenning.hooks import wire
from kenning.hookstate import socket_path

TIMEOUT_SECONDS = 8.0


def ask_server(path: str, request: bytes) -> str | None:
    """The server's answer, or None when no (current) server answered."""
    try:
        conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    except OSError:
        return None
    try:
        conn.settimeout(TIMEOUT_SECONDS)
        conn.connect(path)
        conn.sendall(request)
        conn.shutdown(_socket.SHUT_WR)
        chunks = []
        while chunk := conn.recv(65536):
            chunks.append(chunk)
    except OSError:
        return None
    finally:
        conn.close()
    answer = b"".join(chunks)
    if not answer.startswith(wire.OK):
        return None
    return answer[1:].decode("utf-8", "replace")


def start_server(path: str) -> None:
    import contextlib
    import subprocess

    with contextlib.suppress(OSError):
        subprocess.Popen(  # noqa: S603 - our own module, with our own interpreter
            [sys.executable, "-m", "kenning.hooks.server", path],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )


def stop_server() -> bool:
    """Ask a running server to exit; True when one answered."""
    request = wire.pack_request([wire.STOP], {}, b"")
    try:
        conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    except OSError:
        return False
    try:
        conn.settimeout(TIMEOUT_SECONDS)
        conn.connect(socket_path())
        conn.sendall(request)
        conn.shutdown(_socket.SHUT_WR)
        conn.recv(16)
    except OSError:
        return False
    finally:
        conn.close()
    return True


def main(argv: list[str]) -> int:
    if argv[:1] == [wire.STOP]:
        return 0 if stop_server() else 1
    try:
        stdin = sys.stdin.buffer.read()
    except OSError:
        stdin = b""
    use_server = os.environ.get("KEN_HOOK_SERVER", "1") not in ("0", "false", "no", "off")
    if use_server and "--debug" not in argv:
        path = socket_path()
        out = ask_server(path, wire.pack_request(argv, dict(os.environ), stdin))
        if out is not None:
            _write(out)
            return 0
        start_server(path)
    from kenning.hooks.run import main as run_main

    return run_main(argv, stdin)


def _write(out: str) -> None:
    if out:
        sys.stdout.write(out if out.endswith("\n") else out + "\n")
        sys.stdout.flush()
