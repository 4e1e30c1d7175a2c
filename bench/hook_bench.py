"""The hook path at 100,000 items: whole-process wall time of `ken hook
UserPromptSubmit`, side by side with `python -c "import sqlite3, json"` (alternating,
median of the pairs), and recall and pack latency in process.

Targets: hook/python ratio at most 1.25; recall p95 at most 20 ms; pack p95 at most
30 ms. Run: `python bench/hook_bench.py [--items 100000] [--pairs 15] [--quick]`.
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
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import corpus  # noqa: E402
from common import percentile, progress  # noqa: E402
from kenning import transfer  # noqa: E402
from kenning.config import Config  # noqa: E402
from kenning.deliver import pack_for, recall_for  # noqa: E402
from kenning.locate import here  # noqa: E402
from kenning.model import Status  # noqa: E402
from kenning.store import open_store  # noqa: E402

KEN = Path(sys.executable).with_name("ken")
PROMPTS = [
    "the checkout webhook retries keep timing out against postgres, can you look?",
    "why does the pnpm lockfile change every time I run the install on CI",
    "add a migration for the billing invoices table and update the alembic env",
    "staging deploys fail with a kubectl rollout timeout after the helm upgrade",
    "make the flaky playwright login test stable, it fails on the token refresh",
    "refactor the search index loader so it stops reading the whole fixture file",
]


def build(folder: Path, size: int) -> Path:
    db = folder / "memory.db"
    progress(f"building a store of {size:,} active items")
    checked = [replace(i, status=Status.ACTIVE) for i in transfer.read_items(corpus.memories(size))]
    store = open_store(db)
    try:
        store.insert_many(checked, change="add")
    finally:
        store.close()
    return db


def git_repo(folder: Path) -> Path:
    repo = folder / "shop"
    repo.mkdir()
    for args in (
        ["init", "-q", "-b", "main"],
        ["remote", "add", "origin", "git@github.com:acme/shop.git"],
    ):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    return repo


def timed(cmd: list[str], env: dict[str, str], stdin: bytes, cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run(cmd, input=stdin, env=env, cwd=cwd, capture_output=True, check=True)
    return time.perf_counter() - started


def hook_pairs(db: Path, repo: Path, pairs: int, server: bool) -> dict[str, Any]:
    """Alternate `ken hook` and bare Python; with `server`, through a warm hook server."""
    env = {
        **os.environ,
        "KEN_DB": str(db),
        "HOME": str(repo.parent / "home"),
        "XDG_STATE_HOME": str(repo.parent / "state"),
        "KEN_HOOK_SERVER": "1" if server else "0",
    }
    cmd = [str(KEN), "hook", "UserPromptSubmit", "--agent", "claude"]

    def payload(n: int) -> bytes:
        return json.dumps(
            {
                "session_id": f"bench-{server}-{n}",  # a new session: nothing told yet
                "cwd": str(repo),
                "hook_event_name": "UserPromptSubmit",
                "prompt": PROMPTS[n % len(PROMPTS)],
            }
        ).encode()

    if server:  # the first hook starts the server; later ones find it warm
        subprocess.run(cmd, input=payload(0), env=env, cwd=repo, capture_output=True)
        deadline = time.monotonic() + 20
        sock = repo.parent / "state" / "kenning" / "hooks.sock"
        while not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    hook: list[float] = []
    base: list[float] = []
    outputs = 0
    for n in range(pairs):
        started = time.perf_counter()
        done = subprocess.run(cmd, input=payload(n), env=env, cwd=repo, capture_output=True)
        hook.append(time.perf_counter() - started)
        outputs += bool(done.stdout.strip())
        base.append(timed([sys.executable, "-c", "import sqlite3, json"], env, b"", repo))
    if server:
        subprocess.run([str(KEN), "hook", "--stop-server"], env=env, capture_output=True)
    ratios = [h / b for h, b in zip(hook, base, strict=True)]
    return {
        "pairs": pairs,
        "hook_median_ms": round(statistics.median(hook) * 1000, 1),
        "python_median_ms": round(statistics.median(base) * 1000, 1),
        "ratio_median": round(statistics.median(ratios), 2),
        "prompts_with_recall": outputs,
    }


def in_process(db: Path, repo: Path, rounds: int) -> dict[str, Any]:
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
    parser.add_argument("--quick", action="store_true", help="1,000 items, 5 pairs")
    args = parser.parse_args(argv)
    if args.quick:
        args.items, args.pairs, args.rounds = 1000, 5, 12
    with tempfile.TemporaryDirectory(prefix="ken-hook-bench-") as tmp:
        folder = Path(tmp)
        db = build(folder, args.items)
        repo = git_repo(folder)
        progress("timing in process")
        result = {"items": args.items, **in_process(db, repo, args.rounds)}
        progress(f"timing {args.pairs} pairs of processes, with and without the hook server")
        result["warm"] = hook_pairs(db, repo, args.pairs, server=True)
        result["cold"] = hook_pairs(db, repo, args.pairs, server=False)
    result["date"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    targets = {"ratio_median": 1.25, "recall_p95_ms": 20.0, "pack_p95_ms": 30.0}
    print(f"\n| hook path at {args.items:,} items | figure | target |\n|---|---|---|")
    for mode, label in (("warm", "with the hook server"), ("cold", "each hook its own process")):
        r = result[mode]
        print(
            f"| `ken hook UserPromptSubmit` / `python -c 'import sqlite3, json'`, {label} "
            f"(median of {r['pairs']} pairs) | {r['ratio_median']}x ({r['hook_median_ms']} "
            f"vs {r['python_median_ms']} ms) | <= 1.25x |"
        )
    print(
        f"| recall p50 / p95, in process | {result['recall_p50_ms']} / "
        f"{result['recall_p95_ms']} ms | p95 <= 20 ms |"
    )
    print(
        f"| pack p50 / p95, in process | {result['pack_p50_ms']} / "
        f"{result['pack_p95_ms']} ms | p95 <= 30 ms |"
    )
    result["targets"] = targets
    if not args.quick:
        Path(__file__).with_name("hook_results.json").write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
