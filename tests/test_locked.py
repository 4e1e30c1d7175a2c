"""A locked store: hooks answer within the timeout their agent gives them, and what they
could not write waits in the spool (kenning.spool) until a later hook or `ken` command
writes it, once.

The lock is real: a connection in this process holds `BEGIN IMMEDIATE` (or, for a store
nobody can even read, an exclusive lock) while the installed `ken hook` runs in its own
process, stopped at the timeout `ken integrate` installs for its event, as the agent
would stop it.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from conftest import KEN_BIN, ken
from helpers import add, opened
from kenning import items, spool
from kenning.agents import get as get_agent
from kenning.agents.agent import HOOK_TIMEOUTS
from kenning.hooks import run as hook_run
from kenning.model import Session, Status
from kenning.store import SessionQuery
from kenning.store.sqlite_core import READ_WAIT_MS

# Hooks held to the timeouts agents give them: alone on the cores (see pyproject's markers).
pytestmark = pytest.mark.timing


@contextmanager
def write_locked(db: Path, *, exclusive: bool = False) -> Iterator[None]:
    """Another connection holding the store's write lock (or, `exclusive`, every lock)."""
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        if exclusive:
            conn.execute("PRAGMA locking_mode = EXCLUSIVE")
            conn.execute("BEGIN EXCLUSIVE")
            conn.execute("UPDATE items SET use_count = use_count")
        else:
            conn.execute("BEGIN IMMEDIATE")
        yield
    finally:
        conn.execute("ROLLBACK")
        conn.close()


