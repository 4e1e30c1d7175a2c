"""The SQLite store: the file, its schema, its transactions, and forgetting for good."""

from __future__ import annotations

import os
import sqlite3
import stat
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import ken, ken_proc
from helpers import add, one_line_error, opened
from kenning import items
from kenning.errors import NotFound, RevisionConflict, StoreError
from kenning.ids import new_ulid
from kenning.model import Provenance, Scope, ScopeType, Session, Status
from kenning.store import ItemQuery, SessionQuery, open_store
from kenning.store import migrations as migrations_mod


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_store_file_is_0600_in_a_0700_folder(tmp_path, monkeypatch):
    target = tmp_path / "deep" / "kenning" / "memory.db"
    monkeypatch.setenv("KEN_DB", str(target))
    with opened() as store:
        add("Private", store)
        assert mode(target) == 0o600
        assert mode(target.parent) == 0o700
        for suffix in ("-wal", "-shm"):
            side = Path(f"{target}{suffix}")
            if side.exists():
                assert mode(side) == 0o600, suffix


def test_ken_creates_its_default_store_0600_in_a_0700_kenning_folder(monkeypatch, isolated_home):
    monkeypatch.delenv("KEN_DB")
    result = ken_proc("add", "Private note")
    assert result.returncode == 0, result.stderr
    target = isolated_home / ".local/share/kenning/memory.db"
    assert ken_proc("path").stdout.strip() == str(target)
    assert mode(target) == 0o600
    assert mode(target.parent) == 0o700


def test_a_full_disk_is_said_as_such(db_path, tmp_path):
    """SQLite ends the transaction itself when the disk fills; a ROLLBACK after it failed
    with 'no transaction is active', a traceback that hid what happened."""
    from kenning.errors import StoreError

    with opened(db_path) as store:
        pages = store.conn.execute("PRAGMA page_count").fetchone()[0]
        store.conn.execute(f"PRAGMA max_page_count = {pages + 3}")  # a disk that fills
        with pytest.raises(StoreError) as failed:
            for n in range(500):
                add(f"memory {n} " + f"word{n} " * 50, store)
        assert not store.conn.in_transaction
    assert str(failed.value) == (
        f"the store {db_path} could not be written: the disk holding it is full (database "
        "or disk is full); free some space there and run the command again"
    )


def test_a_shared_memory_file_that_cannot_grow_is_said_to_be_a_full_disk(db_path):
    """With the disk full, SQLite cannot grow the store's -shm file, and every command
    said only `store error in ...: disk I/O error`."""
    import sqlite3

    from kenning.store.sqlite_core import friendly

    exc = sqlite3.OperationalError("disk I/O error")
    exc.sqlite_errorname = "SQLITE_IOERR_SHMSIZE"
    assert str(friendly(exc, str(db_path))) == (
        f"the store {db_path} could not be opened: its shared-memory file {db_path}-shm "
        "could not be made or grown (disk I/O error, SQLITE_IOERR_SHMSIZE); the disk "
        "holding it is likely full: free some space there and run the command again"
    )


def test_a_relative_ken_db_is_refused_not_read_from_each_folder(tmp_path, monkeypatch):
    """`KEN_DB=rel.db` was read from the folder each process ran in: every hook made a
    store of its own in the repo it ran in. A full path, or one from `~`, names one."""
    from kenning.errors import InvalidInput
    from kenning.paths import db_path as path_of

    monkeypatch.chdir(tmp_path)
    for relative in ("rel.db", "./rel.db", "data/rel.db"):
        with pytest.raises(InvalidInput, match=f"KEN_DB={relative} is a relative path"):
            path_of({"KEN_DB": relative})
    assert path_of({"KEN_DB": str(tmp_path / "a/../rel.db")}) == str(tmp_path / "rel.db")
    assert path_of({"KEN_DB": "~/rel.db", "HOME": str(tmp_path)}) == str(tmp_path / "rel.db")
    done = ken_proc("list", env={"KEN_DB": "rel.db"}, cwd=tmp_path)
    assert done.returncode == 1
    assert one_line_error(done.stderr) == (
        "ken: KEN_DB=rel.db is a relative path, which names another store in each folder "
        "kenning runs in (hooks run in every repo): set KEN_DB to a full path, e.g. "
        f"KEN_DB={tmp_path / 'rel.db'}"
    )
    assert not (tmp_path / "rel.db").exists()


