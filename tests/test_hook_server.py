"""The warm hook server: `ken hook` answers through it when it runs, falls back to its
own process when it does not (and starts one), and the answers are the same.

A hook answered by its own process looks the same from outside as one the server
answered, so the tests read the server's status file (its pid and how many hooks it
answered) to see which process did."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import KEN_BIN, ken
from helpers import add
from kenning.hooks import client, wire
from kenning.hookstate import code_stamp, socket_path, status_path

PROMPT = "should the integration tests for billing mock postgres or use the real database?"


def status(socket: Path) -> dict[str, Any]:
    """The running server's status file."""
    return dict(json.loads(Path(status_path(str(socket))).read_text()))


def answered(socket: Path) -> int:
    return int(status(socket)["served"])


def answered_by_server(socket: Path, count: int) -> bool:
    """Whether the server has answered exactly `count` hooks. It counts a hook once it
    has sent the answer and recorded what it told, a moment after the client has the
    answer: wait for it."""
    wait_for(lambda: answered(socket) >= count, seconds=10)
    return answered(socket) == count


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def started(socket: Path) -> dict[str, Any]:
    """Wait for a server to start at `socket`: its status."""
    assert wait_for(lambda: Path(status_path(str(socket))).exists()), "no server started"
    return status(socket)


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
    path = Path(socket_path())
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
    server = started(served)
    assert server["served"] == 0 and alive(server["pid"])
    second = hook(cwd, "s2")  # through the server now
    assert answered_by_server(served, 1), "the server did not answer"
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
    started(served)
    told = hook(cwd, "s9")
    assert "real Postgres database" in told.stdout
    again = hook(cwd, "s9")  # the same session is not told the same memory twice
    assert again.returncode == 0 and again.stdout == ""
    assert answered_by_server(served, 2), "the server did not answer both"
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
    started(served)
    log = Path(os.environ["XDG_STATE_HOME"]) / "kenning" / "log"
    before = log.read_text().count("\n") if log.exists() else 0
    bad = hook(cwd, "x", raw=b"\xff\xfe not json")
    assert answered_by_server(served, 1), "the server did not answer"
    assert bad.returncode == 0 and bad.stdout == "" and bad.stderr == ""
    assert log.read_text().count("\n") == before + 1


def test_one_server_serves_each_hook_with_that_hook_s_own_store(tmp_path: Path, served: Path):
    seed()
    cwd = repo(tmp_path)
    hook(cwd, "warm-up")
    started(served)
    other_db = tmp_path / "other.db"
    answer = hook(cwd, "elsewhere", env={"KEN_DB": str(other_db)})
    assert answered_by_server(served, 1), "the server did not answer"
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
    old = started(served)
    module = Path(client.__file__).with_name("__init__.py")
    before = module.stat()
    changed = code_stamp() + 5_000_000_000  # newer than every module, not just this one
    os.utime(module, ns=(before.st_atime_ns, changed))
    try:
        # The server looks at the code at most once a second: hooks go on being answered,
        # by the old server until it sees the change, then each in its own process.
        deadline = time.monotonic() + 20
        while alive(old["pid"]) and time.monotonic() < deadline:
            again = hook(cwd, "after")
            assert "real Postgres database" in again.stdout or again.stdout == ""
        assert not alive(old["pid"]), "the server never noticed its code changed"
        new = started(served)  # a new server, on the new code, starts
        assert new["pid"] != old["pid"]
        assert new["code_stamp"] == changed != old["code_stamp"]
        later = hook(cwd, "later")
        assert "real Postgres database" in later.stdout
        assert answered_by_server(served, 1), "the new server did not answer"
    finally:
        os.utime(module, ns=(before.st_atime_ns, before.st_mtime_ns))


