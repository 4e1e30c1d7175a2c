"""`ken mcp` benchmark: start-up time and tool round trips at 100,000 items.

    python bench/mcp_bench.py              # 100,000 items
    python bench/mcp_bench.py --quick      # 2,000 items, to iterate
    python bench/mcp_bench.py --items 50000 --calls 300

1. Start-up: the time from spawning `ken mcp` to the answer to `tools/list` (initialize
   handshake, as the agent CLIs do it), median of 10, measured in turns with spawning
   `python -c "import mcp"` (the MCP SDK's import alone) and `python -c pass` (the
   interpreter alone), so the ratio holds however busy the machine is; the children's
   CPU time is reported too, which load inflates far less.
2. Round trips: `memory_search` (default scopes, in a repo and branch the corpus uses)
   and `memory_get` (full ids and 6-character short ids) through the SDK's own client
   over stdio, p50 and p95, beside the same searches and lookups made in process (wall
   and CPU time), which tells the server's overhead apart from the store's; memory_get
   is split further into resolving the id and reading the item.

The store is built in a temp folder from `bench/corpus.py` (never your store). Progress
goes to stderr; a Markdown table to stdout and the figures to bench/mcp_results.json.
Target: p95 <= 20 ms per round trip.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import anyio
from mcp import Client, StdioServerParameters

import common
import corpus
from common import percentile
from kenning import ids, items, transfer
from kenning import where as where_mod
from kenning.store import open_store

HERE = Path(__file__).resolve().parent
KEN = Path(sys.executable).with_name("ken")
P95_TARGET_MS = 20.0
STARTS = 10
REPO, BRANCH = "acme/shop", "main"  # a repo and branch the corpus fills


def progress(message: str) -> None:
    common.progress(message, "mcp-bench")


def summary(values: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(statistics.median(values), 2),
        "p95_ms": round(percentile(values, 95), 2),
        "max_ms": round(max(values), 2),
    }


def server_env(folder: Path) -> dict[str, str]:
    home = folder / "home"
    env = {
        "HOME": str(home),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "KEN_DB": str(folder / "memory.db"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "LANG": "C.UTF-8",
    }
    for key in ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"):
        Path(env[key]).mkdir(parents=True, exist_ok=True)
    return env


def make_repo(path: Path, env: dict[str, str]) -> Path:
    path.mkdir(parents=True)
    git_env = {**env, "GIT_CONFIG_NOSYSTEM": "1"}
    for args in (
        ["init", "-q", "-b", BRANCH],
        ["remote", "add", "origin", f"git@github.com:{REPO}.git"],
        [
            "-c",
            "user.name=Bench",
            "-c",
            "user.email=b@example.com",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "start",
        ],
    ):
        subprocess.run(["git", *args], cwd=path, env=git_env, check=True, capture_output=True)
    return path


# ----------------------------------------------------------------------------- start-up


def _send(stream: IO[bytes], message: dict[str, Any]) -> None:
    stream.write(json.dumps(message).encode() + b"\n")
    stream.flush()


def _answer(stream: IO[bytes], wanted: int) -> dict[str, Any]:
    while True:
        line = stream.readline()
        if not line:
            raise RuntimeError("ken mcp closed its output before answering")
        message = json.loads(line)
        if message.get("id") == wanted:
            return dict(message)


def ken_until_tools(env: dict[str, str], cwd: Path) -> tuple[float, int]:
    """Seconds from spawning `ken mcp` to its tools/list answer, and how many tools."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [str(KEN), "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=cwd,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        _send(
            proc.stdin,
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "ken-bench", "version": "1"},
                },
            },
        )
        init = _answer(proc.stdout, 1)
        if "error" in init:
            raise RuntimeError(f"initialize failed: {init['error']}")
        _send(proc.stdin, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _send(proc.stdin, {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
        tools = _answer(proc.stdout, 2)["result"]["tools"]
        elapsed = time.perf_counter() - started
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return elapsed, len(tools)


def python_runs(code: str, env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    return time.perf_counter() - started


def child_cpu() -> float:
    """CPU seconds used by the children this process has waited for, so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def startup(folder: Path) -> dict[str, Any]:
    env = server_env(folder)
    repo = make_repo(folder / "repo", env)
    ken_mcp, import_mcp, bare = [], [], []
    ken_cpu, import_cpu = [], []
    ken_until_tools(env, repo)  # first run writes bytecode and creates the store
    for n in range(STARTS):
        cpu = child_cpu()
        seconds, tools = ken_until_tools(env, repo)
        ken_cpu.append((child_cpu() - cpu) * 1000)
        assert tools >= 8, tools  # every tool mcp.md lists, at least
        ken_mcp.append(seconds * 1000)
        cpu = child_cpu()
        import_mcp.append(python_runs("import mcp", env) * 1000)
        import_cpu.append((child_cpu() - cpu) * 1000)
        bare.append(python_runs("pass", env) * 1000)
        progress(
            f"start-up {n + 1}/{STARTS}: ken mcp {ken_mcp[-1]:.0f} ms, "
            f"import mcp {import_mcp[-1]:.0f} ms, python {bare[-1]:.0f} ms"
        )
    ken_ms, import_ms = statistics.median(ken_mcp), statistics.median(import_mcp)
    return {
        "runs": STARTS,
        "ken_mcp_to_tools_list_ms": round(ken_ms, 1),
        "python_import_mcp_ms": round(import_ms, 1),
        "python_bare_ms": round(statistics.median(bare), 1),
        "ratio_to_import_mcp": round(ken_ms / import_ms, 2),
        # CPU time of the whole child (ken mcp: start, handshake, tools/list, exit), which
        # a busy machine inflates far less than wall-clock time.
        "ken_mcp_cpu_ms": round(statistics.median(ken_cpu), 1),
        "python_import_mcp_cpu_ms": round(statistics.median(import_cpu), 1),
        "cpu_ratio_to_import_mcp": round(
            statistics.median(ken_cpu) / statistics.median(import_cpu), 2
        ),
        "samples_ms": {
            "ken_mcp": [round(v, 1) for v in ken_mcp],
            "import_mcp": [round(v, 1) for v in import_mcp],
            "python": [round(v, 1) for v in bare],
        },
    }


# ----------------------------------------------------------------------------- round trips


def build_store(db: Path, size: int) -> None:
    progress(f"{size:,} items: generating, checking and importing")
    started = time.perf_counter()
    checked = transfer.read_items(corpus.memories(size))
    with open_store(db) as store:
        added, skipped = transfer.import_items(store, checked)
        assert (added, skipped) == (size, 0), (added, skipped)
        # Imports arrive as proposals; a lived-in store is mostly approved memory.
        store.conn.execute("UPDATE items SET status = 'active'")
        store.checkpoint()
    progress(f"{size:,} items: built in {time.perf_counter() - started:.1f} s")


def sample_ids(db: Path, count: int) -> list[str]:
    with open_store(db) as store:
        rows = store.conn.execute("SELECT id FROM items").fetchall()
    rng = random.Random(5)
    picked = [row[0] for row in rng.sample(rows, min(count, len(rows)))]
    # Half full ids, half the six characters people and agents see.
    return [i if n % 2 else i[-6:].lower() for n, i in enumerate(picked)]


async def over_stdio(
    env: dict[str, str], repo: Path, queries: list[str], refs: list[str]
) -> dict[str, list[float]]:
    params = StdioServerParameters(command=str(KEN), args=["mcp"], env=env, cwd=str(repo))
    timings: dict[str, list[float]] = {"memory_search": [], "memory_get": []}
    hits: list[int] = []
    with open(os.devnull, "w") as quiet:  # the server's log lines
        from mcp.client.stdio import stdio_client

        async with Client(stdio_client(params, errlog=quiet), mode="legacy") as client:
            await client.list_tools()
            for query in queries[:10]:  # warm the page cache, as a running server has it
                await client.call_tool("memory_search", {"query": query})
            for query in queries:
                started = time.perf_counter()
                result = await client.call_tool("memory_search", {"query": query})
                timings["memory_search"].append((time.perf_counter() - started) * 1000)
                assert not result.is_error, result.content
                hits.append(len((result.structured_content or {}).get("results", [])))
            for ref in refs:
                started = time.perf_counter()
                result = await client.call_tool("memory_get", {"id": ref})
                timings["memory_get"].append((time.perf_counter() - started) * 1000)
                assert not result.is_error, (ref, result.content)
    timings["hits"] = [float(h) for h in hits]
    return timings


def fetch(store: Any, ref: str) -> Any:
    """What memory_get does: resolve the id, read the item and its versions."""
    item = items.get(store, ref)
    store.revisions(item.id)
    return item


def in_process(db: Path, repo: Path, queries: list[str], refs: list[str]) -> dict[str, list[float]]:
    """The same work without the server: what the store and search cost alone."""
    scopes = [str(s) for s in where_mod.detect(repo).scopes]
    names = ("search", "get", "search_cpu", "get_cpu", "resolve_cpu", "read_cpu")
    timings: dict[str, list[float]] = {name: [] for name in names}

    def timed(name: str, fn: Any, *args: Any) -> Any:
        wall, cpu = time.perf_counter(), time.process_time()
        value = fn(*args)
        timings[name].append((time.perf_counter() - wall) * 1000)
        timings[f"{name}_cpu"].append((time.process_time() - cpu) * 1000)
        return value

    with open_store(db) as store:
        for query in queries:
            timed("search", lambda q: items.search(store, q, scopes=scopes, limit=10), query)
        for ref in refs:
            item = timed("get", fetch, store, ref)
            cpu = time.process_time()
            store.find_ids(ids.normalize_ref(ref))  # what resolving the id costs
            timings["resolve_cpu"].append((time.process_time() - cpu) * 1000)
            cpu = time.process_time()
            store.get_item(item.id)
            store.revisions(item.id)
            timings["read_cpu"].append((time.process_time() - cpu) * 1000)
    return timings


def round_trips(folder: Path, size: int, calls: int) -> dict[str, Any]:
    env = server_env(folder)
    repo = make_repo(folder / "repo", env)
    db = Path(env["KEN_DB"])
    build_store(db, size)
    queries = corpus.queries(calls)
    refs = sample_ids(db, calls)
    progress(f"{size:,} items: {len(queries)} searches and {len(refs)} gets over stdio")
    remote = anyio.run(over_stdio, env, repo, queries, refs)
    local = in_process(db, repo, queries, refs)
    slowest = sorted(zip(remote["memory_search"], queries, strict=True), reverse=True)[:5]
    return {
        "items": size,
        "calls": {"memory_search": len(queries), "memory_get": len(refs)},
        "memory_search": summary(remote["memory_search"]),
        "memory_get": summary(remote["memory_get"]),
        "in_process_search": summary(local["search"]),
        "in_process_get": summary(local["get"]),
        "in_process_search_cpu": summary(local["search_cpu"]),
        "in_process_get_cpu": summary(local["get_cpu"]),
        "get_resolve_id_cpu": summary(local["resolve_cpu"]),
        "get_read_item_cpu": summary(local["read_cpu"]),
        "mean_hits": round(statistics.mean(remote["hits"]), 1),
        "slowest_searches": [{"query": q, "ms": round(ms, 2)} for ms, q in slowest],
    }


# ----------------------------------------------------------------------------- report


def table(start: dict[str, Any], trips: dict[str, Any], when: str) -> str:
    lines = [
        f"## `ken mcp` benchmark, {when}",
        "",
        f"Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, "
        f"{platform.machine()}, {os.cpu_count()} CPUs, load average "
        f"{os.getloadavg()[0]:.1f}",
        "",
        f"Start-up, median of {start['runs']} (taken in turns):",
        "",
        "| spawn to | ms |",
        "|---|---:|",
        f"| `ken mcp` answers `tools/list` | {start['ken_mcp_to_tools_list_ms']} |",
        f'| `python -c "import mcp"` exits | {start["python_import_mcp_ms"]} |',
        f"| `python -c pass` exits | {start['python_bare_ms']} |",
        f"| ratio ken mcp / import mcp | {start['ratio_to_import_mcp']} |",
        "",
        f"CPU time (median): `ken mcp` whole run {start['ken_mcp_cpu_ms']} ms, "
        f"`import mcp` {start['python_import_mcp_cpu_ms']} ms "
        f"(ratio {start['cpu_ratio_to_import_mcp']}).",
        "",
        f"Round trips at {trips['items']:,} items (SDK client over stdio; in process beside):",
        "",
        "| tool | calls | p50 ms | p95 ms | max ms | in process p50 (CPU) | in process p95 (CPU) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for tool, local in (("memory_search", "in_process_search"), ("memory_get", "in_process_get")):
        r, lo, cpu = trips[tool], trips[local], trips[f"{local}_cpu"]
        lines.append(
            f"| {tool} | {trips['calls'][tool]} | {r['p50_ms']} | {r['p95_ms']} "
            f"| {r['max_ms']} | {lo['p50_ms']} ({cpu['p50_ms']}) "
            f"| {lo['p95_ms']} ({cpu['p95_ms']}) |"
        )
    resolve, read = trips["get_resolve_id_cpu"], trips["get_read_item_cpu"]
    lines += [
        "",
        f"memory_get in process, CPU: resolving the id (`find_ids`) p50 {resolve['p50_ms']} / "
        f"p95 {resolve['p95_ms']} ms; reading the item and its versions p50 {read['p50_ms']} "
        f"/ p95 {read['p95_ms']} ms.",
        "",
        f"Target: p95 <= {P95_TARGET_MS:g} ms per round trip.",
    ]
    for tool in ("memory_search", "memory_get"):
        met = trips[tool]["p95_ms"] <= P95_TARGET_MS
        lines.append(f"- {tool}: {'met' if met else 'MISSED'} ({trips[tool]['p95_ms']} ms)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=100_000, help="store size (100,000)")
    parser.add_argument("--calls", type=int, default=200, help="calls per tool (200)")
    parser.add_argument("--quick", action="store_true", help="2,000 items, 50 calls")
    parser.add_argument("--output", type=Path, default=HERE / "mcp_results.json")
    args = parser.parse_args(argv)
    size, calls = (2_000, 50) if args.quick else (args.items, args.calls)
    if not KEN.exists():
        parser.error(f"{KEN} is missing: install kenning in this venv first")

    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    with tempfile.TemporaryDirectory(prefix="ken-mcp-bench-") as folder:
        start = startup(Path(folder) / "start")
        trips = round_trips(Path(folder) / "trips", size, calls)
    print(table(start, trips, when))
    payload = {
        "date": when,
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "load_average": round(os.getloadavg()[0], 2),
        "target_p95_ms": P95_TARGET_MS,
        "startup": start,
        "round_trips": trips,
    }
    args.output.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    progress(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