def test_the_store_is_in_wal_mode_with_secure_delete_and_foreign_keys(db_path):
    with opened(db_path) as store:
        conn = store.conn
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA secure_delete").fetchone()[0] == 1
        assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert store.integrity_check() == "ok"


def test_opening_twice_applies_each_migration_once(db_path):
    with opened(db_path):
        pass
    with opened(db_path) as store:
        names = [r[0] for r in store.conn.execute("SELECT name FROM _migrations")]
    assert names == [m.__name__ for m in migrations_mod.MIGRATIONS]


def test_a_store_from_a_newer_kenning_is_refused_and_left_alone(db_path):
    with opened(db_path) as store:
        add("Keep me", store)
        store.conn.execute("INSERT INTO _migrations(name, applied_at) VALUES ('m9999_future', 'x')")
    before = db_path.read_bytes()
    with pytest.raises(StoreError, match="newer kenning"):
        open_store(db_path)
    assert db_path.read_bytes() == before


def test_open_without_create_refuses_a_missing_store(tmp_path):
    with pytest.raises(StoreError, match="no store at"):
        open_store(tmp_path / "nope.db", create=False)
    assert not (tmp_path / "nope.db").exists()


def test_insert_many_skips_ids_already_stored_and_counts_both(db_path):
    with opened(db_path) as store:
        made = [items.new_item(f"Item {n}", scope=Scope(ScopeType.GLOBAL)) for n in range(7)]
        assert store.insert_many(made[:3], batch=2) == (3, 0)
        assert store.insert_many(made, batch=2) == (4, 3)
        assert store.count_items() == 7


def test_a_batch_that_fails_lands_not_at_all(db_path):
    with opened(db_path) as store:
        good = items.new_item("Good", scope=Scope(ScopeType.GLOBAL))
        broken = replace(items.new_item("Broken", scope=Scope(ScopeType.GLOBAL)), revision="")
        with pytest.raises(StoreError):
            store.insert_many([good, broken], batch=10)
        assert store.count_items() == 0


def test_replace_item_checks_the_expected_revision(db_path):
    with opened(db_path) as store:
        item = add("Original", store)
        changed = replace(item, title="Changed", revision="01ARZ3NDEKTSV4RRFFQ69G5FAV")
        with pytest.raises(RevisionConflict):
            store.replace_item(changed, "edit", expected_revision="01ARZ3NDEKTSV4RRFFQ69G5FAX")
        assert store.get_item(item.id).title == "Original"
        store.replace_item(changed, "edit", expected_revision=item.revision)
        assert store.get_item(item.id).title == "Changed"
        with pytest.raises(NotFound):
            store.replace_item(replace(changed, id="01ARZ3NDEKTSV4RRFFQ69G5FAY"), "edit")


def test_the_item_columns_table_names_every_column_items_and_revisions_have(db_path):
    """A column a migration adds without its line in `store.columns` would never be
    written or read; an `Item` field without one would be lost on the way in."""
    from dataclasses import fields

    from kenning.model import Item
    from kenning.store import columns

    with opened(db_path) as store:
        stored = {r[1] for r in store.conn.execute("PRAGMA table_info(items)")}
        versioned = {r[1] for r in store.conn.execute("PRAGMA table_info(revisions)")}
    assert stored - {"rowid"} == set(columns.NAMES)
    copied = {c.name for c in columns.ITEM_COLUMNS if c.versioned}
    assert versioned - {"id", "item_id", "created_at", "change"} == copied
    read = {c.field for c in columns.ITEM_COLUMNS if c.field}
    assert read == {f.name for f in fields(Item)}


def test_uses_count_once_per_session_and_every_time_without_one(db_path):
    with opened(db_path) as store:
        item = add("Used often", store)
        assert store.record_uses([item.id], "s1", "pack") == 1
        assert store.record_uses([item.id], "s1", "recall") == 0
        assert store.record_uses([item.id], "s2", "pack") == 1
        assert store.record_uses([item.id], None, "cli") == 1
        got = store.get_item(item.id)
        assert got.use_count == 3
        assert got.last_used_at


def test_list_filters_by_tag_status_scope_since_and_limit(db_path):
    with opened(db_path) as store:
        a = add("Alpha", store, tags=["x", "y"], scope="project:p")
        add("Beta", store, tags=["y"], status=Status.PROPOSED)
        add("Gamma", store, created_at="2001-01-01T00:00:00.000Z")
        titles = lambda q: [i.title for i in store.list_items(q)]  # noqa: E731
        assert titles(ItemQuery(tags=("x",))) == ["Alpha"]
        assert titles(ItemQuery(tags=("x", "y"))) == ["Alpha"]
        assert titles(ItemQuery(statuses=("proposed",))) == ["Beta"]
        assert titles(ItemQuery(scopes=("project:p",))) == ["Alpha"]
        assert sorted(titles(ItemQuery(statuses=(), since="2020-01-01"))) == ["Alpha", "Beta"]
        assert len(store.list_items(ItemQuery(statuses=(), limit=2))) == 2
        assert store.counts() == {"active": 2, "proposed": 1}
        assert a.id


