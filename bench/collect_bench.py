"""What collection adds to a session's start: `ken hook SessionStart` with 50 Claude Code
project folders of saved memories (3 files each), collection on against off.

Each run is the installed `ken hook SessionStart` in its own process (no hook server),
as an agent runs it cold, with a new session each time, in a temp HOME and store. The
first collection (which reads every folder) is done before timing: what is timed is the
steady state, where SessionStart looks at every folder's files and reads none. The two
settings alternate in pairs, so the machine's noise falls on both; the figure is the
ratio of the medians. The library's scan alone (`collect(changed_only=True)`) is timed
in this process too.

Run: `python bench/collect_bench.py`. Prints one JSON object and writes it to
`bench/collect_results.json`.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from common import percentile, progress  # noqa: E402

KEN = Path(sys.executable).with_name("ken")
FOLDERS = 50
PAIRS = 15
MEMORY = (
    "---\nname: note-{n}-{i}\ndescription: Saved note {i} of checkout {n}\n"
    "type: project\n---\nBody {i}.\n"
)


def _environment(root: Path, collect: bool) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(root / "home"),
        "XDG_CONFIG_HOME": str(root / ("config-on" if collect else "config-off")),
        "XDG_DATA_HOME": str(root / "data"),
        "XDG_STATE_HOME": str(root / "state"),
        "XDG_CACHE_HOME": str(root / "cache"),
        "KEN_DB": str(root / "memory.db"),
        "KEN_HOOK_SERVER": "0",
    }
    config = Path(env["XDG_CONFIG_HOME"]) / "kenning"
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text(f"[memory]\ncollect = {'true' if collect else 'false'}\n")
    return env


def _folders(root: Path) -> None:
    projects = root / "home" / ".claude" / "projects"
    for n in range(FOLDERS):
        memory = projects / f"-srv-checkout-{n}" / "memory"
        memory.mkdir(parents=True)
        for i in range(3):
            (memory / f"note_{i}.md").write_text(MEMORY.format(n=n, i=i))


def _hook(env: dict[str, str], cwd: Path) -> float:
    payload = {
        "session_id": str(uuid.uuid4()),
        "hook_event_name": "SessionStart",
        "source": "startup",
        "cwd": str(cwd),
        "transcript_path": str(cwd / "t.jsonl"),
    }
    start = time.perf_counter()
    subprocess.run(
        [str(KEN), "hook", "SessionStart", "--agent", "claude"],
        input=json.dumps(payload).encode(),
        env=env,
        capture_output=True,
        check=True,
        timeout=60,
    )
    return time.perf_counter() - start


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _folders(root)
        work = root / "work"
        work.mkdir()
        on, off = _environment(root, True), _environment(root, False)
        progress(f"first collection of {FOLDERS} folders")
        first = _hook(on, work)
        times: dict[str, list[float]] = {"on": [], "off": []}
        for n in range(PAIRS):
            progress(f"pair {n + 1}/{PAIRS}", "collect")
            order = [("on", on), ("off", off)] if n % 2 else [("off", off), ("on", on)]
            for name, env in order:
                times[name].append(_hook(env, work))
        os.environ.update({k: v for k, v in on.items() if k != "PATH"})
        from kenning import collect
        from kenning.store import open_store

        scans = []
        with open_store(on["KEN_DB"]) as store:
            for _ in range(30):
                start = time.perf_counter()
                done = collect.collect(store, changed_only=True)
                scans.append(time.perf_counter() - start)
            assert done.places_read == 0 and done.places_skipped == FOLDERS
            count = store.count_items()
    on_ms, off_ms = (statistics.median(times[k]) * 1000 for k in ("on", "off"))
    result = {
        "date": time.strftime("%Y-%m-%d"),
        "folders": FOLDERS,
        "memories": count,
        "first_collection_hook_ms": round(first * 1000, 1),
        "session_start_collect_on_ms": round(on_ms, 1),
        "session_start_collect_off_ms": round(off_ms, 1),
        "ratio_on_vs_off": round(on_ms / off_ms, 3),
        "scan_p50_ms": round(percentile(scans, 50) * 1000, 2),
        "scan_p95_ms": round(percentile(scans, 95) * 1000, 2),
    }
    text = json.dumps(result, indent=2)
    print(text)
    (Path(__file__).parent / "collect_results.json").write_text(text + "\n")


if __name__ == "__main__":
    main()
