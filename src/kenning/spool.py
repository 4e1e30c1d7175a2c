"""The spool: writes a hook could not make because another process held the store's
write lock, kept on disk until a later hook or `ken` command makes them.

An agent gives a hook a few seconds (a SessionEnd three) and then kills it, so a hook
waits for the lock only until its deadline. A write that finds the store still locked
(and every write after it in that hook, to keep their order) becomes one file in
`$XDG_STATE_HOME/kenning/spool/`: JSON naming the store, the store method and its
arguments. Files are written whole and renamed into place (a crash leaves no half
entry), mode 0600, named by time so that replaying them in name order keeps the order
they were made in. The spool is bounded (MAX_ENTRIES files of at most MAX_ENTRY_BYTES);
a write past that is dropped with a line in the hook log.

An entry names its store by the file's real path (`key`), so every spelling of one
store (through a symlink, say) keeps one spool; an entry a kenning before that
kept under another spelling is still found, by resolving the name it holds.

`replay` makes the waiting writes, oldest first, each in one transaction together with
its id in the store's `replays` table, then removes the file, its bytes zeroed first (a
prompt in it may quote a memory that is later forgotten): a replay interrupted after
its commit finds the id and skips the entry, so nothing is written twice. It stops at
the first entry the lock still blocks, and leaves the rest in order. `ken forget`
replays the spool before it deletes, so a waiting write is forgotten, or kept, as the
store's own writes are.

Only the writes a hook makes for the record are spooled (sessions, prompts and what they
signal for run lessons, what was delivered and used, a new item such as a handoff); a
project sync is not, since the file it reads stays the truth and the next sync reads it
again.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from kenning import ids
from kenning.config import state_dir
from kenning.errors import StoreBusy, StoreError
from kenning.hooklog import log
from kenning.model import Item, Kind, Link, Provenance, Scope, Session, Status
from kenning.store.base import SessionUpdate

MAX_ENTRIES = 1000
MAX_ENTRY_BYTES = 64 * 1024
METHODS = frozenset(
    {
        "insert_item",
        "upsert_session",
        "update_session",
        "note_prompt",
        "add_prompt",
        "add_signal",
        "record_delivery",
        "record_uses",
    }
)


def folder() -> Path:
    return state_dir() / "spool"


def _encode(value: Any) -> Any:
    if isinstance(value, Item):
        return {"$item": value.to_dict()}
    if isinstance(value, Session):
        return {"$session": value.to_dict()}
    if isinstance(value, SessionUpdate):
        return {"$session_update": _encode(value.changes())}
    if isinstance(value, list | tuple):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _encode(v) for k, v in value.items()}
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise TypeError(f"cannot spool a {type(value).__name__}")


def _item(data: dict[str, Any]) -> Item:
    known = {f.name for f in fields(Item)}
    values = {k: v for k, v in data.items() if k in known}
    values.update(
        kind=Kind(data["kind"]),
        scope=Scope.from_stored(data["scope"]),
        status=Status(data["status"]),
        tags=tuple(data.get("tags", ())),
        links=tuple(Link.parse(x) for x in data.get("links", ())),
        provenance=Provenance.from_dict(data.get("provenance", {})),
    )
    return Item(**values)


def _session(data: dict[str, Any]) -> Session:
    known = {f.name for f in fields(Session)}
    values = {k: v for k, v in data.items() if k in known}
    values["commits"] = tuple(data.get("commits", ()))
    return Session(**values)


def _update(data: dict[str, Any]) -> SessionUpdate:
    known = {f.name for f in fields(SessionUpdate)}
    values = {k: v for k, v in data.items() if k in known}
    if "commits" in values:
        values["commits"] = tuple(values["commits"])
    return SessionUpdate(**values)


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"$item"}:
            return _item(value["$item"])
        if set(value) == {"$session"}:
            return _session(value["$session"])
        if set(value) == {"$session_update"}:
            return _update(value["$session_update"])
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def _call(entry: dict[str, Any]) -> tuple[str, list[Any], dict[str, Any]]:
    """An entry's method, arguments and keyword arguments, decoded."""
    method, args, kwargs = entry["method"], _decode(entry["args"]), _decode(entry["kwargs"])
    if method == "update_session" and kwargs:
        # Kept before `update_session` took a SessionUpdate: its columns as keywords.
        args, kwargs = [*args, _update(kwargs)], {}
    return method, args, kwargs


def _entries() -> list[Path]:
    try:
        names = os.listdir(folder())
    except OSError:
        # None made yet, or none that can be (the state folder is a file, or not
        # yours): nothing waits there. `ken doctor` says what is wrong with the folder.
        return []
    return [folder() / n for n in sorted(names) if n.endswith(".json") and not n.startswith(".")]


def key(db: str) -> str:
    """The name an entry gives its store: the file's real path, the same for every
    spelling of it."""
    return os.path.realpath(db)


def pending(db: str) -> list[Path]:
    """The spooled entries waiting for the store at `db`, oldest first."""
    wanted = key(db)
    found = []
    for path in _entries():
        try:
            named = json.loads(path.read_bytes()).get("db")
            if isinstance(named, str) and (named == wanted or key(named) == wanted):
                found.append(path)
        except (OSError, ValueError, AttributeError):
            continue
    return found