def test_sessions_round_trip(db_path):
    with opened(db_path) as store:
        session = Session(
            id="S1",
            agent="claude",
            started_at="2026-01-01T00:00:00.000Z",
            commits=("abc",),
            repo="github.com/acme/shop",
        )
        store.upsert_session(session, scopes=["repo:github.com/acme/shop"])
        assert store.get_session("S1") == session
        assert store.list_sessions(SessionQuery(repo="github.com/acme/shop")) == [session]
        with pytest.raises(NotFound):
            store.get_session("S2")


def test_a_second_hook_opening_the_same_agent_run_at_once_gets_the_first_session(db_path):
    with opened(db_path) as store:
        first = Session(id="S1", agent="copilot", agent_session_id="run-1", started_at="t1")
        store.upsert_session(first)
        # Found no session a moment ago, so it made its own: it gets the first's.
        assert store.upsert_session(replace(first, id="S2", started_at="t2")) == first
        updated = replace(first, model="stub-model")
        assert store.upsert_session(updated) == updated  # the stored one still updates
        other = Session(id="S3", agent="claude", agent_session_id="run-1", started_at="t3")
        assert store.upsert_session(other) == other
        assert [s.id for s in store.list_sessions(SessionQuery())] == ["S3", "S1"]


# --- forgetting leaves nothing on disk --------------------------------------------------

# Words no other item holds, with the field each one is in. The index stores words
# lower-cased and stemmed, so the probes are lower case and cut to their first 8 letters.
TEXT = {
    "title": "Zanzibarquokka ledger rotation",
    "body": "our flibbertigibbet cronjob rewrites quuxvortex shards nightly",
    "evidence": "overheard from snorkelwaffle in standup",
    "tag": "plumbusgazebo",
    "old": "Xylophonicorn earlier wording",
}
DISTINCT = [
    "Zanzibarquokka",
    "flibbertigibbet",
    "quuxvortex",
    "snorkelwaffle",
    "plumbusgazebo",
    "Xylophonicorn",
]
PROBES = sorted({p for w in DISTINCT for p in (w, w.lower(), w.lower()[:8])})
KEEP = "Marmaladeopolis is the staging bucket"


def _files(db: Path) -> dict[str, bytes]:
    out = {}
    for suffix in ("", "-wal", "-shm"):
        path = Path(f"{db}{suffix}")
        if path.exists():
            out[path.name] = path.read_bytes()
    return out


def _leaks(db: Path) -> list[str]:
    return [
        f"{p!r} in {name}"
        for name, data in _files(db).items()
        for p in PROBES
        if p.encode() in data
    ]


def _add_doomed(store) -> str:
    item = add(
        f"{TEXT['old']}\nfirst body about the {TEXT['old']}",
        store,
        tags=[TEXT["tag"], "ops"],
        evidence=TEXT["evidence"],
        provenance=Provenance(session="sess-doomed"),
    )
    items.change(store, item.id, text=f"{TEXT['title']}\n{TEXT['body']}")
    store.record_uses([item.id], "sess-doomed", "pack")
    return item.id


def test_forget_leaves_no_trace_of_the_text_on_disk_once_the_store_is_closed(db_path):
    with opened(db_path) as store:
        for n in range(30):
            add(f"{KEEP} number {n}\nfiller body text for page churn {n}", store)
        doomed = _add_doomed(store)
        for n in range(30):
            add(f"Later note {n}\nmore filler", store)
        store.checkpoint()
        assert _leaks(db_path), "the test must see the text before forgetting"
        assert items.forget(store, [items.get(store, doomed)]).memories == 1
    assert _leaks(db_path) == []
    assert KEEP.encode() in b"".join(_files(db_path).values())
    with opened(db_path) as store:
        assert store.integrity_check() == "ok"
        assert store.count_items() == 60
        assert items.search(store, "zanzibarquokka") == []
        assert len(items.search(store, "marmaladeopolis", limit=100)) == 30


