"""What `forget` leaves of a memory kept in sync from a file: a digest, no text.

A project file's entry (`kenning.projects`) and an agent's memory file (`kenning.collect`)
stay the truth after a person forgets the memory made from them: the next sync or
collection would read the same text and bring it back. So `forget` stores, for each
memory that has a `source`, one digest of that source and its text (whitespace
collapsed), in the store's `forgotten` table; a sync or a collection that meets the same
entry with the same text again leaves it out. The digest keeps no text (the source, a
file's path and an entry's heading, is hashed with it), and an entry edited since is new
text, read as any other.
"""

from __future__ import annotations

import hashlib
import os

from kenning import paths
from kenning.model import Item
from kenning.store import Store

_COLLECT = "collect:"
_PROJECT = "project:"


def digest(source: str, title: str, body: str) -> str:
    """The tombstone of an entry: its source and its text, whitespace collapsed."""
    text = " ".join(f"{title}\n{body}".split())
    return hashlib.sha256(f"{source}\0{text}".encode()).hexdigest()


def of(items: list[Item] | tuple[Item, ...]) -> list[str]:
    """The tombstones forgetting `items` leaves: one for each kept in sync from a file."""
    return [digest(i.source, i.title, i.body) for i in items if i.source and synced(i.source)]


def synced(source: str | None) -> bool:
    return bool(source) and str(source).startswith((_COLLECT, _PROJECT))


def source_file(store: Store, source: str | None) -> str | None:
    """The file a memory is kept in sync from (a project's file, an agent's memory
    file); None for any other memory, or a project no longer registered."""
    if not source or not synced(source):
        return None
    where = source.split("#", 1)[0]
    if where.startswith(_COLLECT):
        return where.split(":", 2)[2] if where.count(":") >= 2 else None
    _, slug, name = (where.split(":", 2) + ["", ""])[:3]
    folder = next((p.folder for p in store.projects() if p.slug == slug), None)
    return os.path.join(paths.os_path(folder), name) if folder and name else None
