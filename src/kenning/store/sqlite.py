"""The SQLite store: one file the user owns.

Connections run in autocommit mode and every write is a short `BEGIN IMMEDIATE`
transaction, so many agents' hooks can write at once: the busy timeout queues them
instead of failing, and no write lock is held across anything slower than SQL. WAL lets
readers go on while a writer works. `secure_delete` zeroes freed pages, which `forget`
relies on to leave nothing of a forgotten text on disk.

A hook cannot wait as long as a person can: its agent stops it after a few seconds. A
store opened for a hook gets a `deadline` that bounds every wait for the write lock, and
a `spool`: the writes marked `@_spoolable` (sessions, prompts, deliveries, uses, a new
item) that find the store locked go there instead of failing, and are replayed later,
each in one transaction with its row in `replays`, so a replay is never applied twice.
"""

from __future__ import annotations

import functools
import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, ParamSpec, Protocol, TypeVar

from kenning import ids
from kenning.errors import InvalidInput, NotFound, RevisionConflict, StoreBusy, StoreError
from kenning.ids import short_id
from kenning.model import (
    Item,
    Kind,
    Link,
    Provenance,
    Revision,
    Scope,
    Session,
    Status,
)
from kenning.store import fts, health, migrations
from kenning.store.base import ItemQuery, PlannedChange, Words, now_iso
from kenning.store.signals import Signals

BUSY_TIMEOUT_MS = 30_000
WIPE_WAIT_SECONDS = 2.0  # how long forget waits for readers before leaving the wipe to later
MMAP_BYTES = 256 * 1024 * 1024  # read pages straight from the OS cache, no copy per read
# Ranking reads every match's positions, so a word held by 20,000 items costs 20,000
# bm25 rows. A search whose matches (after its filters) exceed this window ranks only
# the newest window of them: still best first, and fast at any store size. A query
# that broad never needed its oldest matches.
SEARCH_WINDOW = 2_000
ITEM_COLUMNS = (
    "id, kind, scope, status, pinned, title, body, tags, links, evidence, provenance, "
    "session_id, created_at, updated_at, reviewed_at, expires_at, use_count, last_used_at, "
    "revision, dismiss_reason, source, archive_reason"
)


def _friendly(exc: sqlite3.Error, path: str) -> StoreError:
    text = str(exc)
    if "readonly" in text or "read-only" in text:
        return StoreError(f"the store {path} is read-only; check its permissions")
    if "not a database" in text or "malformed" in text:
        return StoreError(
            f"the store {path} is damaged or not a kenning database; "
            "restore a backup or point KEN_DB elsewhere"
        )
    if "locked" in text or "busy" in text:
        return StoreBusy(f"the store {path} stayed locked by another process; try again")
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


def _spoolable(
    spooled: Callable[[tuple[Any, ...]], Any],
) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Mark a write a hook may keep for later; `spooled` gives what it returns then."""

    def wrap(method: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(method)
        def run(*args: P.args, **kwargs: P.kwargs) -> R:
            store = args[0]
            assert isinstance(store, SQLiteStore)
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


def _row_to_item(row: sqlite3.Row) -> Item:
    return Item(
        id=row["id"],
        kind=Kind(row["kind"]),
        scope=Scope.from_stored(row["scope"]),
        status=Status(row["status"]),
        pinned=bool(row["pinned"]),
        title=row["title"],
        body=row["body"],
        tags=tuple(json.loads(row["tags"])),
        links=tuple(Link.parse(x) for x in json.loads(row["links"])),
        evidence=row["evidence"],
        provenance=Provenance.from_dict(json.loads(row["provenance"])),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        reviewed_at=row["reviewed_at"],
        expires_at=row["expires_at"],
        use_count=row["use_count"],
        last_used_at=row["last_used_at"],
        revision=row["revision"],
        dismiss_reason=row["dismiss_reason"],
        source=row["source"],
        archive_reason=row["archive_reason"],
    )


def _item_values(item: Item) -> tuple[Any, ...]:
    return (
        item.id,
        item.kind.value,
        str(item.scope),
        item.status.value,
        int(item.pinned),
        item.title,
        item.body,
        json.dumps(list(item.tags)),
        json.dumps([str(link) for link in item.links]),
        item.evidence,
        json.dumps(item.provenance.to_dict(), sort_keys=True),
        item.provenance.session,
        item.created_at,
        item.updated_at,
        item.reviewed_at,
        item.expires_at,
        item.use_count,
        item.last_used_at,
        item.revision,
        item.dismiss_reason,
        item.source,
        item.archive_reason,
    )


_INSERT_REVISION = (
    "INSERT INTO revisions (id, item_id, created_at, kind, scope, status, pinned, "
    "title, body, tags, links, evidence, provenance, change) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def _revision_values(item: Item, change: str, values: tuple[Any, ...]) -> tuple[Any, ...]:
    """A version's row, reusing the JSON `_item_values` made for tags, links, provenance."""
    return (
        item.revision,
        item.id,
        item.updated_at,
        item.kind.value,
        str(item.scope),
        item.status.value,
        int(item.pinned),
        item.title,
        item.body,
        values[7],  # tags
        values[8],  # links
        item.evidence,
        values[10],  # provenance
        change,
    )


