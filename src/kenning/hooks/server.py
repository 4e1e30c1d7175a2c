"""The warm hook server: answers `ken hook` for the client in `client.py`.

Where it lives (its socket, its status file) is in `kenning.hookstate`.

It is started by the first hook that finds none (as `kenning.child` starts kenning's
own Python: nothing of the agent's folder on its `sys.path`), lives in its own session
with no terminal, in `/`, and exits after `KEN_HOOK_SERVER_IDLE` seconds (default 600) without a
request, when it finds kenning's code changed on disk (it looks at most once a
second, before a request), or when asked to stop (`ken hook-server stop` sends it
SIGTERM; `ken hook --stop-server` asks over the socket). Beside its
socket it keeps a small status file (`hooks-<install>-server.json`, mode 0600): its pid, when it
started, the code it runs (kenning's version and `hookstate.code_digest`) and how many
hooks it answered, for `ken doctor` and
`ken hook-server status`; and a pid file (`hooks-<install>-server.pid`), which it removes when it
exits.

Each connection is read in a thread of its own, which first asks the kernel who is at
the other end (a process of another user is turned away) and gives the client
READ_SECONDS to send a request of at most `wire.MAX_REQUEST_BYTES`: a client that stalls
or sends too much holds up no other hook. A request read whole is acknowledged at once
(`wire.ACCEPTED`), which tells its client (and `hookstate.answers`, asking with an empty
request) that this server lives. Whole requests are then handled one at a time, each
only while its client still waits (the client sends when it gives up, bounded by the
event's timeout; the hook's store waits end before that), and each with the request's
environment (the variables a hook reads) handed down explicitly
(`kenning.paths.serving`; the server's own environment is never changed), so a server
serves every store and config exactly as a hook process would, and with the client's
process as the hook's (for the agent process above it). Each answer carries the server's
pid, which the client shows with `KEN_HOOK_TRACE=1`. Whatever goes wrong becomes a line
in the hook log and an empty answer: the client, like any hook, never breaks an agent.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kenning import __version__
from kenning.hooklog import log
from kenning.hooks import wire
from kenning.hooks.run import OpenStores, handle_bytes
from kenning.hookstate import (
    Refused,
    answers,
    check_folder,
    code_digest,
    code_folder,
    code_stamp,
    pid_path,
    status_path,
)
from kenning.paths import serving, state_dir


def _answer(conn: socket.socket, data: bytes) -> bool:
    """Send the answer; False when the client is gone."""
    try:
        conn.sendall(data)
    except OSError:
        return False
    return True


STORES = OpenStores()
STAMP_EVERY = 1.0  # seconds between looks at the code's modification times
READ_SECONDS = 2.0  # a client has this long to send its whole request
MAX_READERS = 32  # connections read at once; past that a client handles its hook itself


@dataclass(frozen=True, slots=True)
class Job:
    """A request read whole (`conn` waits for the answer), or a problem to log."""

    conn: socket.socket | None = None
    request: bytes = b""
    pid: int | None = None  # the client's process, when the kernel says
    problem: str = ""
    read_at: float = 0.0  # time.monotonic() when the request was read whole


def read_request(conn: socket.socket, seconds: float = READ_SECONDS) -> bytes:
    """The whole request, read within `seconds`; raises ValueError when the client
    stalls, goes away or sends more than a request may hold."""
    deadline = time.monotonic() + seconds
    data = bytearray()
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise ValueError(f"a client sent no whole request within {seconds:g} s")
        conn.settimeout(left)
        try:
            chunk = conn.recv(65536)
        except TimeoutError:
            continue
        except OSError as exc:
            raise ValueError(f"a client went away mid-request: {exc}") from None
        if not chunk:
            return bytes(data)
        data += chunk
        if len(data) > wire.MAX_REQUEST_BYTES:
            raise ValueError(
                f"a request of over {wire.MAX_REQUEST_BYTES:,} bytes was refused unread"
            )


def reader(conn: socket.socket, jobs: queue.Queue[Job], slots: threading.Semaphore) -> None:
    """Read one connection's request in this thread, and queue it for answering."""
    try:
        found = wire.peer(conn)
        if found is not None and found[1] != os.getuid():
            conn.close()
            jobs.put(Job(problem=f"turned away a connection from uid {found[1]}"))
            return
        try:
            request = read_request(conn)
        except ValueError as exc:
            conn.close()
            jobs.put(Job(problem=str(exc)))
            return
        _answer(conn, wire.ACCEPTED)  # read: the client now waits for the answer
        if not request:  # a probe (`hookstate.answers`): it has its answer
            conn.close()
            return
        pid = found[0] if found is not None else None
        jobs.put(Job(conn, request, pid, read_at=time.monotonic()))
    finally:
        slots.release()


