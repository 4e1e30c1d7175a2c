"""How search, pack and recall grow with the store, and what they cost beside bare FTS5.

For each size in `BENCH_SIZES` (an environment variable, or `--sizes`; default
10000,100000; `make bench BENCH_SIZES=100000,1000000` reaches a million), on a copy of a
cached store of that many active memories (bench/stores.py builds each once):

- search p50 / p95 (`kenning.items.search`, corpus queries plus short common words),
  each query followed by a bare FTS5 `SELECT rowid FROM items_fts WHERE items_fts
  MATCH ? ORDER BY bm25(items_fts) LIMIT 20` for the same words (the MATCH expression
  kenning builds for them) on the same store, and the ratio of the two p95s;
- recall and pack p50 / p95 for a repo's folder, in process, as a hook asks for them;
- then the growth of each p95 from the smallest size to the largest.

The sizes take turns in one process, query by query, so that a load that comes and goes
on a shared machine weighs on each size alike.

And ingest, once: batches of checked memories into a fresh store (`insert_many`)
beside the same title, body and tags into a bare FTS5 table, alternating.

`--against SRC` runs the same on another checkout's kenning (its `src`, e.g. a git
worktree of an older commit), each size's two runs back to back, each on its own copy.
Targets (issue 12.7): from 100,000 to 1,000,000 memories recall and pack p95 grow at most
1.5x and search p95 at most 2x; at 1,000,000 search p95 at most 1.2x the bare FTS5 query;
ingest at least as fast as the bare FTS5 table.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import corpus  # noqa: E402
import stores  # noqa: E402
from common import percentile, progress  # noqa: E402

HERE = Path(__file__).resolve().parent
COMMON_WORDS = ["use", "the", "run", "test", "fix", "use the"]
PROMPTS = [
    "the checkout webhook retries keep timing out against postgres, can you look?",
    "why does the pnpm lockfile change every time I run the install on CI",
    "add a migration for the billing invoices table and update the alembic env",
    "staging deploys fail with a kubectl rollout timeout after the helm upgrade",
    "make the flaky playwright login test stable, it fails on the token refresh",
    "refactor the search index loader so it stops reading the whole fixture file",
    "use the same retry policy as the payments service",
    "what do we use for the cache",
]
BARE = "SELECT rowid FROM items_fts WHERE items_fts MATCH ? ORDER BY bm25(items_fts) LIMIT 20"
GROWTH = {"recall": 1.5, "pack": 1.5, "search": 2.0}
VS_BARE = 1.2
INGEST_ITEMS = 20_000
INGEST_BATCH = 500


def _ms(values: list[float]) -> dict[str, float]:
    return {"p50": round(percentile(values, 50), 2), "p95": round(percentile(values, 95), 2)}


def measure(dbs: list[Path], rounds: int, queries: int) -> list[dict[str, Any]]:
    """Search, bare FTS5, recall and pack on each store of `dbs` (in this process), the
    stores taking turns query by query: a load that comes and goes on a shared machine
    then weighs on every size alike, and the growth from one size to the next is its
    own."""
    from kenning import items
    from kenning.config import Config
    from kenning.deliver import pack_for, recall_for
    from kenning.locate import here
    from kenning.store import Words, fts, open_store

    config = Config(file={})
    opened = []
    for db in dbs:
        repo = db.parent / "shop"
        repo.mkdir(exist_ok=True)
        for args in (
            ["init", "-q", "-b", "main"],
            ["remote", "add", "origin", "git@github.com:acme/shop.git"],
        ):
            subprocess.run(["git", *args], cwd=repo, capture_output=True)
        store = open_store(db)
        opened.append((store, here(store, config, repo, agent="claude")))
    texts = corpus.queries(queries) + COMMON_WORDS
    times: list[dict[str, Any]] = [
        {"search": [], "bare": [], "common": {}, "recall": [], "pack": []} for _ in dbs
    ]
    try:
        for store, _ in opened:
            for text in texts[:20]:  # the page cache warm, as on a machine in use
                items.search(store, text)
        for text in texts:
            for (store, _), got in zip(opened, times, strict=True):
                started = time.perf_counter()
                items.search(store, text)
                took = (time.perf_counter() - started) * 1000
                got["search"].append(took)
                if text in COMMON_WORDS:
                    got["common"][text] = round(took, 2)
                match = fts.match_for(Words(typed=text), store)
                started = time.perf_counter()
                store.conn.execute(BARE, (match,)).fetchall()
                got["bare"].append((time.perf_counter() - started) * 1000)
        for n in range(rounds):
            for (store, where), got in zip(opened, times, strict=True):
                started = time.perf_counter()
                recall_for(store, config, where, PROMPTS[n % len(PROMPTS)], record=False)
                got["recall"].append((time.perf_counter() - started) * 1000)
                started = time.perf_counter()
                pack_for(store, config, where, record=False)
                got["pack"].append((time.perf_counter() - started) * 1000)
    finally:
        for store, _ in opened:
            store.close()
    return [
        {
            "search": _ms(got["search"]),
            "bare_fts5": _ms(got["bare"]),
            "search_vs_bare_p95": round(
                percentile(got["search"], 95) / percentile(got["bare"], 95), 2
            ),
            "common_words_ms": got["common"],
            "recall": _ms(got["recall"]),
            "pack": _ms(got["pack"]),
        }
        for got in times
    ]


def ingest(folder: Path, count: int) -> dict[str, Any]:
    """Checked memories into a fresh store, batch by batch, beside the same text into a
    bare FTS5 table (each batch one transaction), alternating."""
    from kenning import transfer
    from kenning.model import Status
    from kenning.store import open_store

    checked = [
        replace(i, status=Status.ACTIVE)
        for i in transfer.read_items(corpus.memories(count, seed=3))
    ]
    store = open_store(folder / "ingest.db")
    bare = sqlite3.connect(folder / "bare.db", isolation_level=None)
    bare.execute("PRAGMA journal_mode=WAL")
    bare.execute("PRAGMA synchronous=NORMAL")
    bare.execute(
        "CREATE VIRTUAL TABLE t USING fts5(title, body, tags, tokenize='porter unicode61')"
    )
    ken_s = bare_s = 0.0
    try:
        for start in range(0, count, INGEST_BATCH):
            batch = checked[start : start + INGEST_BATCH]
            started = time.perf_counter()
            store.insert_many(batch, change="add", batch=INGEST_BATCH)
            ken_s += time.perf_counter() - started
            started = time.perf_counter()
            bare.execute("BEGIN")
            bare.executemany(
                "INSERT INTO t(title, body, tags) VALUES (?, ?, ?)",
                [(i.title, i.body, " ".join(i.tags)) for i in batch],
            )
            bare.execute("COMMIT")
            bare_s += time.perf_counter() - started
    finally:
        store.close()
        bare.close()
    return {
        "items": count,
        "kenning_items_per_s": round(count / ken_s),
        "bare_fts5_items_per_s": round(count / bare_s),
        "ratio": round(bare_s / ken_s, 2),
    }


def worker(args: argparse.Namespace) -> int:
    dbs = [Path(path) for path in args.worker.split(",")]
    if args.ingest:
        print(json.dumps(ingest(dbs[0].parent, args.ingest)))
    else:
        print(json.dumps(measure(dbs, args.rounds, args.queries)))
    return 0


def run_worker(src: str | None, argv: list[str]) -> dict[str, Any]:
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = src
    done = subprocess.run(
        [sys.executable, __file__, *argv], env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"worker failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default=os.environ.get("BENCH_SIZES") or "10000,100000")
    parser.add_argument("--against", help="another checkout's src folder, measured alongside")
    parser.add_argument("--rounds", type=int, default=60, help="recalls and packs per size")
    parser.add_argument("--queries", type=int, default=200, help="searches per size")
    parser.add_argument("--ingest-items", type=int, default=INGEST_ITEMS)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--ingest", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args)
    sizes = sorted(int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip())
    codes: list[tuple[str, str | None]] = [("this", None)]
    if args.against:
        codes.append(("against", args.against))
    load = round(os.getloadavg()[0], 2)
    results: dict[str, Any] = {name: {"sizes": {}} for name, _ in codes}
    with tempfile.TemporaryDirectory(prefix="ken-scale-", dir="/dev/shm") as tmp:
        for size in sizes:
            stores.cached_store(size)
        for name, src in codes:
            progress(f"{', '.join(f'{n:,}' for n in sizes)} memories, taking turns: {name}")
            dbs = [stores.scratch_copy(size, Path(tmp) / f"{name}-{size}") for size in sizes]
            found = run_worker(
                src,
                [
                    *("--worker", ",".join(str(db) for db in dbs)),
                    *("--rounds", str(args.rounds), "--queries", str(args.queries)),
                ],
            )
            results[name]["sizes"] = dict(zip(sizes, found, strict=True))
            for db in dbs:
                db.unlink()
        for name, src in codes:
            progress(f"ingest: {name}")
            folder = Path(tmp) / f"{name}-ingest"
            folder.mkdir()
            results[name]["ingest"] = run_worker(
                src, ["--worker", str(folder / "x.db"), "--ingest", str(args.ingest_items)]
            )
    small, large = sizes[0], sizes[-1]
    for name, _ in codes:
        by = results[name]["sizes"]
        results[name]["growth"] = {
            what: round(by[large][what]["p95"] / by[small][what]["p95"], 2) for what in GROWTH
        }
    results |= {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "sizes": sizes,
        "against_src": args.against,
        "load_before": load,
        "load_after": round(os.getloadavg()[0], 2),
        "targets": {"growth": GROWTH, "search_vs_bare_p95": VS_BARE, "ingest_ratio": 1.0},
    }
    print(table(results, codes, sizes))
    (HERE / "scale_results.json").write_text(json.dumps(results, indent=2) + "\n")
    return 0


def table(results: dict[str, Any], codes: list[tuple[str, str | None]], sizes: list[int]) -> str:
    head = " | ".join(name for name, _ in codes)
    lines = [
        f"\n## scale, {results['date']} (load {results['load_before']} to {results['load_after']})",
        "",
        f"| figure | {head} | target |",
        "|---|" + "---|" * len(codes) + "---|",
    ]
    for size in sizes:
        for what in ("search", "bare_fts5", "recall", "pack"):
            cells = [
                "{p50} / {p95} ms".format(**results[name]["sizes"][size][what]) for name, _ in codes
            ]
            lines.append(f"| {what} p50 / p95 at {size:,} | {' | '.join(cells)} | - |")
        cells = [str(results[name]["sizes"][size]["search_vs_bare_p95"]) + "x" for name, _ in codes]
        lines.append(
            f"| search p95 / bare FTS5 p95 at {size:,} | {' | '.join(cells)} | <= {VS_BARE}x |"
        )
        cells = [
            ", ".join(
                f"{w} {ms}" for w, ms in results[name]["sizes"][size]["common_words_ms"].items()
            )
            for name, _ in codes
        ]
        lines.append(f"| common words at {size:,}, ms | {' | '.join(cells)} | - |")
    for what, limit in GROWTH.items():
        cells = [str(results[name]["growth"][what]) + "x" for name, _ in codes]
        lines.append(
            f"| {what} p95 growth {sizes[0]:,} to {sizes[-1]:,} | {' | '.join(cells)} "
            f"| <= {limit}x |"
        )
    cells = [
        "{kenning_items_per_s:,} vs {bare_fts5_items_per_s:,}/s ({ratio}x)".format(
            **results[name]["ingest"]
        )
        for name, _ in codes
    ]
    lines.append(f"| ingest vs bare FTS5 | {' | '.join(cells)} | >= 1.0x |")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
