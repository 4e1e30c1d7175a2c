"""`ken` with its stdin or stdout closed, full or cut off: one `ken:` line and exit 1, or
for a reader that stops early, silence and the exit a shell shows for SIGPIPE (141); a
hook logs a line and stays silent, whatever its streams."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import KEN_BIN
from helpers import add, one_line_error


def ken_with(
    redirect: str, *args: str, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    """The installed `ken ARGS` run with a shell redirection (`<&-`, `>/dev/full`, ...)."""
    return subprocess.run(
        ["sh", "-c", f'exec "$0" "$@" {redirect}', str(KEN_BIN), *args],
        input=input,
        stdin=subprocess.DEVNULL if input is None else None,
        capture_output=True,
        text=True,
        timeout=60,
        start_new_session=True,
    )


def log_lines() -> list[str]:
    path = Path(os.environ["XDG_STATE_HOME"]) / "kenning" / "log"
    return path.read_text().splitlines() if path.exists() else []


@pytest.fixture
def item_id(db_path: Path) -> str:
    add("Use pnpm, not npm", kind="preference")
    return add("Deploys go through make release", kind="decision").id[-6:].lower()


def test_a_closed_stdin_reads_as_an_empty_one(item_id: str) -> None:
    for args in (("add",), ("recall",), ("import",), ("forget", item_id), ("approve", "--all")):
        closed, empty = ken_with("<&-", *args), ken_with("</dev/null", *args)
        assert "Traceback" not in closed.stderr, (args, closed.stderr)
        assert (closed.returncode, closed.stdout, closed.stderr) == (
            empty.returncode,
            empty.stdout,
            empty.stderr,
        ), args
    assert "the memory is empty" in one_line_error(ken_with("<&-", "add").stderr)
    assert ken_with("<&-", "forget", item_id).returncode == 1  # no answer: nothing forgotten
    assert ken_with("<&-", "show", item_id).returncode == 0


def test_a_closed_stdout_is_one_line_and_what_was_done_stays_done(item_id: str) -> None:
    done = ken_with(">&-", "list")
    assert done.returncode == 1
    assert "stdout is closed" in one_line_error(done.stderr)
    added = ken_with(">&-", "add", "Release on Thursdays")  # its id was for stdout
    assert added.returncode == 1
    assert "stdout is closed" in one_line_error(added.stderr)
    assert "Release on Thursdays" in ken_with("", "list").stdout


@pytest.mark.parametrize("command", ["export", "list"])
def test_a_full_disk_under_stdout_is_one_line(item_id: str, command: str) -> None:
    done = ken_with(">/dev/full", command)
    assert done.returncode == 1
    line = one_line_error(done.stderr)
    assert "cannot write to stdout (No space left on device)" in line


def test_a_reader_that_stops_early_is_no_error_worth_a_line(item_id: str) -> None:
    """`ken export | head -1`: the pipe closed before ken wrote (so no race decides)."""
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run(
            [str(KEN_BIN), "export"],
            stdin=subprocess.DEVNULL,
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            start_new_session=True,
        )
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (141, "")


def test_a_hook_with_stdin_closed_logs_that_and_stays_silent() -> None:
    done = ken_with("<&-", "hook", "SessionStart", "--agent", "claude")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    last = log_lines()[-1]
    assert "claude SessionStart" in last
    assert "stdin is closed" in last
    assert "reinstall" not in last


def test_a_hook_with_stdout_closed_stays_silent(item_id: str, tmp_path: Path) -> None:
    payload = json.dumps(
        {"session_id": "s1", "cwd": str(tmp_path), "hook_event_name": "SessionStart"}
    )
    args = ("hook", "SessionStart", "--agent", "claude")
    told = ken_with("", *args, input=payload)
    assert "Use pnpm" in told.stdout  # it has an answer to write
    done = ken_with(">&-", *args, input=payload)
    assert (done.returncode, done.stderr) == (0, "")
    assert not any("reinstall" in line for line in log_lines())
