"""The hook path at 100,000 memories, as Claude Code calls it: whole-process wall time of
`ken hook UserPromptSubmit` and `ken hook SessionStart`, as run by the command that `ken
integrate claude` writes into Claude Code's settings, each side by side with
`python -c "import sqlite3, json"` (one hook, then one bare Python, alternating; the
ratio of each pair, median of the pairs), with a warm hook server and with none
(`KEN_HOOK_SERVER=0`, each hook its own process); and recall and pack latency in process.

Every hook is a new session (nothing told yet) with a 60 KB transcript in Claude Code's
JSONL format (user prompts, assistant text and tool calls, tool results, attachments).
`--against SRC` times another checkout's kenning (its `src` folder, e.g. a git worktree
of an older commit) in the same run, its pairs interleaved with this one's, each with
its own copy of the store, its own state folder and its own server.

Targets (issue 12.7): warm <= 1.1x and cold <= 2.0x of the bare Python, for
UserPromptSubmit at 100,000 memories. Run:
`python bench/hook_bench.py [--items 100000] [--pairs 15] [--against ../base/src] [--quick]`.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import stores  # noqa: E402
from common import env_for, percentile, progress, shop_repo  # noqa: E402

KEN = Path(sys.executable).with_name("ken")
PYTHON = [sys.executable, "-c", "import sqlite3, json"]
TRANSCRIPT_BYTES = 60 * 1024
EVENTS = ("UserPromptSubmit", "SessionStart")
WARM_TARGET, COLD_TARGET = 1.1, 2.0
# Memories that fit the prompts below, one each, in the repo the hooks run in: the
# synthetic memories share words with the prompts but none passes recall's gates, so
# without these every recall would be one that finds nothing to tell.
FITTING = [
    "Checkout webhook retries: the postgres statement timeout is 5 s, raise it per query",
    "The pnpm lockfile changes on CI unless the install runs with --frozen-lockfile",
    "Billing migrations go through alembic; the env.py reads the invoices schema",
    "Staging kubectl rollout timeouts after a helm upgrade: the readiness probe is slow",
    "The playwright login test is flaky on token refresh: wait for the refresh request",
    "The search index loader reads the fixture file in chunks, never the whole file",
]
PROMPTS = [
    "the checkout webhook retries keep timing out against postgres, can you look?",
    "why does the pnpm lockfile change every time I run the install on CI",
    "add a migration for the billing invoices table and update the alembic env",
    "staging deploys fail with a kubectl rollout timeout after the helm upgrade",
    "make the flaky playwright login test stable, it fails on the token refresh",
    "refactor the search index loader so it stops reading the whole fixture file",
]


def transcript(path: Path, session: str, cwd: str) -> None:
    """About TRANSCRIPT_BYTES of a Claude Code session: turns of a prompt, the agent's
    thinking, text and a tool call, the tool's result and a hook attachment."""
    lines: list[str] = []
    size = n = 0
    parent: str | None = None

    def add(record: dict[str, Any]) -> None:
        nonlocal size, parent
        record.setdefault("uuid", str(uuid.uuid4()))
        record.update(sessionId=session, cwd=cwd, timestamp="2026-12-01T10:00:00.000Z")
        record["parentUuid"] = parent
        parent = record["uuid"]
        line = json.dumps(record, separators=(",", ":"))
        lines.append(line)
        size += len(line) + 1

    while size < TRANSCRIPT_BYTES:
        prompt = PROMPTS[n % len(PROMPTS)]
        add(
            {
                "type": "user",
                "isSidechain": False,
                "userType": "external",
                "message": {"role": "user", "content": prompt},
                "permissionMode": "default",
            }
        )
        add(
            {
                "type": "assistant",
                "isSidechain": False,
                "requestId": f"req_{n}",
                "message": {
                    "id": f"msg_{n}",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-opus-4-5",
                    "content": [
                        {
                            "type": "thinking",
                            "thinking": f"Look at the code for {prompt}",
                            "signature": "c2lnbmF0dXJl" * 8,
                        },
                        {"type": "text", "text": f"Let me look into it: {prompt}."},
                        {
                            "type": "tool_use",
                            "id": f"toolu_{n}",
                            "name": "Bash",
                            "input": {"command": "grep -rn retry src/ | head -50"},
                        },
                    ],
                    "stop_reason": "tool_use",
                    "usage": {"input_tokens": 1200, "output_tokens": 300},
                },
            }
        )
        result = "\n".join(
            f"src/app/module_{k}.py:{k * 7}: retry = Retry(total=3)" for k in range(12)
        )
        add(
            {
                "type": "user",
                "isSidechain": False,
                "message": {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": result}
                    ],
                },
                "toolUseResult": {"stdout": result, "stderr": "", "interrupted": False},
            }
        )
        add(
            {
                "type": "attachment",
                "isSidechain": False,
                "attachment": {
                    "type": "hook_success",
                    "hookName": "PostToolUse:Bash",
                    "hookEvent": "PostToolUse",
                    "content": "",
                    "stdout": "",
                    "stderr": "",
                    "exitCode": 0,
                },
            }
        )
        n += 1
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


