"""The SQLite store's connection and transactions: what every part of it writes through.

Connections run in autocommit mode and every write is a short `BEGIN IMMEDIATE`
transaction (`_write`), so many agents' hooks can write at once: the busy timeout queues
them instead of failing, and no write lock is held across anything slower than SQL. WAL
lets readers go on while a writer works, so a read waits only a few seconds for a lock
(`_wait_for`): what keeps it out is no short write, and the one who asked is told who
holds it (`held_by`). `secure_delete` zeroes freed pages, which
`forget` relies on to leave nothing of a forgotten text on disk; `checkpoint` then
empties the WAL of older copies.

A hook cannot wait as long as a person can: its agent stops it after a few seconds. A
store opened for a hook gets a `deadline` that bounds every wait for the write lock, and
a `spool`: the writes marked `@spoolable` (sessions, prompts, deliveries, uses, a new
item) that find the store locked go there instead of failing, and are replayed later,
each in one transaction with its row in `replays` (`replaying`), so a replay is never
applied twice.
"""

from __future__ import annotations

import functools
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, ParamSpec, Protocol, TypeVar

from kenning.errors import StoreBusy, StoreError
from kenning.model import Session
from kenning.store import migrations

BUSY_TIMEOUT_MS = 30_000  # the most a write waits for another's write lock
# The most a read waits for a lock. In WAL a read waits for no write: only a lock that
# shuts readers out stops it (another program's exclusive locking mode, or its
# `BEGIN EXCLUSIVE` on a store not in WAL), and such a lock is not over in a moment, so a
# person is told who holds it after a few seconds, not after a write's 30.
READ_WAIT_MS = 3_000
WIPE_WAIT_SECONDS = 2.0  # how long forget waits for readers before leaving the wipe to later
MMAP_BYTES = 256 * 1024 * 1024  # read pages straight from the OS cache, no copy per read


def friendly(exc: sqlite3.Error, path: str) -> StoreError:
    text = str(exc)
    if "readonly" in text or "read-only" in text:
        return StoreError(f"the store {path} is read-only; check its permissions")
    if "not a database" in text or "malformed" in text:
        return StoreError(
            f"the store {path} is damaged or not a kenning database; "
            "restore a backup or point KEN_DB elsewhere"
        )
    if "locked" in text or "busy" in text:
        return StoreBusy(
            f"the store {path} stayed locked by another process ({held_by(path)}); try again"
        )
    name = getattr(exc, "sqlite_errorname", "")
    if name == "SQLITE_FULL" or "disk is full" in text:
        return StoreError(
            f"the store {path} could not be written: the disk holding it is full ({text}); "
            "free some space there and run the command again"
        )
    if name in ("SQLITE_IOERR_SHMSIZE", "SQLITE_IOERR_SHMMAP", "SQLITE_IOERR_SHMOPEN"):
        return StoreError(
            f"the store {path} could not be opened: its shared-memory file {path}-shm could "
            f"not be made or grown ({text}, {name}); the disk holding it is likely full: "
            "free some space there and run the command again"
        )
    if "unable to open" in text:
        return StoreError(
            f"cannot open the store {path}; check that it is a file you can read and write "
            "(with its -wal and -shm files) in a folder that exists"
        )
    return StoreError(f"store error in {path}: {text}")


class Spool(Protocol):
    """Where a write that found the store locked goes (kenning.spool)."""

    def write(
        self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any], run: Callable[[], Any]
    ) -> bool:
        """Run the write, or keep it for later; True when it ran."""
        ...

    def session(self, agent: str, agent_session_id: str, found: Session | None) -> Session | None:
        """`found` (as stored) with the writes still kept for it applied."""
        ...


P = ParamSpec("P")
R = TypeVar("R")


