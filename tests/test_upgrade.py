"""Opening a store an older kenning wrote: the copy kept before it is migrated, what each
face says about it, and the migration that brings old versions in line with their items."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from conftest import ken, ken_proc
from kenning.config import log_path
from kenning.ids import new_ulid
from kenning.store import migrations, open_store

OLD_SCHEMA = 14  # the migrations the "older kenning" here had: m0015 and on are new


def old_store(
    path: Path,
    had: int = OLD_SCHEMA,
    scope: str = "workspace:shop",
    title: str = "CI runners are shared",
    prompt: str | None = None,
) -> str:
    """A store as an older kenning left it: its first `had` migrations, one item added
    with its version (as `ken add` wrote them then), and with `prompt` a session whose
    first prompt it is; returns the item's id."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    for migration in migrations.MIGRATIONS[:had]:
        migration(conn)
        conn.execute("INSERT INTO _migrations VALUES (?, datetime('now'))", (migration.__name__,))
    item, version, at = new_ulid(), new_ulid(), "2026-01-02T03:04:05.000Z"
    conn.execute(
        "INSERT INTO items (id, kind, scope, status, title, created_at, updated_at, revision) "
        "VALUES (?, 'note', ?, 'active', ?, ?, ?, ?)",
        (item, scope, title, at, at, version),
    )
    conn.execute(
        "INSERT INTO revisions (id, item_id, created_at, kind, scope, status, title, body, "
        "tags, links, evidence, provenance, change) VALUES (?, ?, ?, 'note', ?, 'active', "
        "?, '', '[]', '[]', '', '{}', 'add')",
        (version, item, at, scope, title),
    )
    if prompt is not None:
        conn.execute(
            "INSERT INTO sessions (id, agent, started_at, first_prompt) VALUES (?, 'claude', ?, ?)",
            (new_ulid(), at, prompt),
        )
    conn.close()
    return item


