"""`ken panel` at scale: opening, scrolling and `/` search over 100,000 memories.

    python bench/panel_bench.py              # 100,000 memories
    python bench/panel_bench.py --quick      # 5,000, to iterate

A fresh store in a temp folder (never yours): the corpus `bench/run.py` imports, one in
twenty left waiting, the rest approved. Then, each figure beside its baseline from the
same run, since the machine is shared and noisy:

- **opening**: a process that opens the panel (headless, 80x24) and waits for the first
  screen of the All tab, beside `ken list` printing its first 50 (both from process start);
  and inside one process, the app's start to the first screen shown;
- **scrolling**: Page Down, five times, then End (the 100,000th memory), each until every
  row on screen is read;
- **search**: `/` and a query, then from Enter until the hits are listed (best first, at most
  `browse.SEARCH_LIMIT`), beside `kenning.items.search` for the same query (what `ken
  search` runs, 20 hits);
- **textual's import cost**: `import textual.app` beside `import kenning.cli` and a bare
  interpreter (why textual is an extra).

Prints a Markdown table and writes bench/panel_results.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import corpus
from common import env_for, percentile, progress
from kenning import items, locate, policy, transfer
from kenning.config import Config
from kenning.store import open_store

HERE = Path(__file__).resolve().parent
KEN = Path(sys.executable).with_name("ken")
QUERIES = ["deploy", "staging migrations", "pnpm lockfile", "flaky retry", "webhook timeout"]
RUNS = 7  # process starts per figure (the median is reported)

OPEN_PANEL = """
import asyncio, sys, time
from kenning import locate, policy
from kenning.config import Config
from kenning.store import open_store
from kenning.tui.panel import PanelApp

async def main():
    store = open_store()
    app = PanelApp(store, Config(), locate.here(store, Config()), policy.PERSON, tab="all")
    async with app.run_test(size=(80, 24)) as pilot:
        while not (app.rows.total and app.rows.loaded and app.rows.current):
            await pilot.pause(0.002)
    store.close()

