"""What the run-lessons hooks add to a tool call: whole-process wall time of `ken hook
PostToolUse` with `memory.lessons = "ask"` (the call is noted: one session read, one
upsert, a signal row for every fifth call, which fails) side by side with the same hook
under `memory.lessons = "off"` (the same hook path without the new work) and with
`python -c "import sqlite3, json"`, alternating, median of the triples; with a warm hook
server and with each hook its own process. Also the Stop hook that asks.

Run: `python bench/lessons_bench.py [--items 1000] [--rounds 15] [--quick]`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import stores  # noqa: E402
from common import progress, shop_repo  # noqa: E402

KEN = Path(sys.executable).with_name("ken")
SESSION = "bench-lessons"


def build(folder: Path, items: int) -> Path:
    """A copy of the bench's store of `items` memories in `folder`."""
    return stores.scratch_copy(items, folder)


def timed(cmd: list[str], env: dict[str, str], stdin: bytes, cwd: Path) -> float:
    """Seconds `cmd` takes as a whole process, `stdin` given."""
    started = time.perf_counter()
    subprocess.run(cmd, input=stdin, env=env, cwd=cwd, capture_output=True, check=False)
    return time.perf_counter() - started


def envs(folder: Path, db: Path, server: bool) -> dict[str, dict[str, str]]:
    """One environment per setting; both share the store and the hook server."""
    found = {}
    for mode in ("ask", "off"):
        config = folder / f"config-{mode}"
        (config / "kenning").mkdir(parents=True, exist_ok=True)
        (config / "kenning" / "config.toml").write_text(f'[memory]\nlessons = "{mode}"\n')
        found[mode] = {
            **os.environ,
            "KEN_DB": str(db),
            "HOME": str(folder / "home"),
            "XDG_STATE_HOME": str(folder / "state"),
            "XDG_CONFIG_HOME": str(config),
            "KEN_HOOK_SERVER": "1" if server else "0",
        }
    return found


def hook(event: str, data: dict[str, Any], env: dict[str, str], repo: Path) -> float:
    cmd = [str(KEN), "hook", event, "--agent", "claude"]
    return timed(cmd, env, json.dumps(data).encode(), repo)


def tool_payload(repo: Path, n: int) -> tuple[str, dict[str, Any]]:
    failed = n % 5 == 4
    data: dict[str, Any] = {
        "session_id": SESSION,
        "cwd": str(repo),
        "hook_event_name": "PostToolUseFailure" if failed else "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": f"make test-{n}", "description": "run the tests"},
        "tool_use_id": f"toolu_{n}",
    }
    if failed:
        data["error"] = "Exit code 2"
    else:
        data["tool_response"] = {"stdout": "ok", "stderr": "", "interrupted": False}
    return str(data["hook_event_name"]), data


def triples(folder: Path, db: Path, repo: Path, rounds: int, server: bool) -> dict[str, Any]:
    by_mode = envs(folder, db, server)
    start = {"session_id": SESSION, "cwd": str(repo), "hook_event_name": "SessionStart"}
    hook("SessionStart", {**start, "source": "startup"}, by_mode["ask"], repo)
    if server:  # the first hook started the server; wait until it listens
        deadline = time.monotonic() + 20
        socks = (folder / "state" / "kenning").glob
        while not any(socks("hooks-*.sock")) and time.monotonic() < deadline:
            time.sleep(0.05)
    ask: list[float] = []
    off: list[float] = []
    base: list[float] = []
    for n in range(rounds):
        event, data = tool_payload(repo, n)
        ask.append(hook(event, data, by_mode["ask"], repo))
        off.append(hook(event, data, by_mode["off"], repo))
        base.append(
            timed([sys.executable, "-c", "import sqlite3, json"], by_mode["off"], b"", repo)
        )
    prompt = {**start, "hook_event_name": "UserPromptSubmit", "prompt": "No, use pnpm here."}
    hook("UserPromptSubmit", prompt, by_mode["ask"], repo)
    stop = {**start, "hook_event_name": "Stop", "stop_hook_active": False}
    stop_ms = hook("Stop", stop, by_mode["ask"], repo) * 1000
    if server:
        subprocess.run([str(KEN), "hook", "--stop-server"], env=by_mode["ask"], capture_output=True)
    return {
        "rounds": rounds,
        "lessons_ask_median_ms": round(statistics.median(ask) * 1000, 1),
        "lessons_off_median_ms": round(statistics.median(off) * 1000, 1),
        "python_median_ms": round(statistics.median(base) * 1000, 1),
        "ask_vs_off": round(statistics.median(a / o for a, o in zip(ask, off, strict=True)), 2),
        "ask_vs_python": round(statistics.median(a / b for a, b in zip(ask, base, strict=True)), 2),
        "stop_that_asks_ms": round(stop_ms, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="5 rounds")
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds = 5
    result: dict[str, Any] = {"items": args.items}
    for server, label in ((True, "warm"), (False, "cold")):
        with tempfile.TemporaryDirectory(prefix="ken-lessons-bench-") as tmp:
            folder = Path(tmp)
            db = build(folder, args.items)
            repo = shop_repo(folder)
            progress(f"timing {args.rounds} tool calls, {label}")
            result[label] = triples(folder, db, repo, args.rounds, server)
    result["date"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print("\n| a tool call's hook | lessons ask | lessons off | python | ask/off | ask/python |")
    print("|---|---|---|---|---|---|")
    for label, text in (("warm", "warm hook server"), ("cold", "each hook its own process")):
        r = result[label]
        print(
            f"| `ken hook PostToolUse`, {text} (median of {r['rounds']}) | "
            f"{r['lessons_ask_median_ms']} ms | {r['lessons_off_median_ms']} ms | "
            f"{r['python_median_ms']} ms | {r['ask_vs_off']}x | {r['ask_vs_python']}x |"
        )
    print(
        f"| the Stop hook that asks: warm {result['warm']['stop_that_asks_ms']} ms, "
        f"cold {result['cold']['stop_that_asks_ms']} ms | | | | | |"
    )
    if not args.quick:
        Path(__file__).with_name("lessons_results.json").write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