def test_forget_leaves_no_trace_while_another_connection_is_open(db_path):
    with opened(db_path) as store:
        for n in range(10):
            add(f"{KEEP} {n}", store)
        doomed = _add_doomed(store)
    other = sqlite3.connect(db_path)
    try:
        other.execute("SELECT count(*) FROM items").fetchone()
        result = ken_proc("forget", doomed[-6:], "--yes")
        assert result.returncode == 0, result.stderr
        assert "forgot 1" in result.stderr
        # The other connection is still open: the -wal and -shm files are live.
        assert _leaks(db_path) == []
        assert other.execute("SELECT count(*) FROM items").fetchone()[0] == 10
        assert KEEP.encode() in b"".join(_files(db_path).values())
    finally:
        other.close()
    assert _leaks(db_path) == []


@pytest.mark.timing
def test_forget_with_a_reader_mid_transaction_finishes_in_seconds_and_says_what_it_waits_for(
    db_path,
):
    with opened(db_path) as store:
        for n in range(10):
            add(f"{KEEP} {n}", store)
        doomed = _add_doomed(store)
        store.checkpoint()
    reader = sqlite3.connect(db_path, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM items").fetchone()  # holds its snapshot
    try:
        result = ken_proc("forget", doomed[-6:], "--yes", timeout=30)

        assert result.returncode == 0, result.stderr
        said = result.stderr.splitlines()
        assert said[0] == "forgot 1 memory"
        assert f"while {os.getpid()} (" in said[1] and "keeps reading the store" in said[1]
        assert said[1].endswith("the first ken command after that process stops reading wipes them")
        assert Path(f"{db_path}-wipe").exists()
    finally:
        reader.execute("ROLLBACK")
        reader.close()
    assert ken_proc("list").returncode == 0  # the next command finishes the wipe
    assert not Path(f"{db_path}-wipe").exists()
    assert _leaks(db_path) == []


def test_forget_by_scope_through_the_cli_removes_every_version_and_use(db_path):
    with opened(db_path) as store:
        doomed = _add_doomed(store)
        kept = add(KEEP, store, scope="project:keep")
    result = ken("forget", "--scope", "global", "--yes")
    assert result.exit_code == 0, result.output
    with opened(db_path) as store:
        assert store.count_items() == 1
        assert store.revisions(doomed) == []
        assert store.conn.execute("SELECT count(*) FROM uses").fetchone()[0] == 0
        assert store.get_item(kept.id).title == KEEP
    assert _leaks(db_path) == []


def test_the_store_never_grows_a_rollback_journal_or_temp_files(db_path):
    with opened(db_path) as store:
        for n in range(20):
            add(f"Item {n}", store)
    names = sorted(p.name for p in db_path.parent.iterdir() if p.name.startswith("memory"))
    assert names == ["memory.db"]
    assert os.path.getsize(db_path) > 0


# --- search ranks a window of the newest matches ------------------------------------------


def test_search_ranks_the_newest_window_of_matches_and_widens_it_when_short(db_path, monkeypatch):
    from kenning.store import sqlite_search

    monkeypatch.setattr(sqlite_search, "SEARCH_WINDOW", 5)
    with opened(db_path) as store:
        old_best = add("Kafka kafka kafka kafka\nkafka everywhere", store)
        made = [
            add(f"Note {n} mentions kafka once among many other words", store) for n in range(8)
        ]
        newest_best = add("Kafka kafka topics", store)
        found = items.search(store, "kafka", limit=3)
        ids = [f.item.id for f in found]
        assert len(ids) == 3 and ids[0] == newest_best.id
        assert old_best.id not in ids  # outside the window of the 5 newest matches
        assert set(ids[1:]) <= {i.id for i in made[-4:]}
        everything = items.search(store, "kafka", limit=50)  # more than the window holds
        assert len(everything) == 10 and everything[0].item.id == old_best.id
        scores = [f.score for f in everything]
        assert scores == sorted(scores, reverse=True)


def test_the_search_window_counts_only_matches_that_pass_the_filters(db_path, monkeypatch):
    from kenning.store import sqlite_search

    monkeypatch.setattr(sqlite_search, "SEARCH_WINDOW", 3)
    with opened(db_path) as store:
        scoped = [add(f"Old scoped kafka note {n}", store, scope="project:p") for n in range(2)]
        for n in range(10):
            add(f"Newer unscoped kafka note {n}", store)
        archived = add("Archived kafka note", store, status=Status.ARCHIVED)
        found = items.search(store, "kafka", scopes=["project:p"])
        assert {f.item.id for f in found} == {i.id for i in scoped}
        assert [f.item.id for f in items.search(store, "kafka", statuses=["archived"])] == [
            archived.id
        ]


def test_the_recent_index_holds_the_newest_items_and_a_search_goes_on_to_the_whole(
    db_path, monkeypatch
):
    """A search ranks the newest items' own index first (its bm25 reads only their word
    lists), and the whole index when that holds too few hits: nothing older is lost."""
    from kenning.store import sqlite_recent

    monkeypatch.setattr(sqlite_recent, "RECENT_ITEMS", 6)
    monkeypatch.setattr(sqlite_recent, "RECENT_SLACK", 2)
    with opened(db_path) as store:
        oldest = add("Zookeeper quorum lost at night", store)
        made = [add(f"Note {n} about the kafka brokers", store) for n in range(12)]
        edited = items.change(store, made[-1].id, text="Note eleven about kafka brokers, edited")
        since, n = store.conn.execute("SELECT since, n FROM recent_index").fetchone()
        held = {r[0] for r in store.conn.execute("SELECT rowid FROM items_recent_docsize")}
        newest = [r[0] for r in store.conn.execute("SELECT rowid FROM items ORDER BY rowid")]
        assert 6 <= n < 8 and len(held) == n and held == {r for r in newest if r >= since}
        # Only the newest are in it; the old item is found through the whole index.
        assert [f.item.id for f in items.search(store, "zookeeper")] == [oldest.id]
        recent = items.search(store, "kafka brokers", limit=3)
        assert len(recent) == 3 and recent[0].item.id == edited.id
        assert len(items.search(store, "kafka", limit=50)) == 12
        # Deleting and editing an item the recent index holds keeps it in step.
        store.delete_items([made[-2].id])
        assert store.conn.execute("SELECT n FROM recent_index").fetchone()[0] == n - 1
        from kenning.store import health

        assert health.deep_check(store.conn).ok
        # Forget every item the recent index holds and two older: the next item still goes
        # in it (SQLite gives it the rowid after the newest left, below where it began).
        since = store.conn.execute("SELECT since FROM recent_index").fetchone()[0]
        newest = [
            r[0] for r in store.conn.execute("SELECT id FROM items WHERE rowid >= ?", (since - 2,))
        ]
        store.delete_items(newest)
        older = add("Kafka brokers moved to the new cluster", store)
        assert [f.item.id for f in items.search(store, "kafka brokers", limit=1)] == [older.id]
        rowid = store.conn.execute("SELECT rowid FROM items WHERE id = ?", (older.id,)).fetchone()
        assert (
            store.conn.execute(
                "SELECT count(*) FROM items_recent_docsize WHERE id = ?", (rowid[0],)
            ).fetchone()[0]
            == 1
        )
        assert health.deep_check(store.conn).ok


def test_a_count_by_scope_and_status_is_what_counting_every_item_gives(db_path):
    """Packs count from the per-scope counts the triggers keep: through inserts, a
    change of scope, of status, deletes, and items past their expiry."""
    with opened(db_path) as store:
        made = [
            add(f"Note {n} about the deploy", store, scope="repo:github.com/acme/shop")
            for n in range(6)
        ]
        add("Global note", store)
        store.replace_item(
            replace(made[0], expires_at="2000-01-01T00:00:00Z", revision=new_ulid()), "edit"
        )
        store.replace_item(
            replace(made[1], scope=Scope(ScopeType.GLOBAL), revision=new_ulid()), "edit"
        )
        store.replace_item(replace(made[2], status=Status.ARCHIVED, revision=new_ulid()), "archive")
        store.delete_items([made[3].id])

        def by_hand(query: ItemQuery) -> int:
            where, params = store._where(query)
            return int(
                store.conn.execute(f"SELECT count(*) FROM items WHERE {where}", params).fetchone()[
                    0
                ]
            )

        for query in (
            ItemQuery(scopes=("repo:github.com/acme/shop",)),
            ItemQuery(scopes=("repo:github.com/acme/shop", "global")),
            ItemQuery(scopes=("repo:github.com/acme/shop",), include_expired=True),
            ItemQuery(scopes=("global",), statuses=("active", "archived")),
            ItemQuery(statuses=("archived",)),
            ItemQuery(scopes=("nowhere",)),
        ):
            assert store.count_items(query) == by_hand(query), query
        assert store.count_items(ItemQuery(scopes=("repo:github.com/acme/shop",))) == 2
        assert store.count_items(ItemQuery(scopes=("global",))) == 2
