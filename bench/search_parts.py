"""Where a search's time goes at each store size: the parts of `kenning.items.search`.

For each size in `BENCH_SIZES` (or `--sizes`; default 100000,1000000), on a copy of the
cached store (bench/stores.py), the bench's search queries (bench/scale_bench.py), each
part timed on its own, best of two, the sizes taking turns query by query:

- `prefix`: the MATCH with no row wanted (`rowid > max`): what FTS5 reads before the
  first match, mostly the merge of every word the last, prefix, word starts with;
- `window`: the newest 2,000 matches' rowids, newest first (what the search ranks);
- `stats`: bm25 on one row of the window, less `prefix`: bm25 counting, once per query,
  how many items hold each phrase, by reading each phrase's list of items whole;
- `ranked`: the window with its bm25 ranks, best 20 (no items read);
- `search`: the whole `items.search` (the window's items read and filtered too).

Prints p50 / p95 per part and size, and each p95's growth from the smallest size to
the largest. Figures from one run on a shared machine; the growths are what count.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import corpus  # noqa: E402
import stores  # noqa: E402
from common import percentile, progress  # noqa: E402
from scale_bench import COMMON_WORDS  # noqa: E402

WINDOW = "SELECT rowid FROM items_fts WHERE items_fts MATCH ? ORDER BY rowid DESC LIMIT 2000"
RANKED = (
    "SELECT rowid, r FROM (SELECT rowid, bm25(items_fts, 8.0, 1.0, 4.0) AS r FROM items_fts "
    "WHERE items_fts MATCH ? ORDER BY rowid DESC LIMIT 2000) ORDER BY r LIMIT 20"
)
ONE = "SELECT bm25(items_fts) FROM items_fts WHERE items_fts MATCH ? AND rowid >= ?"
NONE = "SELECT rowid FROM items_fts WHERE items_fts MATCH ? AND rowid > ?"
PARTS = ("prefix", "window", "stats", "ranked", "search")


def best(run: Callable[..., object], *args: object) -> float:
    """The shorter of two runs of `run(*args)`, in ms."""
    out = float("inf")
    for _ in range(2):
        started = time.perf_counter()
        run(*args)
        out = min(out, (time.perf_counter() - started) * 1000)
    return out


def read(conn: sqlite3.Connection, sql: str, params: tuple[object, ...]) -> list[Any]:
    return conn.execute(sql, params).fetchall()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default=os.environ.get("BENCH_SIZES") or "100000,1000000")
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    from kenning import items
    from kenning.store import Words, fts, open_store

    sizes = sorted(int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip())
    texts = corpus.queries(args.queries) + COMMON_WORDS
    found: dict[int, dict[str, list[float]]] = {n: {p: [] for p in PARTS} for n in sizes}
    with tempfile.TemporaryDirectory(prefix="ken-parts-", dir="/dev/shm") as tmp:
        opened = [open_store(stores.scratch_copy(n, Path(tmp) / str(n))) for n in sizes]
        progress(f"{len(texts)} queries at {', '.join(f'{n:,}' for n in sizes)} memories")
        try:
            for text in texts:
                for size, store in zip(sizes, opened, strict=True):
                    match = fts.match_for(Words(typed=text), store)
                    conn = store.conn
                    top = int(conn.execute("SELECT max(rowid) FROM items").fetchone()[0])
                    newest = [r[0] for r in read(conn, WINDOW, (match,))]
                    got = found[size]
                    got["prefix"].append(best(read, conn, NONE, (match, top)))
                    got["window"].append(best(read, conn, WINDOW, (match,)))
                    one = best(read, conn, ONE, (match, newest[0] if newest else 0))
                    got["stats"].append(max(0.0, one - got["prefix"][-1]))
                    got["ranked"].append(best(read, conn, RANKED, (match,)))
                    got["search"].append(best(items.search, store, text))
        finally:
            for store in opened:
                store.close()
    print(f"\n| part | {' | '.join(f'p50 / p95 at {n:,}' for n in sizes)} | p95 growth |")
    print("|---|" + "---|" * len(sizes) + "---|")
    for part in PARTS:
        cells = [
            f"{percentile(found[n][part], 50):.1f} / {percentile(found[n][part], 95):.1f} ms"
            for n in sizes
        ]
        small, large = (percentile(found[n][part], 95) for n in (sizes[0], sizes[-1]))
        print(f"| {part} | {' | '.join(cells)} | {large / max(small, 1e-9):.1f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
