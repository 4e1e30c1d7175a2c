"""The SQLite store's items: writes with their versions, reads, and forgetting.

Every write of an item is one transaction with its version in `revisions` and the word
counts (`sqlite_terms`) kept in step; `insert_many` writes a batch in a few statements,
many rows each (see `_insert_rows`).
The columns an item is stored as are described once, in `sqlite_columns`.

Search is `sqlite_search`'s. `delete_items` leaves nothing of an item's text on disk.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from itertools import chain
from typing import Any

from kenning.errors import NotFound, RevisionConflict, StoreError
from kenning.ids import short_id
from kenning.model import Item, Revision
from kenning.store import migrations
from kenning.store import sqlite_columns as columns
from kenning.store import sqlite_recent as recent
from kenning.store.base import ItemQuery, Version, now_iso
from kenning.store.sqlite_core import WIPE_WAIT_SECONDS, spoolable
from kenning.store.sqlite_terms import Terms

MAX_ROWS_PER_INSERT = 500  # rows a multi-row INSERT takes, at most


class Items(Terms):
    """Items, their versions and uses (mixed into `SQLiteStore`)."""

    _max_variables: int | None = None

    def _insert(self, conn: sqlite3.Connection, item: Item, change: str) -> Item:
        self._insert_all(conn, [item], change)
        return item

    def _insert_all(self, conn: sqlite3.Connection, items: Sequence[Item], change: str) -> None:
        """Insert items and their first versions, a few statements for the lot."""
        if any(not item.revision for item in items):
            raise StoreError("an item needs a revision id before it is stored")
        values = [columns.item_values(item) for item in items]
        self._insert_rows(conn, columns.INSERT, values)
        self._count_texts(conn, [columns.index_text(v) for v in values])
        self._insert_rows(
            conn,
            columns.INSERT_REVISION,
            [columns.revision_values(i, change, v) for i, v in zip(items, values, strict=True)],
        )
        recent.trim(conn)

    def _insert_rows(
        self, conn: sqlite3.Connection, insert: str, rows: Sequence[tuple[Any, ...]]
    ) -> None:
        """Run `insert` (one row's INSERT) for every row of `rows`, many rows a statement.

        A statement that may stop half way (the items' unique ids, their triggers) saves
        a point to return to, and FTS5 writes what it holds to disk at each one: row by
        row, the index trigger made a segment of every item, three times the cost of
        indexing the same text in one go."""
        if len(rows) <= 1:
            if rows:
                conn.execute(insert, rows[0])
            return
        width = len(rows[0])
        per = max(1, min(MAX_ROWS_PER_INSERT, self._variables() // width))
        for start in range(0, len(rows), per):
            part = rows[start : start + per]
            conn.execute(columns.insert_of(insert, len(part)), list(chain.from_iterable(part)))

    def _variables(self) -> int:
        """How many values one statement may take here (SQLite's own limit)."""
        if self._max_variables is None:
            self._max_variables = self.conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
        return self._max_variables

    def _overwrite(self, conn: sqlite3.Connection, old: Item, item: Item, change: str) -> None:
        """Write `item` over its stored row (`old`), with its version and the word counts."""
        values = columns.item_values(item)
        conn.execute(columns.UPDATE, columns.update_values(values))
        if self._index_text(old) != self._index_text(item):
            self._count_terms(conn, [item], [old])
        conn.execute(columns.INSERT_REVISION, columns.revision_values(item, change, values))

    @spoolable(lambda args: args[0])
    def insert_item(self, item: Item, change: str = "add") -> Item:
        with self._write() as conn:
            return self._insert(conn, item, change)

    def insert_many(
        self,
        items: Iterable[Item],
        change: str = "import",
        batch: int = 500,
        history: Mapping[str, Sequence[Version]] | None = None,
    ) -> tuple[int, int]:
        """Insert in batches of one transaction each; items whose id exists are skipped.
        An item added brings its earlier versions in `history` (by item id), before its
        own.

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
                earlier = [v for i in fresh for v in (history or {}).get(i.id, ())]
                self._insert_rows(
                    conn,
                    columns.INSERT_REVISION,
                    [
                        columns.revision_values(v.item, v.change, columns.item_values(v.item))
                        for v in earlier
                    ],
                )
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
        rows = self._read(f"SELECT {columns.SELECT} FROM items WHERE id = ?", (item_id,))
        if not rows:
            raise NotFound(f"no item {short_id(item_id)}; `ken list --all` shows what there is")
        return columns.row_to_item(rows[0])

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

    def scopes_in_use(self, limit: int = 200, prefix: str = "") -> list[str]:
        """The scopes that hold items (those that start with `prefix`), fewest characters
        first."""
        if not prefix:
            rows = self._read(
                "SELECT DISTINCT scope FROM items ORDER BY length(scope), scope LIMIT ?", (limit,)
            )
            return [r["scope"] for r in rows]
        # A range of the scope index: every text that starts with the prefix sorts from it
        # to the prefix with its last character one higher, and none other does.
        above = prefix[:-1] + chr(ord(prefix[-1]) + 1) if ord(prefix[-1]) < 0x10FFFF else None
        rows = self._read(
            "SELECT DISTINCT scope FROM items WHERE scope >= ? AND (? IS NULL OR scope < ?) "
            "AND substr(scope, 1, ?) = ? ORDER BY length(scope), scope LIMIT ?",
            (prefix, above, above, len(prefix), prefix, limit),
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
                f"SELECT {columns.SELECT} FROM items WHERE id = ?", (item.id,)
            ).fetchone()
            if row is None:
                raise NotFound(f"no item {short_id(item.id)}")
            old = columns.row_to_item(row)
            current = old.revision
            if expected_revision is not None and expected_revision != current:
                raise RevisionConflict(item.id, expected_revision, current)
            if not new_version:  # the current version is rewritten in place
                item = replace(item, revision=current)
                conn.execute("DELETE FROM revisions WHERE id = ?", (current,))
            self._overwrite(conn, old, item, change)
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
        if query.exclude_repos:
            repos = query.exclude_repos
            marks = ", ".join("?" * len(repos))
            clauses.append(f"items.scope NOT IN ({marks})")
            params.extend(f"repo:{repo}" for repo in repos)
            for repo in repos:  # a branch name may hold '#': its workstreams by prefix
                clauses.append("substr(items.scope, 1, ?) != ?")
                params.extend([len(f"workstream:{repo}#"), f"workstream:{repo}#"])
            clauses.append(
                f"COALESCE(json_extract(items.provenance, '$.repo'), '') NOT IN ({marks})"
            )
            params.extend(repos)
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
            sql = f"SELECT {columns.SELECT} FROM items WHERE {where} ORDER BY {order}"
        else:
            if query.captured_first:
                order = "rowid DESC"
            elif query.recent_first:
                order = "updated_at DESC"
            else:
                order = "pinned DESC, updated_at DESC, id DESC"
            sql = f"SELECT {columns.SELECT} FROM items WHERE {where} ORDER BY {order}"
        if query.limit or query.offset:
            sql += f" LIMIT {int(query.limit or -1)} OFFSET {max(0, int(query.offset))}"
        return [columns.row_to_item(r) for r in self._read(sql, params)]

    def revision_owners(self, revision_ids: Sequence[str]) -> dict[str, str]:
        """The item each of `revision_ids` the store holds is a version of."""
        owners: dict[str, str] = {}
        wanted = list(revision_ids)
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            marks = ", ".join("?" * len(part))
            rows = self._read(f"SELECT id, item_id FROM revisions WHERE id IN ({marks})", part)
            owners.update((r["id"], r["item_id"]) for r in rows)
        return owners

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
                    f"SELECT {columns.SELECT} FROM items WHERE id IN ({marks})", chunk
                ).fetchall()
                self._count_terms(conn, [], [columns.row_to_item(r) for r in doomed])
                conn.execute(f"DELETE FROM uses WHERE item_id IN ({marks})", chunk)
                conn.execute(f"DELETE FROM revisions WHERE item_id IN ({marks})", chunk)
                deleted += conn.execute(f"DELETE FROM items WHERE id IN ({marks})", chunk).rowcount
            for index in ("items_fts", "items_recent"):
                conn.execute(f"INSERT INTO {index}({index}) VALUES ('optimize')")
            recent.after_delete(conn)
        self.checkpoint(WIPE_WAIT_SECONDS, remember=True)
        return deleted

    def drop_kept_copies(
        self, item_ids: Sequence[str], session_id: str | None, needles: Sequence[str]
    ) -> list[str]:
        """Remove the copies of the store kept from before a migration that hold what a
        forget deleted (`migrations.drop_copies_holding`); their paths."""
        return [
            str(p) for p in migrations.drop_copies_holding(self.path, item_ids, session_id, needles)
        ]

    def items_quoting(self, needles: Sequence[str], exclude_ids: Sequence[str] = ()) -> list[Item]:
        """Items whose text (title, body, evidence), now or in any older version, holds
        one of `needles` (compared without case): what `forget --everywhere` also
        removes. A scan of every row: a person's rare command, never a hook's."""
        if not needles:
            return []
        lowered = json.dumps([n.lower() for n in needles])
        # Each row's text lowered once, then every needle looked for in it: the needles
        # are one JSON array, not an OR of one term each (a thousand of those passed
        # SQLite's limit on an expression's depth: a scope of a few hundred memories).
        found = {
            r[0]
            for table, key in (("items", "id"), ("revisions", "item_id"))
            for r in self._read(
                f"WITH t AS MATERIALIZED (SELECT {key} AS id, "
                f"lower(title || ' ' || body || ' ' || evidence) AS x FROM {table}) "
                "SELECT DISTINCT id FROM t "
                "WHERE EXISTS (SELECT 1 FROM json_each(?) AS n WHERE instr(t.x, n.value) > 0)",
                (lowered,),
            )
        }
        found -= set(exclude_ids)
        return [self.get_item(item_id) for item_id in sorted(found)]

    def replacement_copies(self, item_ids: Sequence[str]) -> list[Item]:
        """Proposed items that link to one of `item_ids` (`item:ID`): copies an agent
        filed to replace it, with its text in them."""
        gone = set(item_ids)
        wanted = {f"item:{item_id}" for item_id in gone}
        if not wanted:
            return []
        # One read of the proposals that link to any memory, not one per memory forgotten
        # (a scope's forget read every proposal once for each of its memories).
        rows = self._read(
            f"SELECT {columns.SELECT} FROM items WHERE status = 'proposed' "
            "AND instr(links, '\"item:') > 0"
        )
        found = (columns.row_to_item(r) for r in rows)
        return [
            item
            for item in found
            if item.id not in gone and not wanted.isdisjoint(str(x) for x in item.links)
        ]

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
                blanked += conn.execute(
                    f"UPDATE {table} SET {column} = ? WHERE {column} IS NOT NULL AND EXISTS "
                    f"(SELECT 1 FROM json_each(?) AS n WHERE instr(lower({column}), n.value) > 0)",
                    (blank, json.dumps([n.lower() for n in needles])),
                ).rowcount
        if blanked:
            self.checkpoint(WIPE_WAIT_SECONDS, remember=True)
        return blanked

    @spoolable(lambda args: 0)
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

    def counts(self) -> dict[str, int]:
        """How many items there are in each status."""
        rows = self._read("SELECT status, count(*) AS n FROM items GROUP BY status")
        return {r["status"]: r["n"] for r in rows}

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
