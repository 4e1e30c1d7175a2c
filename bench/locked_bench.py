"""A locked store: how long each hook takes while another process holds the store's
write lock, whether the session's handoff survives, and how long `ken forget` takes
while another process keeps a read transaction open.

Every hook runs as the installed `ken hook` in its own process (no hook server), as an
agent runs it, against a fresh store in a temp folder. The lock is a real
`BEGIN IMMEDIATE` held by a child process; the reader a real open read transaction.
Each hook is stopped at the timeout `ken integrate` installs for it, as the agent would.

Run: `python bench/locked_bench.py`. Prints one JSON object.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from common import progress  # noqa: E402
from kenning.integrate import TIMEOUT_SECONDS  # noqa: E402

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


def env_for(folder: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "CODEX", "KEN_"))}
    env.update(
        HOME=str(folder / "home"),
        XDG_CONFIG_HOME=str(folder / "config"),
        XDG_STATE_HOME=str(folder / "state"),
        XDG_DATA_HOME=str(folder / "data"),
        KEN_DB=str(folder / "memory.db"),
        KEN_HOOK_SERVER="0",
    )
    return env


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
    limit = TIMEOUT_SECONDS[event]
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


def main() -> None:
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        env = env_for(folder)
        repo = folder / "shop"
        repo.mkdir()
        for args in (
            ["init", "-q", "-b", "main"],
            ["remote", "add", "origin", "git@github.com:acme/shop.git"],
        ):
            subprocess.run(["git", *args], cwd=repo, check=True, env=env)
        ken(
            env, repo, "add", "Checkout totals are rounded with bankers rounding", "--scope", "repo"
        )
        base = {"session_id": "bench-1", "cwd": str(repo), "transcript_path": ""}
        hook(
            "SessionStart",
            {**base, "hook_event_name": "SessionStart", "source": "startup"},
            env,
            repo,
        )
        hook(
            "UserPromptSubmit",
            {
                **base,
                "hook_event_name": "UserPromptSubmit",
                "prompt": "why are checkout totals rounded like that",
            },
            env,
            repo,
        )
        db = folder / "memory.db"

        progress("hooks while another process holds the write lock")
        with held(db, "BEGIN IMMEDIATE", env):
            results["locked"] = {
                "SessionStart": hook(
                    "SessionStart",
                    {
                        **base,
                        "session_id": "bench-2",
                        "hook_event_name": "SessionStart",
                        "source": "startup",
                    },
                    env,
                    repo,
                ),
                "UserPromptSubmit": hook(
                    "UserPromptSubmit",
                    {
                        **base,
                        "hook_event_name": "UserPromptSubmit",
                        "prompt": "how are checkout totals rounded",
                    },
                    env,
                    repo,
                ),
                "SessionEnd": hook(
                    "SessionEnd",
                    {**base, "hook_event_name": "SessionEnd", "reason": "exit"},
                    env,
                    repo,
                ),
            }
        _, listed = ken(env, repo, "list", "--all", "--kind", "handoff", "--json")
        results["handoff_after_release_and_a_ken_call"] = "bench-1" in listed

        progress("ken forget while another process keeps a read transaction open")
        _, out = ken(env, repo, "add", "Forget me: the staging password hint")
        short = out.strip().splitlines()[0]
        with held(db, "BEGIN", env):
            seconds, said = ken(env, repo, "forget", short, "--yes", timeout=FORGET_LIMIT)
        results["forget_with_a_reader"] = {"seconds": round(seconds, 2), "said": said.strip()}
        log = folder / "state" / "kenning" / "log"
        results["hook_log"] = log.read_text().splitlines() if log.exists() else []
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
