"""kenning's benchmark: ingest rate, search latency and bytes on disk per item.

    python bench/run.py                  # 10,000 and 100,000 items
    python bench/run.py --quick          # 1,000 items, to iterate
    python bench/run.py --sizes 50000

Every run works in a fresh temp folder (never your store). Progress goes to stderr; a
Markdown table goes to stdout and the same figures to bench/results.json.

Targets: ingest >= 2,000 items/s (batched import: parse, redact, check, insert, index);
search p95 <= 15 ms at 100,000 items (in process, `kenning.items.search`).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import corpus
from common import percentile, progress
from kenning import items, transfer
from kenning.model import Scope, ScopeType
from kenning.store import open_store

HERE = Path(__file__).resolve().parent
INGEST_TARGET = 2_000  # items/s
P95_TARGET_MS = 15.0  # at 100,000 items
SINGLE_ADDS = 300


def disk_bytes(db: Path) -> int:
    return sum(
        Path(f"{db}{suffix}").stat().st_size
        for suffix in ("", "-wal", "-shm")
        if Path(f"{db}{suffix}").exists()
    )


def run_size(size: int, query_count: int, folder: Path) -> dict[str, Any]:
    db = folder / "memory.db"
    load_before = round(os.getloadavg()[0], 2)
    progress(f"{size:,} items: generating")
    lines = list(corpus.memories(size))

    progress(f"{size:,} items: parsing, redacting and checking")
    started, cpu_started = time.perf_counter(), time.process_time()
    checked = transfer.read_items(lines)
    parsed = time.perf_counter()
    del lines
    store = open_store(db)
    try:
        progress(f"{size:,} items: importing")

        def report(done: int, total: int) -> None:
            if done % 20_000 == 0 or done == total:
                progress(f"  imported {done:,}/{total:,}")

        added, skipped = transfer.import_items(store, checked, progress=report)
        stored, cpu_stored = time.perf_counter(), time.process_time()
        assert (added, skipped) == (size, 0), (added, skipped)
        redacted = sum(1 for item in checked if "[redacted:" in item.body)
        del checked

        # Imports arrive as proposals; a lived-in store is mostly approved memory.
        store.conn.execute("UPDATE items SET status = 'active'")
        store.checkpoint()
        on_disk = disk_bytes(db)

        progress(f"{size:,} items: {query_count} searches")
        queries = corpus.queries(query_count)
        for query in queries[:20]:  # warm the page cache, as a running machine has it
            items.search(store, query)
        latencies: list[float] = []
        cpu_latencies: list[float] = []
        hits: list[int] = []
        for query in queries:
            t0, c0 = time.perf_counter(), time.process_time()
            found = items.search(store, query)
            latencies.append((time.perf_counter() - t0) * 1000)
            cpu_latencies.append((time.process_time() - c0) * 1000)
            hits.append(len(found))
        slowest = sorted(zip(latencies, queries, strict=True), reverse=True)[:5]

        progress(f"{size:,} items: {SINGLE_ADDS} single adds")
        t0 = time.perf_counter()
        for n in range(SINGLE_ADDS):
            items.add(
                store,
                f"Single add {n}\nthe deploy runs make release after tests",
                scope=Scope(ScopeType.GLOBAL),
            )
        single_ms = (time.perf_counter() - t0) * 1000 / SINGLE_ADDS
    finally:
        store.close()

    ingest_s = stored - started
    return {
        "items": size,
        "ingest_items_per_s": round(size / ingest_s),
        "ingest_s": round(ingest_s, 2),
        "ingest_cpu_items_per_s": round(size / (cpu_stored - cpu_started)),
        "parse_s": round(parsed - started, 2),
        "store_s": round(stored - parsed, 2),
        "redacted_items": redacted,
        "search_queries": len(queries),
        "search_p50_ms": round(statistics.median(latencies), 2),
        "search_p95_ms": round(percentile(latencies, 95), 2),
        "search_max_ms": round(max(latencies), 2),
        "search_cpu_p50_ms": round(statistics.median(cpu_latencies), 2),
        "search_cpu_p95_ms": round(percentile(cpu_latencies, 95), 2),
        "search_mean_hits": round(statistics.mean(hits), 1),
        "slowest_queries": [{"query": q, "ms": round(ms, 2)} for ms, q in slowest],
        "bytes_on_disk": on_disk,
        "bytes_per_item": round(on_disk / size),
        "single_add_ms": round(single_ms, 2),
        "load_before": load_before,
        "load_after": round(os.getloadavg()[0], 2),
    }


def table(results: list[dict[str, Any]], when: str) -> str:
    head = [
        f"## kenning benchmark, {when}",
        "",
        f"Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, "
        f"{platform.machine()}, {os.cpu_count()} CPUs",
        "",
        "Wall-clock figures; CPU-time figures (this process only) in brackets, which a busy",
        "machine does not inflate.",
        "",
        "| items | ingest items/s | parse s | store s | search p50 ms | search p95 ms "
        "| search max ms | mean hits | bytes/item | single add ms |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    rows = [
        f"| {r['items']:,} | {r['ingest_items_per_s']:,} ({r['ingest_cpu_items_per_s']:,}) "
        f"| {r['parse_s']} | {r['store_s']} "
        f"| {r['search_p50_ms']} ({r['search_cpu_p50_ms']}) "
        f"| {r['search_p95_ms']} ({r['search_cpu_p95_ms']}) | {r['search_max_ms']} "
        f"| {r['search_mean_hits']} | {r['bytes_per_item']:,} | {r['single_add_ms']} |"
        for r in results
    ]
    verdicts = [
        "",
        f"Targets: ingest >= {INGEST_TARGET:,} items/s; search p95 <= {P95_TARGET_MS:g} ms at "
        f"100,000 items. Load average: {results[0]['load_before']} at the start, "
        f"{results[-1]['load_after']} at the end ({os.cpu_count()} CPUs).",
    ]

    def verdict(wall_ok: bool, cpu_ok: bool) -> str:
        if wall_ok:
            return "met"
        return "MISSED on the wall clock, met in CPU time" if cpu_ok else "MISSED"

    for r in results:
        line = f"- {r['items']:,}: ingest " + verdict(
            r["ingest_items_per_s"] >= INGEST_TARGET,
            r["ingest_cpu_items_per_s"] >= INGEST_TARGET,
        )
        if r["items"] >= 100_000:
            line += ", search p95 " + verdict(
                r["search_p95_ms"] <= P95_TARGET_MS, r["search_cpu_p95_ms"] <= P95_TARGET_MS
            )
        verdicts.append(line)
    return "\n".join(head + rows + verdicts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--sizes", default="10000,100000", help="comma-separated store sizes (default 10000,100000)"
    )
    parser.add_argument("--quick", action="store_true", help="1,000 items only")
    parser.add_argument("--queries", type=int, default=200, help="searches per size")
    parser.add_argument(
        "--output", type=Path, default=HERE / "results.json", help="where to write the JSON results"
    )
    args = parser.parse_args(argv)
    sizes = [1_000] if args.quick else [int(s.replace("_", "")) for s in args.sizes.split(",")]

    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    results = []
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix="ken-bench-") as folder:
            results.append(run_size(size, args.queries, Path(folder)))
        r = results[-1]
        progress(
            f"{size:,} items: {r['ingest_items_per_s']:,} items/s, "
            f"p50 {r['search_p50_ms']} ms, p95 {r['search_p95_ms']} ms"
        )
    print(table(results, when))
    payload = {
        "date": when,
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "targets": {"ingest_items_per_s": INGEST_TARGET, "search_p95_ms_at_100k": P95_TARGET_MS},
        "results": results,
    }
    args.output.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    progress(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
