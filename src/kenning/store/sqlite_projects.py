"""The SQLite store's projects, and the stamps that say which files were read already.

A project file's stamp (size, mtime) and a memory place's stamp (`ken collect`: files,
digest) let a sync or a collection skip what has not changed since it last looked; the
digests `forget` leaves (`kenning.tombstones`) keep one from bringing back what a person
forgot.
"""

from __future__ import annotations

from collections.abc import Sequence

from kenning.store.base import Project, now_iso
from kenning.store.sqlite_core import Core


class Projects(Core):
    """Projects and stamps (mixed into `SQLiteStore`)."""

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

    def projects(self) -> list[Project]:
        rows = self._read("SELECT slug, dir, repo, added_at FROM projects ORDER BY slug")
        return [Project(r["slug"], r["dir"], r["repo"], r["added_at"]) for r in rows]

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

    def add_forgotten(self, digests: Sequence[str]) -> None:
        """Keep the digests of entries a person forgot (`kenning.tombstones`)."""
        if not digests:
            return
        with self._write() as conn:
            conn.executemany(
                "INSERT INTO forgotten (digest, forgotten_at) VALUES (?, ?) "
                "ON CONFLICT(digest) DO NOTHING",
                [(d, now_iso()) for d in digests],
            )

    def is_forgotten(self, digest: str) -> bool:
        return bool(self._read("SELECT 1 FROM forgotten WHERE digest = ?", (digest,)))
