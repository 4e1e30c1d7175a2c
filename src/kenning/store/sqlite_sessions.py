"""The SQLite store's sessions and what they were told.

A session is one agent run, stored by its own id and found by the agent's. Its writes
from hooks (`upsert_session`, `update_session`, `note_prompt`, `record_delivery`) are
`@spoolable`: under a held lock they wait in the spool, and `find_session` sees the
ones still waiting there.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from kenning.errors import NotFound
from kenning.model import Session
from kenning.store.base import SessionDelivery, SessionQuery, SessionUpdate, now_iso
from kenning.store.sqlite_core import Core, spoolable


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


class Sessions(Core):
    """Sessions and deliveries (mixed into `SQLiteStore`)."""

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

    @spoolable(lambda args: args[0])
    def upsert_session(self, session: Session, scopes: Sequence[str] = ()) -> Session:
        """Store a session (by id); returns the one stored. A session new here whose agent
        run is stored already is not stored twice: two hooks of one run that start at
        once (Copilot's first two) each open it, and the one that comes second gets the
        first's, when that one is open and in the same repo: a run that went on in another
        repo is a new session there (`sessions.start`)."""
        data = session.to_dict()
        data["commits"] = json.dumps(data["commits"])
        data["scopes"] = json.dumps(list(scopes))
        data["last_seen_at"] = now_iso()
        names = list(data)
        # A model noted already is never forgotten: two hooks of one run that start at
        # once (Copilot's first two) each write the session, and the one that noted the
        # model from the transcript may write first.
        updates = ", ".join(
            f"{n} = COALESCE(excluded.{n}, sessions.{n})" if n == "model" else f"{n} = excluded.{n}"
            for n in names
            if n != "id"
        )
        with self._write() as conn:
            twin = conn.execute(
                "SELECT * FROM sessions WHERE agent = ? AND agent_session_id = ? AND id != ? "
                "AND NOT EXISTS (SELECT 1 FROM sessions WHERE id = ?) "
                "AND ended_at IS NULL AND repo IS ? "
                "ORDER BY started_at DESC LIMIT 1",
                (session.agent, session.agent_session_id, session.id, session.id, session.repo),
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

    @spoolable(lambda args: None)
    def update_session(self, session_id: str, update: SessionUpdate) -> None:
        """Set the columns `update` gives."""
        fields = update.changes()
        if "commits" in fields:
            fields["commits"] = json.dumps(list(fields["commits"]))
        fields.setdefault("last_seen_at", now_iso())
        names = list(fields)
        with self._write() as conn:
            conn.execute(
                f"UPDATE sessions SET {', '.join(f'{n} = ?' for n in names)} WHERE id = ?",
                [*(fields[n] for n in names), session_id],
            )

    @spoolable(lambda args: None)
    def note_prompt(self, session_id: str, prompt: str | None) -> None:
        """Record a prompt: the first one stays, the last one and the count move on. A
        prompt of None (none of the person's words in it) is counted, not recorded."""
        with self._write() as conn:
            conn.execute(
                "UPDATE sessions SET first_prompt = coalesce(first_prompt, ?), "
                "last_prompt = coalesce(?, last_prompt), prompt_count = prompt_count + 1, "
                "last_seen_at = ? WHERE id = ?",
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

    @spoolable(lambda args: None)
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

    def deliveries(self, session_id: str) -> list[SessionDelivery]:
        rows = self._read(
            "SELECT at, what, item_ids, query FROM deliveries WHERE session_id = ? ORDER BY at, id",
            (session_id,),
        )
        return [
            SessionDelivery(r["at"], r["what"], tuple(json.loads(r["item_ids"])), r["query"])
            for r in rows
        ]

    def find_session_ids(self, ref: str) -> list[str]:
        """Sessions whose id starts or ends with `ref`, or, for a ref shorter than six,
        whose short id (the last six) starts with it, as `find_ids` finds items; or whose
        agent's own session id is `ref`."""
        like = "%" + ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        if len(ref) >= 6:
            ends = "SELECT id FROM sessions WHERE substr(id, 21) = ? AND id LIKE ? ESCAPE '\\'"
            params: tuple[str, ...] = (ref[-6:], like)
        else:
            ends = (
                "SELECT id FROM sessions WHERE id LIKE ? ESCAPE '\\' UNION SELECT id FROM "
                "sessions WHERE substr(id, 21) >= ? AND substr(id, 21) < ?"
            )
            params = (like, ref, ref + "\x7f")
        rows = self._read(
            f"SELECT id FROM sessions WHERE id >= ? AND id < ? UNION {ends} "
            "UNION SELECT id FROM sessions WHERE agent_session_id = ? ORDER BY id",
            (ref, ref + "\x7f", *params, ref),
        )
        return [r["id"] for r in rows]

    def get_session(self, session_id: str) -> Session:
        rows = self._read("SELECT * FROM sessions WHERE id = ?", (session_id,))
        if not rows:
            raise NotFound(f"no session {session_id}; `ken sessions --all` lists them")
        return _row_to_session(rows[0])

    def list_sessions(self, query: SessionQuery) -> list[Session]:
        clauses, params = [], []
        for name, value in (
            ("repo", query.repo),
            ("agent", query.agent),
            ("cwd", query.cwd),
            ("workstream", query.workstream),
            ("project", query.project),
        ):
            if value is not None:
                clauses.append(f"{name} = ?")
                params.append(value)
        if query.text:
            # Any session whose prompts, agent, model or repo hold the text (a person
            # looking for one in `ken panel`).
            clauses.append(
                "(instr(lower(coalesce(first_prompt, '') || ' ' || coalesce(last_prompt, '') "
                "|| ' ' || agent || ' ' || coalesce(model, '') || ' ' || coalesce(repo, '')), "
                "?) > 0)"
            )
            params.append(query.text.lower())
        where = " AND ".join(clauses) or "1"
        limit = int(query.limit or 50)
        offset = max(0, int(query.offset))
        rows = self._read(
            f"SELECT * FROM sessions WHERE {where} ORDER BY started_at DESC, id DESC "
            f"LIMIT {limit} OFFSET {offset}",
            params,
        )
        return [_row_to_session(r) for r in rows]

    def count_sessions(self) -> int:
        return int(self._read("SELECT count(*) FROM sessions")[0][0])
