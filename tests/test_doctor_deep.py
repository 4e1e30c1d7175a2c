"""`ken doctor --deep` checks the store through; `--repair` rebuilds what can be rebuilt.

Each damage is done to a copy of a real store with plain sqlite3, as a tool that writes
the file without kenning would do it."""

from __future__ import annotations

import json
import random
import re
import shutil
import sqlite3
from pathlib import Path
from typing import Any

from conftest import ken
from helpers import add, opened
from kenning.ids import short_id


def deep(*flags: str, db: Path | None = None) -> tuple[int, dict[str, Any]]:
    env = {"KEN_DB": str(db)} if db else None
    result = ken("doctor", "--json", *flags, env=env)
    return result.exit_code, json.loads(result.stdout)


def failing(report: dict[str, Any]) -> dict[str, str]:
    return {c["name"]: c["detail"] for c in report["deep"] if not c["ok"]}


def stocked(tmp_path: Path) -> tuple[Path, list[Any]]:
    """A store with a few memories, and a copy of it (WAL folded in) to damage."""
    made = [
        add("Deploys go through make release", kind="decision"),
        add("Use pnpm, never npm, in the shop repo", kind="preference"),
        add("The staging database is reset every Monday", kind="fact"),
    ]
    with opened() as store:
        store.checkpoint(5)
        original = Path(store.path)
    copy = tmp_path / "copy.db"
    shutil.copy(original, copy)
    return copy, made


def test_a_healthy_store_reports_nothing_in_the_deep_check(tmp_path):
    stocked(tmp_path)
    code, report = deep("--deep")
    assert code == 0 and report["ok"] is True
    assert failing(report) == {}
    assert {c["name"] for c in report["deep"]} == {
        "sqlite integrity",
        "search index",
        "stemmed word counts",
        "word counts",
        "orphaned rows",
        "scopes",
    }
    assert report["repaired"] == []
    text = ken("doctor", "--deep").stdout
    assert "self-check:" in text and "ok  search index: ok" in text


def test_a_copy_with_a_damaged_search_index_is_found_and_repaired(tmp_path):
    copy, made = stocked(tmp_path)
    target = made[0]
    conn = sqlite3.connect(copy)
    # Take the decision's words out of the index while its row stays: search no longer
    # finds it. Miscount a word and leave an orphaned version behind.
    rowid, title, body, tags = conn.execute(
        "SELECT rowid, title, body, tags FROM items WHERE id = ?", (target.id,)
    ).fetchone()
    for index in ("items_fts", "items_recent"):  # the whole index and the newest items'
        conn.execute(
            f"INSERT INTO {index}({index}, rowid, title, body, tags) VALUES ('delete', ?, ?, ?, ?)",
            (rowid, title, body, tags),
        )
    conn.execute("UPDATE terms SET docs = docs + 5 WHERE term = 'deploi'")
    conn.execute(
        "INSERT INTO revisions SELECT 'ORPHAN0000000000000000000', 'GONE00000000000000000000000', "
        "created_at, kind, scope, status, pinned, title, body, tags, links, evidence, "
        "provenance, change FROM revisions LIMIT 1"
    )
    conn.commit()
    conn.close()
    env = {"KEN_DB": str(copy)}
    assert "no memories match" in ken("search", "release", env=env).stderr

    code, report = deep("--deep", db=copy)
    bad = failing(report)
    assert code == 1 and report["ok"] is False
    assert set(bad) == {"search index", "stemmed word counts", "orphaned rows"}
    assert "does not match the items it was built from" in bad["search index"]
    assert "'deploi' 6 not 1" in bad["stemmed word counts"]
    assert bad["orphaned rows"] == "1 versions of deleted items (revisions)"
    fixes = {c["name"]: c["fix"] for c in report["deep"] if not c["ok"]}
    assert set(fixes.values()) == {"ken doctor --repair"}
    # The original store is untouched and healthy.
    assert failing(deep("--deep")[1]) == {}

    result = ken("doctor", "--repair", env=env)
    assert "repair: rebuilt the search index from 3 items" in result.stderr
    assert "repair: recounted `terms`" in result.stderr and "1 corrected" in result.stderr
    assert "repair: deleted 1 versions of deleted items" in result.stderr
    code, report = deep("--deep", db=copy)
    assert code == 0 and failing(report) == {}
    found = json.loads(ken("search", "release", "--json", env=env).stdout)
    assert [f["id"] for f in found] == [target.id]


def test_a_copy_with_damaged_pages_fails_the_sqlite_check_and_repair_does_not_hide_it(tmp_path):
    copy, _ = stocked(tmp_path)
    conn = sqlite3.connect(copy)
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    # The root page of an index on items: the table itself still reads, the index lies.
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'items_scope'").fetchone()
    conn.close()
    with copy.open("r+b") as fh:
        fh.seek((root[0] - 1) * page_size + 8)
        fh.write(b"\xff" * 64)
    code, report = deep("--deep", db=copy)
    bad = failing(report)
    assert code == 1 and "sqlite integrity" in bad
    assert [c["fix"] for c in report["deep"] if c["name"] == "sqlite integrity"] == [
        "restore a backup (or `sqlite3 FILE .recover`)"
    ]