def migrations_in(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return [row[0] for row in conn.execute("SELECT name FROM _migrations ORDER BY name")]
    finally:
        conn.close()


def copies(db: Path) -> list[str]:
    return sorted(p.name for p in db.parent.iterdir() if p.name.startswith(f"{db.name}.before"))


def test_a_cli_command_keeps_a_copy_of_an_older_store_and_says_so_in_one_line(db_path):
    old_store(db_path)
    had = migrations_in(db_path)
    done = ken_proc("list")
    assert done.returncode == 0, done.stderr
    assert "CI runners are shared" in done.stdout
    copy = db_path.with_name("memory.db.before-m0015")
    assert done.stderr.splitlines() == [
        f"migrating the store {db_path} for this kenning "
        f"({len(migrations.MIGRATIONS) - len(had)} migrations); "
        f"the store as it was is kept in {copy}"
    ]
    assert migrations_in(copy) == had  # the store as it was, whole, and readable
    assert copy.stat().st_mode & 0o777 == 0o600
    assert migrations_in(db_path) == [m.__name__ for m in migrations.MIGRATIONS]
    again = ken_proc("list")
    assert again.returncode == 0 and again.stderr == "", again.stderr
    assert copies(db_path) == ["memory.db.before-m0015"]


def test_a_new_store_is_made_without_a_copy_or_a_word(db_path):
    done = ken_proc("add", "First memory")
    assert done.returncode == 0, done.stderr
    assert "migrating" not in done.stderr
    assert copies(db_path) == []


def test_when_the_copy_cannot_be_written_nothing_is_migrated_and_one_line_says_why(db_path):
    old_store(db_path)
    had = migrations_in(db_path)
    in_the_way = db_path.with_name("memory.db.before-m0015")  # a folder where the copy goes
    in_the_way.mkdir()
    (in_the_way / "keep").write_text("x")
    done = ken_proc("list")
    assert done.returncode == 1
    [line] = done.stderr.splitlines()
    assert f"its copy as it was could not be written to {in_the_way}" in line
    assert "nothing was changed" in line
    assert migrations_in(db_path) == had
    assert copies(db_path) == ["memory.db.before-m0015"]  # no partial copy left behind


def test_only_the_two_newest_copies_are_kept(db_path):
    old_store(db_path)
    for older in ("m0003", "m0009"):
        db_path.with_name(f"memory.db.before-{older}").write_bytes(b"")
    open_store(db_path).close()
    assert copies(db_path) == ["memory.db.before-m0009", "memory.db.before-m0015"]


def test_a_hook_migrates_silently_and_says_so_in_the_hook_log(db_path, tmp_path):
    old_store(db_path)
    payload = {
        "session_id": "s1",
        "transcript_path": str(tmp_path / "t.jsonl"),
        "cwd": str(tmp_path),
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    done = ken_proc("hook", "SessionStart", "--agent", "claude", input=json.dumps(payload))
    assert done.returncode == 0 and done.stderr == "", done.stderr
    logged = log_path().read_text()
    assert " claude SessionStart migrating the store" in logged  # the event as given
    assert "memory.db.before-m0015" in logged
    assert db_path.with_name("memory.db.before-m0015").exists()


def test_a_scope_normalized_by_m0006_gets_a_version_so_the_newest_agrees_and_history_keeps_it(
    db_path,
):
    item_id = old_store(db_path, had=5, scope="workspace:Acme")
    with open_store(db_path) as store:
        item = store.get_item(item_id)
        history = store.revisions(item_id)
    assert str(item.scope) == "workspace:acme"
    assert [(v.change, v.scope) for v in history] == [
        ("add", "workspace:Acme"),
        ("migrate", "workspace:acme"),
    ]
    assert item.revision == history[-1].id


SECRET = "Quokkaflint Vexbrandt rotates the deploy keys on Fridays"  # in no dictionary


def on_disk(db: Path) -> list[str]:
    """The files beside the store that hold any byte of SECRET's rare word."""
    return sorted(
        p.name
        for p in db.parent.iterdir()
        if p.name.startswith(db.name) and p.is_file() and b"Quokkaflint" in p.read_bytes()
    )


def test_forget_removes_the_copies_kept_before_an_upgrade_that_hold_the_memory(db_path):
    """A copy kept from before an upgrade holds the memory in full: forget removes it
    (overwritten first) and says so, and keeps a copy that never held it."""
    old_store(db_path.with_name("older.db"), had=8)  # its own item, not the secret
    db_path.with_name("older.db").rename(db_path.with_name("memory.db.before-m0009"))
    item_id = old_store(db_path, title=SECRET)
    assert ken("list").exit_code == 0  # migrates, and keeps a copy
    assert copies(db_path) == ["memory.db.before-m0009", "memory.db.before-m0015"]
    assert "memory.db.before-m0015" in on_disk(db_path)
    done = ken("forget", item_id, "-y")
    assert done.exit_code == 0, done.output
    assert on_disk(db_path) == []
    assert copies(db_path) == ["memory.db.before-m0009"]
    copy = db_path.with_name("memory.db.before-m0015")
    assert f"removed 1 copy of the store kept from before an upgrade ({copy})" in done.stderr
    assert migrations_in(db_path.with_name("memory.db.before-m0009"))  # still opens


def test_forget_everywhere_also_removes_a_copy_whose_session_prompt_quotes_it(db_path):
    """A copy that holds no version of the memory but a prompt quoting it is the same as
    the store's own prompts: kept by a plain forget, removed by --everywhere."""
    old_store(db_path, prompt=f"remember: {SECRET}")
    assert ken("list").exit_code == 0
    with open_store(db_path) as store:
        from helpers import add

        item_id = add(SECRET, store, scope="global", kind="fact").id
    done = ken("forget", item_id, "-y")
    assert done.exit_code == 0, done.output
    assert copies(db_path) == ["memory.db.before-m0015"]
    assert "kept from before an upgrade" not in done.stderr
    with open_store(db_path) as store:
        item_id = add(SECRET, store, scope="global", kind="fact").id
    done = ken("forget", item_id, "-y", "--everywhere")
    assert done.exit_code == 0, done.output
    assert copies(db_path) == []
    assert "removed 1 copy of the store kept from before an upgrade" in done.stderr
    assert on_disk(db_path) == []


def test_a_migration_asks_the_hook_servers_of_other_installs_to_stop(db_path, tmp_path):
    """An older install's warm hook server would go on reading and writing the migrated
    store with code that does not know its schema: the migration stops it (its next hook
    starts it again on its own code, which refuses the store and logs it)."""
    import os
    import subprocess
    import sys

    from kenning import paths

    state = Path(paths.state_dir())
    state.mkdir(parents=True, exist_ok=True)
    socket = state / "hooks-0123456789abcdef.sock"  # another install's, in the state folder
    socket.write_text("")
    old = subprocess.Popen(  # its command line names the server module, as a server's does
        [sys.executable, "-c", "import time; time.sleep(120)", "kenning.hooks.server"]
    )
    try:
        (state / "hooks-0123456789abcdef-server.json").write_text(
            json.dumps({"pid": old.pid, "state": str(state), "install": "/old/kenning"})
        )
        old_store(db_path)
        done = ken_proc("list")
        assert done.returncode == 0, done.stderr
        assert old.wait(timeout=30) == -15  # SIGTERM
        assert f"asked the hook servers of 1 other install to stop (pid {old.pid})" in done.stderr
    finally:
        if old.poll() is None:
            os.kill(old.pid, 9)
            old.wait()


def schema_of(path: Path) -> list[tuple[str, str]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT name, sql FROM sqlite_master ORDER BY name").fetchall()
    finally:
        conn.close()


def test_a_disk_that_fills_during_a_migration_leaves_the_store_as_it_was_and_says_so(
    db_path, monkeypatch
):
    """Each migration committed on its own: a disk that filled after the copy was written
    left the store half migrated (an older kenning then refused it as newer), and the
    ROLLBACK after SQLite had already ended the transaction ("cannot rollback - no
    transaction is active") hid the full disk."""
    old_store(db_path)
    had, schema = migrations_in(db_path), schema_of(db_path)
    last = migrations.MIGRATIONS[-1]

    def fills_the_disk(conn: sqlite3.Connection) -> None:
        last(conn)  # part of the work is done ...
        conn.execute("ROLLBACK")  # ... then SQLite, out of space, ends the transaction
        raise sqlite3.OperationalError("database or disk is full")

    fills_the_disk.__name__ = last.__name__
    with monkeypatch.context() as patched:
        patched.setattr(migrations, "MIGRATIONS", (*migrations.MIGRATIONS[:-1], fills_the_disk))
        done = ken("list")
    assert done.exit_code == 1
    said = done.stderr.strip().splitlines()[-1]
    assert said == (
        f"ken: could not migrate the store {db_path} for this kenning: the disk is full "
        f"(database or disk is full); nothing was migrated: it is as it was (at {had[-1]}), "
        "and the older kenning can still open it: free some space there and run the "
        "command again"
    )
    assert migrations_in(db_path) == had
    assert schema_of(db_path) == schema
    again = ken_proc("list")  # space freed: the next run migrates it whole
    assert again.returncode == 0 and "CI runners are shared" in again.stdout
    assert migrations_in(db_path) == sorted(m.__name__ for m in migrations.MIGRATIONS)


def test_a_migration_that_fails_leaves_the_store_at_its_old_migration(db_path, monkeypatch):
    old_store(db_path)
    had, schema = migrations_in(db_path), schema_of(db_path)
    last = migrations.MIGRATIONS[-1]

    def fails(conn: sqlite3.Connection) -> None:
        last(conn)
        raise sqlite3.OperationalError("disk I/O error")

    fails.__name__ = last.__name__
    monkeypatch.setattr(migrations, "MIGRATIONS", (*migrations.MIGRATIONS[:-1], fails))
    done = ken("list")
    assert done.exit_code == 1
    assert "disk I/O error; nothing was migrated: it is as it was" in done.stderr
    assert migrations_in(db_path) == had
    assert schema_of(db_path) == schema
