"""Each workspace's team memory, behind the `Store` protocol.

The server reaches a workspace's memory only through `Workspaces.store(name)`, so the
backend is chosen in one place (`open_workspace_store`): the PostgreSQL store, in a
schema of its own per workspace in the team database (`ken_w_` and a digest of the
name), opened when the workspace is first asked for and kept open. The PostgreSQL store
is safe to share between the server's threads (a pool, one transaction per call).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from kenning.store import Store, open_store

Opener = Callable[[str], Store]


def schema_for(workspace: str) -> str:
    """A workspace's schema name: `ken_w_` and a digest of its name (a name may hold
    any character; a schema name is kept to a safe, short alphabet)."""
    return "ken_w_" + hashlib.sha256(workspace.encode()).hexdigest()[:20]


def open_workspace_store(url: str) -> Opener:
    """The opener of workspaces' stores in the team database at `url`."""

    def opener(workspace: str) -> Store:
        return open_store(url, schema=schema_for(workspace))

    return opener


class Workspaces:
    """The open stores of the workspaces, one each, opened when first asked for."""

    def __init__(self, opener: Opener) -> None:
        self._opener = opener
        self._stores: dict[str, Store] = {}
        self._opening: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    @contextmanager
    def store(self, workspace: str) -> Iterator[Store]:
        store = self._stores.get(workspace)
        if store is None:
            with self._guard:
                lock = self._opening.setdefault(workspace, threading.Lock())
            with lock:  # one opening (and migration) per workspace
                store = self._stores.get(workspace)
                if store is None:
                    store = self._stores[workspace] = self._opener(workspace)
        yield store

    def close(self) -> None:
        with self._guard:
            for store in self._stores.values():
                store.close()
            self._stores.clear()
