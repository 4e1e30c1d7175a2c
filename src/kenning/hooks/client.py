"""The hook client: what `ken hook EVENT` runs on every prompt of every agent.

Starting Python and importing kenning costs several times what answering a hook does, so
a warm hook server (`server.py`) answers instead when one is running: this client
imports only os, sys and time (not even json; _socket when it connects), hands the
server its argv, the environment a hook reads (`wire.HOOK_ENV`) and stdin over a Unix
socket, and prints the answer. It sends nothing before the kernel has said that the
server runs as this user. It waits for the answer only as long as the event's own
timeout leaves room for (`wire.answer_seconds`: 1 s for SessionEnd, 3 s for a tool hook,
5 s for the others), and half a second for the server to say it has read the request
(one stopped or stuck never does). When no server answers in time, it handles the hook
itself (`run.py`) and starts a server for the next prompt. A server that finds kenning's
code changed under it steps aside, and is replaced the same way. Each install of kenning
(its code's folder and virtualenv) has a socket of its own (`hookstate.socket_path`), so
another install's server, running other code, never answers this one's hooks.

`KEN_HOOK_SERVER=0` turns the server off (every hook runs in its own process).
`KEN_HOOK_TRACE=1` says on stderr which process answered: the server (its pid) or this one.
"""

from __future__ import annotations

import os
import sys
import time

from kenning.hooks import wire
from kenning.hooks.answer import write_answer
from kenning.hookstate import Refused, socket_path

TYPE_CHECKING = False  # typing costs more to import than this whole client
if TYPE_CHECKING:
    import _socket

CONNECT_SECONDS = 1.0  # to connect and send: a live server takes each request at once
ANSWER_SECONDS = wire.ANSWER_SECONDS  # for `--stop-server`


class NotYours(OSError):
    """The socket's server runs as another user: nothing was sent to it."""


def _connect(path: str, seconds: float = CONNECT_SECONDS) -> _socket.socket:
    """A connection to the server at `path`, checked to run as this user."""
    # The C module: `socket` costs more to import than this whole client, and a hook
    # with the server off (KEN_HOOK_SERVER=0) needs neither.
    import _socket

    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        conn.settimeout(seconds)
        conn.connect(path)
        found = wire.peer(conn)
        uid = found[1] if found is not None else os.stat(path).st_uid
        if uid != os.getuid():
            raise NotYours(f"the hook socket {path} is served by uid {uid}, not by you")
    except BaseException:
        conn.close()
        raise
    return conn


Answer = tuple[str, list[tuple[list[str], str | None]]]  # what to print, what to start


def ask_server(path: str, request: bytes, give_up: int) -> Answer | None:
    """The server's answer, or None when no (current) server answered by `give_up` (a
    `time.monotonic_ns()`), or said within ACCEPT_SECONDS that it read the request (one
    stopped or stuck does not). Raises NotYours when another user's process listens."""
    left = (give_up - time.monotonic_ns()) / 1e9
    try:
        conn = _connect(path, max(0.01, min(CONNECT_SECONDS, left)))
    except NotYours:
        raise
    except OSError:
        return None
    import _socket  # imported by _connect

    try:
        conn.sendall(request)
        conn.shutdown(_socket.SHUT_WR)
        conn.settimeout(max(0.01, min(wire.ACCEPT_SECONDS, left)))
        chunk = conn.recv(65536)
        # ACCEPTED first; a server of an older kenning answers without it
        chunks = [chunk[1:] if chunk[:1] == wire.ACCEPTED else chunk]
        while chunk:
            # An answer already here is taken, even at the last moment: its server
            # records it as answered.
            left = (give_up - time.monotonic_ns()) / 1e9
            conn.settimeout(max(0.001, left))
            chunk = conn.recv(65536)
            chunks.append(chunk)
    except OSError:
        return None
    finally:
        conn.close()
    data = b"".join(chunks)
    if os.environ.get("KEN_HOOK_TRACE", "") not in ("", "0"):
        pid = wire.answer_pid(data)[0]
        _trace(f"answered by the hook server (pid {pid})" if pid else "no answer from a server")
    return wire.unpack_answer(data)


def start_server(path: str) -> None:
    from kenning import child

    # Not `-m`: that would put this hook's folder, the agent's repo, first on sys.path.
    argv = child.argv("kenning.hooks.server", "main", [path], site=False)
    env = wire.child_env(os.environ)  # it lives on: no API keys kept in it
    try:
        _spawn(argv, env)
    except (OSError, AttributeError, NotImplementedError, TypeError):
        import contextlib
        import subprocess

        with contextlib.suppress(OSError):
            subprocess.Popen(  # noqa: S603 - our own module, with our own interpreter
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                close_fds=True,
                env=env,
            )


