"""A locked store: how long each hook takes while another process holds the store's
write lock, whether the session's handoff survives, and how long `ken forget` takes
while another process keeps a read transaction open.

Every hook runs as the installed `ken hook` in its own process (no hook server), as an
agent runs it, against a fresh store in a temp folder. The lock is a real
`BEGIN IMMEDIATE` held by a child process; the reader a real open read transaction.
Each hook is stopped at the timeout `ken integrate` installs for it, as the agent would.

Run: `python bench/locked_bench.py`. Prints one JSON object and writes it to
`bench/locked_results.json`. No target is asserted: the contract is the agent's timeout,
which the tests (tests/test_locked.py) check as behaviour.

Before the spool (2026-12-01, reference machine): SessionEnd killed at its 3 s, its
handoff never written; SessionStart and a prompt killed at 15 s and 10 s, the session
never recorded; `ken forget` with a reader still running after 120 s (stopped). After:
see locked_results.json (SessionEnd 1.35 s, SessionStart 3.4 s, prompt 0.55 s, forget
2.4 s; every handoff written by the next `ken` command).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from common import env_for, progress, shop_repo  # noqa: E402
from kenning.agents import get as get_agent  # noqa: E402
from kenning.agents.agent import HOOK_TIMEOUTS  # noqa: E402

KEN = Path(sys.executable).with_name("ken")
FORGET_LIMIT = 120.0  # seconds; a forget still running then is stopped and reported
HOLD = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute(sys.argv[2])
if sys.argv[2] == "BEGIN":
    conn.execute("SELECT count(*) FROM items").fetchone()
print("held", flush=True)
sys.stdin.read()
"""


@contextmanager
def held(db: Path, statement: str, env: dict[str, str]) -> Any:
    """Another process holding `statement` (BEGIN IMMEDIATE: the write lock; BEGIN and a
    read: a reader's snapshot) until the block ends."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(db), statement],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    try:
        yield
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)


def hook(event: str, payload: dict[str, Any], env: dict[str, str], cwd: Path) -> dict[str, Any]:
    """One hook, stopped at its installed timeout as the agent would stop it."""
    limit = HOOK_TIMEOUTS[get_agent("claude").event(event)]
    started = time.monotonic()
    try:
        done = subprocess.run(
            [str(KEN), "hook", event, "--agent", "claude"],
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            env=env,
            cwd=cwd,
            timeout=limit,
        )
        killed, code, out = False, done.returncode, done.stdout
    except subprocess.TimeoutExpired:
        killed, code, out = True, None, ""
    took = time.monotonic() - started
    return {
        "seconds": round(took, 2),
        "timeout": limit,
        "killed": killed,
        "exit": code,
        "printed": bool(out.strip()),
    }


def ken(env: dict[str, str], cwd: Path, *args: str, timeout: float = 200) -> tuple[float, str]:
    started = time.monotonic()
    try:
        done = subprocess.run(
            [str(KEN), *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return time.monotonic() - started, f"(still running after {timeout:g} s: stopped)"
    return time.monotonic() - started, done.stdout + done.stderr


def payload(session: str, event: str, repo: Path, **more: Any) -> dict[str, Any]:
    return {"session_id": session, "cwd": str(repo), "hook_event_name": event, **more}


def handoffs(env: dict[str, str], repo: Path) -> str:
    """`ken list` of the handoffs: a ken command, which writes what hooks left waiting."""
    return ken(env, repo, "list", "--all", "--kind", "handoff", "--json")[1]


def main() -> None:
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        env = env_for(folder)
        repo = shop_repo(folder)
        ken(
            env, repo, "add", "Checkout totals are rounded with bankers rounding", "--scope", "repo"
        )
        db = folder / "memory.db"

        progress("a SessionEnd while another process holds the write lock")
        hook("SessionStart", payload("one", "SessionStart", repo, source="startup"), env, repo)
        prompt = "why are checkout totals rounded like that"
        hook("UserPromptSubmit", payload("one", "UserPromptSubmit", repo, prompt=prompt), env, repo)
        with held(db, "BEGIN IMMEDIATE", env):
            ended = hook("SessionEnd", payload("one", "SessionEnd", repo, reason="exit"), env, repo)
        results["session_end_alone"] = {
            **ended,
            "handoff_after_release_and_a_ken_call": prompt in handoffs(env, repo),
        }

        progress("a whole session while another process holds the write lock")
        asked = "how are refunds rounded"
        with held(db, "BEGIN IMMEDIATE", env):
            whole = {
                "SessionStart": hook(
                    "SessionStart",
                    payload("two", "SessionStart", repo, source="startup"),
                    env,
                    repo,
                ),
                "UserPromptSubmit": hook(
                    "UserPromptSubmit",
                    payload("two", "UserPromptSubmit", repo, prompt=asked),
                    env,
                    repo,
                ),
                "SessionEnd": hook(
                    "SessionEnd", payload("two", "SessionEnd", repo, reason="exit"), env, repo
                ),
            }
        results["whole_session"] = {
            **whole,
            "handoff_after_release_and_a_ken_call": asked in handoffs(env, repo),
        }

        progress("ken forget while another process keeps a read transaction open")
        _, out = ken(env, repo, "add", "Forget me: the staging password hint")
        short = out.strip().splitlines()[0]
        with held(db, "BEGIN", env):
            seconds, said = ken(env, repo, "forget", short, "--yes", timeout=FORGET_LIMIT)
        results["forget_with_a_reader"] = {"seconds": round(seconds, 2), "said": said.strip()}
        log = folder / "state" / "kenning" / "log"
        results["hook_log"] = log.read_text().splitlines() if log.exists() else []
    text = json.dumps(results, indent=2)
    (Path(__file__).parent / "locked_results.json").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
