"""The store's self-check (`ken doctor --deep`) and repair (`ken doctor --repair`).

What can go wrong in a file the user owns, and what each check reads:

- **pages**: SQLite's own `PRAGMA integrity_check` (b-trees, indexes, free list). Only a
  backup mends a file that fails it.
- **search index**: FTS5's `integrity-check` with the content check on, which reads the
  index against the `items` rows it was built from. Rebuilt from `items`.
- **word counts**: the `terms` (stemmed) and `words` (as typed) tables that recall and
  search read instead of walking the index, each compared with a fresh count from the
  `items` rows themselves, in tables made inside a transaction that is rolled back.
  Recounted from `items`.
- **orphans**: versions and uses of items that are gone, deliveries of sessions that
  are gone, file stamps of projects that are gone (rows foreign keys should have
  removed, left by a tool that wrote the file without them). Deleted: they belong to
  nothing a person can see, and a forgotten item's versions must not outlive it.
- **scopes**: items whose stored scope no longer reads as a scope. Reported with the
  command that moves them; never guessed at.

A repair rebuilds and deletes in one transaction, so a failure leaves the store as it
was, and it says what it did.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Any

from kenning.ids import short_id
from kenning.model import Scope
from kenning.store import sqlite_recent as recent

MAX_SHOWN = 5  # examples quoted per finding

# Rows that point at something gone: (what, table, the query that finds them).
_ORPHANS = (
    (
        "versions of deleted items",
        "revisions",
        "SELECT rowid FROM revisions WHERE item_id NOT IN (SELECT id FROM items)",
    ),
    (
        "uses of deleted items",
        "uses",
        "SELECT rowid FROM uses WHERE item_id NOT IN (SELECT id FROM items)",
    ),
    (
        "deliveries of deleted sessions",
        "deliveries",
        "SELECT rowid FROM deliveries WHERE session_id NOT IN (SELECT id FROM sessions)",
    ),
    (
        "file stamps of removed projects",
        "project_files",
        "SELECT rowid FROM project_files WHERE slug NOT IN (SELECT slug FROM projects)",
    ),
)

# Fresh counts made from `items`, as the migrations first made them.
_RECOUNT = (
    (
        "terms",
        "term",
        "porter unicode61 remove_diacritics 2",
    ),
    (
        "words",
        "word",
        "unicode61 remove_diacritics 2",
    ),
)


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing a check found wrong."""

    check: str  # pages, search_index, terms, words, orphans, scopes
    detail: str
    repairable: bool
    count: int = 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "detail": self.detail,
            "repairable": self.repairable,
            "count": self.count,
        }