def test_an_item_whose_scope_no_longer_parses_is_reported_with_the_command_to_move_it(
    tmp_path,
):
    copy, made = stocked(tmp_path)
    conn = sqlite3.connect(copy)
    conn.execute("UPDATE items SET scope = 'planet:mars' WHERE id = ?", (made[1].id,))
    conn.commit()
    conn.close()
    code, report = deep("--deep", db=copy)
    bad = failing(report)
    assert code == 1 and set(bad) == {"scopes"}
    assert "1 item in scope 'planet:mars'" in bad["scopes"]
    assert f"ken update {short_id(made[1].id)} --scope SCOPE" in bad["scopes"]


def test_the_scope_check_names_a_few_of_the_items_in_a_bad_scope_then_counts_the_rest(
    tmp_path,
):
    made = [add(f"Memory number {n} of seven") for n in range(7)]
    with opened() as store:
        store.conn.execute("UPDATE items SET scope = 'repo:'")
    code, report = deep("--deep")
    bad = failing(report)
    assert code == 1 and set(bad) == {"scopes"}
    shown = [short_id(i.id) for i in sorted(made, key=lambda i: i.id)][:5]
    assert "7 items in scope 'repo:'" in bad["scopes"]
    assert f"{', '.join(shown)} and 2 more" in bad["scopes"]


def test_a_memory_whose_scope_no_longer_reads_is_shown_listed_and_moved_not_a_traceback():
    """`ken show`, `ken list --all` and `ken update --scope` read the row: a scope of a
    type kenning does not know, or one with no name, raised a bare ValueError there."""
    made = [add("Deploys go through make release"), add("Use pnpm in the shop repo")]
    with opened() as store:
        for item, scope in zip(made, ("planet:mars", "repo:"), strict=True):
            store.conn.execute("UPDATE items SET scope = ? WHERE id = ?", (scope, item.id))
    mars, empty = (short_id(i.id) for i in made)
    shown = ken("show", mars)
    assert shown.exit_code == 0
    unreadable = r"scope +planet:mars \(unreadable: there is no scope type 'planet'"
    assert re.search(unreadable, shown.stdout)
    assert "a repo scope needs a name" in ken("show", empty).stdout
    listed = ken("list", "--all")
    assert listed.exit_code == 0 and "planet:mars (unreadable)" in listed.stdout
    assert json.loads(ken("list", "--all", "--json").stdout)[0]["scope"] in ("planet:mars", "repo:")
    assert ken("update", empty, "--text", "Use pnpm, never npm, in the shop repo").exit_code == 0
    for ref in (mars, empty):
        moved = ken("update", ref, "--scope", "global")
        assert moved.exit_code == 0, moved.output
    with opened() as store:
        assert {str(store.get_item(i.id).scope) for i in made} == {"global"}
    assert failing(deep("--deep")[1]) == {}


def test_a_store_whose_pages_are_garbage_is_reported_not_a_stop(tmp_path):
    """The header reads, pages past it are noise: `ken doctor` printed one error line
    and no report; it reports the store as bad, with every other check."""
    copy, _ = stocked(tmp_path)
    conn = sqlite3.connect(copy)
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    noise = random.Random(7)
    with copy.open("r+b") as fh:  # as `dd if=/dev/urandom seek=3 count=2` does
        fh.seek(3 * page_size)
        fh.write(bytes(noise.randrange(256) for _ in range(2 * page_size)))
    for flags in ((), ("--deep",), ("--repair",)):
        code, report = deep(*flags, db=copy)
        store = {c["name"]: c for c in report["store"]}
        assert code == 1 and store["store"]["ok"] is False, flags
        assert store["store"]["fix"] == "restore a backup (or `sqlite3 FILE .recover`)"
        assert report["config"] and report["hook_server"] is not None


def test_damaged_pages_are_told_in_one_line_with_how_many_more(tmp_path):
    """SQLite's integrity check gives many lines in one row; printed as it was, they broke
    the one-line slot of each check."""
    copy, _ = stocked(tmp_path)
    conn = sqlite3.connect(copy)
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'items_scope'").fetchone()
    conn.close()
    with copy.open("r+b") as fh:
        fh.seek((root[0] - 1) * page_size + 8)
        fh.write(b"\xff" * 64)
    for flags in ((), ("--deep",)):
        code, report = deep(*flags, db=copy)
        checks = [*report["store"], *report["deep"]]
        bad = [c for c in checks if not c["ok"]]
        assert code == 1 and bad, flags
        for check in bad:
            assert "\n" not in check["detail"], check

    store = {c["name"]: c for c in deep(db=copy)[1]["store"]}["store"]
    assert store["detail"].startswith(f"{copy}: integrity damaged: ")
    assert re.search(r"\(and \d+ more problems\)", store["detail"]), store["detail"]
