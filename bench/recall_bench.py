"""Recall before and after: quality on the six evaluation sets and speed at 100,000
memories, with a plain FTS5 bm25 query beside them, all in one run.

"Before" is the `src/kenning/recall/` package as it was at BEFORE (read from git);
"after" is the code in this checkout. Quality figures (tests/recall_eval.py has the definitions):

- at default settings: recall@5 (share of expected memories returned), precision
  (share of returned memories that were expected), quiet (share of prompts that should
  get nothing and got nothing);
- with every threshold off (`--limit 5 --min-score 0 --min-shared 0`) and for bm25:
  recall@5, and hit@5 (share of prompts with an expected memory in the top five).

Speed: each version's `recall()` in process over a store of 100,000 generated memories,
the two alternating prompt by prompt; p50, p95 and the ratio of the p50s.

Run: `python bench/recall_bench.py [--items 100000] [--rounds 120] [--quick]`. Writes
bench/recall_results.json (not with --quick) and prints Markdown tables.
"""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]

import corpus  # noqa: E402
import recall_eval  # noqa: E402
from common import percentile, progress  # noqa: E402
from kenning import recall as after  # noqa: E402
from kenning import transfer  # noqa: E402
from kenning.model import Status  # noqa: E402
from kenning.store import open_store  # noqa: E402

BEFORE = "222e7c9"  # before a note that follows a note ranked with it (e8bf783)
SPEED_SCOPES = (
    "workstream:github.com/acme/shop#main",
    "project:checkout-v2",
    "repo:github.com/acme/shop",
    "global",
)
SPEED_PROMPTS = [
    "the checkout webhook retries keep timing out against postgres, can you look?",
    "why does the pnpm lockfile change every time I run the install on CI",
    "add a migration for the billing invoices table and update the alembic env",
    "staging deploys fail with a kubectl rollout timeout after the helm upgrade",
    "make the flaky playwright login test stable, it fails on the token refresh",
    "refactor the search index loader so it stops reading the whole fixture file",
    "can I just fake out the db layer in the integ tests?",
    "whats our throttle on the api, a customer gets 429s",
    "thanks, that worked!",
    "rename the variable inv to invoice in this function",
]