class Setup:
    """One kenning under test: its code (None: this checkout), store copy, folders."""

    def __init__(self, name: str, src: str | None, folder: Path, items: int) -> None:
        self.name = name
        self.folder = folder
        folder.mkdir(parents=True)
        self.db = stores.scratch_copy(items, folder)
        seed = "from kenning import items; from kenning.store import open_store\n"
        seed += "s = open_store(sys.argv[1])\nfor text in sys.argv[2:]:\n"
        seed += "    items.add(s, text, scope=items.parse_scope('repo:github.com/acme/shop'))\n"
        seed += "s.close()\n"
        env = {**os.environ, **({"PYTHONPATH": src} if src else {})}
        subprocess.run(
            [sys.executable, "-c", "import sys\n" + seed, str(self.db), *FITTING],
            env=env,
            check=True,
            capture_output=True,
        )
        self.repo = shop_repo(folder)
        self.env = env_for(folder)
        if src:
            self.env["PYTHONPATH"] = src
        # An installed kenning has its modules compiled (pip compiles a wheel's); a
        # checkout run with PYTHONDONTWRITEBYTECODE=1 would compile them on every hook.
        code = [sys.executable, "-c", "import kenning, sys; print(kenning.__path__[0])"]
        package = subprocess.run(code, env=self.env, capture_output=True, text=True, check=True)
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", package.stdout.strip()],
            env=self.env,
            capture_output=True,
            check=True,
        )
        # The command `ken integrate` writes into Claude Code's settings, as that code
        # writes it: what Claude Code runs on each hook.
        code = "import json; from kenning.integrate import hook_command as c\n"
        code += "print(json.dumps({e: c('claude', e) for e in sys.argv[1:]}))"
        done = subprocess.run(
            [sys.executable, "-c", "import sys\n" + code, *EVENTS],
            env=self.env,
            capture_output=True,
            text=True,
            check=True,
        )
        self.commands = {e: shlex.split(c) for e, c in json.loads(done.stdout).items()}
        self.count = 0

    def payload(self, event: str) -> bytes:
        self.count += 1
        session = str(uuid.uuid4())  # a new session: nothing told yet
        path = self.folder / "transcripts" / f"{session}.jsonl"
        path.parent.mkdir(exist_ok=True)
        transcript(path, session, str(self.repo))
        data: dict[str, Any] = {
            "session_id": session,
            "transcript_path": str(path),
            "cwd": str(self.repo),
            "hook_event_name": event,
        }
        if event == "UserPromptSubmit":
            data |= {
                "prompt_id": str(uuid.uuid4()),
                "permission_mode": "default",
                "prompt": PROMPTS[self.count % len(PROMPTS)],
            }
        else:
            data["source"] = "startup"
        return json.dumps(data).encode()

    def hook(self, event: str, server: bool) -> tuple[float, bool]:
        env = {**self.env, "KEN_HOOK_SERVER": "1" if server else "0"}
        stdin = self.payload(event)
        started = time.perf_counter()
        done = subprocess.run(
            self.commands[event],
            input=stdin,
            env=env,
            cwd=self.repo,
            capture_output=True,
        )
        return time.perf_counter() - started, bool(done.stdout.strip())

    def start_server(self) -> None:
        self.hook("UserPromptSubmit", server=True)  # the first hook starts it
        socks = (self.folder / "state" / "kenning").glob
        deadline = time.monotonic() + 30
        while not any(socks("hooks-*.sock")) and time.monotonic() < deadline:
            time.sleep(0.05)
        for _ in range(3):  # its first answers warm its caches
            self.hook("UserPromptSubmit", server=True)

    def stop_server(self) -> None:
        env = {**self.env, "KEN_HOOK_SERVER": "1"}
        subprocess.run([str(KEN), "hook", "--stop-server"], env=env, capture_output=True)