def accept(server: socket.socket, jobs: queue.Queue[Job], going: threading.Event) -> None:
    """Take connections until the server goes, each read in its own thread."""
    slots = threading.Semaphore(MAX_READERS)
    while not going.is_set():
        try:
            conn, _ = server.accept()
        except TimeoutError:
            continue
        except OSError:
            return  # the listening socket was closed
        if not slots.acquire(blocking=False):
            conn.close()  # too many at once: those clients answer their hooks themselves
            continue
        threading.Thread(target=reader, args=(conn, jobs, slots), daemon=True).start()


class Code:
    """Whether the code this server runs is still the code on disk."""

    def __init__(self) -> None:
        self.stamp = code_stamp()
        self.digest = code_digest()
        self.checked = time.monotonic()

    def current(self) -> bool:
        now = time.monotonic()
        if now - self.checked >= STAMP_EVERY:
            self.checked = now
            return code_stamp() == self.stamp
        return True


def _utc(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


class Status:
    """The server's status file: who it is, the code it runs, what it has answered."""

    def __init__(self, socket_path: str, code: Code, idle: float) -> None:
        self.path = status_path(socket_path)
        self.data: dict[str, Any] = {
            "pid": os.getpid(),
            "started_at": _utc(time.time()),
            "socket": socket_path,
            "python": sys.executable,
            "install": code_folder(),
            "state": state_dir(),
            "version": __version__,
            "code_digest": code.digest,
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


def serve_one(
    conn: socket.socket,
    request: bytes,
    code: Code,
    status: Status | None = None,
    pid: int | None = None,
) -> bool:
    """Answer one request; False when it is time to go (changed code, or asked to)."""
    conn.settimeout(10)
    if not request:  # a probe (answered when read): not an error
        return True
    try:
        argv, env, stdin = wire.unpack_request(request)
    except ValueError as exc:
        log("", "hook-server", f"not a hook request ({exc})")
        _answer(conn, wire.OK)
        return True
    if argv[:1] == [wire.STOP] or not code.current():
        _answer(conn, wire.STEP_ASIDE)
        return False
    deadline = _deadline(env.pop(wire.DEADLINE, ""), argv) - wire.ANSWER_MARGIN
    if time.monotonic() >= deadline:
        # Its client has given up waiting and answers the hook itself: answering it too
        # would record the prompt twice.
        return True
    later: list[Callable[[], None]] = []
    starts: list[tuple[list[str], str | None]] = []
    # The hook's own environment, handed down explicitly: this process's stays as it is.
    with serving(wire.hook_env(env)) as hook_env:
        out = handle_bytes(
            argv,
            stdin,
            stores=STORES,
            later=later,
            caller=pid,
            starts=starts,
            env=hook_env,
            deadline=deadline,
        )
        sent = _answer(conn, wire.pack_answer(out, starts, os.getpid()))
        conn.close()  # the agent goes on; the bookkeeping follows
        # unless its client gave up waiting first: it handles the hook itself, and would
        # record the prompt, and what was told, a second time
        for action in later if sent else ():
            try:
                action()
            except Exception as exc:  # noqa: BLE001 - logged like any hook error
                log("", "hook-server", f"{type(exc).__name__}: {exc}")
    if sent and status is not None:
        status.answered()  # counted once answered and recorded
    return True


def _deadline(sent: str, argv: list[str]) -> float:
    """When the client gives up on its answer (time.monotonic()): the time it sent, or,
    from a client that sends none, its wait counted from now."""
    try:
        return int(sent) / 1e9
    except ValueError:
        return time.monotonic() + wire.answer_seconds(wire.hook_args(argv)[0])


PROBE_AGAIN = 0.05  # seconds before a socket that did not answer is asked again


def _same_file(path: str, stamp: tuple[int, int] | None) -> bool:
    try:
        found = os.stat(path)
    except OSError:
        return False
    return stamp == (found.st_dev, found.st_ino)


def bind(path: str) -> socket.socket | None:
    """Listen on `path`; None when another server already does, or when its folder is
    not this user's alone (logged)."""
    folder = os.path.dirname(path)
    try:
        check_folder(folder, private=folder != state_dir(), create=True)
    except Refused as exc:
        log("", "hook-server", str(exc))
        return None
    if os.path.exists(path):
        if answers(path):
            return None
        time.sleep(PROBE_AGAIN)  # a server between its bind and its listen answers later
        if answers(path):
            return None
        with contextlib.suppress(OSError):
            os.unlink(path)  # left behind by a server that died
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


def write_pid(path: str) -> None:
    """The pid file beside the socket (written whole, then moved into place)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(f"{os.getpid()}\n")
        os.replace(tmp, path)
    except OSError as exc:
        log("", "hook-server", f"cannot write {path}: {exc}")
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def remove_pid(path: str) -> None:
    """Take the pid file away, unless another server has written its own since."""
    try:
        with open(path, encoding="ascii") as fh:
            mine = fh.read().strip() == str(os.getpid())
    except OSError:
        return
    if mine:
        with contextlib.suppress(OSError):
            os.unlink(path)


def serve(path: str, idle: float) -> None:
    code = Code()
    server = bind(path)
    if server is None:
        return
    # The socket file this server made: at its end it takes that one away, never one
    # another server bound after this one's was deleted.
    made = os.stat(path)
    mine = (made.st_dev, made.st_ino)
    pidfile = pid_path(path)
    write_pid(pidfile)
    status = Status(path, code, idle)
    status.write()
    stopping: list[int] = []
    # `ken hook-server stop` sends SIGTERM: finish the hook in hand, then go.
    signal.signal(signal.SIGTERM, lambda number, frame: stopping.append(number))
    server.settimeout(1.0)
    jobs: queue.Queue[Job] = queue.Queue()
    going = threading.Event()
    threading.Thread(target=accept, args=(server, jobs, going), daemon=True).start()
    last = time.monotonic()
    try:
        while time.monotonic() - last < idle and not stopping:
            try:
                job = jobs.get(timeout=1.0)
            except queue.Empty:
                continue
            if job.conn is None:
                log("", "hook-server", job.problem)
                continue
            with job.conn:
                keep = serve_one(job.conn, job.request, code, status, job.pid)
            last = time.monotonic()
            if not keep:
                break
    finally:
        going.set()
        server.close()
        _step_aside(jobs)
        STORES.close()
        if _same_file(path, mine):
            with contextlib.suppress(OSError):
                os.unlink(path)
        status.remove()
        remove_pid(pidfile)


def _step_aside(jobs: queue.Queue[Job]) -> None:
    """Tell the clients still waiting that this server is going: they answer their own
    hooks."""
    while True:
        try:
            job = jobs.get_nowait()
        except queue.Empty:
            return
        if job.conn is not None:
            with job.conn:
                _answer(job.conn, wire.STEP_ASIDE)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        return 2
    # It serves every folder and holds none: not the agent's it was started in.
    os.chdir("/")
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
