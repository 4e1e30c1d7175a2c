"""The warm hook server: `ken hook` answers through it when it runs, falls back to its
own process when it does not (and starts one), and the answers are the same."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import KEN_BIN, ken
from helpers import add
from kenning.hooks import client

PROMPT = "should the integration tests for billing mock postgres or use the real database?"


def wait_for(check, seconds: float = 15.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Hooks may start a server here; it is stopped (and gone) after the test."""
    monkeypatch.setenv("KEN_HOOK_SERVER", "1")
    monkeypatch.setenv("KEN_HOOK_SERVER_IDLE", "60")
    path = Path(client.socket_path())
    yield path
    subprocess.run([str(KEN_BIN), "hook", "--stop-server"], capture_output=True, timeout=20)
    assert wait_for(lambda: not path.exists()), "the hook server did not stop"


def repo(tmp_path: Path) -> Path:
    folder = tmp_path / "shop"
    folder.mkdir()
    for args in (
        ["init", "-q", "-b", "main"],
        ["remote", "add", "origin", "git@github.com:acme/shop.git"],
    ):
        subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True)
    return folder


def hook(
    cwd: Path,
    session: str,
    prompt: str = PROMPT,
    raw: bytes | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    data = (
        raw
        if raw is not None
        else json.dumps(
            {
                "session_id": session,
                "cwd": str(cwd),
                "hook_event_name": "UserPromptSubmit",
                "prompt": prompt,
            }
        ).encode()
    )
    return subprocess.run(
        [str(KEN_BIN), "hook", "UserPromptSubmit", "--agent", "claude"],
        input=data.decode("latin-1"),
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
        encoding="latin-1",
    )


def seed() -> None:
    add(
        "Billing integration tests use the real Postgres database, never mocks",
        scope="repo:github.com/acme/shop",
        kind="correction",
    )
    add("Kubernetes ingress uses nginx annotations", scope="global")


def test_a_hook_without_a_server_answers_itself_and_starts_one(tmp_path: Path, served: Path):
    seed()
    cwd = repo(tmp_path)
    first = hook(cwd, "s1")
    assert first.returncode == 0 and "real Postgres database" in first.stdout
    assert wait_for(served.exists), "no hook server was started"
    second = hook(cwd, "s2")  # through the server now
    assert second.returncode == 0
    assert second.stdout == first.stdout
    assert "Kubernetes" not in second.stdout
    sessions = json.loads(ken("sessions", "--all", "--json").output)
    assert sorted(s["agent_session_id"] for s in sessions) == ["s1", "s2"]
    assert all(s["first_prompt"] == PROMPT for s in sessions)


def test_the_server_records_what_it_told_after_answering(tmp_path: Path, served: Path):
    seed()
    cwd = repo(tmp_path)
    hook(cwd, "warm-up")
    assert wait_for(served.exists)
    told = hook(cwd, "s9")
    assert "real Postgres database" in told.stdout
    again = hook(cwd, "s9")  # the same session is not told the same memory twice
    assert again.returncode == 0 and again.stdout == ""
    session = next(
        s
        for s in json.loads(ken("sessions", "--all", "--json").output)
        if s["agent_session_id"] == "s9"
    )
    told_json = json.loads(ken("told", session["id"], "--json").output)
    assert [d["what"] for d in told_json["deliveries"]] == ["recall"]


def test_bad_input_through_the_server_is_silent_and_logged(tmp_path: Path, served: Path):
    seed()
    cwd = repo(tmp_path)
    hook(cwd, "warm-up")
    assert wait_for(served.exists)
    log = Path(os.environ["XDG_STATE_HOME"]) / "kenning" / "log"
    before = log.read_text().count("\n") if log.exists() else 0
    bad = hook(cwd, "x", raw=b"\xff\xfe not json")
    assert bad.returncode == 0 and bad.stdout == "" and bad.stderr == ""
    assert log.read_text().count("\n") == before + 1


def test_one_server_serves_each_hook_with_that_hook_s_own_store(tmp_path: Path, served: Path):
    seed()
    cwd = repo(tmp_path)
    hook(cwd, "warm-up")
    assert wait_for(served.exists)
    other_db = tmp_path / "other.db"
    answer = hook(cwd, "elsewhere", env={"KEN_DB": str(other_db)})
    assert answer.returncode == 0 and answer.stdout == ""  # that store holds no memories
    assert other_db.exists()
    other = json.loads(ken("sessions", "--all", "--json", env={"KEN_DB": str(other_db)}).output)
    assert [s["agent_session_id"] for s in other] == ["elsewhere"]


def test_a_server_whose_code_changed_steps_aside(
    tmp_path: Path, served: Path, monkeypatch: pytest.MonkeyPatch
):
    seed()
    cwd = repo(tmp_path)
    hook(cwd, "warm-up")
    assert wait_for(served.exists)
    module = Path(client.__file__).with_name("__init__.py")
    before = module.stat()
    os.utime(module, ns=(before.st_atime_ns, before.st_mtime_ns + 5_000_000_000))
    try:
        time.sleep(1.1)  # the server looks at the code at most once a second
        again = hook(cwd, "after")  # the server steps aside; this hook answers itself
        assert "real Postgres database" in again.stdout
        assert wait_for(served.exists)  # and a new server, on the new code, starts
        later = hook(cwd, "later")
        assert "real Postgres database" in later.stdout
    finally:
        os.utime(module, ns=(before.st_atime_ns, before.st_mtime_ns))


def test_an_idle_server_exits(tmp_path: Path, served: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("KEN_HOOK_SERVER_IDLE", "1")
    seed()
    hook(repo(tmp_path), "s1")
    assert wait_for(served.exists)
    assert wait_for(lambda: not served.exists(), seconds=20), "the idle server did not exit"


def test_through_the_server_a_locked_store_is_answered_in_time_and_recorded_after(
    tmp_path: Path, served: Path, db_path: Path
):
    import sqlite3

    from kenning.integrate import TIMEOUT_SECONDS

    seed()
    cwd = repo(tmp_path)
    hook(cwd, "warm-up")
    assert wait_for(served.exists)
    lock = sqlite3.connect(db_path, isolation_level=None)
    lock.execute("BEGIN IMMEDIATE")
    try:
        started = time.monotonic()
        told = hook(cwd, "s7")
        took = time.monotonic() - started
    finally:
        lock.execute("ROLLBACK")
        lock.close()

    assert told.returncode == 0 and "real Postgres database" in told.stdout
    assert took < TIMEOUT_SECONDS["UserPromptSubmit"]  # the agent's limit for this hook
    sessions = json.loads(ken("sessions", "--all", "--json").output)
    assert sorted(s["agent_session_id"] for s in sessions) == ["s7", "warm-up"]