def python_once(env: dict[str, str], cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run(PYTHON, env=env, cwd=cwd, capture_output=True, check=True)
    return time.perf_counter() - started


def pairs(setups: list[Setup], event: str, server: bool, count: int) -> dict[str, Any]:
    """For each setup, `count` pairs (its hook, then bare Python), the setups' pairs
    interleaved so that every one sees the same machine."""
    if server:
        for s in setups:
            s.start_server()
    times: dict[str, dict[str, list[float]]] = {s.name: {"hook": [], "python": []} for s in setups}
    told = dict.fromkeys(times, 0)
    for _ in range(count):
        for s in setups:
            took, out = s.hook(event, server)
            times[s.name]["hook"].append(took)
            told[s.name] += out
            times[s.name]["python"].append(python_once(s.env, s.repo))
    if server:
        for s in setups:
            s.stop_server()
    out: dict[str, Any] = {}
    for name, t in times.items():
        ratios = [h / b for h, b in zip(t["hook"], t["python"], strict=True)]
        out[name] = {
            "pairs": count,
            "hook_median_ms": round(statistics.median(t["hook"]) * 1000, 1),
            "python_median_ms": round(statistics.median(t["python"]) * 1000, 1),
            "ratio_median": round(statistics.median(ratios), 2),
            "answers_with_text": told[name],
        }
    return out


def in_process(db: Path, repo: Path, rounds: int) -> dict[str, Any]:
    from kenning.config import Config
    from kenning.deliver import pack_for, recall_for
    from kenning.locate import here
    from kenning.store import open_store

    store = open_store(db)
    config = Config(file={})
    where = here(store, config, repo, agent="claude")
    try:
        recall_ms, pack_ms = [], []
        for n in range(rounds):
            prompt = PROMPTS[n % len(PROMPTS)]
            started = time.perf_counter()
            recall_for(store, config, where, prompt, record=False)
            recall_ms.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            pack_for(store, config, where, record=False)
            pack_ms.append((time.perf_counter() - started) * 1000)
    finally:
        store.close()
    return {
        "recall_p50_ms": round(percentile(recall_ms, 50), 2),
        "recall_p95_ms": round(percentile(recall_ms, 95), 2),
        "pack_p50_ms": round(percentile(pack_ms, 50), 2),
        "pack_p95_ms": round(percentile(pack_ms, 95), 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--pairs", type=int, default=15)
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--against", help="another checkout's src folder, timed alongside")
    parser.add_argument("--quick", action="store_true", help="1,000 items, 5 pairs")
    args = parser.parse_args(argv)
    if args.quick:
        args.items, args.pairs, args.rounds = 1000, 5, 12
    load = round(os.getloadavg()[0], 2)
    with tempfile.TemporaryDirectory(prefix="ken-hook-bench-", dir="/dev/shm") as tmp:
        folder = Path(tmp)
        setups = [Setup("this", None, folder / "this", args.items)]
        if args.against:
            setups.append(Setup("against", args.against, folder / "against", args.items))
        progress("timing recall and pack in process")
        result: dict[str, Any] = {"items": args.items, "load_before": load}
        result |= in_process(setups[0].db, setups[0].repo, args.rounds)
        for event in ("UserPromptSubmit", "SessionStart"):
            for server, mode in ((True, "warm"), (False, "cold")):
                progress(f"{event}, {mode}: {args.pairs} pairs per kenning")
                result[f"{event} {mode}"] = pairs(setups, event, server, args.pairs)
    result["load_after"] = round(os.getloadavg()[0], 2)
    result["date"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    result["against"] = args.against
    result["targets"] = {"UserPromptSubmit warm": WARM_TARGET, "UserPromptSubmit cold": COLD_TARGET}
    print(
        f"\n| hook path at {args.items:,} memories (load {load}) | this | "
        f"{'against ' + args.against + ' | ' if args.against else ''}target |"
    )
    print("|---|---|" + ("---|" if args.against else "") + "---|")
    for event in ("UserPromptSubmit", "SessionStart"):
        for mode, label in (("warm", "hook server"), ("cold", "own process")):
            row = result[f"{event} {mode}"]
            cells = [
                f"{r['ratio_median']}x ({r['hook_median_ms']} vs {r['python_median_ms']} ms; "
                f"{r['answers_with_text']}/{r['pairs']} told something)"
                for r in row.values()
            ]
            target = {"warm": WARM_TARGET, "cold": COLD_TARGET}[mode]
            print(
                f"| `ken hook {event}` / bare Python, {label} | {' | '.join(cells)} | "
                f"{f'<= {target}x' if event == 'UserPromptSubmit' else '-'} |"
            )
    print(
        f"| recall p50 / p95, in process | {result['recall_p50_ms']} / "
        f"{result['recall_p95_ms']} ms | "
    )
    print(f"| pack p50 / p95, in process | {result['pack_p50_ms']} / {result['pack_p95_ms']} ms |")
    if not args.quick:
        Path(__file__).with_name("hook_results.json").write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
