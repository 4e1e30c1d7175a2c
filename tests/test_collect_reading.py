"""`ken collect` reading the agents' files: a file there but not read now (too large,
empty for a moment, not text, a link out of the agent's folder) changes nothing and
says why; a byte order mark and CRLF line endings read as the text they hold."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from conftest import ken, ken_proc
from helpers import opened
from kenning import collect, items
from kenning.agents.saved import MAX_FILE_BYTES
from kenning.model import Status
from kenning.store import ItemQuery

DB_NOTE = "---\ndescription: Do not mock the database in integration tests\ntype: feedback\n---\n"
DB_BODY = "Use a real Postgres."


def _claude() -> Path:
    """Claude Code's auto-memory folder of a checkout kenning does not know."""
    folder = Path(os.environ["HOME"]) / ".claude" / "projects" / "-srv-shop" / "memory"
    folder.mkdir(parents=True)
    return folder


def _write(path: Path, data: str | bytes) -> None:
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    later = time.time() + 5 + time.monotonic() % 1  # a new mtime even within the tick
    os.utime(path, (later, later))


def _all(store) -> list:
    return store.list_items(ItemQuery(statuses=(), include_expired=True, limit=100))


def _approved_db_note(store) -> tuple[Path, str]:
    note = _claude() / "db.md"
    _write(note, DB_NOTE + DB_BODY + "\n")
    [added] = collect.collect(store).added
    items.set_status(store, added.id, "approve")
    return note, added.id


@pytest.mark.parametrize(
    ("now", "why"),
    [
        (DB_NOTE + DB_BODY + "\n" + "log line " * 40000, "larger than 256 KB"),
        ("", "empty"),
        ("\n  \n", "empty"),
        (b"\xff\xfe" + "oops".encode("utf-16-le")[:-1], "not UTF-16 text"),
    ],
)
def test_an_approved_memory_stays_while_its_file_cannot_be_read(now, why):
    """A file grown past 256 KB, or emptied for a moment while an agent rewrote it, was
    taken for one removed: the approved memory was archived "source removed", and came
    back only as a new proposal."""
    with opened() as store:
        note, approved = _approved_db_note(store)
        _write(note, now)
        done = collect.collect(store, changed_only=True)
        assert done.archived == [] and done.added == [] and done.updated == []
        assert [n for n in done.notes if str(note) in n and why in n] == done.notes != []
        assert store.get_item(approved).status is Status.ACTIVE
        _write(note, DB_NOTE + DB_BODY + "\n")  # readable again, as it was
        again = collect.collect(store, changed_only=True)
        assert (again.added, again.revised, again.archived, again.notes) == ([], [], [], [])
        assert [i.id for i in _all(store)] == [approved]


def test_a_file_too_large_to_read_is_said_on_the_first_collection_too():
    folder = _claude()
    _write(folder / "huge.md", "# Huge\n" + "x" * MAX_FILE_BYTES)
    _write(folder / "small.md", "# Indent with tabs in the Makefile\n")

    result = ken("collect")

    assert result.exit_code == 0, result.output
    assert f"not read: {folder / 'huge.md'}: larger than 256 KB" in result.output
    assert "brought in 1 memory to review" in result.output
    with opened() as store:
        assert [i.title for i in _all(store)] == ["Indent with tabs in the Makefile"]


def test_only_a_file_gone_archives_its_memory():
    with opened() as store:
        note, approved = _approved_db_note(store)
        note.unlink()
        done = collect.collect(store, changed_only=True)
        assert [i.id for i in done.archived] == [approved] and done.notes == []


def test_gemini_bullets_stay_while_gemini_md_cannot_be_read():
    index = Path(os.environ["HOME"]) / ".gemini" / "GEMINI.md"
    index.parent.mkdir()
    _write(index, "# Mine\n- Answer in British English.\n")
    with opened() as store:
        [added] = collect.collect(store).added
        _write(index, "")
        done = collect.collect(store, changed_only=True)
        assert done.archived == [] and len(done.notes) == 1
        assert store.get_item(added.id).status is Status.PROPOSED


