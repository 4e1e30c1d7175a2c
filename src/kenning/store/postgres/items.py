"""Items and their versions in the PostgreSQL store.

Every change of an item writes a row in `revisions` in the same transaction (the
version id is the item's `revision`), so an item's history is complete by construction.
A replace reads the stored row `FOR UPDATE`: two writers that expect the same revision
queue on that row, and the second sees the first's revision and gets RevisionConflict.
Search ranks with `ts_rank` over the weighted `tsv` (title above tags above body).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from psycopg.rows import DictRow
from psycopg.types.json import Jsonb

from kenning.errors import InvalidInput, NotFound, RevisionConflict, StoreError
from kenning.ids import short_id
from kenning.model import Item, Revision
from kenning.store.base import ItemQuery, Version, Words, now_iso
from kenning.store.columns import NAMES, REVISION_NAMES, reader, revision_values, writer
from kenning.store.postgres.connection import Conn

COLUMNS = ", ".join(NAMES)
_ROW = "(" + ", ".join(["%s"] * len(NAMES)) + ")"
_INSERT_MANY = f"INSERT INTO items ({COLUMNS}) VALUES {{}}"
ANALYZE_AFTER = 1_000  # items an import adds before it refreshes the planner's statistics
INSERT_ROWS = 500  # 22 parameters a row, far below PostgreSQL's 65,535 a statement
_UPDATE = "UPDATE items SET " + ", ".join(f"{name} = %s" for name in NAMES[1:]) + " WHERE id = %s"
_REVISION_ROW = "(" + ", ".join(["%s"] * len(REVISION_NAMES)) + ")"
_INSERT_REVISIONS = f"INSERT INTO revisions ({', '.join(REVISION_NAMES)}) VALUES {{}}"
_INSERT_REVISION = _INSERT_REVISIONS.format(_REVISION_ROW)
# ts_rank's weights are for D, C, B, A: body (C) 1, tags (B) 4, title (A) 8, as
# SQLite's bm25 weighs the same three columns.
RANK_WEIGHTS = [0.05, 0.125, 0.5, 1.0]
# ts_rank reads each match's vector, so a word most items hold costs a rank per item. A
# search ranks the newest SEARCH_WINDOW matches that pass its filters (as SQLite's does):
# still best first, and a query that broad never needed its oldest matches.
SEARCH_WINDOW = 2_000


# The columns as PostgreSQL stores them: booleans, text arrays as they are, jsonb.
item_values = writer({"object": Jsonb})
row_to_item = reader({}, by_name=True)


def insert_all(conn: Conn, items: Sequence[Item], change: str) -> None:
    """Insert items and their first versions: one statement of many rows for each
    (INSERT_ROWS at a time), so the word counts move once per statement."""
    if any(not item.revision for item in items):
        raise StoreError("an item needs a revision id before it is stored")
    for start in range(0, len(items), INSERT_ROWS):
        chunk = items[start : start + INSERT_ROWS]
        rows = [item_values(item) for item in chunk]
        conn.execute(
            _INSERT_MANY.format(", ".join([_ROW] * len(chunk))),
            [value for row in rows for value in row],
        )
        conn.execute(
            _INSERT_REVISIONS.format(", ".join([_REVISION_ROW] * len(chunk))),
            [
                value
                for item, values in zip(chunk, rows, strict=True)
                for value in revision_values(item, change, values)
            ],
        )


def overwrite(conn: Conn, item: Item, change: str, *, drop_revision: str | None = None) -> None:
    """Write `item` over its stored row, with its version (after dropping the version
    `drop_revision`, when an edit replaces the current one in place)."""
    values = item_values(item)
    conn.execute(_UPDATE, (*values[1:], item.id))
    if drop_revision is not None:
        conn.execute("DELETE FROM revisions WHERE id = %s", (drop_revision,))
    conn.execute(_INSERT_REVISION, revision_values(item, change, values))


def where(query: ItemQuery) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    for column, values in (
        ("scope", query.scopes),
        ("kind", query.kinds),
        ("status", query.statuses),
    ):
        # One value as `=`: an index on (scope, status, updated_at) then yields the rows
        # in order, so a page stops early; `= ANY` of an array would not.
        if len(values) == 1:
            clauses.append(f"items.{column} = %s")
            params.append(values[0])
        elif values:
            clauses.append(f"items.{column} = ANY(%s)")
            params.append(list(values))
    if query.tags:
        clauses.append("items.tags @> %s")
        params.append(list(query.tags))
    if not query.include_expired:
        clauses.append("(items.expires_at IS NULL OR items.expires_at > %s)")
        params.append(query.now or now_iso())
    if query.since:
        clauses.append("items.created_at >= %s")
        params.append(query.since)
    if query.session_id:
        clauses.append("items.session_id = %s")
        params.append(query.session_id)
    if query.pinned is not None:
        clauses.append("items.pinned" if query.pinned else "NOT items.pinned")
    if query.source_prefix:
        clauses.append("items.source >= %s AND items.source < %s")
        params += [query.source_prefix, query.source_prefix + "\x7f"]
    if query.exclude_ids:
        clauses.append("NOT (items.id = ANY(%s))")
        params.append(list(query.exclude_ids))
    if query.exclude_repos:
        repos = list(query.exclude_repos)
        clauses.append("NOT (items.scope = ANY(%s))")
        params.append([f"repo:{repo}" for repo in repos])
        for repo in repos:  # a branch name may hold '#': its workstreams by prefix
            clauses.append("NOT starts_with(items.scope, %s)")
            params.append(f"workstream:{repo}#")
        clauses.append("NOT (COALESCE(items.provenance->>'repo', '') = ANY(%s))")
        params.append(repos)
    return (" AND ".join(clauses) or "true"), params


class Items:
    """The item part of PostgresStore (mixed in; needs the Connection's helpers)."""

    path: str

    if TYPE_CHECKING:

        def _write(self) -> AbstractContextManager[Conn]: ...

        def _read(self, query: Any, params: Any = ()) -> list[DictRow]: ...

        def tsquery_for(self, words: Words) -> str | None: ...

    def insert_item(self, item: Item, change: str = "add") -> Item:
        with self._write() as conn:
            insert_all(conn, [item], change)
        return item

    def insert_many(
        self,
        items: Iterable[Item],
        change: str = "import",
        batch: int = 500,
        history: Mapping[str, Sequence[Version]] | None = None,
    ) -> tuple[int, int]:
        """Insert in batches of one transaction each; items whose id exists are skipped.
        An item added brings its earlier versions in `history` (by item id), before its
        own. Returns (added, skipped); a batch lands whole or not at all."""
        added = skipped = 0
        pending: list[Item] = []

        def flush() -> None:
            nonlocal added, skipped
            with self._write() as conn:
                rows = conn.execute(
                    "SELECT id FROM items WHERE id = ANY(%s) FOR UPDATE",
                    ([i.id for i in pending],),
                ).fetchall()
                present = {r["id"] for r in rows}
                fresh: list[Item] = []
                for item in pending:
                    if item.id in present:
                        skipped += 1
                    else:
                        present.add(item.id)  # a second copy in the same batch is skipped
                        fresh.append(item)
                insert_all(conn, fresh, change)
                for version in (v for i in fresh for v in (history or {}).get(i.id, ())):
                    conn.execute(
                        _INSERT_REVISION,
                        revision_values(version.item, version.change, item_values(version.item)),
                    )
                added += len(fresh)
            pending.clear()

        for item in items:
            pending.append(item)
            if len(pending) >= batch:
                flush()
        if pending:
            flush()
        if added >= ANALYZE_AFTER:
            # The planner's statistics, now rather than at autovacuum's next round: until
            # then it takes a big store for an empty one and ranks every match.
            with self._write() as conn:
                conn.execute("ANALYZE items")
        return added, skipped

    def get_item(self, item_id: str) -> Item:
        rows = self._read(f"SELECT {COLUMNS} FROM items WHERE id = %s", (item_id,))
        if not rows:
            raise NotFound(f"no item {short_id(item_id)}; `ken list --all` shows what there is")
        return row_to_item(rows[0])

    def find_ids(self, ref: str) -> list[str]:
        """Ids that start or end with `ref`, or, for a ref shorter than six, whose short id
        (the last six) starts with it. A start is a range on the primary key; an end of
        six or more, and a short id's start, go through the index on each id's last six;
        shorter ends are rare and scan."""
        starts = "SELECT id FROM items WHERE id >= %s AND id < %s"
        if len(ref) >= 6:
            rows = self._read(
                f"{starts} UNION SELECT id FROM items WHERE substr(id, 21) = %s AND id LIKE %s",
                (ref, ref + "\x7f", ref[-6:], "%" + _like(ref)),
            )
        else:
            rows = self._read(
                f"{starts} UNION SELECT id FROM items WHERE substr(id, 21) >= %s "
                "AND substr(id, 21) < %s UNION SELECT id FROM items WHERE id LIKE %s",
                (ref, ref + "\x7f", ref, ref + "\x7f", "%" + _like(ref)),
            )
        return sorted({r["id"] for r in rows})

    def short_ids(
        self, start: str, statuses: Sequence[str] = (), limit: int = 50
    ) -> list[tuple[str, str, str]]:
        """(id, title, status) of the newest items whose short id starts with `start`."""
        rows = self._read(
            "SELECT id, title, status FROM items "
            "WHERE (%s = '' OR (substr(id, 21) >= %s AND substr(id, 21) < %s)) "
            "AND (cardinality(%s::text[]) = 0 OR status = ANY(%s)) ORDER BY id DESC LIMIT %s",
            (start, start, start + "\x7f", list(statuses), list(statuses), int(limit)),
        )
        return [(r["id"], r["title"], r["status"]) for r in rows]

    def scopes_in_use(self, limit: int = 200, prefix: str = "") -> list[str]:
        """The scopes that hold items (those that start with `prefix`), fewest characters
        first."""
        rows = self._read(
            "SELECT scope FROM (SELECT DISTINCT scope FROM items WHERE left(scope, %s) = %s) s "
            "ORDER BY length(scope), scope LIMIT %s",
            (len(prefix), prefix, limit),
        )
        return [r["scope"] for r in rows]

    def replace_item(
        self,
        item: Item,
        change: str,
        expected_revision: str | None = None,
        new_version: bool = True,
    ) -> Item:
        """Write `item` over the stored one; a new version unless `new_version` is False
        (then the current version is rewritten under its id)."""
        with self._write() as conn:
            row = conn.execute(
                "SELECT revision FROM items WHERE id = %s FOR UPDATE", (item.id,)
            ).fetchone()
            if row is None:
                raise NotFound(f"no item {short_id(item.id)}")
            current = row["revision"]
            if expected_revision is not None and expected_revision != current:
                raise RevisionConflict(item.id, expected_revision, current)
            if new_version:
                overwrite(conn, item, change)
            else:
                item = replace(item, revision=current)
                overwrite(conn, item, change, drop_revision=current)
            return item

    def list_items(self, query: ItemQuery) -> list[Item]:
        clause, params = where(query)
        if query.kind_groups:
            # kenning.rank's order, so a page of it never needs every row in Python.
            cases = " ".join("WHEN %s THEN %s" for _ in query.kind_groups)
            order = (
                f"CASE kind {cases} ELSE {len(query.kind_groups)} END, use_count DESC, "
                "coalesce(last_used_at, '') DESC, created_at DESC, id DESC"
            )
            params += [value for pair in query.kind_groups for value in pair]
        elif query.captured_first:
            order = "seq DESC"
        elif query.recent_first:
            order = "updated_at DESC"
        else:
            order = "pinned DESC, updated_at DESC, id DESC"
        sql = f"SELECT {COLUMNS} FROM items WHERE {clause} ORDER BY {order} LIMIT %s OFFSET %s"
        params += [query.limit or None, max(0, int(query.offset))]
        return [row_to_item(r) for r in self._read(sql, params)]

    def next_captured(self, item_ids: Sequence[str], query: ItemQuery) -> dict[str, Item]:
        """For each of `item_ids`, the item captured right after it in its scope, when
        `query`'s filters keep that one: what may continue it (a conversation's next
        turn). The scope's own index walks to it."""
        if not item_ids:
            return {}
        pairs = self._read(
            "SELECT items.id, (SELECT n.seq FROM items AS n WHERE n.scope = items.scope "
            "AND n.seq > items.seq ORDER BY n.seq LIMIT 1) AS after "
            "FROM items WHERE items.id = ANY(%s)",
            [list(item_ids)],
        )
        after = {row["after"]: row["id"] for row in pairs if row["after"] is not None}
        if not after:
            return {}
        clause, params = where(query)
        rows = self._read(
            f"SELECT {COLUMNS}, seq FROM items WHERE seq = ANY(%s) AND {clause}",
            [list(after), *params],
        )
        return {after[row["seq"]]: row_to_item(row) for row in rows}

    def search(self, words: Words, query: ItemQuery) -> list[tuple[Item, float]]:
        """Full-text search, best first among the newest SEARCH_WINDOW matches; the score
        is ts_rank's (higher is better). Typed words with no word in them are
        InvalidInput."""
        tsquery = self.tsquery_for(words)
        if tsquery is None:
            if words.typed:
                raise InvalidInput("the search has no words in it: give at least one word")
            return []
        if not tsquery:
            return []
        clause, params = where(query)
        cols = ", ".join(f"items.{c}" for c in NAMES)
        sql = (
            f"SELECT {cols}, ts_rank(%s::float4[], items.tsv, q) AS rank FROM ("
            f"SELECT items.seq FROM items, CAST(%s AS tsquery) AS q WHERE items.tsv @@ q "
            f"AND {clause} ORDER BY items.seq DESC LIMIT %s) AS hits "
            "JOIN items ON items.seq = hits.seq, CAST(%s AS tsquery) AS q "
            "ORDER BY rank DESC, items.seq DESC LIMIT %s"
        )
        rows = self._read(
            sql, [RANK_WEIGHTS, tsquery, *params, SEARCH_WINDOW, tsquery, query.limit or None]
        )
        return [(row_to_item(r), float(r["rank"])) for r in rows]

    def revision_owners(self, revision_ids: Sequence[str]) -> dict[str, str]:
        """The item each of `revision_ids` the store holds is a version of."""
        rows = self._read(
            "SELECT id, item_id FROM revisions WHERE id = ANY(%s)", (list(revision_ids),)
        )
        return {r["id"]: r["item_id"] for r in rows}

    def revisions(self, item_id: str) -> list[Revision]:
        rows = self._read("SELECT * FROM revisions WHERE item_id = %s ORDER BY id", (item_id,))
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
                tags=tuple(r["tags"]),
                links=tuple(r["links"]),
                evidence=r["evidence"],
                provenance=dict(r["provenance"]),
                change=r["change"],
            )
            for r in rows
        ]

    def delete_items(self, item_ids: Sequence[str], session_id: str | None = None) -> int:
        """Delete items with every version and use (and, given a session, that session
        with what it was told). The rows are gone for every reader at commit; their old
        versions stay in the table's free space until (auto)vacuum reclaims it."""
        if not item_ids and not session_id:
            return 0
        with self._write() as conn:
            if session_id:
                conn.execute("DELETE FROM uses WHERE session_id = %s", (session_id,))
                conn.execute("DELETE FROM sessions WHERE id = %s", (session_id,))
            doomed = list(item_ids)
            conn.execute("DELETE FROM uses WHERE item_id = ANY(%s)", (doomed,))
            conn.execute("DELETE FROM revisions WHERE item_id = ANY(%s)", (doomed,))
            cur = conn.execute("DELETE FROM items WHERE id = ANY(%s)", (doomed,))
            return cur.rowcount

    def items_quoting(self, needles: Sequence[str], exclude_ids: Sequence[str] = ()) -> list[Item]:
        """Items whose text (title, body, evidence), now or in any older version, holds
        one of `needles` (compared without case)."""
        if not needles:
            return []
        lowered = [n.lower() for n in needles]
        hit = (
            "EXISTS (SELECT 1 FROM unnest(%s::text[]) AS n(x) "
            "WHERE strpos(lower(title || ' ' || body || ' ' || evidence), n.x) > 0)"
        )
        rows = self._read(
            f"SELECT id FROM items WHERE {hit} UNION SELECT item_id FROM revisions WHERE {hit}",
            (lowered, lowered),
        )
        found = {r["id"] for r in rows} - set(exclude_ids)
        return [self.get_item(item_id) for item_id in sorted(found)]

    def replacement_copies(self, item_ids: Sequence[str]) -> list[Item]:
        """Proposed items that link to one of `item_ids` (`item:ID`)."""
        if not item_ids:
            return []
        rows = self._read(
            f"SELECT {COLUMNS} FROM items WHERE status = 'proposed' "
            "AND links && %s AND NOT (id = ANY(%s)) ORDER BY seq",
            ([f"item:{i}" for i in item_ids], list(item_ids)),
        )
        return [row_to_item(r) for r in rows]

    def drop_kept_copies(
        self, item_ids: Sequence[str], session_id: str | None, needles: Sequence[str]
    ) -> list[str]:
        """None: a PostgreSQL store keeps no copies of itself from before a migration."""
        return []

    def scrub_quotes(self, needles: Sequence[str]) -> int:
        """Blank the session prompts, recall queries, prompt copies and signal details
        that hold one of `needles` (compared without case); returns how many fields."""
        if not needles:
            return 0
        lowered = [n.lower() for n in needles]
        blanked = 0
        with self._write() as conn:
            for table, column, blank in (
                ("sessions", "first_prompt", None),
                ("sessions", "last_prompt", None),
                ("deliveries", "query", None),
                ("session_prompts", "text", ""),
                ("signals", "detail", ""),
            ):
                for needle in lowered:
                    blanked += conn.execute(
                        f"UPDATE {table} SET {column} = %s "
                        f"WHERE {column} IS NOT NULL AND strpos(lower({column}), %s) > 0",
                        (blank, needle),
                    ).rowcount
        return blanked

    def record_uses(self, item_ids: Sequence[str], session_id: str | None, how: str) -> int:
        """Count a use of each item; once per session when a session is given. The
        item's row is locked first, so two writers in one session count it once."""
        at = now_iso()
        raised = 0
        with self._write() as conn:
            # Lock the rows in one order, so two writers cannot deadlock on them.
            rows = conn.execute(
                "SELECT id FROM items WHERE id = ANY(%s) ORDER BY id FOR UPDATE",
                (list(item_ids),),
            ).fetchall()
            present = {r["id"] for r in rows}
            for item_id in item_ids:
                if item_id not in present:
                    continue
                seen = (
                    session_id is not None
                    and conn.execute(
                        "SELECT 1 FROM uses WHERE item_id = %s AND session_id = %s LIMIT 1",
                        (item_id, session_id),
                    ).fetchone()
                    is not None
                )
                conn.execute(
                    "INSERT INTO uses (item_id, session_id, at, how) VALUES (%s, %s, %s, %s)",
                    (item_id, session_id, at, how),
                )
                if not seen:
                    conn.execute(
                        "UPDATE items SET use_count = use_count + 1, last_used_at = %s "
                        "WHERE id = %s",
                        (at, item_id),
                    )
                    raised += 1
        return raised

    def count_items(self, query: ItemQuery | None = None) -> int:
        if query is None:
            return int(self._read("SELECT count(*) AS n FROM items")[0]["n"])
        clause, params = where(query)
        return int(self._read(f"SELECT count(*) AS n FROM items WHERE {clause}", params)[0]["n"])

    def counts(self) -> dict[str, int]:
        rows = self._read("SELECT status, count(*) AS n FROM items GROUP BY status")
        return {r["status"]: int(r["n"]) for r in rows}


def _like(text: str) -> str:
    """`text` as a LIKE pattern that matches only itself."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