def load_before(root: Path) -> ModuleType | None:
    """The recall package as it was at BEFORE, imported as `recall_before`; None without
    git."""
    folder = Path(tempfile.mkdtemp(prefix="ken-recall-before-")) / "recall_before"
    folder.mkdir()
    try:
        names = subprocess.run(
            ["git", "ls-tree", "--name-only", BEFORE, "src/kenning/recall/"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        for name in names:
            source = subprocess.run(
                ["git", "show", f"{BEFORE}:{name}"],
                cwd=root,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            text = source.replace("kenning.recall.", "recall_before.")
            (folder / Path(name).name).write_text(text, encoding="utf-8")
    except (OSError, subprocess.CalledProcessError):
        progress(f"git cannot show {BEFORE}: measuring the current code only")
        return None
    sys.path.insert(0, str(folder.parent))
    return importlib.import_module("recall_before")


def rankers(module: ModuleType) -> dict[str, recall_eval.Ranker]:
    defaults = module.RecallSettings()
    opened = replace(defaults, limit=recall_eval.TOP, min_score=0.0, min_shared=0)

    def ranker(settings: Any) -> recall_eval.Ranker:
        def rank(store: Any, prompt: str, scopes: Any) -> list[str]:
            result = module.recall(store, prompt, scopes, settings=settings, now=recall_eval.NOW)
            return [c.item.id for c in result.kept]

        return rank

    return {"defaults": ranker(defaults), "open": ranker(opened)}


def figures(fig: recall_eval.Figures) -> dict[str, Any]:
    return {
        "recall": round(fig.recall, 3),
        "precision": round(fig.precision, 3),
        "quiet": round(fig.quiet, 3),
        "hit": round(fig.hit_rate, 3),
        "not_forbidden": round(fig.not_forbidden, 3),
        "expected": fig.expected,
        "returned": fig.returned,
    }


def quality(versions: dict[str, ModuleType]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in ("coding", "dialogue", "first", "check", "fresh", "held"):
        evalset = recall_eval.read_set(name)
        splits = ["dev", "test", None] if name in ("coding", "dialogue") else [None]
        with tempfile.TemporaryDirectory(prefix="ken-recall-eval-") as folder:
            store = open_store(Path(folder) / "eval.db")
            try:
                keys = recall_eval.stock(store, evalset)
                for split in splits:
                    label = f"{name}/{split or 'all'}"
                    progress(f"quality: {label}")
                    prompts = evalset.split(split)
                    row: dict[str, Any] = {
                        "bm25": figures(
                            recall_eval.score(store, keys, prompts, recall_eval.bm25_ranker())
                        )
                    }
                    for version, module in versions.items():
                        for mode, rank in rankers(module).items():
                            fig = recall_eval.score(store, keys, prompts, rank)
                            row[f"{version}/{mode}"] = figures(fig)
                    out[label] = row
            finally:
                store.close()
    return out


def speed(versions: dict[str, ModuleType], size: int, rounds: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ken-recall-speed-") as folder:
        progress(f"speed: building a store of {size:,} active memories")
        checked = [
            replace(i, status=Status.ACTIVE) for i in transfer.read_items(corpus.memories(size))
        ]
        store = open_store(Path(folder) / "memory.db")
        try:
            store.insert_many(checked, change="add")
            del checked
            times: dict[str, list[float]] = {v: [] for v in versions}
            for n in range(rounds + len(SPEED_PROMPTS)):  # the first lap warms the cache
                prompt = SPEED_PROMPTS[n % len(SPEED_PROMPTS)]
                for version, module in versions.items():
                    started = time.perf_counter()
                    module.recall(store, prompt, SPEED_SCOPES)
                    if n >= len(SPEED_PROMPTS):
                        times[version].append((time.perf_counter() - started) * 1000)
        finally:
            store.close()
    out: dict[str, Any] = {"items": size, "rounds": rounds}
    for version, ms in times.items():
        out[version] = {
            "p50_ms": round(percentile(ms, 50), 2),
            "p95_ms": round(percentile(ms, 95), 2),
        }
    if "before" in out:
        out["p50_ratio"] = round(out["after"]["p50_ms"] / out["before"]["p50_ms"], 2)
    return out


def tables(result: dict[str, Any]) -> str:
    versions = [
        v for v in ("before", "after") if f"{v}/defaults" in result["quality"]["coding/all"]
    ]
    lines = [
        f"## recall, before ({BEFORE}) and after, {result['date']}",
        "",
        "| set | version | recall@5 | precision | quiet | thresholds off: recall@5 / hit@5 "
        "| bm25: recall@5 / hit@5 |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for label, row in result["quality"].items():
        bm = row["bm25"]
        for version in versions:
            d, o = row[f"{version}/defaults"], row[f"{version}/open"]
            quiet = f"{d['quiet']:.3f}" if not label.startswith("dialogue") else "-"
            lines.append(
                f"| {label} | {version} | {d['recall']:.3f} | {d['precision']:.3f} | {quiet} "
                f"| {o['recall']:.3f} / {o['hit']:.3f} | {bm['recall']:.3f} / {bm['hit']:.3f} |"
            )
    s = result["speed"]
    lines += [
        "",
        f"| recall at {s['items']:,} memories, in process | p50 ms | p95 ms |",
        "|---|---:|---:|",
    ]
    lines += [f"| {v} | {s[v]['p50_ms']} | {s[v]['p95_ms']} |" for v in versions]
    if "p50_ratio" in s:
        lines.append(f"\np50 after / before: {s['p50_ratio']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=120)
    parser.add_argument("--quick", action="store_true", help="1,000 memories, 20 rounds")
    args = parser.parse_args(argv)
    if args.quick:
        args.items, args.rounds = 1_000, 20
    versions: dict[str, ModuleType] = {}
    before = load_before(HERE.parent)
    if before is not None:
        versions["before"] = before
    versions["after"] = after
    result: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    result["quality"] = quality(versions)
    result["speed"] = speed(versions, args.items, args.rounds)
    print(tables(result))
    if not args.quick:
        (HERE / "recall_results.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
