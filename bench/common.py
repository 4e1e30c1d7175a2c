"""What the benchmarks share: progress lines on stderr and percentiles."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def progress(message: str, tag: str = "bench") -> None:
    print(f"[{tag}] {message}", file=sys.stderr, flush=True)


def percentile(values: list[float], pct: float) -> float:
    """The nearest-rank percentile (p95 of 200 values is the 190th smallest)."""
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * len(ordered) + 0.5) - 1))
    return ordered[index]


def env_for(folder: Path) -> dict[str, str]:
    """This process's environment with every kenning place in `folder` (never the
    person's own store) and no agent markers, no hook server."""
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


def shop_repo(folder: Path) -> Path:
    """A git repo in `folder` whose origin is github.com/acme/shop, where hooks run."""
    repo = folder / "shop"
    repo.mkdir()
    for args in (
        ["init", "-q", "-b", "main"],
        ["remote", "add", "origin", "git@github.com:acme/shop.git"],
    ):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    return repo
