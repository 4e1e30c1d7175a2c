"""Bad input of every kind gets one clear line on stderr, a non-zero exit, and loses nothing.

Each case runs against a store holding a few items, and compares the store before and
after (every item and every version, read without ken).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import KEN_BIN, ken, ken_proc
from helpers import add, one_line_error, opened, snapshot
from kenning import items
from kenning.model import Scope, ScopeType, Status


@pytest.fixture
def seeded(db_path):
    """A store with a few items; yields its snapshot."""
    add("Use pnpm, not npm", kind="preference", tags=["js"])
    add("Deploys go through make release", kind="decision", scope="project:shop")
    add("An agent's idea", status=Status.PROPOSED)
    return snapshot(db_path)


def check_refused(result, expected: str) -> str:
    """One `ken: ...` line holding `expected`, exit 1 (or 2 for usage), no traceback."""
    if isinstance(result, subprocess.CompletedProcess):
        code, stderr = result.returncode, result.stderr
    else:
        code, stderr = result.exit_code, result.stderr
    assert code == 1, f"exit {code}: {stderr}"
    line = one_line_error(stderr)
    assert expected in line, line
    return line


# --- through the in-process runner: the message and nothing changed -----------------------

TOO_LONG = "A long memory\n" + "lorem ipsum dolor " * 300
CASES = [
    # (args, stdin, expected text in the one line)
    (
        ("add", TOO_LONG),
        None,
        "over the 4 KB limit: keep the point short and link the details (--link file:PATH",
    ),
    (("add",), TOO_LONG, "--link file:PATH"),
    (("add", "x", "--evidence", "e" * 9000), None, "over the 8 KB limit"),
    (("add", ""), None, "the memory is empty"),
    (("add", "   \n  "), None, "the memory is empty"),
    (("add",), b"caf\xe9 latte\xff\n", "stdin is not UTF-8 text; nothing was stored"),
    (("recall",), b"caf\xe9 latte\xff\n", "stdin is not UTF-8 text; nothing was recalled"),
    (("add", "x", "--kind", "opinion"), None, "unknown kind 'opinion': use fact, decision"),
    (("add", "x", "--scope", "planet:mars"), None, "bad scope 'planet:mars': use global or"),
    (("add", "x", "--scope", "repo:"), None, "the name after 'repo:' is empty"),
    (("add", "x", "--scope", "repo:."), None, "a path must be the checkout's full path"),
    (("add", "x", "--scope", "repo:../shop"), None, "a path must be the checkout's full"),
    (("add", "x", "--scope", "repo:shop"), None, "a repo is its origin (github.com/org/name)"),
    (("add", "x", "--scope", "repo"), None, "no repo here: this folder is not in a git repository"),
    (("add", "x", "--scope", "global:x"), None, "bad scope 'global:x'"),
    (("add", "x", "--tag", "two words"), None, "bad tag 'two words'"),
    (("add", "x", "--link", "ftp:thing"), None, "bad link 'ftp:thing'"),
    (("add", "x", "--tag", ",".join(f"t{n}" for n in range(33))), None, "33 tags, over 32"),
    (("add", "x", "--link", "url:" + "a" * 5000), None, "a link of 5,004 characters, over"),
    (("add", "x", *[f"--link=file:f{n}" for n in range(65)]), None, "65 links, over 64"),
    (("add", "AKIAIOSFODNN7EXAMPLE"), None, "kenning does not store secrets"),
    (("list", "--kind", "opinion"), None, "unknown kind"),
    (("list", "--status", "deleted"), None, "unknown status 'deleted'"),
    (("list", "--scope", "nowhere"), None, "bad scope 'nowhere'"),
    (("search", "x", "--scope", "a b"), None, "bad scope"),
    (("search", ""), None, "the search has no words in it"),
    (("search", '"'), None, "the search has no words in it"),
    (("show", "zzzzzz"), None, "no item matches 'zzzzzz'; `ken list --all` shows every item"),
    (("show", "abc"), None, "'abc' is not an item id: give 4 to 26 of its characters"),
    (("show", "not-an-id!"), None, "is not an item id"),
    (("approve", "zzzzzz"), None, "no item matches"),
    (("update", "zzzzzz", "--text", "x"), None, "no item matches"),
    (("forget", "zzzzzz", "--yes"), None, "no item matches"),
    (("forget", "--yes"), None, "say what to forget"),
    (("forget", "--since", "2024/01/01", "--yes"), None, "--since takes a date as YYYY-MM-DD"),
    (("forget", "--scope", "nowhere", "--yes"), None, "bad scope 'nowhere'"),
    (("config", "get", "no.such"), None, "unknown setting 'no.such'"),
    (("config", "set", "recall.limit", "lots"), None, "takes a whole number, not 'lots'"),
    (("config", "set", "memory.enabled", "maybe"), None, "memory.enabled takes true or false"),
    (("import",), "not json\n", "line 1: not JSON"),
    (("import",), '["a list"]\n', "line 1: expected a JSON object"),
    (("import",), '{"title": 3}\n', "line 1: missing a text 'title'"),
    (
        ("import",),
        '{"title": "ok"}\n{"title": "x", "id": "01ARZ3NDEK"}\n',
        "line 2: 'id' is not a kenning id",
    ),
    (("import",), '{"title": "x", "id": "01ARZ3NDEKTSV4RRFFQ69G5FA!"}\n', "'id' is not"),
    (("import",), b'{"title": "fine"}\n{"title": "caf\xe9"}\n', "line 2: not UTF-8 text"),
    (("import",), '{"title": "x", "body": ["a"]}\n', "line 1: 'body' must be text"),
    (("import",), '{"title": "x", "pinned": "false"}\n', "line 1: 'pinned' must be true or"),
    (("import",), '{"title": "x", "links": [1]}\n', "line 1: 'links' must be a list of text"),
    (
        ("import",),
        '{"title": "x", "created_at": "yesterday"}\n',
        "line 1: 'created_at' must be a UTC time",
    ),
    (("import",), '{"title": "x", "created_at": 1700000000}\n', "'created_at' must be"),
    (("import",), json.dumps({"title": "x", "body": "y" * 5000}) + "\n", "line 1: the memory"),
]


@pytest.mark.parametrize(
    ("args", "stdin", "expected"),
    CASES,
    ids=[f"{' '.join(c[0])[:30]}|{str(c[1])[:15]}" for c in CASES],
)
def test_bad_input_gets_one_clear_line_and_changes_nothing(seeded, args, stdin, expected):
    result = ken(*args, input=stdin)
    check_refused(result, expected)
    assert snapshot() == seeded


def test_an_argument_that_is_not_utf8_gets_one_line_from_every_command(seeded, tmp_path):
    """Bytes that are not UTF-8 reach Python as lone surrogates, which nothing can store
    or print: they were tracebacks in add, search, update, config set and more."""
    bad = b"caf\xe9".decode("utf-8", "surrogateescape")
    for args in (
        ("add", bad),
        ("search", bad),
        ("add", "x", "--evidence", bad),
        ("list", "--scope", "workspace:" + bad),
        ("config", "set", "workspace", bad),
    ):
        check_refused(ken_proc(*args), "argument")
    assert snapshot() == seeded
    queries = tmp_path / "queries.txt"
    queries.write_bytes(b"fine\ncaf\xe9\n")
    check_refused(ken_proc("recall", "--queries", str(queries)), "the file is not UTF-8 text")


@pytest.mark.parametrize(
    "args",
    [
        ("frobnicate",),
        ("add", "x", "--bogus"),
        ("show",),
        ("list", "--limit", "-1"),
        ("search", "x", "--limit", "many"),
        ("dismiss", "abcd", "--reason", "meh"),
        ("add", "x", "--template", "haiku"),
        ("import", "/nonexistent/file.jsonl"),
        ("lint", "--days", "-1"),
        ("recall", "x", "--min-score", "nan"),
    ],
)
def test_usage_errors_exit_2_with_click_usage_and_change_nothing(seeded, args):
    result = ken(*args)
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert "Error:" in result.stderr
    assert snapshot() == seeded


def _run_all(commands):
    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(lambda c: ken_proc(*c[0], input=c[1]), commands))


def test_the_installed_command_refuses_bad_input_in_one_line_too(seeded):
    picked = [CASES[0], CASES[5], CASES[6], CASES[7], CASES[18], CASES[30], CASES[35]]
    results = _run_all([(args, stdin) for args, stdin, _ in picked])
    for (_, _, expected), result in zip(picked, results, strict=True):
        check_refused(result, expected)
    assert snapshot() == seeded


# --- ids ---------------------------------------------------------------------------------


def test_an_ambiguous_id_lists_the_candidates_and_changes_nothing(db_path):
    with opened() as store:
        for suffix in ("AV", "AW", "AX"):
            store.insert_item(
                items.new_item(
                    f"Twin {suffix}",
                    scope=Scope(ScopeType.GLOBAL),
                    item_id=f"01ARZ3NDEKTSV4RRFFQ69G5F{suffix}",
                )
            )
    before = snapshot()
    for command in (("show", "01arz3nd"), ("archive", "01ARZ3ND"), ("forget", "01arz", "-y")):
        line = check_refused(ken(*command), "matches 3 items")
        for suffix in ("AV", "AW", "AX"):
            assert f"g5f{suffix.lower()} (01ARZ3NDEKTSV4RRFFQ69G5F{suffix})" in line
        assert line.endswith("give more characters")
    proc = ken_proc("show", "01arz3nd")
    check_refused(proc, "matches 3 items")
    assert snapshot() == before
    assert ken("show", "01arz3ndektsv4rrffq69g5fav").exit_code == 0
    assert ken("show", "g5fav").exit_code == 0


# --- the store file itself -----------------------------------------------------------------


def test_a_corrupt_store_file_is_refused_and_left_as_it_was(db_path):
    db_path.write_bytes(os.urandom(64 * 1024))
    before = db_path.read_bytes()
    for command in (("list",), ("add", "x"), ("search", "x")):
        check_refused(ken(*command), "is damaged or not a kenning database")
    check_refused(ken_proc("add", "x"), "is damaged or not a kenning database")
    assert db_path.read_bytes() == before


def another_programs_database(path: Path, table: str = "foo") -> bytes:
    conn = sqlite3.connect(path)
    conn.execute(f"CREATE TABLE {table} (x)")
    conn.execute(f"INSERT INTO {table} VALUES (1)")
    conn.commit()
    conn.close()
    return path.read_bytes()


@pytest.mark.parametrize("table", ["foo", "items"])
def test_another_programs_database_is_refused_and_nothing_in_it_changes(db_path, table, tmp_path):
    """KEN_DB at another program's SQLite file: kenning added its tables to it and switched
    it to WAL for good (or, when it had a table `items`, failed and still left
    `_migrations` and WAL behind)."""
    before = another_programs_database(db_path, table)
    for command in (("add", "x"), ("list",)):
        line = check_refused(ken(*command), "is not a kenning database")
        assert f"({table})" in line and "nothing was changed" in line
    check_refused(ken_proc("add", "x"), "is not a kenning database")
    assert db_path.read_bytes() == before
    conn = sqlite3.connect(db_path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master")] == [table]
    conn.close()
    # A hook says nothing to its agent and logs why.
    payload = {"session_id": "s1", "cwd": str(tmp_path), "hook_event_name": "SessionStart"}
    done = ken_proc("hook", "SessionStart", "--agent", "claude", input=json.dumps(payload))
    assert done.returncode == 0 and done.stderr == "" and done.stdout.strip() in ("", "{}")
    from kenning.config import log_path

    assert "is not a kenning database" in log_path().read_text()
    assert db_path.read_bytes() == before


@pytest.mark.parametrize(
    "made",
    [
        "CREATE TABLE _migrations(id INTEGER PRIMARY KEY, version TEXT); "
        "INSERT INTO _migrations(version) VALUES ('20240101_init')",
        "CREATE TABLE _migrations(name TEXT, applied_at TEXT); "
        "INSERT INTO _migrations VALUES ('001_create_users', 'x')",
    ],
)
def test_another_programs_table_of_migrations_alone_is_no_kenning_store(db_path, made):
    """A file whose one table is another tool's `_migrations` passed as a store whose
    first migration was stopped: it was switched to WAL, then failed ("no such column:
    name"), or was said to be a newer kenning's."""
    conn = sqlite3.connect(db_path)
    conn.executescript(made)
    conn.close()
    before = db_path.read_bytes()
    line = check_refused(ken("list"), "is not a kenning database")
    assert "(_migrations)" in line and "nothing was changed" in line
    assert db_path.read_bytes() == before
    conn = sqlite3.connect(db_path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    conn.close()


def test_an_empty_file_is_made_into_a_store(db_path):
    db_path.write_bytes(b"")
    assert ken("add", "Kept in a file that was empty").exit_code == 0
    assert ken("list").output.count("Kept in a file that was empty") == 1


def test_a_store_with_a_damaged_page_is_refused_and_left_as_it_was(db_path):
    with opened() as store:
        for n in range(300):
            add(f"Filler item {n} " + "padding " * 20, store)
    data = bytearray(db_path.read_bytes())
    page = 4096
    data[page * 3 : page * 3 + 200] = os.urandom(200)
    db_path.write_bytes(bytes(data))
    result = ken_proc("search", "filler", "--limit", "1000")
    if result.returncode == 0:
        pytest.skip("this damage hit no page the search reads")
    check_refused(result, "damaged")
    assert db_path.read_bytes() == bytes(data)


def test_a_store_from_a_newer_kenning_is_refused_and_left_as_it_was(seeded, db_path):
    conn = sqlite3.connect(db_path)
    try:
        conn.execute("INSERT INTO _migrations(name, applied_at) VALUES ('m9999_future', 'x')")
        conn.commit()
    finally:
        conn.close()
    before = snapshot()
    for command in (("list",), ("add", "x"), ("show", "abcd")):
        check_refused(ken(*command), "written by a newer kenning (it has migration m9999_future)")
    check_refused(ken_proc("add", "x"), "upgrade kenning to open it")
    assert snapshot() == before


def test_a_store_path_that_is_a_folder_or_under_a_file_is_refused(tmp_path, monkeypatch):
    folder = tmp_path / "store-is-a-folder"
    folder.mkdir()
    monkeypatch.setenv("KEN_DB", str(folder))
    check_refused(ken("add", "x"), "cannot open the store")
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    monkeypatch.setenv("KEN_DB", str(blocker / "memory.db"))
    check_refused(ken("add", "x"), "cannot create the store")
    check_refused(ken_proc("list"), "cannot create the store")
    assert blocker.read_text() == "x"


def test_a_broken_config_file_gets_one_line(isolated_home):
    cfg = isolated_home / ".config/kenning/config.toml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text("recall = [\n")
    check_refused(ken("config", "get", "recall.limit"), "is not valid TOML")
    check_refused(ken("add", "x"), "is not valid TOML")
    cfg.write_text('[recall]\nlimit = "five"\n')
    check_refused(ken("config", "get", "recall.limit"), "recall.limit in")
    cfg.write_text("recall = 5\n")
    check_refused(ken("config", "set", "recall.limit", "3"), "'recall' in")
    assert cfg.read_text() == "recall = 5\n"
    cfg.unlink()
    cfg.mkdir()
    check_refused(ken("config", "get", "recall.limit"), "cannot read")
    check_refused(ken_proc("config", "set", "recall.limit", "3"), "cannot read")


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("recall.half_life_days", "0", "recall.half_life_days must be from 0.1 to 36,500, not 0.0"),
        ("tasks.ttl_days", "1000000000", "tasks.ttl_days must be from 1 to 36,500, not 1000000000"),
        ("hooks.idle_close_hours", "-1", "hooks.idle_close_hours must be from 0.1 to 87,600"),
        ("recall.min_score", "nan", "recall.min_score must be from 0 to 1, not nan"),
        ("recall.limit", "-3", "recall.limit must be from 0 to 50, not -3"),
    ],
)
def test_config_set_refuses_a_number_out_of_range_and_writes_nothing(
    isolated_home, key, value, expected
):
    line = check_refused(ken("config", "set", key, "--", value), expected)
    assert line.startswith(f"ken: {expected}")
    assert not (isolated_home / ".config/kenning/config.toml").exists()


def test_a_number_out_of_range_in_the_config_file_gets_one_line_not_a_crash(seeded, isolated_home):
    cfg = isolated_home / ".config/kenning/config.toml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text("[tasks]\nttl_days = 1000000000\n")
    check_refused(ken("add", "Finish the export", "--kind", "task"), "tasks.ttl_days must be")
    cfg.write_text("[recall]\nhalf_life_days = 0\n")
    line = check_refused(ken("recall", "use pnpm not npm for js"), "half_life_days must be")
    assert line.endswith(f"not 0.0 (in {cfg})")
    assert snapshot() == seeded


def test_export_to_a_folder_that_does_not_exist_gets_one_line(seeded, tmp_path):
    check_refused(ken("export", "-o", str(tmp_path / "no" / "such" / "out.jsonl")), "cannot write")
    assert snapshot() == seeded


def test_killing_nothing_and_an_empty_file_as_the_store_is_a_new_store(db_path):
    db_path.write_bytes(b"")
    result = ken("add", "First into an empty file")
    assert result.exit_code == 0
    with opened() as store:
        assert store.count_items() == 1


# --- a read-only store ------------------------------------------------------------------------

NOBODY = 65534


def _unprivileged_prefix() -> list[str] | None:
    """How to run a command without root's power over file modes; None when we cannot."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    prefix = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    try:
        probe = subprocess.run(
            [*prefix, sys.executable, "-c", "import kenning.cli"],
            capture_output=True,
            timeout=60,
            cwd="/",
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return prefix if probe.returncode == 0 else None


AS_USER = _unprivileged_prefix()


@pytest.mark.skipif(AS_USER is None, reason="root, and no way to run ken as another user")
@pytest.mark.parametrize("folder_writable", [False, True], ids=["ro-folder", "rw-folder"])
def test_a_read_only_store_is_refused_in_one_line_and_left_as_it_was(folder_writable):
    """chmod 0444 on the file (and 0555 on its folder, or not).

    Root ignores file modes, so as root the command runs as the unprivileged user
    `nobody` (uid 65534, through `setpriv`) against a store in its own world-readable
    temp folder; as any other user it runs as that user. Reading may work or be refused;
    writing must be refused with one line, and the file must not change.
    """
    base = Path(tempfile.mkdtemp(prefix="ken-ro-"))
    try:
        base.chmod(0o755)
        home = base / "home"
        home.mkdir()
        store_dir = base / "store"
        store_dir.mkdir()
        target = store_dir / "memory.db"
        env = {
            **os.environ,
            "HOME": str(home),
            "KEN_DB": str(target),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local"),
            "XDG_STATE_HOME": str(home / ".state"),
        }
        with opened(target) as store:
            items.add(store, "Already here", scope=Scope(ScopeType.GLOBAL))
        before = snapshot(target)
        raw = target.read_bytes()
        target.chmod(0o444)
        if os.geteuid() == 0:
            os.chown(home, NOBODY, NOBODY)
            if folder_writable:
                os.chown(store_dir, NOBODY, NOBODY)
        store_dir.chmod(0o755 if folder_writable else 0o555)

        def run(*args):
            return subprocess.run(
                [*AS_USER, str(KEN_BIN), *args],
                capture_output=True,
                text=True,
                env=env,
                timeout=60,
                cwd=str(base),
                start_new_session=True,
                check=False,
            )

        added = run("add", "Must not land")
        check_refused(added, "read-only")
        listed = run("list", "--json")
        if listed.returncode == 0:
            assert [i["title"] for i in json.loads(listed.stdout)] == ["Already here"]
        else:
            check_refused(listed, "read-only")
        for leftover in ("-wal", "-shm"):
            side = Path(f"{target}{leftover}")
            if side.exists():
                side.chmod(0o644)  # for the root-side snapshot below
        store_dir.chmod(0o755)
        assert target.read_bytes() == raw
        assert snapshot(target) == before
    finally:
        for path in (base, *base.rglob("*")):
            if path.is_dir():
                path.chmod(0o755)
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("where", ["env", "file"])
def test_add_with_a_setting_that_does_not_parse_stores_nothing(seeded, isolated_home, where):
    env = {}
    if where == "env":
        env["KEN_ENABLED"] = "maybe"
    else:
        cfg = isolated_home / ".config/kenning/config.toml"
        cfg.parent.mkdir(parents=True, exist_ok=True)
        cfg.write_text('[memory]\nenabled = "maybe"\n')
    check_refused(ken("add", "Deploy on Tuesdays", env=env), "memory.enabled")
    assert snapshot() == seeded