def _spawn(argv: list[str], env: dict[str, str]) -> None:
    """Start `argv` in a session of its own, its standard streams on /dev/null and no
    other file of this process open in it: what `subprocess.Popen` with
    `start_new_session` and `close_fds` does, without importing `subprocess` (which
    costs a hook without the server more than starting the server does)."""
    try:
        open_fds = [
            int(fd) for fd in os.listdir("/proc/self/fd" if sys.platform == "linux" else "/dev/fd")
        ]
    except (OSError, ValueError):
        open_fds = []
    import contextlib

    for fd in open_fds:
        if fd > 2:
            # an agent's pipe must not outlive its hook; the listing's own fd is closed
            with contextlib.suppress(OSError):
                os.set_inheritable(fd, False)
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
        (os.POSIX_SPAWN_DUP2, 1, 2),
    ]
    # Not waited for: it outlives this process, and init reaps it.
    os.posix_spawn(argv[0], argv, env, file_actions=actions, setsid=True)


def start_ken(args: list[str], cwd: str | None) -> None:
    """Start `ken ARGS` detached, with this hook's own environment (the server has only
    part of it): a summary the server found due. It runs in the session's folder, and
    imports nothing from there (`kenning.child`)."""
    import contextlib
    import subprocess

    from kenning import child

    if args[:1] and args[0] in wire.STARTABLE:
        with contextlib.suppress(OSError):
            subprocess.Popen(  # noqa: S603 - our own command, one the server may ask for
                child.argv("kenning.entry", "main", args),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                cwd=cwd if cwd and os.path.isdir(cwd) else None,
            )


def stop_server() -> bool:
    """Ask a running server to exit; True when one answered."""
    try:
        conn = _connect(socket_path())
    except OSError:
        return False
    import _socket  # imported by _connect

    try:
        conn.sendall(wire.pack_request([wire.STOP], {}, b""))
        conn.shutdown(_socket.SHUT_WR)
        conn.settimeout(ANSWER_SECONDS)
        while conn.recv(16):  # ACCEPTED, then its answer: it is going
            pass
    except OSError:
        return False
    finally:
        conn.close()
    return True


def main(argv: list[str]) -> int:
    began = time.monotonic()  # a hook answered here after waiting for a server: its
    # store waits are counted from here, as in a hook that never asked one
    if argv[:1] == [wire.STOP]:
        return 0 if stop_server() else 1
    try:
        stdin = sys.stdin.buffer.read(wire.MAX_STDIN_BYTES + 1)
    except OSError:
        stdin = b""
    use_server = os.environ.get("KEN_HOOK_SERVER", "1") not in ("0", "false", "no", "off")
    if use_server and "--debug" not in argv and len(stdin) <= wire.MAX_STDIN_BYTES:
        # Bounded by the event's own timeout: a server that answers late (or not at all)
        # leaves this process time to answer the hook itself.
        give_up = time.monotonic_ns() + int(wire.answer_seconds(wire.hook_args(argv)[0]) * 1e9)
        env = wire.hook_env(os.environ) | {wire.DEADLINE: str(give_up)}
        try:
            path = socket_path()
            out = ask_server(path, wire.pack_request(argv, env, stdin), give_up)
        except Refused as exc:
            _log(argv, f"{exc}; hooks run in their own process")
        except NotYours as exc:
            _log(argv, f"{exc}: refused, nothing sent; hooks run in their own process")
        else:
            if out is not None:
                write_answer(argv, out[0])
                for args, cwd in out[1]:
                    start_ken(args, cwd)
                return 0
            start_server(path)
    from kenning.hooks import classcode

    classcode.keep()
    from kenning.hooks.run import main as run_main

    if os.environ.get("KEN_HOOK_TRACE", "") not in ("", "0"):
        _trace(f"answered in its own process (pid {os.getpid()})")
    return run_main(argv, stdin, started=began)


def _trace(message: str) -> None:
    """`KEN_HOOK_TRACE=1`: say on stderr which process answers this hook."""
    sys.stderr.write(f"ken hook: {message}\n")


def _log(argv: list[str], message: str) -> None:
    from kenning.hooklog import log

    event, agent, _ = wire.hook_args(argv)
    log(agent or "", event or "", message)
