"""Sessions, what they were told, their run lessons, and projects, in PostgreSQL.

The same tables as SQLite's (kenning.store.sqlite, kenning.store.signals). Where SQLite
relies on its one writer at a time, this takes a transaction-scoped advisory lock:
`upsert_session` on the agent's own session id, so two hooks of one run that start at
once store one session, not two.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from psycopg import sql
from psycopg.rows import DictRow

from kenning.errors import NotFound
from kenning.model import SESSION_FIELDS, Session
from kenning.store.base import (
    LessonState,
    Project,
    SessionDelivery,
    SessionQuery,
    SessionUpdate,
    Signal,
    now_iso,
)
from kenning.store.postgres.connection import Conn


def row_to_session(row: DictRow) -> Session:
    return Session(
        **{name: row[name] for name in SESSION_FIELDS if name != "commits"},
        commits=tuple(row["commits"] or ()),
    )


class Sessions:
    """The session part of PostgresStore (mixed in; needs the Connection's helpers)."""

    if TYPE_CHECKING:

        def _write(self) -> AbstractContextManager[Conn]: ...

        def _read(self, query: Any, params: Any = ()) -> list[DictRow]: ...

        @staticmethod
        def _lock(conn: Conn, key: str) -> None: ...

    # --- sessions --------------------------------------------------------------------

    def upsert_session(self, session: Session, scopes: Sequence[str] = ()) -> Session:
        """Store a session (by id); returns the one stored. A session new here whose
        agent run is stored already is not stored twice: the second gets the first's,
        when that one is open and in the same repo (a run that went on in another repo
        is a new session there: `sessions.start`)."""
        data = session.to_dict()
        data["commits"] = list(data["commits"])
        data["scopes"] = list(scopes)
        data["last_seen_at"] = now_iso()
        names = list(data)
        statement = sql.SQL(
            "INSERT INTO sessions ({names}) VALUES ({marks}) "
            "ON CONFLICT (id) DO UPDATE SET {updates}"
        ).format(
            names=sql.SQL(", ").join(map(sql.Identifier, names)),
            marks=sql.SQL(", ").join(sql.Placeholder() * len(names)),
            updates=sql.SQL(", ").join(
                (
                    sql.SQL("{0} = COALESCE(excluded.{0}, sessions.{0})")
                    if n == "model"  # a model noted already is never forgotten
                    else sql.SQL("{0} = excluded.{0}")
                ).format(sql.Identifier(n))
                for n in names
                if n != "id"
            ),
        )
        with self._write() as conn:
            if session.agent_session_id is not None:
                self._lock(conn, f"session:{session.agent}:{session.agent_session_id}")
            twin = conn.execute(
                "SELECT * FROM sessions WHERE agent = %s AND agent_session_id = %s AND id <> %s "
                "AND NOT EXISTS (SELECT 1 FROM sessions WHERE id = %s) "
                "AND ended_at IS NULL AND repo IS NOT DISTINCT FROM %s "
                "ORDER BY started_at DESC LIMIT 1",
                (session.agent, session.agent_session_id, session.id, session.id, session.repo),
            ).fetchone()
            if twin is not None:
                return row_to_session(twin)
            conn.execute(statement, [data[n] for n in names])
        return session

    def update_session(self, session_id: str, update: SessionUpdate) -> None:
        """Set the columns `update` gives."""
        fields = update.changes()
        if "commits" in fields:
            fields["commits"] = list(fields["commits"])
        fields.setdefault("last_seen_at", now_iso())
        names = list(fields)
        statement = sql.SQL("UPDATE sessions SET {} WHERE id = %s").format(
            sql.SQL(", ").join(sql.SQL("{} = %s").format(sql.Identifier(n)) for n in names)
        )
        with self._write() as conn:
            conn.execute(statement, [*(fields[n] for n in names), session_id])

    def note_prompt(self, session_id: str, prompt: str | None) -> None:
        """Record a prompt: the first one stays, the last one and the count move on. A
        prompt of None (none of the person's words in it) is counted, not recorded."""
        with self._write() as conn:
            conn.execute(
                "UPDATE sessions SET first_prompt = coalesce(first_prompt, %s), "
                "last_prompt = coalesce(%s, last_prompt), prompt_count = prompt_count + 1, "
                "last_seen_at = %s WHERE id = %s",
                (prompt, prompt, now_iso(), session_id),
            )

    def get_session(self, session_id: str) -> Session:
        rows = self._read("SELECT * FROM sessions WHERE id = %s", (session_id,))
        if not rows:
            raise NotFound(f"no session {session_id}; `ken sessions --all` lists them")
        return row_to_session(rows[0])

    def find_session(self, agent: str, agent_session_id: str) -> Session | None:
        rows = self._read(
            "SELECT * FROM sessions WHERE agent = %s AND agent_session_id = %s "
            "ORDER BY started_at DESC LIMIT 1",
            (agent, agent_session_id),
        )
        return row_to_session(rows[0]) if rows else None

    def find_session_ids(self, ref: str) -> list[str]:
        """As SQLite's: by the start or end of the id, the start of its short id (a ref
        shorter than six), or the agent's own session id."""
        like = "%" + ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        if len(ref) >= 6:
            ends = "SELECT id FROM sessions WHERE substr(id, 21) = %s AND id LIKE %s"
            params: tuple[str, ...] = (ref[-6:], like)
        else:
            ends = (
                "SELECT id FROM sessions WHERE id LIKE %s UNION SELECT id FROM sessions "
                "WHERE substr(id, 21) >= %s AND substr(id, 21) < %s"
            )
            params = (like, ref, ref + "\x7f")
        rows = self._read(
            f"SELECT id FROM sessions WHERE id >= %s AND id < %s UNION {ends} "
            "UNION SELECT id FROM sessions WHERE agent_session_id = %s ORDER BY id",
            (ref, ref + "\x7f", *params, ref),
        )
        return [r["id"] for r in rows]

    def list_sessions(self, query: SessionQuery) -> list[Session]:
        clauses: list[sql.Composable] = []
        params: list[Any] = []
        for name, value in (
            ("repo", query.repo),
            ("agent", query.agent),
            ("cwd", query.cwd),
            ("workstream", query.workstream),
            ("project", query.project),
        ):
            if value is not None:
                clauses.append(sql.SQL("{} = %s").format(sql.Identifier(name)))
                params.append(value)
        if query.text:
            # Any session whose prompts, agent, model or repo hold the text.
            clauses.append(
                sql.SQL(
                    "strpos(lower(concat_ws(' ', first_prompt, last_prompt, agent, model, repo)),"
                    " %s) > 0"
                )
            )
            params.append(query.text.lower())
        params += [int(query.limit or 50), max(0, int(query.offset))]
        statement = sql.SQL(
            "SELECT * FROM sessions WHERE {} ORDER BY started_at DESC, id DESC LIMIT %s OFFSET %s"
        ).format(sql.SQL(" AND ").join(clauses) if clauses else sql.SQL("true"))
        return [row_to_session(r) for r in self._read(statement, params)]

    def open_sessions(self, agent: str | None = None) -> list[tuple[Session, str]]:
        """Sessions not yet ended, with when each was last seen."""
        rows = self._read(
            "SELECT * FROM sessions WHERE ended_at IS NULL AND (%s::text IS NULL OR agent = %s) "
            "ORDER BY started_at, id",
            (agent or None, agent or None),
        )
        return [(row_to_session(r), r["last_seen_at"] or r["started_at"]) for r in rows]

    def count_sessions(self) -> int:
        return int(self._read("SELECT count(*) AS n FROM sessions")[0]["n"])

    def session_scopes(self, session_id: str) -> list[str]:
        rows = self._read("SELECT scopes FROM sessions WHERE id = %s", (session_id,))
        return list(rows[0]["scopes"]) if rows else []

    def summary_progress(self, session_id: str) -> tuple[int, int]:
        """(parts written, conversation turns already summarized) for a session."""
        rows = self._read(
            "SELECT summary_parts, summarized_turns FROM sessions WHERE id = %s", (session_id,)
        )
        return (rows[0]["summary_parts"], rows[0]["summarized_turns"]) if rows else (0, 0)

    def set_summary_progress(self, session_id: str, parts: int, turns: int) -> None:
        with self._write() as conn:
            conn.execute(
                "UPDATE sessions SET summary_parts = %s, summarized_turns = %s WHERE id = %s",
                (parts, turns, session_id),
            )

    # --- what sessions were told -----------------------------------------------------

    def record_delivery(
        self, session_id: str, what: str, item_ids: Sequence[str], query: str | None = None
    ) -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT INTO deliveries (session_id, at, what, item_ids, query) "
                "VALUES (%s, %s, %s, %s, %s)",
                (session_id, now_iso(), what, list(item_ids), query),
            )

    def delivered_ids(self, session_id: str) -> set[str]:
        rows = self._read(
            "SELECT DISTINCT unnest(item_ids) AS id FROM deliveries WHERE session_id = %s",
            (session_id,),
        )
        return {r["id"] for r in rows}

    def deliveries(self, session_id: str) -> list[SessionDelivery]:
        rows = self._read(
            "SELECT at, what, item_ids, query FROM deliveries WHERE session_id = %s "
            "ORDER BY at, id",
            (session_id,),
        )
        return [SessionDelivery(r["at"], r["what"], tuple(r["item_ids"]), r["query"]) for r in rows]

    # --- run lessons (as kenning.store.signals) ---------------------------------------

    def add_signal(self, session_id: str, kind: str, detail: str = "") -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT INTO signals (session_id, at, kind, detail) VALUES (%s, %s, %s, %s)",
                (session_id, now_iso(), kind, detail),
            )

    def signals(self, session_id: str) -> list[Signal]:
        rows = self._read(
            "SELECT at, kind, detail FROM signals WHERE session_id = %s ORDER BY id", (session_id,)
        )
        return [Signal(r["at"], r["kind"], r["detail"]) for r in rows]

    def add_prompt(self, session_id: str, text: str) -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT INTO session_prompts (session_id, at, text) VALUES (%s, %s, %s)",
                (session_id, now_iso(), text),
            )

    def session_prompts(self, session_id: str) -> list[str]:
        rows = self._read(
            "SELECT text FROM session_prompts WHERE session_id = %s ORDER BY id", (session_id,)
        )
        return [r["text"] for r in rows]

    def note_call(self, session_id: str, key: str) -> int:
        """Record a tool call (its key) and return how many times in a row it has come."""
        with self._write() as conn:
            row = conn.execute(
                "INSERT INTO lesson_state AS s (session_id, last_call, repeats) "
                "VALUES (%s, %s, 1) ON CONFLICT (session_id) DO UPDATE SET "
                "repeats = CASE WHEN s.last_call = excluded.last_call "
                "THEN s.repeats + 1 ELSE 1 END, last_call = excluded.last_call "
                "RETURNING repeats",
                (session_id, key),
            ).fetchone()
        assert row is not None
        return int(row["repeats"])

    def lesson_state(self, session_id: str) -> LessonState:
        """When Stop asked this session for a reflection, and when one was recorded."""
        rows = self._read(
            "SELECT asked_at, reflected_at FROM lesson_state WHERE session_id = %s", (session_id,)
        )
        if not rows:
            return LessonState()
        return LessonState(rows[0]["asked_at"], rows[0]["reflected_at"])

    def mark_lesson(self, session_id: str, what: str) -> bool:
        """Set `asked_at` or `reflected_at` once; False when it was set already."""
        column = sql.Identifier({"asked": "asked_at", "reflected": "reflected_at"}[what])
        with self._write() as conn:
            conn.execute(
                "INSERT INTO lesson_state (session_id) VALUES (%s) "
                "ON CONFLICT (session_id) DO NOTHING",
                (session_id,),
            )
            done = conn.execute(
                sql.SQL(
                    "UPDATE lesson_state SET {0} = %s WHERE session_id = %s AND {0} IS NULL"
                ).format(column),
                (now_iso(), session_id),
            )
            return done.rowcount == 1

    # --- projects and collected places ------------------------------------------------

    def add_project(self, slug: str, folder: str, repo: str | None) -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT INTO projects (slug, dir, repo, added_at) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (slug) DO UPDATE SET dir = excluded.dir, repo = excluded.repo",
                (slug, folder, repo, now_iso()),
            )

    def remove_project(self, slug: str) -> bool:
        with self._write() as conn:
            return conn.execute("DELETE FROM projects WHERE slug = %s", (slug,)).rowcount > 0

    def projects(self) -> list[Project]:
        rows = self._read("SELECT slug, dir, repo, added_at FROM projects ORDER BY slug")
        return [Project(r["slug"], r["dir"], r["repo"], r["added_at"]) for r in rows]

    def file_stamp(self, slug: str, name: str) -> tuple[int, int] | None:
        rows = self._read(
            "SELECT size, mtime_ns FROM project_files WHERE slug = %s AND name = %s", (slug, name)
        )
        return (int(rows[0]["size"]), int(rows[0]["mtime_ns"])) if rows else None

    def set_file_stamp(self, slug: str, name: str, stamp: tuple[int, int] | None) -> None:
        with self._write() as conn:
            if stamp is None:
                conn.execute(
                    "DELETE FROM project_files WHERE slug = %s AND name = %s", (slug, name)
                )
                return
            conn.execute(
                "INSERT INTO project_files (slug, name, size, mtime_ns, synced_at) "
                "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (slug, name) DO UPDATE SET "
                "size = excluded.size, mtime_ns = excluded.mtime_ns, "
                "synced_at = excluded.synced_at",
                (slug, name, stamp[0], stamp[1], now_iso()),
            )

    def place_stamp(self, agent: str, path: str) -> tuple[int, int] | None:
        """The stamp `ken collect` left for one of an agent's memory places."""
        rows = self._read(
            "SELECT files, digest FROM collected_places WHERE agent = %s AND path = %s",
            (agent, path),
        )
        return (int(rows[0]["files"]), int(rows[0]["digest"])) if rows else None

    def set_place_stamp(self, agent: str, path: str, stamp: tuple[int, int]) -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT INTO collected_places (agent, path, files, digest, collected_at) "
                "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (agent, path) DO UPDATE SET "
                "files = excluded.files, digest = excluded.digest, "
                "collected_at = excluded.collected_at",
                (agent, path, stamp[0], stamp[1], now_iso()),
            )

    def add_forgotten(self, digests: Sequence[str]) -> None:
        """Keep the digests of entries a person forgot (`kenning.tombstones`)."""
        if not digests:
            return
        with self._write() as conn, conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO forgotten (digest, forgotten_at) VALUES (%s, %s) "
                "ON CONFLICT (digest) DO NOTHING",
                [(d, now_iso()) for d in digests],
            )

    def is_forgotten(self, digest: str) -> bool:
        return bool(self._read("SELECT 1 FROM forgotten WHERE digest = %s", (digest,)))
