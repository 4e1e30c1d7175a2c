"""What the benchmarks share: progress lines on stderr and percentiles."""

from __future__ import annotations

import sys


def progress(message: str, tag: str = "bench") -> None:
    print(f"[{tag}] {message}", file=sys.stderr, flush=True)


def percentile(values: list[float], pct: float) -> float:
    """The nearest-rank percentile (p95 of 200 values is the 190th smallest)."""
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * len(ordered) + 0.5) - 1))
    return ordered[index]