def test_an_idle_server_exits(tmp_path: Path, served: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("KEN_HOOK_SERVER_IDLE", "1")
    seed()
    cwd = repo(tmp_path)
    # Started here rather than by a hook, which goes on answering itself for as long as
    # the server may idle: a server gone before the test looked was taken for none.
    server = subprocess.Popen(
        [sys.executable, "-m", "kenning.hooks.server", str(served)],
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        payload = {"session_id": "s1", "cwd": str(cwd), "prompt": PROMPT}
        request = wire.pack_request(
            ["UserPromptSubmit", "--agent", "claude"],
            dict(os.environ),
            json.dumps(payload).encode(),
        )
        # An answer shows it was up; its idle time counts from this request.
        answers: list[str | None] = []
        assert wait_for(
            lambda: answers.append(client.ask_server(str(served), request)) or answers[-1]
        ), "the server never answered"
        assert "real Postgres database" in str(answers[-1])
        assert server.wait(timeout=30) == 0, "the idle server did not exit"
    finally:
        server.kill()
        server.wait()
    assert not served.exists() and not Path(status_path(str(served))).exists()


def test_through_the_server_a_locked_store_is_answered_in_time_and_recorded_after(
    tmp_path: Path, served: Path, db_path: Path
):
    import sqlite3

    from kenning.integrate import TIMEOUT_SECONDS

    seed()
    cwd = repo(tmp_path)
    hook(cwd, "warm-up")
    started(served)
    lock = sqlite3.connect(db_path, isolation_level=None)
    lock.execute("BEGIN IMMEDIATE")
    try:
        began = time.monotonic()
        told = hook(cwd, "s7")
        took = time.monotonic() - began
    finally:
        lock.execute("ROLLBACK")
        lock.close()

    assert told.returncode == 0 and "real Postgres database" in told.stdout
    assert answered_by_server(served, 1), "the server did not answer"
    assert took < TIMEOUT_SECONDS["UserPromptSubmit"]  # the agent's limit for this hook
    sessions = json.loads(ken("sessions", "--all", "--json").output)
    assert sorted(s["agent_session_id"] for s in sessions) == ["s7", "warm-up"]


def test_doctor_and_hook_server_status_show_the_running_server(tmp_path: Path, served: Path):
    assert "no hook server is running" in ken("hook-server", "status").stderr
    assert json.loads(ken("hook-server", "status", "--json").stdout)["running"] is False
    cwd = repo(tmp_path)
    hook(cwd, "s1")
    server = started(served)
    hook(cwd, "s2")
    assert answered_by_server(served, 1)

    shown = json.loads(ken("hook-server", "status", "--json").stdout)
    assert shown["running"] is True and shown["pid"] == server["pid"]
    assert shown["served"] == 1 and shown["current_code"] is True
    text = ken("hook-server", "status").stdout
    assert text.startswith(f"running: pid {server['pid']}, started {server['started_at']}, code ")
    assert "1 hooks answered" in text
    report = json.loads(ken("doctor", "--json", env={"KEN_HOOK_SERVER": "1"}).stdout)
    [check] = report["hook_server"]
    assert check["ok"] is True and check["detail"].startswith(f"pid {server['pid']}, started")

    stopped = ken("hook-server", "stop")
    assert stopped.exit_code == 0
    assert f"stopping the hook server (pid {server['pid']})" in stopped.stderr
    assert wait_for(lambda: not alive(server["pid"])), "the server did not stop"
    assert wait_for(lambda: not Path(status_path(str(served))).exists())
    assert "no hook server is running" in ken("hook-server", "stop").stderr
    report = json.loads(ken("doctor", "--json", env={"KEN_HOOK_SERVER": "1"}).stdout)
    assert report["hook_server"][0]["detail"] == "not running (the next hook starts it)"


def test_a_status_file_left_by_a_dead_server_is_not_taken_for_a_running_one(served: Path):
    path = Path(status_path(str(served)))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"pid": os.getpid(), "served": 3}))  # alive, not a server
    assert json.loads(ken("hook-server", "status", "--json").stdout)["running"] is False