def keep(db: str, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Write one entry; False (and a log line) when it cannot be kept."""
    entry_id = ids.new_ulid()
    entry = {"id": entry_id, "db": key(db), "method": method, "args": _encode(args)}
    entry["kwargs"] = _encode(kwargs)
    data = json.dumps(entry, ensure_ascii=False).encode("utf-8")
    where = folder()
    if len(data) > MAX_ENTRY_BYTES:
        log("", "spool", f"{method} of {len(data):,} bytes is too big to keep; dropped")
        return False
    try:
        where.mkdir(parents=True, exist_ok=True, mode=0o700)
        if len(os.listdir(where)) >= MAX_ENTRIES:
            log("", "spool", f"the spool holds {MAX_ENTRIES} writes already; {method} dropped")
            return False
        name = f"{time.time_ns():020d}-{entry_id}.json"
        tmp = where / f".{name}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, where / name)
    except OSError as exc:
        log("", "spool", f"cannot keep {method} in {where}: {exc.strerror or exc}; dropped")
        return False
    return True


class Spool:
    """The spool of one hook call (or command) for the store at `db`.

    Once one write has been kept for later, every later write of this call is kept too,
    so that replay makes them in the order they were made.
    """

    def __init__(self, db: str, active: bool = False) -> None:
        self.db = db
        self.active = active
        self.kept = 0

    def write(
        self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any], run: Callable[[], Any]
    ) -> bool:
        if not self.active:
            try:
                run()
                return True
            except StoreBusy:
                self.active = True
        if keep(self.db, method, args, kwargs):
            self.kept += 1
        return False

    def session(self, agent: str, agent_session_id: str, found: Session | None) -> Session | None:
        """`found` with the kept writes for it applied: a hook after one that could not
        write sees the session that hook started, and the prompts it recorded."""
        if not self.active:
            return found
        current = found
        names = {f.name for f in fields(Session)}
        for path in pending(self.db):
            try:
                entry = json.loads(path.read_bytes())
                method, args, _ = _call(entry)
            except (OSError, ValueError, KeyError, TypeError):
                continue
            if method == "upsert_session":
                started = args[0]
                if (started.agent, started.agent_session_id) == (agent, agent_session_id):
                    current = started
            elif current is None or not args or args[0] != current.id:
                continue
            elif method == "update_session" and isinstance(args[-1], SessionUpdate):
                changed = {k: v for k, v in args[-1].changes().items() if k in names}
                current = replace(current, **changed)
            elif method == "note_prompt":
                current = replace(
                    current,
                    first_prompt=current.first_prompt or args[1],
                    last_prompt=args[1] or current.last_prompt,
                    prompt_count=current.prompt_count + 1,
                )
        return current


def _named(path: Path) -> str:
    """How a log line names an entry: by its id (a ULID), the end of its file's name.
    The whole name, its time and id run together, reads to the log's redaction as a
    secret (high entropy); the id alone does not."""
    return f"entry {path.stem.rpartition('-')[2]}"


def _remove(path: Path) -> None:
    """Take a replayed entry out of the spool, then zero its bytes and delete it (out of
    the spool first: another process replaying now finds it gone, not zeroed)."""
    from kenning.drafts import erase  # only when there was something to replay

    gone = path.with_name(f".{path.name}.gone")
    try:
        os.replace(path, gone)
    except FileNotFoundError:
        return
    erase(gone)


def replay(store: Any, wait: float | None = None) -> int:
    """Make the writes waiting for `store`, oldest first; how many are left (0: none).

    `wait` bounds the wait for the lock (seconds); the store's own deadline, if any,
    applies otherwise.
    """
    entries = pending(store.path)
    if not entries:
        return 0
    saved_deadline, saved_spool = store.deadline, store.spool
    if wait is not None:
        store.deadline = time.monotonic() + wait
    store.spool = None
    try:
        for n, path in enumerate(entries):
            data = b""
            try:
                data = path.read_bytes()
                entry = json.loads(data)
                method, args, kwargs = _call(entry)
                if method not in METHODS:
                    raise ValueError(f"unknown method {method!r}")
            except FileNotFoundError:
                continue  # another process replayed it just now
            except (OSError, ValueError, KeyError, TypeError) as exc:
                # Read as another process, which replayed it, zeroed its bytes: not a
                # problem to log. Gone from the spool now, or zeroed where it is (nothing
                # in it to keep), it is no entry that was lost.
                if not path.exists():
                    continue
                if not data or data.strip(b"\0"):
                    log("", "spool", f"dropped unreadable {_named(path)}: {exc}")
                _remove(path)
                continue
            try:
                with store.replaying(entry["id"]) as fresh:
                    if fresh:
                        getattr(store, method)(*args, **kwargs)
            except StoreBusy:
                return len(entries) - n
            except StoreError as exc:
                # It can never be made (its session was forgotten, say): keeping it would
                # hold up every write behind it.
                log("", "spool", f"dropped {method} ({_named(path)}): {exc}")
            _remove(path)
        return 0
    finally:
        # The wait given here is undone too: left as it was, every write after it in
        # this process would wait that long at most (none, after a replay that timed out).
        store.spool = saved_spool
        store.set_deadline(saved_deadline)