@dataclass(frozen=True, slots=True)
class Health:
    """What `deep_check` found: `checks` names every check that ran."""

    checks: tuple[str, ...]
    problems: tuple[Problem, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass(frozen=True, slots=True)
class Repair:
    """What `repair` did, in the order it did it."""

    done: tuple[str, ...] = field(default_factory=tuple)


CHECKS = ("pages", "search_index", "terms", "words", "orphans", "scopes")


def deep_check(conn: sqlite3.Connection) -> Health:
    problems: list[Problem] = []
    rows = [row[0] for row in conn.execute("PRAGMA integrity_check(100)")]
    if rows != ["ok"]:
        # A row may hold many lines, under a `*** in database main ***` heading: one a
        # problem, told on one line.
        pages = [
            line.strip()
            for row in rows
            for line in str(row).splitlines()
            if line.strip() and not line.startswith("***")
        ]
        more = len(pages) - MAX_SHOWN
        shown = "; ".join(pages[:MAX_SHOWN]) + (f" (and {more} more)" if more > 0 else "")
        problems.append(Problem("pages", f"SQLite's integrity check: {shown}", False, len(pages)))
    for check, run in (
        ("search_index", _search_index),
        ("terms", _counts),
        ("orphans", _orphans),
        ("scopes", _scope_problems),
    ):
        try:
            problems += run(conn)
        except sqlite3.DatabaseError as exc:  # a damaged file fails here too
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            problems.append(Problem(check, f"could not be checked: {exc}", False))
    return Health(CHECKS, tuple(problems))


def _counts(conn: sqlite3.Connection) -> list[Problem]:
    problems: list[Problem] = []
    conn.execute("BEGIN IMMEDIATE")
    try:
        for table, column, tokenizer in _RECOUNT:
            problems += _count_problems(conn, table, column, tokenizer)
    finally:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
    return problems


def _orphans(conn: sqlite3.Connection) -> list[Problem]:
    problems = []
    for what, table, query in _ORPHANS:
        found = len(conn.execute(query).fetchall())
        if found:
            problems.append(Problem("orphans", f"{found} {what} ({table})", True, found))
    return problems


def _search_index(conn: sqlite3.Connection) -> list[Problem]:
    try:
        conn.execute("INSERT INTO items_fts(items_fts, rank) VALUES ('integrity-check', 1)")
        # The recent index holds only the newest items of its content table: its own
        # structure is checked, and what it should hold is counted.
        conn.execute("INSERT INTO items_recent(items_recent) VALUES ('integrity-check')")
        since, n = conn.execute("SELECT since, n FROM recent_index").fetchone()
        held = conn.execute("SELECT count(*) FROM items_recent_docsize").fetchone()[0]
        should = conn.execute("SELECT count(*) FROM items WHERE rowid >= ?", (since,)).fetchone()
        if not n == held == should[0]:
            raise sqlite3.DatabaseError(
                f"the recent index holds {held} items, counts {n}, should hold {should[0]}"
            )
    except sqlite3.DatabaseError as exc:
        return [
            Problem(
                "search_index",
                f"the search index does not match the items it was built from ({exc})",
                True,
            )
        ]
    return []


def _fresh_counts(
    conn: sqlite3.Connection, tokenizer: str
) -> dict[str, int]:  # inside a transaction the caller rolls back
    conn.execute(
        "CREATE VIRTUAL TABLE ken_recount USING fts5(title, body, tags, content='items', "
        f"content_rowid='rowid', tokenize='{tokenizer}', detail=none)"
    )
    conn.execute("INSERT INTO ken_recount(ken_recount) VALUES ('rebuild')")
    conn.execute(
        "CREATE VIRTUAL TABLE temp.ken_recount_vocab USING fts5vocab(main, ken_recount, row)"
    )
    counts = {r[0]: int(r[1]) for r in conn.execute("SELECT term, doc FROM temp.ken_recount_vocab")}
    conn.execute("DROP TABLE temp.ken_recount_vocab")
    conn.execute("DROP TABLE ken_recount")
    return counts


def _count_problems(
    conn: sqlite3.Connection, table: str, column: str, tokenizer: str
) -> list[Problem]:
    fresh = _fresh_counts(conn, tokenizer)
    stored = {r[0]: int(r[1]) for r in conn.execute(f"SELECT {column}, docs FROM {table}")}
    wrong = sorted(k for k in fresh.keys() | stored.keys() if fresh.get(k) != stored.get(k))
    if not wrong:
        return []
    shown = ", ".join(
        f"{k!r} {stored.get(k, 0)} not {fresh.get(k, 0)}" for k in wrong[:MAX_SHOWN]
    ) + (" ..." if len(wrong) > MAX_SHOWN else "")
    what = "stemmed words" if table == "terms" else "words"
    return [
        Problem(
            table,
            f"{len(wrong)} {what} counted wrong in `{table}` (items holding each: {shown})",
            True,
            len(wrong),
        )
    ]


def _scope_problems(conn: sqlite3.Connection) -> list[Problem]:
    problems = []
    for text, count in conn.execute("SELECT scope, count(*) FROM items GROUP BY scope").fetchall():
        why = _unreadable(str(text))
        if not why:
            continue
        ids = [
            short_id(row[0])
            for row in conn.execute(
                "SELECT id FROM items WHERE scope = ? ORDER BY id LIMIT ?", (text, MAX_SHOWN)
            )
        ]
        more = count - len(ids)
        named = ", ".join(ids) + (f" and {more} more" if more > 0 else "")
        problems.append(
            Problem(
                "scopes",
                f"{count} item{'s' if count > 1 else ''} in scope {text!r}, which no longer "
                f"reads as a scope ({why}): {named}; move each with "
                f"`ken update {ids[0]} --scope SCOPE`",
                False,
                count,
            )
        )
    return problems


def _unreadable(text: str) -> str:
    """Why a stored scope no longer reads as a scope, or "" when it does."""
    stored = Scope.from_stored(text)
    if stored.unreadable:
        return stored.unreadable
    try:
        Scope.of(stored.type, stored.value)
    except ValueError as exc:
        return str(exc)
    return ""


def repair(conn: sqlite3.Connection) -> Repair:
    """Rebuild the search index and the word counts from `items` and delete orphaned
    rows, in one transaction."""
    done: list[str] = []
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("INSERT INTO items_fts(items_fts) VALUES ('rebuild')")
        conn.execute("INSERT INTO items_recent(items_recent) VALUES ('delete-all')")
        recent.fill(conn)
        items = conn.execute("SELECT count(*) FROM items").fetchone()[0]
        done.append(f"rebuilt the search index from {items} items")
        for table, column, tokenizer in _RECOUNT:
            fresh = _fresh_counts(conn, tokenizer)
            stored = {r[0]: int(r[1]) for r in conn.execute(f"SELECT {column}, docs FROM {table}")}
            wrong = sum(1 for k in fresh.keys() | stored.keys() if fresh.get(k) != stored.get(k))
            conn.execute(f"DELETE FROM {table}")
            conn.executemany(
                f"INSERT INTO {table} ({column}, docs) VALUES (?, ?)", sorted(fresh.items())
            )
            done.append(f"recounted `{table}` ({len(fresh)} rows, {wrong} corrected)")
        for what, table, query in _ORPHANS:
            gone = conn.execute(f"DELETE FROM {table} WHERE rowid IN ({query})").rowcount
            if gone:
                done.append(f"deleted {gone} {what}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return Repair(tuple(done))