asyncio.run(main())
"""


def build(size: int, db: Path) -> None:
    progress(f"{size:,} memories: generating and importing", "panel")
    checked = transfer.read_items(corpus.memories(size))
    store = open_store(db)
    try:
        transfer.import_items(store, checked)
        # Imports arrive as proposals; a lived-in store is mostly approved, a few wait.
        store.conn.execute("UPDATE items SET status = 'active' WHERE rowid % 20 != 0")
        store.checkpoint()
    finally:
        store.close()


def process_ms(args: list[str], env: dict[str, str], cwd: Path) -> float:
    """The median wall time of running `args` to its end, RUNS times."""
    times = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        done = subprocess.run(
            args, env=env, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
            timeout=300,
        )  # fmt: skip
        if done.returncode:
            raise SystemExit(f"{' '.join(args)[:80]} failed:\n{done.stderr[-2000:]}")
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


async def drive(db: Path) -> dict[str, Any]:
    """The in-process figures: open, scroll, search, each until the screen is read."""
    from kenning.tui.panel import PanelApp

    store = open_store(db)
    config = Config()
    app = PanelApp(store, config, locate.here(store, config), policy.PERSON, tab="all")
    app.animation_level = "none"

    async def shown(pilot: Any, search: bool = False) -> None:
        deadline = time.monotonic() + 60
        while True:
            if time.monotonic() > deadline:
                raise SystemExit(f"the panel never showed its rows: {app.status_line!r}")
            await pilot.pause(0.002)
            rows = app.rows
            busy = any(w.is_running for w in app.workers)
            done = not search or app.status_line.startswith('"')
            if rows.loaded and not rows.pending and not busy and done:
                return

    async def press(pilot: Any, *keys: str) -> None:
        from textual import events

        for key in keys:
            char = {"slash": "/", "enter": "\r", "escape": "\x1b", "space": " "}.get(key, key)
            await app._post_message(events.Key(key, char if len(char) == 1 else None))
            await pilot.pause(0)  # the key is handled (a focus moved) before the next

    out: dict[str, Any] = {}
    t0 = time.perf_counter()
    async with app.run_test(size=(80, 24)) as pilot:
        await shown(pilot)
        out["open_ms"] = (time.perf_counter() - t0) * 1000
        out["rows"] = app.rows.total
        downs = []
        for _ in range(5):
            t0 = time.perf_counter()
            await press(pilot, "pagedown")
            await shown(pilot)
            downs.append((time.perf_counter() - t0) * 1000)
        out["pagedown_ms"] = downs
        t0 = time.perf_counter()
        await press(pilot, "end")
        await shown(pilot)
        out["end_ms"] = (time.perf_counter() - t0) * 1000
        assert app.rows.cursor == app.rows.total - 1
        searches, library = [], []
        for query in QUERIES:
            await press(pilot, "slash", *("space" if c == " " else c for c in query))
            await pilot.pause(0.05)
            t0 = time.perf_counter()  # from Enter to the hits on screen
            await press(pilot, "enter")
            await shown(pilot, search=True)
            searches.append((time.perf_counter() - t0) * 1000)
            with app.store_lock:
                t0 = time.perf_counter()
                items.search(store, query)
                library.append((time.perf_counter() - t0) * 1000)
            await press(pilot, "escape")
            await shown(pilot)
        out["search_ms"] = searches
        out["library_search_ms"] = library
    store.close()
    return out


def import_ms(statement: str) -> float:
    return process_ms([sys.executable, "-c", statement], dict(os.environ), HERE)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="5,000 memories")
    parser.add_argument("--size", type=int, default=100_000)
    args = parser.parse_args(argv)
    size = 5_000 if args.quick else args.size
    with tempfile.TemporaryDirectory(prefix="ken-panel-bench-") as tmp:
        folder = Path(tmp)
        env = env_for(folder)
        db = Path(env["KEN_DB"])
        build(size, db)
        os.environ.update(env)  # the in-process panel opens this store and config
        progress("opening: `ken list` and the panel, each from process start", "panel")
        list_ms = process_ms([str(KEN), "list", "--all"], env, folder)
        panel_ms = process_ms([sys.executable, "-c", OPEN_PANEL], env, folder)
        progress("driving the panel: open, Page Down x5, End, / search x5", "panel")
        inside = asyncio.run(drive(db))
        progress("import costs", "panel")
        bare = import_ms("pass")
        textual = import_ms("import textual.app")
        cli = import_ms("import kenning.cli")
        both = import_ms("import kenning.cli, textual.app")
    search = inside["search_ms"]
    library = inside["library_search_ms"]
    result = {
        "when": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": {
            "python": platform.python_version(),
            "sqlite": sqlite3.sqlite_version,
            "cpus": os.cpu_count(),
            "load": round(os.getloadavg()[0], 2),
        },
        "memories": size,
        "open_process_ms": round(panel_ms, 1),
        "ken_list_process_ms": round(list_ms, 1),
        "open_ratio": round(panel_ms / list_ms, 2),
        "open_in_process_ms": round(inside["open_ms"], 1),
        "pagedown_ms": [round(x, 1) for x in inside["pagedown_ms"]],
        "pagedown_max_ms": round(max(inside["pagedown_ms"]), 1),
        "end_ms": round(inside["end_ms"], 1),
        "search_ms": [round(x, 1) for x in search],
        "search_p50_ms": round(statistics.median(search), 1),
        "search_max_ms": round(percentile(search, 100), 1),
        "library_search_p50_ms": round(statistics.median(library), 1),
        "import_textual_ms": round(textual - bare, 1),
        "import_kenning_cli_ms": round(cli - bare, 1),
        "import_textual_after_cli_ms": round(both - cli, 1),
        "python_start_ms": round(bare, 1),
    }
    (HERE / "panel_results.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    print(
        f"| `ken panel` at {size:,} memories: first screen from process start vs `ken list "
        f"--all` (50 rows) | {result['open_ratio']}x ({panel_ms:,.0f} vs {list_ms:,.0f} ms) |\n"
        f"| the same in process; Page Down (worst of 5); End | {result['open_in_process_ms']} "
        f"/ {result['pagedown_max_ms']} / {result['end_ms']} ms |\n"
        f"| `/` search to hits listed, p50 (the library search alone) | "
        f"{result['search_p50_ms']} ms ({result['library_search_p50_ms']} ms) |\n"
        f"| import textual.app / kenning.cli (beyond Python's start); textual after the CLI | "
        f"{result['import_textual_ms']} / {result['import_kenning_cli_ms']}; "
        f"{result['import_textual_after_cli_ms']} ms |"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
