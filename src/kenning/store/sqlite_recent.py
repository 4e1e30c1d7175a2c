"""The recent index: a second full-text index (`items_recent`, migration
`m0015_recent_index`) over only the newest items, which a search with a limit and
recall's candidate query read first (`sqlite_search`). FTS5's bm25 reads the whole list
of items of every word it ranks, so over the whole index their cost grew with the store.

`recent_index.since` is the oldest rowid the index holds and `n` how many rows it holds;
the triggers keep both in step for those rows, and the functions here move `since`.
"""

from __future__ import annotations

import sqlite3

# How many of the newest items the index holds, at least (RECENT_SLACK more at most, until
# the next write takes them out).
RECENT_ITEMS = 50_000
RECENT_SLACK = 2_000


def fill(conn: sqlite3.Connection) -> None:
    """Index the newest RECENT_ITEMS items in the (empty) recent index."""
    row = conn.execute(
        "SELECT rowid FROM items ORDER BY rowid DESC LIMIT 1 OFFSET ?", (RECENT_ITEMS - 1,)
    ).fetchone()
    since = int(row[0]) if row else 0
    conn.execute(
        "INSERT INTO items_recent(rowid, title, body, tags) "
        "SELECT rowid, title, body, tags FROM items WHERE rowid >= ?",
        (since,),
    )
    n = conn.execute("SELECT count(*) FROM items WHERE rowid >= ?", (since,)).fetchone()[0]
    conn.execute("UPDATE recent_index SET since = ?, n = ?", (since, n))


def after_delete(conn: sqlite3.Connection) -> None:
    """Once every item the recent index held is deleted, SQLite gives the next item the
    rowid after the newest left, which may be below `since`: move `since` down to it, so
    the next item is among the newest (the index holds nothing between)."""
    conn.execute(
        "UPDATE recent_index SET since = "
        "min(since, (SELECT coalesce(max(rowid), 0) + 1 FROM items))"
    )


def trim(conn: sqlite3.Connection) -> None:
    """Once the recent index holds RECENT_SLACK items more than RECENT_ITEMS, take the
    oldest of them out (a few thousand at a time, so no one write pays for many)."""
    since, n = conn.execute("SELECT since, n FROM recent_index").fetchone()
    if n < RECENT_ITEMS + RECENT_SLACK:
        return
    row = conn.execute(
        "SELECT rowid FROM items WHERE rowid >= ? ORDER BY rowid LIMIT 1 OFFSET ?",
        (since, n - RECENT_ITEMS),
    ).fetchone()
    if row is None:  # the count is off: doctor's repair recounts it
        return
    span = (since, row[0])
    gone = conn.execute(
        "SELECT count(*) FROM items WHERE rowid >= ? AND rowid < ?", span
    ).fetchone()[0]
    conn.execute(
        "INSERT INTO items_recent(items_recent, rowid, title, body, tags) "
        "SELECT 'delete', rowid, title, body, tags FROM items WHERE rowid >= ? AND rowid < ?",
        span,
    )
    conn.execute("UPDATE recent_index SET since = ?, n = n - ?", (row[0], gone))
