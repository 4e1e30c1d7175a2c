"""What the hooks note in a session for its run lessons (kenning.lessons), as SQL.

Three tables (migration m0013): `signals` (one row per thing worth a lesson: a failed,
denied or repeated tool call, a correcting prompt, a stated preference), `session_prompts`
(every prompt as the hooks saw it, redacted: a lesson's quote must be in one) and
`lesson_state` (one row per session: the last tool call seen, how many times in a row,
and when Stop asked for a reflection and when one was recorded). Every write is one
short transaction; the per-tool-call one is a single upsert, since it runs on every
tool call an agent makes.
"""

from __future__ import annotations

from kenning.store.base import LessonState, Signal, now_iso
from kenning.store.sqlite_core import Core, spoolable


class Signals(Core):
    """The signals part of the SQLite store (mixed into `SQLiteStore`)."""

    @spoolable(lambda args: None)
    def add_signal(self, session_id: str, kind: str, detail: str = "") -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT INTO signals (session_id, at, kind, detail) VALUES (?, ?, ?, ?)",
                (session_id, now_iso(), kind, detail),
            )

    def signals(self, session_id: str) -> list[Signal]:
        rows = self._read(
            "SELECT at, kind, detail FROM signals WHERE session_id = ? ORDER BY id", (session_id,)
        )
        return [Signal(r["at"], r["kind"], r["detail"]) for r in rows]

    @spoolable(lambda args: None)
    def add_prompt(self, session_id: str, text: str) -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT INTO session_prompts (session_id, at, text) VALUES (?, ?, ?)",
                (session_id, now_iso(), text),
            )

    def session_prompts(self, session_id: str) -> list[str]:
        rows = self._read(
            "SELECT text FROM session_prompts WHERE session_id = ? ORDER BY id", (session_id,)
        )
        return [r["text"] for r in rows]

    def note_call(self, session_id: str, key: str) -> int:
        """Record a tool call (its key) and return how many times in a row it has come."""
        with self._write() as conn:
            row = conn.execute(
                "INSERT INTO lesson_state (session_id, last_call, repeats) VALUES (?, ?, 1) "
                "ON CONFLICT (session_id) DO UPDATE SET "
                "repeats = CASE WHEN last_call = excluded.last_call THEN repeats + 1 ELSE 1 END, "
                "last_call = excluded.last_call "
                "RETURNING repeats",
                (session_id, key),
            ).fetchone()
        return int(row[0])

    def lesson_state(self, session_id: str) -> LessonState:
        """When Stop asked this session for a reflection, and when one was recorded."""
        rows = self._read(
            "SELECT asked_at, reflected_at FROM lesson_state WHERE session_id = ?", (session_id,)
        )
        if not rows:
            return LessonState()
        return LessonState(rows[0]["asked_at"], rows[0]["reflected_at"])

    def mark_lesson(self, session_id: str, what: str) -> bool:
        """Set `asked_at` or `reflected_at` once; False when it was set already (so two hooks
        racing on one Stop ask only once)."""
        column = {"asked": "asked_at", "reflected": "reflected_at"}[what]
        with self._write() as conn:
            conn.execute(
                "INSERT INTO lesson_state (session_id) VALUES (?) "
                "ON CONFLICT (session_id) DO NOTHING",
                (session_id,),
            )
            done = conn.execute(
                f"UPDATE lesson_state SET {column} = ? WHERE session_id = ? AND {column} IS NULL",
                (now_iso(), session_id),
            )
            return done.rowcount == 1