def test_session_start_leaves_the_memory_and_logs_why(git_repo):
    with opened() as store:
        note, approved = _approved_db_note(store)
    _write(note, "")
    payload = {
        "session_id": "9b1c2d3e-0000-4000-8000-000000000002",
        "hook_event_name": "SessionStart",
        "source": "startup",
        "cwd": str(git_repo),
        "transcript_path": str(git_repo / "t.jsonl"),
    }
    done = ken_proc("hook", "SessionStart", "--agent", "claude", input=json.dumps(payload))
    assert done.returncode == 0 and "Traceback" not in done.stderr
    with opened() as store:
        assert store.get_item(approved).status is Status.ACTIVE
    log = Path(os.environ["XDG_STATE_HOME"]) / "kenning" / "log"
    assert f"not read: {note}: empty" in log.read_text(encoding="utf-8")


def test_a_byte_order_mark_and_crlf_read_as_the_text_they_hold():
    """A BOM hid the frontmatter (the title was "\\ufeff---") and stayed in front of a
    Codex note's heading; CRLF line endings read as LF."""
    folder = _claude()
    _write(
        folder / "bom_crlf.md",
        "\ufeff---\r\ndescription: Run migrations with alembic upgrade head\r\n"
        "type: feedback\r\n---\r\nNever edit old migrations.\r\nAdd a new one.\r\n",
    )
    _write(
        folder / "utf16.md",
        "# Deploy with the blue-green script\r\nIt waits.".encode("utf-16"),
    )
    notes = Path(os.environ["HOME"]) / ".codex" / "memories" / "extensions" / "ad_hoc" / "notes"
    notes.mkdir(parents=True)
    _write(notes / "bom.md", "\ufeff# Use uv for Python envs\n")
    with opened() as store:
        collect.collect(store)
        found = {(i.kind.value, i.title, i.body) for i in _all(store)}
    assert found == {
        (
            "correction",
            "Run migrations with alembic upgrade head",
            "Never edit old migrations.\nAdd a new one.",
        ),
        ("fact", "Deploy with the blue-green script", "It waits."),
        ("preference", "Use uv for Python envs", ""),
    }


@pytest.mark.parametrize(
    ("data", "why"),
    [
        ("# Caf\u00e9 d\u00e9ploiement note\n".encode("latin-1"), "not UTF-8 text"),
        ("# No mark, wide\n".encode("utf-16-le"), "holds NUL bytes: not text"),
        (b"# A title\x00 with a NUL\n", "holds NUL bytes: not text"),
    ],
)
def test_a_file_that_is_not_text_is_not_collected_and_a_line_says_why(data, why):
    """Latin-1 text became U+FFFD silently, and UTF-16 without its mark NUL-laden text."""
    folder = _claude()
    _write(folder / "odd.md", data)
    with opened() as store:
        done = collect.collect(store)
        assert done.added == [] and _all(store) == []
    assert done.notes == [f"not read: {folder / 'odd.md'}: {why}; what came from it stays"]


def test_a_title_is_cleaned_as_ken_add_cleans_one():
    """The title is one line as `ken add` makes it (`items.split_text`): a form feed or
    U+2028 in a note's first line was stored as it was."""
    folder = _claude()
    _write(folder / "breaks.md", "# Ship on\x0cFridays\u2028never\nBody.\n")
    with opened() as store:
        [added] = collect.collect(store).added
    assert (added.title, added.body) == ("Ship on Fridays never", "Body.")


def test_a_link_out_of_the_memory_folder_is_not_followed(tmp_path):
    folder = _claude()
    outside = tmp_path / "elsewhere.md"
    outside.write_text("# The host's name is secret-box\n")
    (folder / "linked.md").symlink_to(outside)
    (folder / "real.md").write_text("# Use pnpm, never npm\n")
    (folder / "kept").mkdir()
    (folder / "kept" / "changelog.md").write_text("# Keep the changelog short\n")
    (folder / "changelog.md").symlink_to(folder / "kept" / "changelog.md")  # within: followed
    with opened() as store:
        done = collect.collect(store)
    assert sorted(i.title for i in done.added) == [
        "Keep the changelog short",
        "Use pnpm, never npm",
    ]
    assert done.notes == [
        f"not read: {folder / 'linked.md'}: a link to a file outside the memory folder, "
        "not followed; what came from it stays"
    ]