def spoolable(
    spooled: Callable[[tuple[Any, ...]], Any],
) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Mark a write a hook may keep for later; `spooled` gives what it returns then."""

    def wrap(method: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(method)
        def run(*args: P.args, **kwargs: P.kwargs) -> R:
            store = args[0]
            assert isinstance(store, Core)
            if store.spool is None or store._depth:
                return method(*args, **kwargs)
            done: list[R] = []
            ran = store.spool.write(
                method.__name__,
                args[1:],
                dict(kwargs),
                lambda: done.append(method(*args, **kwargs)),
            )
            return done[0] if ran else spooled(args[1:])

        return run

    return wrap


class Core:
    """The connection, its transactions and the file on disk: what every part of
    `SQLiteStore` builds on."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        create: bool = True,
        busy_seconds: float = BUSY_TIMEOUT_MS / 1000,
    ) -> None:
        self.path = str(path)
        self.busy_ms = int(busy_seconds * 1000)  # a write's wait; a read's is READ_WAIT_MS
        self.deadline: float | None = None  # time.monotonic() after which no write waits
        self.spool: Spool | None = None
        self._depth = 0  # writes nest inside a replay's transaction
        target = Path(self.path)
        if not target.exists():
            if not create:
                raise StoreError(f"no store at {self.path}; `ken add` creates one")
            try:
                target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                # Create the file 0600 before SQLite opens it; its -wal and -shm copy the mode.
                fd = os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600)
                os.close(fd)
            except OSError as exc:
                raise StoreError(
                    f"cannot create the store {self.path}: {exc.strerror or exc}; "
                    "point KEN_DB at a file in a folder you can write"
                ) from None
        try:
            self.conn = sqlite3.connect(
                self.path,
                timeout=min(self.busy_ms, READ_WAIT_MS) / 1000,
                isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error as exc:
            raise friendly(exc, self.path) from None
        self.conn.row_factory = sqlite3.Row
        try:
            self._configure()
            # A store nobody can read fails here, within a read's wait; a migration is a
            # write, and waits as one. Another program's database is refused before
            # anything is written to it, its journal mode included.
            self.conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            migrations.refuse_foreign(self.conn, self.path)
            self._use_wal()
            self._wait_for(write=True)
            migrations.apply(self.conn, self.path)
            self._wait_for(write=False)
            if self.wipe_pending():  # a forget waited for a reader that has gone since?
                self.checkpoint(0)
        except sqlite3.Error as exc:
            self.conn.close()
            raise friendly(exc, self.path) from None
        except StoreError:
            self.conn.close()
            raise

    def _configure(self) -> None:
        c = self.conn
        self._wait_for(write=False)
        c.execute("PRAGMA foreign_keys = ON")
        c.execute("PRAGMA secure_delete = ON")
        c.execute("PRAGMA synchronous = NORMAL")
        c.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")

    def _use_wal(self) -> None:
        """Switch the file to WAL, for good: done once it is known to be a store."""
        c = self.conn
        mode = c.execute("PRAGMA journal_mode").fetchone()[0]
        if mode != "wal":
            self._retry(lambda: c.execute("PRAGMA journal_mode = WAL").fetchone())

    @staticmethod
    def _retry(fn: Any, attempts: int = 50) -> Any:
        # Switching to WAL needs a moment alone with the file; the busy handler does
        # not cover it, so wait briefly and try again.
        for attempt in range(attempts):
            try:
                return fn()
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or attempt == attempts - 1:
                    raise
                time.sleep(0.02 * (attempt + 1))
        return None

    def close(self) -> None:
        self.conn.close()

    def _wait_for(self, *, write: bool) -> None:
        """How long the statements from now on wait for another's lock: the one rule. A
        write waits as long as the store was opened for (`busy_seconds`: a hook's budget,
        doctor's 2 s, else BUSY_TIMEOUT_MS), a read at most READ_WAIT_MS of it; neither
        past the deadline, when there is one."""
        most = self.busy_ms if write else min(self.busy_ms, READ_WAIT_MS)
        if self.deadline is not None:
            most = min(most, int(max(0.0, self.deadline - time.monotonic()) * 1000))
        self.conn.execute(f"PRAGMA busy_timeout = {most}")

    def set_deadline(self, deadline: float | None) -> None:
        """From now on, wait for a lock at most until `deadline` (time.monotonic());
        None: the waits the store was opened with."""
        self.deadline = deadline
        self._wait_for(write=False)

    def spooling(self) -> bool:
        """Whether a write the lock holds up past the deadline is kept for later (a hook's
        store): writes are then made one at a time, each waiting in the spool if need be."""
        return self.spool is not None

    @contextmanager
    def unspooled(self) -> Iterator[None]:
        """Writes here are made now or fail: none is kept for later."""
        saved, self.spool = self.spool, None
        try:
            yield
        finally:
            self.spool = saved

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        if self._depth:  # inside a replay: its transaction holds this write too
            yield self.conn
            return
        try:
            self._wait_for(write=True)
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            self._wait_for(write=False)
            raise friendly(exc, self.path) from None
        self._depth += 1
        try:
            yield self.conn
            self.conn.execute("COMMIT")
        except sqlite3.Error as exc:
            self._roll_back()
            raise friendly(exc, self.path) from None
        except BaseException:
            self._roll_back()
            raise
        finally:
            self._depth -= 1
            self._wait_for(write=False)

    def _roll_back(self) -> None:
        """Undo the open transaction, unless SQLite ended it itself (a full disk does):
        a ROLLBACK then would fail and hide the error that ended it."""
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")

    @contextmanager
    def together(self, key: str = "") -> Iterator[None]:
        """The writes made inside happen as one: all of them or, on an error, none (and
        readers see none of them before all of them). What is read inside is read in the
        same transaction, which holds the write lock: no other writer comes between a
        check and the write it decides, whatever `key` (only one writer at a time here)."""
        with self._write():
            yield

    @contextmanager
    def replaying(self, entry_id: str) -> Iterator[bool]:
        """One transaction for a spooled write and its row in `replays`: yields False
        when that entry was replayed already (and then nothing is written)."""
        with self._write() as conn:
            seen = conn.execute("SELECT 1 FROM replays WHERE id = ?", (entry_id,)).fetchone()
            yield seen is None
            if seen is None:
                now = datetime.now(UTC)
                conn.execute(
                    "INSERT INTO replays (id, at) VALUES (?, ?)",
                    (entry_id, now.strftime("%Y-%m-%dT%H:%M:%S")),
                )
                week_ago = (now - timedelta(days=7)).strftime("%Y-%m-%dT%H:%M:%S")
                conn.execute("DELETE FROM replays WHERE at < ?", (week_ago,))

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        try:
            return self.conn.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise friendly(exc, self.path) from None

    @property
    def _wipe_marker(self) -> Path:
        return Path(f"{self.path}-wipe")

    def wipe_pending(self) -> bool:
        """Whether freed pages may still sit in the WAL (a reader kept them alive)."""
        return self._wipe_marker.exists()

    def checkpoint(self, wait: float = WIPE_WAIT_SECONDS, *, remember: bool = False) -> bool:
        """Copy the WAL into the file and empty it, waiting at most `wait` seconds for
        readers; True when done. With `remember`, a checkpoint that could not finish
        leaves the `-wipe` marker, which the next open of the store acts on."""
        try:
            self.conn.execute(f"PRAGMA busy_timeout = {int(wait * 1000)}")
            busy = self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        except sqlite3.Error as exc:
            raise friendly(exc, self.path) from None
        finally:
            self._wait_for(write=False)
        if not busy:
            self._wipe_marker.unlink(missing_ok=True)
            return True
        if remember:
            fd = os.open(self._wipe_marker, os.O_CREAT | os.O_WRONLY, 0o600)
            os.close(fd)
        return False

    def readers(self) -> list[str]:
        """The other processes of this user that have the store open, as `PID (name)`:
        what a wipe waits for."""
        return processes_using(self.path)

    def data_version(self) -> int:
        """A number that changes when another connection commits a change to the store
        (this connection's own writes leave it): how a long-lived reader sees that it
        should read again."""
        return int(self._read("PRAGMA data_version")[0][0])

    def integrity_check(self) -> str:
        """'ok', or every problem SQLite found, one a line."""
        return "\n".join(str(row[0]) for row in self._read("PRAGMA integrity_check"))


def held_by(path: str) -> str:
    """Who keeps the store at `path` locked, as a person is told it: the processes that
    have it open, else the commands that name them."""
    holders = processes_using(path)
    if holders:
        return f"it is open in {', '.join(holders)}"
    return f"`fuser -v {path}` or `lsof {path}` names the process that has it open"


def processes_using(path: str) -> list[str]:
    """The other processes of this user that have the store at `path` open (the file, its
    -wal or its -shm), as `PID (name)`: one of them holds a lock that keeps this one
    waiting. Read from /proc (Linux); elsewhere none are named."""
    if not os.path.isdir("/proc"):
        return []
    names = {os.path.realpath(f"{path}{end}") for end in ("", "-wal", "-shm")}
    found = []
    for pid in sorted(int(p) for p in os.listdir("/proc") if p.isdigit()):
        if pid == os.getpid():
            continue
        try:
            fds = os.listdir(f"/proc/{pid}/fd")  # only this user's processes are readable
            if names & {os.readlink(f"/proc/{pid}/fd/{fd}") for fd in fds}:
                with open(f"/proc/{pid}/comm", encoding="utf-8") as fh:
                    found.append(f"{pid} ({fh.read().strip()})")
        except OSError:
            continue
    return found