@contextmanager
def locked_for(db: Path, seconds: float) -> Iterator[None]:
    """Another connection holding the store's write lock from the start of the block
    until `seconds` later, while what the block runs waits for it."""
    held = threading.Event()

    def hold() -> None:
        conn = sqlite3.connect(db, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        held.set()
        time.sleep(seconds)
        conn.execute("ROLLBACK")
        conn.close()

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait()
    try:
        yield
    finally:
        holder.join()


def hook(event: str, payload: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    """The installed `ken hook`, killed (TimeoutExpired) past its installed timeout."""
    return subprocess.run(
        [str(KEN_BIN), "hook", event, "--agent", "claude"],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=HOOK_TIMEOUTS[get_agent("claude").event(event)],
        start_new_session=True,
        check=False,
    )


def in_process(event: str, payload: dict[str, Any]) -> str:
    return hook_run.run([event, "--agent", "claude"], json.dumps(payload).encode())


def payload(repo: Path, event: str, session: str = "s-1", **more: Any) -> dict[str, Any]:
    return {"session_id": session, "cwd": str(repo), "hook_event_name": event, **more}


def sessions() -> list[Session]:
    with opened() as store:
        return store.list_sessions(SessionQuery(limit=100))


def handoffs() -> list[dict[str, Any]]:
    return [i for i in json.loads(ken("list", "--all", "--json").stdout) if i["kind"] == "handoff"]


def log_text() -> str:
    path = Path(os.environ["XDG_STATE_HOME"]) / "kenning" / "log"
    return path.read_text() if path.exists() else ""


@pytest.fixture
def repo(git_repo: Path, db_path: Path) -> Path:
    add("Checkout totals are rounded with bankers rounding", scope="repo:github.com/acme/shop")
    return git_repo


def test_each_hook_waits_for_the_lock_well_under_the_timeout_integrate_installs() -> None:
    for event, timeout in HOOK_TIMEOUTS.items():
        budget = hook_run.BUSY_BUDGET[event.value]
        assert budget + hook_run.REPLAY_WAIT <= timeout / 2, event


def test_a_session_end_under_a_held_lock_exits_in_time_and_its_handoff_arrives_later(
    repo: Path, db_path: Path
) -> None:
    in_process("SessionStart", payload(repo, "SessionStart", source="startup"))
    in_process("UserPromptSubmit", payload(repo, "UserPromptSubmit", prompt="fix the totals"))

    with write_locked(db_path):
        ended = hook("SessionEnd", payload(repo, "SessionEnd", reason="exit"))

        assert (ended.returncode, ended.stdout, ended.stderr) == (0, "", "")
        kept = spool.pending(str(db_path))
        assert [json.loads(p.read_text())["method"] for p in kept] == [
            "update_session",
            "insert_item",
        ]
        assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in kept)
        assert stat.S_IMODE(spool.folder().stat().st_mode) == 0o700
        assert sessions()[0].ended_at is None  # not written yet
        said = ken("doctor").stdout  # says what waits, and makes nothing
        assert "ok  spool: 2 writes that hooks could not make (the store was locked)" in said
        assert len(spool.pending(str(db_path))) == 2

    [handoff] = handoffs()  # a ken command after the lock is gone writes what waited
    assert "fix the totals" in handoff["body"]
    assert sessions()[0].ended_at is not None
    assert spool.pending(str(db_path)) == []


def test_a_whole_session_under_a_held_lock_is_answered_in_time_and_recorded_once_after(
    repo: Path, db_path: Path
) -> None:
    with write_locked(db_path):
        started = hook("SessionStart", payload(repo, "SessionStart", source="startup"))
        asked = hook("UserPromptSubmit", payload(repo, "UserPromptSubmit", prompt="refunds?"))
        ended = hook("SessionEnd", payload(repo, "SessionEnd", reason="exit"))
        assert sessions() == []

    assert started.returncode == 0 and "bankers rounding" in started.stdout  # reading works
    assert (asked.returncode, ended.returncode) == (0, 0)
    ken("list")  # any ken command replays
    [session] = sessions()
    assert (session.agent_session_id, session.prompt_count) == ("s-1", 1)
    assert session.first_prompt == "refunds?" and session.end_reason == "exit"
    assert len(handoffs()) == 1
    ken("list")
    assert len(sessions()) == 1 and len(handoffs()) == 1 and spool.pending(str(db_path)) == []


def test_a_prompt_under_a_held_lock_still_gets_its_recall_and_its_prompt_is_kept_after(
    repo: Path, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The prompt's own row for run lessons was a write that could not wait: under a lock
    the hook printed nothing, and the prompt was lost."""
    monkeypatch.setenv("KEN_HOOK_SERVER", "0")
    with opened(db_path) as store:
        store.conn.execute("SELECT 1")  # the store exists, with its tables
    prompt = "are checkout totals rounded with bankers rounding?"
    with write_locked(db_path):
        asked = hook("UserPromptSubmit", payload(repo, "UserPromptSubmit", prompt=prompt))
    assert asked.returncode == 0 and "bankers rounding" in asked.stdout, asked.stdout
    ken("list")  # any ken command replays
    [session] = sessions()
    with opened(db_path) as store:
        assert store.session_prompts(session.id) == [prompt]


def test_a_later_hook_replays_the_spool_before_its_own_writes(repo: Path, db_path: Path) -> None:
    in_process("SessionStart", payload(repo, "SessionStart", source="startup"))
    with write_locked(db_path):
        hook("UserPromptSubmit", payload(repo, "UserPromptSubmit", prompt="first"))
    in_process("UserPromptSubmit", payload(repo, "UserPromptSubmit", prompt="second"))

    [session] = sessions()
    assert (session.first_prompt, session.last_prompt, session.prompt_count) == (
        "first",
        "second",
        2,
    )
    assert spool.pending(str(db_path)) == []


def test_a_hook_that_cannot_even_read_stays_silent_and_exits_in_time(
    repo: Path, db_path: Path
) -> None:
    with write_locked(db_path, exclusive=True):
        started = hook("SessionStart", payload(repo, "SessionStart", source="startup"))

    assert (started.returncode, started.stdout, started.stderr) == (0, "", "")
    assert "locked by another process" in log_text()


def test_a_persons_read_of_a_store_nobody_can_read_fails_in_seconds_naming_the_holder(
    repo: Path, db_path: Path
) -> None:
    """`ken list` waited 30 s (a write's wait) and then said only "try again"."""
    with write_locked(db_path, exclusive=True):
        started = time.monotonic()
        listed = subprocess.run(
            [str(KEN_BIN), "list"], capture_output=True, text=True, cwd=repo, timeout=60
        )
        took = time.monotonic() - started

    assert listed.returncode == 1 and listed.stdout == ""
    assert listed.stderr == (
        f"ken: the store {db_path} stayed locked by another process (it is open in "
        f"{os.getpid()} ({Path(f'/proc/{os.getpid()}/comm').read_text().strip()})); "
        "try again\n"
    )
    assert took < 10, took


def test_a_persons_write_still_waits_for_a_write_lock_held_longer_than_a_read_waits(
    repo: Path, db_path: Path
) -> None:
    """Reads wait a few seconds; a write queues behind another's write, as long as ever."""
    with locked_for(db_path, 4.0):
        added = subprocess.run(
            [str(KEN_BIN), "add", "Deploys go through make release"],
            capture_output=True,
            text=True,
            cwd=repo,
            timeout=60,
        )
    assert added.returncode == 0, added.stderr
    listed = json.loads(ken("list", "--all", "--json").stdout)
    assert "Deploys go through make release" in [i["title"] for i in listed]


def test_a_replay_after_a_crash_writes_nothing_twice(repo: Path, db_path: Path) -> None:
    in_process("SessionStart", payload(repo, "SessionStart", source="startup"))
    [session] = sessions()
    assert spool.keep(str(db_path), "note_prompt", (session.id, "kept for later"), {})
    [entry] = spool.pending(str(db_path))
    copy = entry.read_bytes()

    with opened() as store:
        assert spool.replay(store) == 0
    entry.write_bytes(copy)  # as if the process died after its commit, before the unlink
    with opened() as store:
        assert spool.replay(store) == 0

    assert sessions()[0].prompt_count == 1
    assert spool.pending(str(db_path)) == []


def test_a_session_update_an_older_kenning_kept_is_still_replayed(
    repo: Path, db_path: Path
) -> None:
    in_process("SessionStart", payload(repo, "SessionStart", source="startup"))
    [session] = sessions()
    # Before `SessionUpdate`, the spool kept an update's columns as keywords.
    ended = {"ended_at": "2026-12-01T10:00:00.000Z", "end_reason": "exit", "commits": ["abc"]}
    assert spool.keep(str(db_path), "update_session", (session.id,), ended)

    with opened() as store:
        assert spool.replay(store) == 0

    [again] = sessions()
    assert (again.ended_at, again.end_reason, again.commits) == (
        "2026-12-01T10:00:00.000Z",
        "exit",
        ("abc",),
    )
    assert spool.pending(str(db_path)) == []


def test_the_spool_is_bounded_in_count_and_size(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(spool, "MAX_ENTRIES", 2)
    assert spool.keep(str(db_path), "note_prompt", ("s", "one"), {})
    assert spool.keep(str(db_path), "note_prompt", ("s", "two"), {})
    assert not spool.keep(str(db_path), "note_prompt", ("s", "three"), {})
    assert not spool.keep(str(db_path), "note_prompt", ("s", "x" * spool.MAX_ENTRY_BYTES), {})

    assert len(spool.pending(str(db_path))) == 2
    assert "holds 2 writes already; note_prompt dropped" in log_text()
    assert "too big to keep; dropped" in log_text()


def test_a_spooled_write_that_can_never_be_made_is_dropped_not_left_blocking(
    repo: Path, db_path: Path
) -> None:
    add("A first memory")
    assert spool.keep(str(db_path), "record_delivery", ("no-such-session", "pack", []), {})
    in_process("SessionStart", payload(repo, "SessionStart", source="startup"))

    assert spool.pending(str(db_path)) == []
    assert len(sessions()) == 1
    assert "dropped record_delivery" in log_text()


def test_an_entry_another_process_replays_as_this_one_reads_it_is_no_error(
    repo: Path, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two processes replay at once: one reads an entry just as the other, having made
    it, moves it out of the spool and zeroes it. Nothing was lost: nothing is logged. An
    entry that is unreadable is logged by its id, which the log's redaction leaves whole."""
    in_process("SessionStart", payload(repo, "SessionStart", source="startup"))
    [session] = sessions()
    assert spool.keep(str(db_path), "note_prompt", (session.id, "kept for later"), {})
    assert spool.keep(str(db_path), "no_such_method", (session.id,), {})
    raced, unknown = spool.pending(str(db_path))
    read = Path.read_bytes
    reads: list[Path] = []

    def racing(self: Path) -> bytes:
        reads.append(self)
        if self != raced or reads.count(self) == 1:  # the first read is pending()'s
            return read(self)
        with open(self, "rb") as fh:
            spool._remove(self)  # the other process: out of the spool, zeroed, deleted
            return fh.read()

    with monkeypatch.context() as patched, opened() as store:
        patched.setattr(Path, "read_bytes", racing)
        assert spool.replay(store) == 0

    assert spool.pending(str(db_path)) == []
    entry_id = unknown.stem.rpartition("-")[2]
    [line] = [line for line in log_text().splitlines() if "spool" in line]
    assert f"dropped unreadable entry {entry_id}: unknown method 'no_such_method'" in line
    assert "redacted" not in line


def test_a_replay_the_lock_held_up_gives_the_store_back_its_own_wait(
    repo: Path, db_path: Path
) -> None:
    """A `ken` command's replay waits a second; after it the command's own writes waited
    at most that second too (none, once it had timed out), not the store's 30. Its reads
    wait as reads do again."""
    in_process("SessionStart", payload(repo, "SessionStart", source="startup"))
    [session] = sessions()
    assert spool.keep(str(db_path), "note_prompt", (session.id, "kept for later"), {})
    with opened(db_path) as store:
        with write_locked(db_path):
            assert spool.replay(store, wait=0.2) == 1
        assert store.conn.execute("PRAGMA busy_timeout").fetchone()[0] == READ_WAIT_MS
        assert store.deadline is None


MARKER = "Quokkaflint Vexbrandt"  # in no dictionary: any byte of it found is a leak


def raw(db: Path) -> bytes:
    """The store's bytes on disk, its WAL's and the spool's."""
    files = [Path(f"{db}{end}") for end in ("", "-wal")]
    if spool.folder().is_dir():
        files += [spool.folder() / name for name in os.listdir(spool.folder())]
    return b"".join(p.read_bytes() for p in files if p.is_file())


def test_forget_everywhere_forgets_a_prompt_that_waited_in_the_spool(
    repo: Path, db_path: Path
) -> None:
    """A prompt that pasted a memory, kept in the spool while the store was locked, was
    written after `ken forget --everywhere` (still locked as it began, so its replay gave
    up): the forgotten text came back into the session's prompts."""
    memory = add(f"The {MARKER} rotation runs on Fridays")
    in_process("SessionStart", payload(repo, "SessionStart", source="startup"))
    pasted = f"remember: the {MARKER} rotation runs on Fridays"
    with write_locked(db_path):
        hook("UserPromptSubmit", payload(repo, "UserPromptSubmit", prompt=pasted))
    assert spool.pending(str(db_path))  # no ken command since: it waits

    with locked_for(db_path, 2.0):  # a command of another process, as forget starts
        forgot = ken("forget", memory.id, "--everywhere", "--yes")
    ken("list")  # any ken command replays what is left

    assert forgot.exit_code == 0, forgot.output
    assert "session prompts and recall queries blanked" in forgot.output
    [session] = sessions()
    assert session.first_prompt is None and session.prompt_count == 1
    with opened(db_path) as store:
        assert store.session_prompts(session.id) == [""]
    assert spool.pending(str(db_path)) == []
    assert MARKER.encode() not in raw(db_path)


def test_forget_everywhere_takes_a_handoff_quoting_it_that_waited_in_the_spool(
    db_path: Path,
) -> None:
    """Through the library, as the panel forgets: the spool is written first, and a
    memory quoting the forgotten one that came from it goes too."""
    memory = add(f"The {MARKER} rotation runs on Fridays")
    handoff = items.new_item(
        f"Handoff\nNext: the {MARKER} rotation runs on Fridays", scope=items.parse_scope("global")
    )
    assert spool.keep(str(db_path), "insert_item", (handoff,), {})  # as a SessionEnd would
    with opened(db_path) as store:
        plan = items.plan_forget(store, [store.get_item(memory.id)], everywhere=True)
        done = items.forget(store, plan)
    with opened(db_path) as store:
        assert spool.replay(store) == 0

    assert done.memories == 2
    with opened(db_path) as store:
        assert store.list_items(items.ItemQuery(statuses=())) == []
    assert MARKER.encode() not in raw(db_path)


def test_one_store_keeps_one_spool_whatever_path_names_it(
    repo: Path, db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The spool was keyed by KEN_DB as given: a hook run with the store's path through a
    symlink kept writes that no `ken` command run with its real path ever made."""
    (tmp_path / "link").symlink_to(tmp_path, target_is_directory=True)
    monkeypatch.setenv("KEN_DB", str(tmp_path / "link" / db_path.name))
    with write_locked(db_path):
        hook("UserPromptSubmit", payload(repo, "UserPromptSubmit", prompt="through the link"))
    assert len(spool.pending(str(db_path))) == 3  # the session, its prompt, run lessons' copy

    monkeypatch.setenv("KEN_DB", str(db_path))
    ken("list")  # any ken command replays

    [session] = sessions()
    assert session.first_prompt == "through the link"
    assert spool.pending(str(db_path)) == []
    assert spool.pending(str(tmp_path / "link" / db_path.name)) == []


def test_a_write_an_older_kenning_spooled_under_another_path_is_still_made(
    repo: Path, db_path: Path, tmp_path: Path
) -> None:
    in_process("SessionStart", payload(repo, "SessionStart", source="startup"))
    [session] = sessions()
    assert spool.keep(str(db_path), "note_prompt", (session.id, "kept for later"), {})
    [entry] = spool.pending(str(db_path))
    (tmp_path / "link").symlink_to(tmp_path, target_is_directory=True)
    kept = json.loads(entry.read_text())
    # Before entries named the real path, each named the store as KEN_DB spelt it.
    entry.write_text(json.dumps({**kept, "db": str(tmp_path / "link" / db_path.name)}))

    ken("list")

    assert sessions()[0].last_prompt == "kept for later"
    assert spool.pending(str(db_path)) == []


def test_a_proposal_a_hook_files_under_a_held_lock_waits_in_the_spool(db_path: Path) -> None:
    """A lesson a Stop hook proposes while another process holds the write lock is kept
    in the spool like the hook's other writes, not lost: filing a proposal is one
    transaction elsewhere (two MCP servers filing one statement file it once), but a
    hook's writes come one at a time and queue in the spool."""
    add("anything, so the store exists")
    proposal = items.new_item(
        "Run the migrations before the tests", scope=items.parse_scope("global")
    )
    with opened(db_path) as store, write_locked(db_path):
        store.set_deadline(time.monotonic() + 0.3)
        store.spool = spool.Spool(store.path, active=False)
        items.file_proposal(store, replace(proposal, status=Status.PROPOSED))
    assert len(spool.pending(str(db_path))) == 1
    with opened(db_path) as store:
        assert spool.replay(store) == 0
        assert store.get_item(proposal.id).status is Status.PROPOSED
