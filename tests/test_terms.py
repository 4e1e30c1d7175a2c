"""The store's own word counts (`terms`) agree with the FTS index through every change."""

from __future__ import annotations

from pathlib import Path

from kenning import items
from kenning.store import open_store
from kenning.store.sqlite import SQLiteStore


def vocab(store: SQLiteStore) -> dict[str, int]:
    store.conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.check_vocab USING fts5vocab(main, items_fts, row)"
    )
    rows = store.conn.execute("SELECT term, doc FROM temp.check_vocab").fetchall()
    return {r[0]: r[1] for r in rows}


def counted(store: SQLiteStore) -> dict[str, int]:
    return {r[0]: r[1] for r in store.conn.execute("SELECT term, docs FROM terms")}


def test_word_counts_follow_adds_edits_imports_and_forgets(tmp_path: Path) -> None:
    store = open_store(tmp_path / "m.db")
    try:
        scope = items.parse_scope("global")
        a = items.add(
            store, "Run migrations before deploys\nAlembic runs them", scope=scope, tags=["db"]
        )
        b = items.add(store, "Deploys go through make release", scope=scope)
        items.add(store, "Release notes live in CHANGELOG.md", scope=scope, tags=["docs"])
        items.change(
            store, a.id, text="Run migrations after backups\nthen deploy", add_tags=["ops"]
        )
        items.change(store, b.id, text="Deploys use the release script", in_place=True)
        store.insert_many(
            [items.new_item(f"Imported note {n} about caching", scope=scope) for n in range(30)]
        )
        assert counted(store) == vocab(store)
        items.forget(store, [store.get_item(a.id)])
        assert counted(store) == vocab(store)
        assert "backup" not in counted(store)
    finally:
        store.close()


def test_an_older_store_gets_its_word_counts_from_the_index(tmp_path: Path) -> None:
    store = open_store(tmp_path / "m.db")
    try:
        items.add(
            store, "Prefer uv over poetry for new projects", scope=items.parse_scope("global")
        )
        store.conn.execute("DELETE FROM terms")
        store.conn.execute("DELETE FROM _migrations WHERE name = 'm0004_term_counts'")
        store.conn.execute("DROP TABLE terms")
    finally:
        store.close()
    reopened = open_store(tmp_path / "m.db")
    try:
        assert counted(reopened) == vocab(reopened) and counted(reopened)
    finally:
        reopened.close()
