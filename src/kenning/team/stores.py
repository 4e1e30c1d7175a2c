"""Each workspace's team memory, behind the `Store` protocol.

The server reaches a workspace's memory only through `Workspaces.store(name)`, so the
backend is chosen in one place (`open_workspace_store`). Calls on one workspace's store
are serialized by a lock of its own: a store is one connection, and the server's
threads share it; different workspaces never wait for each other.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from kenning.store import Store

Opener = Callable[[str], Store]


def schema_for(workspace: str) -> str:
    """A workspace's schema name: `ken_w_` and a digest of its name (a name may hold
    any character; a schema name is kept to a safe, short alphabet)."""
    return "ken_w_" + hashlib.sha256(workspace.encode()).hexdigest()[:20]


def open_workspace_store(url: str, data_dir: Path) -> Opener:
    """The opener of workspaces' stores for the team database at `url`.

    Until the PostgreSQL store lands, each workspace's memory is a SQLite store in
    `data_dir` on the server host, named by the database and the workspace's schema."""
    key = hashlib.sha256(url.encode()).hexdigest()[:12]

    def opener(workspace: str) -> Store:
        from kenning.store import open_store

        return open_store(data_dir / f"{key}-{schema_for(workspace)}.db")

    return opener


class Workspaces:
    """The open stores of the workspaces, one each, opened when first asked for."""

    def __init__(self, opener: Opener) -> None:
        self._opener = opener
        self._stores: dict[str, Store] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    @contextmanager
    def store(self, workspace: str) -> Iterator[Store]:
        with self._guard:
            lock = self._locks.setdefault(workspace, threading.Lock())
        with lock:
            store = self._stores.get(workspace)
            if store is None:
                store = self._stores[workspace] = self._opener(workspace)
            yield store

    def close(self) -> None:
        with self._guard:
            for store in self._stores.values():
                store.close()
            self._stores.clear()
