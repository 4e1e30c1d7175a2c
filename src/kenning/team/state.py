"""The host's team sync state on disk: one JSON file beside the hook log,
`$XDG_STATE_HOME/kenning/team-sync.json`, with a section per store (kenning.team.sync
says what each holds), and the lock one sync at a time holds.

Apart from `kenning.team.sync` so that `kenning.items.forget` can take a forgotten
memory out of the outbox (`forget`) without importing the sync, which imports items.
The standard library only, like the sync.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Collection, Iterator
from typing import Any

from kenning import config as config_mod
from kenning.errors import KenningError

STATE_FILE = "team-sync.json"


def state_path() -> str:
    return os.path.join(str(config_mod.state_dir()), STATE_FILE)


class Busy(KenningError):
    """Another sync holds the state's lock."""


@contextlib.contextmanager
def locked(wait: bool = True) -> Iterator[None]:
    """Hold the sync lock; Busy at once when `wait` is False and another sync has it."""
    config_mod.made_state_dir()
    path = state_path() + ".lock"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            raise Busy("another team sync is running") from None
        yield
    finally:
        os.close(fd)


def _read_all() -> dict[str, Any]:
    try:
        with open(state_path(), encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):
        return {}  # a broken state file: start again (push ids make resending safe)
    if not isinstance(data, dict):
        return {}
    if not isinstance(data.get("stores"), dict):  # broken the same way, one level down
        data["stores"] = {}
    return data


# Each part of a store's section, and what it is when missing or not of its type.
_PARTS: dict[str, type] = {
    "cursor": str,
    "pushed": dict,
    "outbox": list,
    "shared": dict,
    "repos": list,
    "uses": dict,
    "left": dict,
}


def load_state(store_path: str) -> dict[str, Any]:
    """This store's sync state (empty parts filled in, and a part of another type, as a
    file edited or damaged by hand may hold, taken as empty)."""
    section = _read_all().get("stores", {}).get(store_path)
    section = dict(section) if isinstance(section, dict) else {}
    for part, kind in _PARTS.items():
        if not isinstance(section.get(part), kind):
            section[part] = kind()
    return section


def team_here(store_path: str) -> tuple[str, tuple[str, ...]] | None:
    """The workspace of the team this host joined (its membership file) and the repos
    the team covers, as this store's last sync saw them; None when it joined none. Read
    where scopes are found (`kenning.locate`): no lock, and never an error."""
    try:
        with open(config_mod.team_path(), encoding="utf-8") as fh:
            joined = json.load(fh)
    except (OSError, ValueError):
        return None
    workspace = joined.get("workspace") if isinstance(joined, dict) else None
    if not isinstance(workspace, str) or not workspace.strip():
        return None
    # The state file holds every pushed memory's record too: a process (the warm hook
    # server) reads it again only when it changed.
    try:
        info = os.stat(state_path())
    except OSError:
        return workspace, ()
    stamp = (info.st_ino, info.st_mtime_ns, info.st_size)  # a save replaces the file whole
    kept = _REPOS_READ.get(store_path)
    if kept is None or kept[0] != stamp:
        repos = load_state(store_path)["repos"]
        kept = (stamp, tuple(str(r) for r in repos) if isinstance(repos, list) else ())
        _REPOS_READ[store_path] = kept
    return workspace, kept[1]


# store path -> (the state file's inode, mtime and size when read, the team's repos then)
_REPOS_READ: dict[str, tuple[tuple[int, int, int], tuple[str, ...]]] = {}


def save_state(store_path: str, section: dict[str, Any] | None) -> None:
    """Write this store's section (None removes it), replacing the file whole."""
    data = _read_all()
    stores = data.setdefault("stores", {})
    if section is None:
        stores.pop(store_path, None)
    else:
        stores[store_path] = section
    path = state_path()
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1)
    os.replace(tmp, path)


def forget(store_path: str, item_ids: Collection[str]) -> int:
    """Take forgotten memories out of this store's sync state: their entries waiting in
    the outbox (a memory's text, not sent yet: it never is now) and their share marks.
    What was pushed stays recorded (ids, no text): the server holds it already, and a
    host forgets only its own copies. Returns how many outbox entries went."""
    if not os.path.exists(state_path()):
        return 0
    wanted = set(item_ids)

    def names(entry: dict[str, Any]) -> bool:
        item = entry.get("item") if isinstance(entry.get("item"), dict) else {}
        return entry.get("local_id") in wanted or (item or {}).get("id") in wanted

    with locked():
        state = load_state(store_path)
        kept = [e for e in state["outbox"] if not (isinstance(e, dict) and names(e))]
        gone = len(state["outbox"]) - len(kept)
        shared = {k: v for k, v in state["shared"].items() if k not in wanted}
        if gone or len(shared) != len(state["shared"]):
            # The file is replaced whole; the one it replaces is zeroed through a handle
            # held across the replace, so its text does not linger in freed blocks.
            from kenning import drafts  # not on the hook path, which reads `team_here`

            with open(state_path(), "r+b") as before:
                save_state(store_path, {**state, "outbox": kept, "shared": shared})
                drafts.zero(before)
    return gone
