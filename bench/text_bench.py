"""Text on the hook path: token estimation and secret redaction, timed.

    python bench/text_bench.py            # writes bench/text_results.json
    python bench/text_bench.py --quick    # fewer runs, writes nothing

Each figure is the best of several runs (the machine is shared: the best run is the
one least disturbed). Inputs come from the test fixtures (tests/fixtures/tokens and
tests/fixtures/secrets), so they are the texts the tests check for correctness.

Targets: estimating 10 KB of code and prose <= 5 ms; redacting a 1 MB prompt (prose,
code, logs, with a secret or look-alike on about one line in fifty) <= 0.5 s; redacting
1 MB of nothing but secrets and look-alikes <= 2 s (a regular expression that
backtracks would take minutes).
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from common import progress  # noqa: E402
from kenning.redact import redact  # noqa: E402
from kenning.tokens import estimate_tokens  # noqa: E402

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "tests" / "fixtures"
TARGETS = {"tokens_10kb_ms": 5.0, "redact_prompt_1mb_s": 0.5, "redact_dense_1mb_s": 2.0}


def fixture_texts(kind: str) -> list[str]:
    return [p.read_text(encoding="utf-8") for p in sorted((FIXTURES / "tokens" / kind).glob("*"))]


def secret_lines() -> list[str]:
    lines = []
    for name in ("secrets.jsonl", "lookalikes.jsonl"):
        text = (FIXTURES / "secrets" / name).read_text(encoding="utf-8")
        lines += [json.loads(line)["text"] for line in text.splitlines() if line.strip()]
    return lines


def megabyte_prompt(rng: random.Random) -> str:
    """About 1 MB of prompt: fixture lines of code and prose, and now and then a secret
    or a look-alike."""
    ordinary = [
        line
        for text in fixture_texts("code") + fixture_texts("prose")
        for line in text.splitlines()
        if line.strip()
    ]
    special = secret_lines()
    out: list[str] = []
    size = 0
    while size < 1_000_000:
        line = rng.choice(special) if rng.random() < 0.02 else rng.choice(ordinary)
        out.append(line)
        size += len(line) + 1
    return "\n".join(out)[:1_000_000]


def dense_megabyte(rng: random.Random) -> str:
    lines = secret_lines()
    out: list[str] = []
    size = 0
    while size < 1_000_000:
        line = rng.choice(lines)
        out.append(line)
        size += len(line) + 1
    return "\n".join(out)[:1_000_000]


def best(fn: Callable[[], object], runs: int) -> float:
    fastest = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        fastest = min(fastest, time.perf_counter() - started)
    return fastest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs; write nothing")
    args = parser.parse_args(argv)
    runs = 3 if args.quick else 10
    rng = random.Random(42)
    sample = ("".join(fixture_texts("code")) + "".join(fixture_texts("prose")))[:10_240]
    prompt, dense = megabyte_prompt(rng), dense_megabyte(rng)

    progress("estimating 10 KB", "text")
    estimate_tokens(sample)
    tokens_ms = best(lambda: estimate_tokens(sample), runs * 5) * 1000
    progress("redacting a 1 MB prompt", "text")
    prompt_s = best(lambda: redact(prompt), runs)
    progress("redacting 1 MB of secrets and look-alikes", "text")
    dense_s = best(lambda: redact(dense), max(1, runs // 3))

    figures = {
        "tokens_10kb_ms": round(tokens_ms, 3),
        "redact_prompt_1mb_s": round(prompt_s, 3),
        "redact_dense_1mb_s": round(dense_s, 3),
    }
    print("| what | best of runs | target |")
    print("| --- | --- | --- |")
    print(f"| estimate tokens of 10 KB | {tokens_ms:.2f} ms | <= 5 ms |")
    print(f"| redact a 1 MB prompt | {prompt_s:.3f} s | <= 0.5 s |")
    print(f"| redact 1 MB of secrets and look-alikes | {dense_s:.3f} s | <= 2 s |")
    missed = [k for k, v in figures.items() if v > TARGETS[k]]
    for key in missed:
        progress(f"over target: {key} = {figures[key]} (target {TARGETS[key]})", "text")
    if not args.quick:
        result: dict[str, Any] = {
            "when": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "python": platform.python_version(),
            "figures": figures,
            "targets": TARGETS,
        }
        (HERE / "text_results.json").write_text(json.dumps(result, indent=2) + "\n")
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
