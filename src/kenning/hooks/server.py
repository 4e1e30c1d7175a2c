"""The warm hook server: answers `ken hook` for the client in `client.py`.

Where it lives (its socket, its status file) is in `kenning.hookstate`.

It is started by the first hook that finds none, lives in its own session with no
terminal, and exits after `KEN_HOOK_SERVER_IDLE` seconds (default 600) without a
request, when it finds kenning's code changed on disk (it looks at most once a
second, before a request), or when asked to stop (`ken hook-server stop` sends it
SIGTERM; `ken hook --stop-server` asks over the socket). Beside its
socket it keeps a small status file (`hooks-server.json`, mode 0600): its pid, when it
started, the code it runs and how many hooks it answered, for `ken doctor` and
`ken hook-server status`, and for tests to see which process answered. Each
request carries the hook's argv, environment and stdin; requests are handled one at a time with the
process environment set to the request's, so a server serves every store and
config exactly as a hook process would. Whatever goes wrong becomes a line in the
hook log and an empty answer: the client, like any hook, never breaks an agent.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
import time
from collections.abc import Callable
from typing import Any

from kenning.hooklog import log
from kenning.hooks import wire
from kenning.hooks.run import OpenStores, handle_bytes
from kenning.hookstate import code_stamp, status_path


def _answer(conn: socket.socket, data: bytes) -> bool:
    """Send the answer; False when the client is gone."""
    try:
        conn.sendall(data)
    except OSError:
        return False
    return True


def _request(conn: socket.socket) -> bytes:
    chunks = []
    while chunk := conn.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


STORES = OpenStores()
STAMP_EVERY = 1.0  # seconds between looks at the code's modification times


class Code:
    """Whether the code this server runs is still the code on disk."""

    def __init__(self) -> None:
        self.stamp = code_stamp()
        self.checked = time.monotonic()

    def current(self) -> bool:
        now = time.monotonic()
        if now - self.checked >= STAMP_EVERY:
            self.checked = now
            return code_stamp() == self.stamp
        return True


def _utc(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kenning")
    except PackageNotFoundError:
        return "unknown"


class Status:
    """The server's status file: who it is, the code it runs, what it has answered."""

    def __init__(self, socket_path: str, code: Code, idle: float) -> None:
        self.path = status_path(socket_path)
        self.data: dict[str, Any] = {
            "pid": os.getpid(),
            "started_at": _utc(time.time()),
            "socket": socket_path,
            "python": sys.executable,
            "version": _version(),
            "code_stamp": code.stamp,
            "code_changed_at": _utc(code.stamp / 1e9),
            "idle_exit_secs": idle,
            "served": 0,
            "last_at": None,
        }

    def write(self) -> None:
        tmp = f"{self.path}.{os.getpid()}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(self.data, fh)
            os.replace(tmp, self.path)
        except OSError as exc:
            log("", "hook-server", f"cannot write {self.path}: {exc}")
            with contextlib.suppress(OSError):
                os.unlink(tmp)

    def answered(self) -> None:
        self.data["served"] += 1
        self.data["last_at"] = _utc(time.time())
        self.write()

    def remove(self) -> None:
        """Take the file away, unless another server has written its own since."""
        try:
            with open(self.path, encoding="utf-8") as fh:
                mine = json.load(fh).get("pid") == os.getpid()
        except (OSError, ValueError):
            return
        if mine:
            with contextlib.suppress(OSError):
                os.unlink(self.path)


def serve_one(conn: socket.socket, code: Code, status: Status | None = None) -> bool:
    """Answer one request; False when it is time to go (changed code, or asked to)."""
    conn.settimeout(10)
    try:
        argv, env, stdin = wire.unpack_request(_request(conn))
    except ValueError:
        _answer(conn, wire.OK)
        return True
    if argv[:1] == [wire.STOP] or not code.current():
        _answer(conn, wire.STEP_ASIDE)
        return False
    saved = dict(os.environ)
    later: list[Callable[[], None]] = []
    try:
        os.environ.clear()
        os.environ.update(env)
        out = handle_bytes(argv, stdin, stores=STORES, later=later)
        sent = _answer(conn, wire.OK + out.encode("utf-8"))
        conn.close()  # the agent goes on; the bookkeeping follows
        for action in later:
            try:
                action()
            except Exception as exc:  # noqa: BLE001 - logged like any hook error
                log("", "hook-server", f"{type(exc).__name__}: {exc}")
        if sent and status is not None:
            status.answered()  # counted once answered and recorded
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return True


def bind(path: str) -> socket.socket | None:
    """Listen on `path`; None when another server already does."""
    folder = os.path.dirname(path)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    if os.path.exists(path):
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(path)
        except OSError:
            os.unlink(path)  # left behind by a server that died
        else:
            probe.close()
            return None
        finally:
            probe.close()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        server.bind(path)
    except OSError:
        server.close()
        return None
    finally:
        os.umask(old)
    server.listen(16)
    return server


def serve(path: str, idle: float) -> None:
    code = Code()
    server = bind(path)
    if server is None:
        return
    status = Status(path, code, idle)
    status.write()
    stopping: list[int] = []
    # `ken hook-server stop` sends SIGTERM: finish the hook in hand, then go.
    signal.signal(signal.SIGTERM, lambda number, frame: stopping.append(number))
    server.settimeout(1.0)
    last = time.monotonic()
    try:
        while time.monotonic() - last < idle and not stopping:
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                keep = serve_one(conn, code, status)
            last = time.monotonic()
            if not keep:
                break
    finally:
        server.close()
        STORES.close()
        with contextlib.suppress(OSError):
            os.unlink(path)
        status.remove()


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        return 2
    try:
        idle = float(os.environ.get("KEN_HOOK_SERVER_IDLE", "600"))
    except ValueError:
        idle = 600.0
    try:
        serve(argv[0], idle)
    except Exception as exc:  # noqa: BLE001 - a server's top handler
        log("", "hook-server", f"{type(exc).__name__}: {exc}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