def _row_to_session(row: sqlite3.Row) -> Session:
    return Session(
        id=row["id"],
        agent=row["agent"],
        agent_session_id=row["agent_session_id"],
        model=row["model"],
        transcript_path=row["transcript_path"],
        repo=row["repo"],
        cwd=row["cwd"],
        workspace=row["workspace"],
        workstream=row["workstream"],
        project=row["project"],
        started_at=row["started_at"],
        ended_at=row["ended_at"],
        first_prompt=row["first_prompt"],
        last_prompt=row["last_prompt"],
        start_commit=row["start_commit"],
        commits=tuple(json.loads(row["commits"] or "[]")),
        diff_stat=row["diff_stat"],
        continued_from=row["continued_from"],
        pid=row["pid"],
        end_reason=row["end_reason"],
        prompt_count=row["prompt_count"],
    )


class SQLiteStore(Signals):
    """kenning's store in one SQLite file."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        create: bool = True,
        busy_seconds: float = BUSY_TIMEOUT_MS / 1000,
    ) -> None:
        self.path = str(path)
        self.busy_ms = int(busy_seconds * 1000)
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
                timeout=busy_seconds,
                isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error as exc:
            raise _friendly(exc, self.path) from None
        self.conn.row_factory = sqlite3.Row
        try:
            self._configure()
            migrations.apply(self.conn)
            if self.wipe_pending():  # a forget waited for a reader that has gone since?
                self.checkpoint(0)
        except sqlite3.Error as exc:
            self.conn.close()
            raise _friendly(exc, self.path) from None
        except StoreError:
            self.conn.close()
            raise

    def _configure(self) -> None:
        c = self.conn
        c.execute(f"PRAGMA busy_timeout = {self.busy_ms}")
        c.execute("PRAGMA foreign_keys = ON")
        c.execute("PRAGMA secure_delete = ON")
        c.execute("PRAGMA synchronous = NORMAL")
        c.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
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
        stem_conn = getattr(self, "_stem_conn", None)
        if stem_conn is not None:
            stem_conn.close()
        self.conn.close()

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def set_deadline(self, deadline: float | None) -> None:
        """From now on, wait for a lock at most until `deadline` (time.monotonic());
        None: the busy timeout the store was opened with."""
        self.deadline = deadline
        left = self.busy_ms if deadline is None else (deadline - time.monotonic()) * 1000
        self.conn.execute(f"PRAGMA busy_timeout = {int(max(0, min(left, self.busy_ms)))}")

    @contextmanager
    def unspooled(self) -> Iterator[None]:
        """Writes here are made now or fail: none is kept for later."""
        saved, self.spool = self.spool, None
        try:
            yield
        finally:
            self.spool = saved

    def _wait_at_most(self) -> None:
        """Bound the wait for the write lock by the deadline, when there is one."""
        if self.deadline is not None:
            left = int(max(0.0, self.deadline - time.monotonic()) * 1000)
            self.conn.execute(f"PRAGMA busy_timeout = {min(left, self.busy_ms)}")

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        if self._depth:  # inside a replay: its transaction holds this write too
            yield self.conn
            return
        try:
            self._wait_at_most()
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise _friendly(exc, self.path) from None
        self._depth += 1
        try:
            yield self.conn
            self.conn.execute("COMMIT")
        except sqlite3.Error as exc:
            self.conn.execute("ROLLBACK")
            raise _friendly(exc, self.path) from None
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        finally:
            self._depth -= 1

    @contextmanager
    def together(self) -> Iterator[None]:
        """The writes made inside happen as one: all of them or, on an error, none (and
        readers see none of them before all of them)."""
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
            raise _friendly(exc, self.path) from None

    # --- items -------------------------------------------------------------------

    def _insert(self, conn: sqlite3.Connection, item: Item, change: str) -> Item:
        self._insert_all(conn, [item], change)
        return item

    def _index_text(self, item: Item) -> str:
        """The text the FTS index holds for an item (title, body, tags as stored)."""
        return f"{item.title}\n{item.body}\n{json.dumps(list(item.tags))}"

    def _count_terms(
        self, conn: sqlite3.Connection, added: Sequence[Item], removed: Sequence[Item] = ()
    ) -> None:
        """Keep `terms` (items per stemmed word) and `words` (items per word as typed) in
        step with what the index holds."""
        texts = [self._index_text(i) for i in added] + [self._index_text(i) for i in removed]
        if not texts:
            return
        stems, words = self._tokenize(texts)
        for table, column, tokens in (("terms", "term", stems), ("words", "word", words)):
            delta: dict[str, int] = {}
            for n, found in enumerate(tokens):
                step = 1 if n < len(added) else -1
                for token in set(found):
                    delta[token] = delta.get(token, 0) + step
            changes = [(token, d) for token, d in delta.items() if d]
            if not changes:
                continue
            conn.executemany(
                f"INSERT INTO {table} ({column}, docs) VALUES (?, ?) "
                f"ON CONFLICT({column}) DO UPDATE SET docs = docs + excluded.docs",
                changes,
            )
            if any(d < 0 for _, d in changes):
                conn.execute(f"DELETE FROM {table} WHERE docs <= 0")

    def _insert_all(self, conn: sqlite3.Connection, items: Sequence[Item], change: str) -> None:
        """Insert items and their first versions, two statements for the lot."""
        if any(not item.revision for item in items):
            raise StoreError("an item needs a revision id before it is stored")
        values = [_item_values(item) for item in items]
        placeholders = ", ".join("?" * len(ITEM_COLUMNS.split(",")))
        conn.executemany(f"INSERT INTO items ({ITEM_COLUMNS}) VALUES ({placeholders})", values)
        self._count_terms(conn, items)
        conn.executemany(
            _INSERT_REVISION,
            [_revision_values(item, change, v) for item, v in zip(items, values, strict=True)],
        )

    @staticmethod
    def _write_revision(conn: sqlite3.Connection, item: Item, change: str) -> None:
        conn.execute(_INSERT_REVISION, _revision_values(item, change, _item_values(item)))

    @_spoolable(lambda args: args[0])
    def insert_item(self, item: Item, change: str = "add") -> Item:
        with self._write() as conn:
            return self._insert(conn, item, change)

    def insert_many(
        self, items: Iterable[Item], change: str = "import", batch: int = 500
    ) -> tuple[int, int]:
        """Insert in batches of one transaction each; items whose id exists are skipped.

        Returns (added, skipped). A batch either lands whole or not at all.
        """
        added = skipped = 0
        pending: list[Item] = []

        def flush() -> None:
            nonlocal added, skipped
            with self._write() as conn:
                marks = ", ".join("?" * len(pending))
                present = {
                    row[0]
                    for row in conn.execute(
                        f"SELECT id FROM items WHERE id IN ({marks})", [i.id for i in pending]
                    )
                }
                fresh: list[Item] = []
                for item in pending:
                    if item.id in present:
                        skipped += 1
                    else:
                        present.add(item.id)  # a second copy in the same batch is skipped
                        fresh.append(item)
                self._insert_all(conn, fresh, change)
                added += len(fresh)
            pending.clear()

        for item in items:
            pending.append(item)
            if len(pending) >= batch:
                flush()
        if pending:
            flush()
        return added, skipped

    def get_item(self, item_id: str) -> Item:
        rows = self._read(f"SELECT {ITEM_COLUMNS} FROM items WHERE id = ?", (item_id,))
        if not rows:
            raise NotFound(f"no item {short_id(item_id)}; `ken list --all` shows what there is")
        return _row_to_item(rows[0])

    def find_ids(self, ref: str) -> list[str]:
        """Ids that start or end with `ref` (already normalized to upper case), or, for a
        ref shorter than six, whose last six (the short id people see) start with it.

        A start is a range on the primary index; an end of six or more characters, and
        the start of a short id, go through the index on each id's last six. Shorter
        ends are rare and scan.
        """
        starts = self._read("SELECT id FROM items WHERE id >= ? AND id < ?", (ref, ref + "\x7f"))
        if len(ref) >= 6:
            ends = self._read(
                "SELECT id FROM items WHERE substr(id, 21) = ? AND id LIKE ?",
                (ref[-6:], "%" + ref),
            )
        else:
            ends = self._read(
                "SELECT id FROM items WHERE id LIKE ? "
                "UNION SELECT id FROM items WHERE substr(id, 21) >= ? AND substr(id, 21) < ?",
                ("%" + ref, ref, ref + "\x7f"),
            )
        return sorted({row["id"] for row in [*starts, *ends]})

    def short_ids(
        self, start: str, statuses: Sequence[str] = (), limit: int = 50
    ) -> list[tuple[str, str, str]]:
        """(id, title, status) of the newest items whose short id (the last six characters,
        upper case here) starts with `start`: what shell completion offers."""
        clauses, params = [], []
        if start:
            clauses.append("substr(id, 21) >= ? AND substr(id, 21) < ?")
            params += [start, start + "\x7f"]
        if statuses:
            clauses.append(f"status IN ({', '.join('?' * len(statuses))})")
            params += list(statuses)
        where = " AND ".join(clauses) or "1"
        rows = self._read(
            f"SELECT id, title, status FROM items WHERE {where} ORDER BY id DESC LIMIT ?",
            [*params, int(limit)],
        )
        return [(r["id"], r["title"], r["status"]) for r in rows]

    def scopes_in_use(self, limit: int = 200) -> list[str]:
        """The scopes that hold items, fewest characters first."""
        rows = self._read(
            "SELECT DISTINCT scope FROM items ORDER BY length(scope), scope LIMIT ?", (limit,)
        )
        return [r["scope"] for r in rows]

    def replace_item(
        self,
        item: Item,
        change: str,
        expected_revision: str | None = None,
        new_version: bool = True,
    ) -> Item:
        """Write `item` over the stored one; a new version unless `new_version` is False."""
        with self._write() as conn:
            row = conn.execute(
                f"SELECT {ITEM_COLUMNS} FROM items WHERE id = ?", (item.id,)
            ).fetchone()
            if row is None:
                raise NotFound(f"no item {short_id(item.id)}")
            old = _row_to_item(row)
            current = old.revision
            if expected_revision is not None and expected_revision != current:
                raise RevisionConflict(item.id, expected_revision, current)
            if not new_version:
                item = _with_revision(item, current)
            assignments = ", ".join(f"{name.strip()} = ?" for name in ITEM_COLUMNS.split(",")[1:])
            conn.execute(
                f"UPDATE items SET {assignments} WHERE id = ?",
                (*_item_values(item)[1:], item.id),
            )
            if self._index_text(old) != self._index_text(item):
                self._count_terms(conn, [item], [old])
            if new_version:
                self._write_revision(conn, item, change)
            else:
                conn.execute("DELETE FROM revisions WHERE id = ?", (current,))
                self._write_revision(conn, item, change)
            return item

    def _where(self, query: ItemQuery) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []

        def any_of(column: str, values: tuple[str, ...]) -> None:
            if values:
                clauses.append(f"{column} IN ({', '.join('?' * len(values))})")
                params.extend(values)

        any_of("items.scope", query.scopes)
        any_of("items.kind", query.kinds)
        any_of("items.status", query.statuses)
        for tag in query.tags:
            clauses.append("EXISTS (SELECT 1 FROM json_each(items.tags) WHERE value = ?)")
            params.append(tag)
        if not query.include_expired:
            clauses.append("(items.expires_at IS NULL OR items.expires_at > ?)")
            params.append(query.now or now_iso())
        if query.since:
            clauses.append("items.created_at >= ?")
            params.append(query.since)
        if query.session_id:
            clauses.append("items.session_id = ?")
            params.append(query.session_id)
        if query.pinned is not None:
            # A literal, not a parameter, so the partial index on pins applies.
            clauses.append("items.pinned = 1" if query.pinned else "items.pinned = 0")
        if query.source_prefix:
            clauses.append("items.source >= ? AND items.source < ?")
            params.extend([query.source_prefix, query.source_prefix + "\x7f"])
        if query.exclude_ids:
            marks = ", ".join("?" * len(query.exclude_ids))
            clauses.append(f"items.id NOT IN ({marks})")
            params.extend(query.exclude_ids)
        return (" AND ".join(clauses) or "1"), params

    def list_items(self, query: ItemQuery) -> list[Item]:
        where, params = self._where(query)
        if query.kind_groups:
            # kenning.rank's order, so a page of it never needs every row in Python.
            cases = " ".join("WHEN ? THEN ?" for _ in query.kind_groups)
            order = (
                f"CASE kind {cases} ELSE {len(query.kind_groups)} END, use_count DESC, "
                "COALESCE(last_used_at, '') DESC, created_at DESC, id DESC"
            )
            params = params + [value for pair in query.kind_groups for value in pair]
            sql = f"SELECT {ITEM_COLUMNS} FROM items WHERE {where} ORDER BY {order}"
        else:
            if query.captured_first:
                order = "rowid DESC"
            elif query.recent_first:
                order = "updated_at DESC"
            else:
                order = "pinned DESC, updated_at DESC, id DESC"
            sql = f"SELECT {ITEM_COLUMNS} FROM items WHERE {where} ORDER BY {order}"
        if query.limit or query.offset:
            sql += f" LIMIT {int(query.limit or -1)} OFFSET {max(0, int(query.offset))}"
        return [_row_to_item(r) for r in self._read(sql, params)]

    def search(self, words: Words, query: ItemQuery) -> list[tuple[Item, float]]:
        """Full-text search, best first; the score is bm25 negated (higher is better).
        Typed words with nothing searchable in them are InvalidInput.

        bm25 costs the same for every match, and a common word matches a large share of
        a big store, so ranking looks at the newest SEARCH_WINDOW matches (found in the
        index alone, in rowid order). When the filters leave fewer hits than asked for
        there, the window grows until they do or it spans every match.
        """
        match = fts.match_for(words, self)
        if match is None:
            if words.typed:
                raise InvalidInput("the search has no words in it: give at least one word")
            return []
        where, params = self._where(query)
        cols = ", ".join(f"items.{c.strip()}" for c in ITEM_COLUMNS.split(","))
        sql = (
            f"SELECT {cols}, bm25(items_fts, 8.0, 1.0, 4.0) AS rank FROM items_fts "
            "JOIN items ON items.rowid = items_fts.rowid "
            f"WHERE items_fts MATCH ? AND items_fts.rowid >= ? AND {where} "
            "ORDER BY rank, items_fts.rowid DESC"
        )
        if query.limit:
            sql += f" LIMIT {int(query.limit)}"
        window = SEARCH_WINDOW
        while True:
            edge = self._read(
                "SELECT rowid FROM items_fts WHERE items_fts MATCH ? "
                "ORDER BY rowid DESC LIMIT 1 OFFSET ?",
                (match, window - 1),
            )
            floor = int(edge[0][0]) if edge else 0
            rows = self._read(sql, [match, floor, *params])
            if floor == 0 or (query.limit and len(rows) >= query.limit):
                return [(_row_to_item(r), -float(r["rank"])) for r in rows]
            window *= 4

    def revisions(self, item_id: str) -> list[Revision]:
        rows = self._read("SELECT * FROM revisions WHERE item_id = ? ORDER BY id", (item_id,))
        return [
            Revision(
                id=r["id"],
                item_id=r["item_id"],
                created_at=r["created_at"],
                title=r["title"],
                body=r["body"],
                kind=r["kind"],
                scope=r["scope"],
                status=r["status"],
                tags=tuple(json.loads(r["tags"])),
                links=tuple(json.loads(r["links"])),
                evidence=r["evidence"],
                provenance=json.loads(r["provenance"]),
                change=r["change"],
            )
            for r in rows
        ]

    def delete_items(self, item_ids: Sequence[str], session_id: str | None = None) -> int:
        """Delete items with every version and use, and leave none of their text on disk.

        secure_delete zeroes the freed pages; merging the FTS index drops the old
        segments that still held the words; a truncating checkpoint empties the WAL,
        which may hold older copies of the pages. A reader in the middle of a transaction
        keeps those copies alive: the wait for it is short, and when it is still reading
        the store remembers the wipe (`wipe_pending`) and the next open finishes it.
        """
        if not item_ids and not session_id:
            return 0
        with self._write() as conn:
            deleted = 0
            if session_id:
                conn.execute("DELETE FROM uses WHERE session_id = ?", (session_id,))
                conn.execute("DELETE FROM deliveries WHERE session_id = ?", (session_id,))
                conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
            for start in range(0, len(item_ids), 500):
                chunk = list(item_ids[start : start + 500])
                marks = ", ".join("?" * len(chunk))
                doomed = conn.execute(
                    f"SELECT {ITEM_COLUMNS} FROM items WHERE id IN ({marks})", chunk
                ).fetchall()
                self._count_terms(conn, [], [_row_to_item(r) for r in doomed])
                conn.execute(f"DELETE FROM uses WHERE item_id IN ({marks})", chunk)
                conn.execute(f"DELETE FROM revisions WHERE item_id IN ({marks})", chunk)
                deleted += conn.execute(f"DELETE FROM items WHERE id IN ({marks})", chunk).rowcount
            conn.execute("INSERT INTO items_fts(items_fts) VALUES ('optimize')")
        self.checkpoint(WIPE_WAIT_SECONDS, remember=True)
        return deleted

    def items_quoting(self, needles: Sequence[str], exclude_ids: Sequence[str] = ()) -> list[Item]:
        """Items whose text (title, body, evidence), now or in any older version, holds
        one of `needles` (compared without case): what `forget --everywhere` also
        removes. A scan of every row: a person's rare command, never a hook's."""
        if not needles:
            return []
        lowered = [n.lower() for n in needles]
        hits = " OR ".join(
            ["instr(lower(title || ' ' || body || ' ' || evidence), ?) > 0"] * len(lowered)
        )
        found = {
            r[0]
            for r in self._read(f"SELECT id FROM items WHERE {hits}", lowered)
            + self._read(f"SELECT DISTINCT item_id FROM revisions WHERE {hits}", lowered)
        }
        found -= set(exclude_ids)
        return [self.get_item(item_id) for item_id in sorted(found)]

    def replacement_copies(self, item_ids: Sequence[str]) -> list[Item]:
        """Proposed items that link to one of `item_ids` (`item:ID`): copies an agent
        filed to replace it, with its text in them."""
        out: dict[str, Item] = {}
        for item_id in item_ids:
            rows = self._read(
                f"SELECT {ITEM_COLUMNS} FROM items WHERE status = 'proposed' "
                "AND instr(links, ?) > 0 AND id != ?",
                (json.dumps(f"item:{item_id}"), item_id),
            )
            out.update((r["id"], _row_to_item(r)) for r in rows)
        return list(out.values())

    def scrub_quotes(self, needles: Sequence[str]) -> int:
        """Blank the session prompts and recall queries that hold one of `needles`
        (compared without case); returns how many fields were blanked."""
        if not needles:
            return 0
        blanked = 0
        with self._write() as conn:
            for table, column, blank in (
                ("sessions", "first_prompt", None),
                ("sessions", "last_prompt", None),
                ("deliveries", "query", None),
                ("session_prompts", "text", ""),  # run lessons' copies of the prompts
                ("signals", "detail", ""),
            ):
                for needle in needles:
                    blanked += conn.execute(
                        f"UPDATE {table} SET {column} = ? "
                        f"WHERE {column} IS NOT NULL AND instr(lower({column}), ?) > 0",
                        (blank, needle.lower()),
                    ).rowcount
        if blanked:
            self.checkpoint(WIPE_WAIT_SECONDS, remember=True)
        return blanked

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
            raise _friendly(exc, self.path) from None
        finally:
            self.conn.execute(f"PRAGMA busy_timeout = {self.busy_ms}")
        if not busy:
            self._wipe_marker.unlink(missing_ok=True)
            return True
        if remember:
            fd = os.open(self._wipe_marker, os.O_CREAT | os.O_WRONLY, 0o600)
            os.close(fd)
        return False

    def readers(self) -> list[str]:
        """The other processes of this user that have the store open, as `PID (name)`:
        what a wipe waits for. Read from /proc (Linux); elsewhere none are named."""
        if not os.path.isdir("/proc"):
            return []
        names = {os.path.realpath(f"{self.path}{end}") for end in ("", "-wal", "-shm")}
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

    @_spoolable(lambda args: 0)
    def record_uses(self, item_ids: Sequence[str], session_id: str | None, how: str) -> int:
        """Count a use of each item; once per session when a session is given."""
        at = now_iso()
        raised = 0
        with self._write() as conn:
            for item_id in item_ids:
                if session_id:
                    seen = conn.execute(
                        "SELECT 1 FROM uses WHERE item_id = ? AND session_id = ?",
                        (item_id, session_id),
                    ).fetchone()
                else:
                    seen = None
                conn.execute(
                    "INSERT INTO uses (item_id, session_id, at, how) VALUES (?, ?, ?, ?)",
                    (item_id, session_id, at, how),
                )
                if not seen:
                    conn.execute(
                        "UPDATE items SET use_count = use_count + 1, last_used_at = ? WHERE id = ?",
                        (at, item_id),
                    )
                    raised += 1
        return raised

    def count_items(self, query: ItemQuery | None = None) -> int:
        if query is None:
            return int(self._read("SELECT count(*) FROM items")[0][0])
        if query == ItemQuery(
            scopes=query.scopes,
            statuses=query.statuses,
            include_expired=query.include_expired,
            now=query.now,
        ):
            return self._count_by_scope(query)
        where, params = self._where(query)
        return int(self._read(f"SELECT count(*) FROM items WHERE {where}", params)[0][0])

    def _count_by_scope(self, query: ItemQuery) -> int:
        """A count by scope and status alone (a pack's), from the counts the triggers of
        m0014 keep, less the items past their expiry: the same number as count(*)."""
        clauses: list[str] = []
        params: list[str] = []
        for column, values in (("scope", query.scopes), ("status", query.statuses)):
            if values:
                clauses.append(f"{column} IN ({', '.join('?' * len(values))})")
                params.extend(values)
        where = " AND ".join(clauses) or "1"
        total = self._read(f"SELECT coalesce(sum(n), 0) FROM scope_counts WHERE {where}", params)
        if query.include_expired:
            return int(total[0][0])
        expired = self._read(
            "SELECT count(*) FROM items INDEXED BY items_expiring "
            f"WHERE expires_at IS NOT NULL AND expires_at <= ? AND {where}",
            [query.now or now_iso(), *params],
        )
        return int(total[0][0]) - int(expired[0][0])

    def data_version(self) -> int:
        """A number that changes when another connection commits a change to the store
        (this connection's own writes leave it): how a long-lived reader sees that it
        should read again."""
        return int(self._read("PRAGMA data_version")[0][0])

    def integrity_check(self) -> str:
        return str(self._read("PRAGMA integrity_check")[0][0])

    def deep_check(self) -> health.Health:
        """Every self-check `ken doctor --deep` runs (see `kenning.store.health`)."""
        try:
            self._wait_at_most()
            return health.deep_check(self.conn)
        except sqlite3.Error as exc:
            raise _friendly(exc, self.path) from None

    # --- maintenance plans (kenning.store.plans) -----------------------------------

    def apply_plan(
        self,
        digest: str,
        plan_id: str,
        owner: str,
        changes: Sequence[PlannedChange],
        receipt: dict[str, Any],
    ) -> tuple[dict[str, Any], bool]:
        """A plan's writes and its receipt in one transaction (see store/plans.py):
        (the receipt, whether it was there already and nothing was written)."""
        from kenning.store import plans

        return plans.apply(self, digest, plan_id, owner, changes, receipt)

    def plan_receipt(self, digest: str) -> dict[str, Any] | None:
        from kenning.store import plans

        try:
            return plans.receipt(self, digest)
        except sqlite3.Error as exc:
            raise _friendly(exc, self.path) from None

    def plan_receipts(self, plan_id: str) -> list[dict[str, Any]]:
        from kenning.store import plans

        try:
            return plans.receipts_for(self, plan_id)
        except sqlite3.Error as exc:
            raise _friendly(exc, self.path) from None

    def repair(self) -> health.Repair:
        """Rebuild the search index and word counts, drop orphaned rows: one transaction."""
        try:
            self._wait_at_most()
            return health.repair(self.conn)
        except sqlite3.Error as exc:
            raise _friendly(exc, self.path) from None

    def counts(self) -> dict[str, int]:
        rows = self._read("SELECT status, count(*) AS n FROM items GROUP BY status")
        return {r["status"]: r["n"] for r in rows}

    # --- projects ----------------------------------------------------------------

    def add_project(self, slug: str, folder: str, repo: str | None) -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT INTO projects (slug, dir, repo, added_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(slug) DO UPDATE SET dir = excluded.dir, repo = excluded.repo",
                (slug, folder, repo, now_iso()),
            )

    def remove_project(self, slug: str) -> bool:
        with self._write() as conn:
            return conn.execute("DELETE FROM projects WHERE slug = ?", (slug,)).rowcount > 0

    def projects(self) -> list[dict[str, Any]]:
        rows = self._read("SELECT slug, dir, repo, added_at FROM projects ORDER BY slug")
        return [dict(r) for r in rows]

    def file_stamp(self, slug: str, name: str) -> tuple[int, int] | None:
        rows = self._read(
            "SELECT size, mtime_ns FROM project_files WHERE slug = ? AND name = ?", (slug, name)
        )
        return (rows[0]["size"], rows[0]["mtime_ns"]) if rows else None

    def set_file_stamp(self, slug: str, name: str, stamp: tuple[int, int] | None) -> None:
        with self._write() as conn:
            if stamp is None:
                conn.execute("DELETE FROM project_files WHERE slug = ? AND name = ?", (slug, name))
            else:
                conn.execute(
                    "INSERT INTO project_files (slug, name, size, mtime_ns, synced_at) "
                    "VALUES (?, ?, ?, ?, ?) ON CONFLICT(slug, name) DO UPDATE SET "
                    "size = excluded.size, mtime_ns = excluded.mtime_ns, "
                    "synced_at = excluded.synced_at",
                    (slug, name, stamp[0], stamp[1], now_iso()),
                )

    def place_stamp(self, agent: str, path: str) -> tuple[int, int] | None:
        """The stamp `ken collect` left for one of an agent's memory places."""
        rows = self._read(
            "SELECT files, digest FROM collected_places WHERE agent = ? AND path = ?",
            (agent, path),
        )
        return (rows[0]["files"], rows[0]["digest"]) if rows else None

    def set_place_stamp(self, agent: str, path: str, stamp: tuple[int, int]) -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT INTO collected_places (agent, path, files, digest, collected_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT(agent, path) DO UPDATE SET "
                "files = excluded.files, digest = excluded.digest, "
                "collected_at = excluded.collected_at",
                (agent, path, stamp[0], stamp[1], now_iso()),
            )

    def summary_progress(self, session_id: str) -> tuple[int, int]:
        """(parts written, conversation turns already summarized) for a session."""
        rows = self._read(
            "SELECT summary_parts, summarized_turns FROM sessions WHERE id = ?", (session_id,)
        )
        return (rows[0][0], rows[0][1]) if rows else (0, 0)

    def set_summary_progress(self, session_id: str, parts: int, turns: int) -> None:
        with self._write() as conn:
            conn.execute(
                "UPDATE sessions SET summary_parts = ?, summarized_turns = ? WHERE id = ?",
                (parts, turns, session_id),
            )

    # --- words -------------------------------------------------------------------

    def _tokenizer(self) -> sqlite3.Connection:
        """In-memory FTS5 tables with the index's own tokenizer (t), and the same without
        stemming (w), to split any text as the index does."""
        conn = getattr(self, "_stem_conn", None)
        if conn is None:
            conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
            conn.execute(
                "CREATE VIRTUAL TABLE t USING fts5(x, "
                "tokenize='porter unicode61 remove_diacritics 2')"
            )
            conn.execute("CREATE VIRTUAL TABLE tv USING fts5vocab(t, 'instance')")
            conn.execute(
                "CREATE VIRTUAL TABLE w USING fts5(x, tokenize='unicode61 remove_diacritics 2')"
            )
            conn.execute("CREATE VIRTUAL TABLE wv USING fts5vocab(w, 'instance')")
            self._stem_conn = conn
        return conn

    def _split(self, table: str, texts: Sequence[str]) -> list[list[str]]:
        conn = self._tokenizer()
        conn.execute("BEGIN")
        try:
            conn.executemany(
                f"INSERT INTO {table}(rowid, x) VALUES (?, ?)", list(enumerate(texts, 1))
            )
            out: list[list[str]] = [[] for _ in texts]
            for term, doc in conn.execute(f"SELECT term, doc FROM {table}v ORDER BY doc, offset"):
                out[doc - 1].append(term)
        finally:
            conn.execute("ROLLBACK")
        return out

    def stems(self, texts: Sequence[str]) -> list[list[str]]:
        """Each text's words as the search index stems them, in order."""
        return self._split("t", texts)

    def _tokenize(self, texts: Sequence[str]) -> tuple[list[list[str]], list[list[str]]]:
        """Each text's words stemmed, and as typed (case and accents folded)."""
        return self._split("t", texts), self._split("w", texts)

    def words_in(self, texts: Sequence[str]) -> list[list[str]]:
        """Each text's words as typed, case and accents folded as the index folds them."""
        return self._split("w", texts)

    def prefix_words(self, word: str, limit: int = 16) -> list[str]:
        """The words items hold that start with `word` (folded), the commonest first."""
        rows = self._read(
            "SELECT word FROM words WHERE word >= ? AND word < ? ORDER BY docs DESC LIMIT ?",
            (word, word + "\U0010ffff", limit),
        )
        return [r[0] for r in rows]

    def doc_freqs(self, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        """How many items hold each stemmed term, and how many items there are."""
        unique = sorted(set(terms))
        freqs = dict.fromkeys(unique, 0)
        for start in range(0, len(unique), 400):
            chunk = unique[start : start + 400]
            rows = self._read(
                f"SELECT term, docs FROM terms WHERE term IN ({', '.join('?' * len(chunk))})",
                chunk,
            )
            freqs.update({r[0]: int(r[1]) for r in rows})
        total = int(self._read("SELECT max(rowid) FROM items")[0][0] or 0)
        return total, freqs

    def word_freqs(self, words: Sequence[str]) -> dict[str, int]:
        """How many items hold each word as typed (folded); words none holds are left out."""
        unique = sorted(set(words))
        freqs: dict[str, int] = {}
        for start in range(0, len(unique), 400):
            chunk = unique[start : start + 400]
            rows = self._read(
                f"SELECT word, docs FROM words WHERE word IN ({', '.join('?' * len(chunk))})",
                chunk,
            )
            freqs.update({r[0]: int(r[1]) for r in rows if int(r[1])})
        return freqs

    def terms_with_prefix(self, prefix: str, limit: int = 50) -> list[tuple[str, int]]:
        """Stemmed terms that start with `prefix` (not the prefix itself), with how many
        items hold each: the first `limit` of them in alphabetical order."""
        rows = self._read(
            "SELECT term, docs FROM terms WHERE term > ? AND term < ? ORDER BY term LIMIT ?",
            (prefix, prefix + "\U0010ffff", int(limit)),
        )
        return [(str(r[0]), int(r[1])) for r in rows]

    # --- sessions ----------------------------------------------------------------

    @_spoolable(lambda args: args[0])
    def upsert_session(self, session: Session, scopes: Sequence[str] = ()) -> Session:
        """Store a session (by id); returns the one stored. A session new here whose agent
        run is stored already is not stored twice: two hooks of one run that start at
        once (Copilot's first two) each open it, and the one that comes second gets the
        first's."""
        data = session.to_dict()
        data["commits"] = json.dumps(data["commits"])
        data["scopes"] = json.dumps(list(scopes))
        data["last_seen_at"] = now_iso()
        names = list(data)
        updates = ", ".join(f"{n} = excluded.{n}" for n in names if n != "id")
        with self._write() as conn:
            twin = conn.execute(
                "SELECT * FROM sessions WHERE agent = ? AND agent_session_id = ? AND id != ? "
                "AND NOT EXISTS (SELECT 1 FROM sessions WHERE id = ?) "
                "ORDER BY started_at DESC LIMIT 1",
                (session.agent, session.agent_session_id, session.id, session.id),
            ).fetchone()
            if twin is not None:
                return _row_to_session(twin)
            conn.execute(
                f"INSERT INTO sessions ({', '.join(names)}) "
                f"VALUES ({', '.join('?' * len(names))}) "
                f"ON CONFLICT(id) DO UPDATE SET {updates}",
                [data[n] for n in names],
            )
        return session

    @_spoolable(lambda args: None)
    def update_session(self, session_id: str, **fields: Any) -> None:
        """Set some of a session's columns (commits as a list)."""
        allowed = {
            "model",
            "transcript_path",
            "ended_at",
            "first_prompt",
            "last_prompt",
            "prompt_count",
            "commits",
            "diff_stat",
            "pid",
            "end_reason",
            "last_seen_at",
            "start_commit",
        }
        unknown = set(fields) - allowed
        if unknown:
            raise StoreError(f"cannot set session fields {sorted(unknown)}")
        if "commits" in fields:
            fields["commits"] = json.dumps(list(fields["commits"]))
        fields.setdefault("last_seen_at", now_iso())
        names = list(fields)
        with self._write() as conn:
            conn.execute(
                f"UPDATE sessions SET {', '.join(f'{n} = ?' for n in names)} WHERE id = ?",
                [*(fields[n] for n in names), session_id],
            )

    @_spoolable(lambda args: None)
    def note_prompt(self, session_id: str, prompt: str) -> None:
        """Record a prompt: the first one stays, the last one and the count move on."""
        with self._write() as conn:
            conn.execute(
                "UPDATE sessions SET first_prompt = coalesce(first_prompt, ?), "
                "last_prompt = ?, prompt_count = prompt_count + 1, last_seen_at = ? "
                "WHERE id = ?",
                (prompt, prompt, now_iso(), session_id),
            )

    def find_session(self, agent: str, agent_session_id: str) -> Session | None:
        rows = self._read(
            "SELECT * FROM sessions WHERE agent = ? AND agent_session_id = ? "
            "ORDER BY started_at DESC LIMIT 1",
            (agent, agent_session_id),
        )
        found = _row_to_session(rows[0]) if rows else None
        if self.spool is not None:  # a session whose start is still in the spool
            found = self.spool.session(agent, agent_session_id, found)
        return found

    def open_sessions(self, agent: str | None = None) -> list[tuple[Session, str]]:
        """Sessions not yet ended, with when each was last seen."""
        sql = "SELECT * FROM sessions WHERE ended_at IS NULL"
        params: list[Any] = []
        if agent:
            sql += " AND agent = ?"
            params.append(agent)
        rows = self._read(sql, params)
        return [(_row_to_session(r), r["last_seen_at"] or r["started_at"]) for r in rows]

    def session_scopes(self, session_id: str) -> list[str]:
        rows = self._read("SELECT scopes FROM sessions WHERE id = ?", (session_id,))
        return list(json.loads(rows[0][0])) if rows else []

    @_spoolable(lambda args: None)
    def record_delivery(
        self, session_id: str, what: str, item_ids: Sequence[str], query: str | None = None
    ) -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT INTO deliveries (session_id, at, what, item_ids, query) "
                "VALUES (?, ?, ?, ?, ?)",
                (session_id, now_iso(), what, json.dumps(list(item_ids)), query),
            )

    def delivered_ids(self, session_id: str) -> set[str]:
        rows = self._read("SELECT item_ids FROM deliveries WHERE session_id = ?", (session_id,))
        return {item_id for r in rows for item_id in json.loads(r[0])}

    def deliveries(self, session_id: str) -> list[dict[str, Any]]:
        rows = self._read(
            "SELECT at, what, item_ids, query FROM deliveries WHERE session_id = ? ORDER BY at, id",
            (session_id,),
        )
        return [
            {
                "at": r["at"],
                "what": r["what"],
                "item_ids": json.loads(r["item_ids"]),
                "query": r["query"],
            }
            for r in rows
        ]

    def find_session_ids(self, ref: str) -> list[str]:
        rows = self._read(
            "SELECT id FROM sessions WHERE (id >= ? AND id < ?) OR id LIKE ? "
            "OR agent_session_id = ? ORDER BY id",
            (ref, ref + "\x7f", "%" + ref, ref),
        )
        return [r["id"] for r in rows]

    def get_session(self, session_id: str) -> Session:
        rows = self._read("SELECT * FROM sessions WHERE id = ?", (session_id,))
        if not rows:
            raise NotFound(f"no session {session_id}; `ken sessions --all` lists them")
        return _row_to_session(rows[0])

    def list_sessions(self, **filters: Any) -> list[Session]:
        clauses, params = [], []
        for name in (
            "repo",
            "agent",
            "agent_session_id",
            "cwd",
            "workstream",
            "project",
            "continued_from",
        ):
            if filters.get(name) is not None:
                clauses.append(f"{name} = ?")
                params.append(filters[name])
        if filters.get("open"):
            clauses.append("ended_at IS NULL")
        if filters.get("text"):
            # Any session whose prompts, agent, model or repo hold the text (a person
            # looking for one in `ken panel`).
            clauses.append(
                "(instr(lower(coalesce(first_prompt, '') || ' ' || coalesce(last_prompt, '') "
                "|| ' ' || agent || ' ' || coalesce(model, '') || ' ' || coalesce(repo, '')), "
                "?) > 0)"
            )
            params.append(str(filters["text"]).lower())
        where = " AND ".join(clauses) or "1"
        limit = int(filters.get("limit") or 50)
        offset = max(0, int(filters.get("offset") or 0))
        rows = self._read(
            f"SELECT * FROM sessions WHERE {where} ORDER BY started_at DESC, id DESC "
            f"LIMIT {limit} OFFSET {offset}",
            params,
        )
        return [_row_to_session(r) for r in rows]

    def count_sessions(self) -> int:
        return int(self._read("SELECT count(*) FROM sessions")[0][0])


def _with_revision(item: Item, revision: str) -> Item:
    from dataclasses import replace

    return replace(item, revision=revision)


def new_revision_id() -> str:
    return ids.new_ulid()
