"""The team server under load: HOSTS hosts (threads, each with its own member token and
host name, each its own `kenning.team.client.Client`, the one `ken team` uses) push and
pull for SECONDS against one `ken serve` on a throwaway PostgreSQL, on loopback, while
an admin approves what arrives (so pulls carry memory).

Each host loops: push a batch of new memories (fresh push ids, titles unique to the
host and the batch); every fourth batch is sent twice, as a host does whose first
answer was lost; then pull from its cursor. Afterwards it checks that nothing was lost
or doubled: every push the server acknowledged (`stored`) is on the server, under the
id it was given, exactly once (the workspace holds as many memories as distinct
acknowledged pushes, none of them twice), and every repeated push came back
`duplicate` with the first id. Reports p50/p95 latency per call and throughput.

Run: `python bench/team_load.py [--hosts 20] [--seconds 60] [--batch 5]`; it starts a
PostgreSQL cluster of its own (tests/pgcluster.py) unless KEN_TEST_PG names one, and
writes bench/team_results.json. `tests/test_team_load.py` runs a short version.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))

from common import percentile, progress  # noqa: E402
from kenning.team.client import Client, Refused, TeamError  # noqa: E402
from teamserver import Server, module_database, start_server  # noqa: E402

KEN = Path(sys.executable).with_name("ken")
WORKSPACE = "acme"
REPO = "github.com/acme/shop"


def ken(*args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [str(KEN), *args], capture_output=True, text=True, timeout=120, env=env, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"ken {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout.strip()


@dataclass
class Tally:
    """What one host saw."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: {"push": [], "pull": []})
    acked: dict[str, str] = field(default_factory=dict)  # push id -> server id
    titles: dict[str, str] = field(default_factory=dict)  # push id -> title
    repeats: int = 0
    repeat_errors: list[str] = field(default_factory=list)
    pulled: int = 0
    errors: list[str] = field(default_factory=list)


def entry(title: str) -> dict[str, Any]:
    return {
        "push_id": str(uuid.uuid4()),
        "what": "memory",
        "item": {
            "id": str(uuid.uuid4()),
            "title": title,
            "body": "",
            "kind": "decision",
            "scope": f"repo:{REPO}",
            "status": "active",
            "tags": ["load"],
            "links": [],
            "evidence": "",
            "provenance": {"who": "user", "how": "cli"},
        },
    }


def host_loop(url: str, token: str, name: str, until: float, batch: int, tally: Tally) -> None:
    cursor = ""
    round_no = 0
    while time.monotonic() < until:
        round_no += 1
        entries = [entry(f"load {name} batch {round_no} item {k}") for k in range(batch)]
        sends = 2 if round_no % 4 == 0 else 1
        for attempt in range(sends):
            client = Client(url, token, WORKSPACE, timeout=30)
            began = time.perf_counter()
            try:
                results = client.push(name, entries)
            except (TeamError, OSError) as exc:
                tally.errors.append(f"push: {exc}")
                continue
            tally.latencies["push"].append(time.perf_counter() - began)
            for sent, result in zip(entries, results, strict=False):
                push_id = sent["push_id"]
                status = result.get("status")
                if attempt == 0 and status == "stored":
                    tally.acked[push_id] = str(result.get("id"))
                    tally.titles[push_id] = sent["item"]["title"]
                elif attempt == 1:
                    tally.repeats += 1
                    first = tally.acked.get(push_id)
                    if status != "duplicate" or (first and str(result.get("id")) != first):
                        tally.repeat_errors.append(f"{push_id}: {status} {result.get('id')}")
        client = Client(url, token, WORKSPACE, timeout=30)
        began = time.perf_counter()
        try:
            page = client.pull(cursor, 500)
        except (TeamError, OSError) as exc:
            tally.errors.append(f"pull: {exc}")
            continue
        tally.latencies["pull"].append(time.perf_counter() - began)
        tally.pulled += len(page.get("changes") or [])
        cursor = str(page.get("cursor") or cursor)


def admin_loop(url: str, token: str, until: float, tally: Tally) -> None:
    """Approve what waits, a page at a time, while the hosts push."""
    while time.monotonic() < until:
        client = Client(url, token, WORKSPACE, timeout=30)
        try:
            waiting = client.items("proposed", 50)
            for item in waiting[:10]:
                began = time.perf_counter()
                Client(url, token, WORKSPACE, timeout=30).decide(str(item["id"]), "approve")
                tally.latencies.setdefault("approve", []).append(time.perf_counter() - began)
        except Refused as exc:
            if exc.status != 409:  # 409: approved already (listed before the approval)
                tally.errors.append(f"approve: {exc}")
        except (TeamError, OSError) as exc:
            tally.errors.append(f"approve: {exc}")
        time.sleep(0.05)


def stored_on_server(url: str, admin: str, acked: dict[str, str], titles: dict[str, str]) -> Any:
    """What the server holds of the acknowledged pushes: the ids missing or holding
    another text, and the total count of memories in the workspace (by status)."""
    missing: list[str] = []
    lock = threading.Lock()
    pairs = list(acked.items())

    def check(chunk: list[tuple[str, str]]) -> None:
        client = Client(url, admin, WORKSPACE, timeout=600)
        for push_id, server_id in chunk:
            try:
                item = client.item(server_id)
            except TeamError as exc:
                with lock:
                    missing.append(f"{server_id}: {exc}")
                continue
            found = item.get("item", item)
            if found.get("title") != titles[push_id]:
                with lock:
                    missing.append(f"{server_id}: holds {found.get('title')!r}")

    threads = [
        threading.Thread(target=check, args=(pairs[i::8],)) for i in range(min(8, len(pairs)))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return missing


def count_stored(db_url: str) -> tuple[int, int]:
    """(memories pushes stored in the workspace, local ids stored more than once), from
    the server's own record of where each memory came from (ken_team.origins: one row per
    stored memory; each load entry has a local id of its own)."""
    import psycopg

    with psycopg.connect(db_url) as conn:
        row = conn.execute(
            "SELECT count(*), count(*) - count(DISTINCT local_id) FROM ken_team.origins "
            "WHERE workspace = %s",
            (WORKSPACE,),
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def run_load(
    url: str,
    db_url: str,
    tokens: list[str],
    admin: str,
    seconds: float,
    batch: int = 5,
) -> dict[str, Any]:
    """Run the load; the figures and the checks' findings."""
    until = time.monotonic() + seconds
    tallies = [Tally() for _ in tokens]
    admin_tally = Tally()
    threads = [
        threading.Thread(target=host_loop, args=(url, tok, f"host-{i:02d}", until, batch, tally))
        for i, (tok, tally) in enumerate(zip(tokens, tallies, strict=True))
    ]
    threads.append(threading.Thread(target=admin_loop, args=(url, admin, until, admin_tally)))
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - began
    acked = {k: v for t in tallies for k, v in t.acked.items()}
    titles = {k: v for t in tallies for k, v in t.titles.items()}
    lat = {
        kind: [x for t in [*tallies, admin_tally] for x in t.latencies.get(kind, [])]
        for kind in ("push", "pull", "approve")
    }
    requests = sum(len(v) for v in lat.values())
    missing = stored_on_server(url, admin, acked, titles)
    counted = count_stored(db_url)
    return {
        "hosts": len(tokens),
        "seconds": round(wall, 1),
        "batch": batch,
        "acknowledged": len(acked),
        "distinct_server_ids": len(set(acked.values())),
        "repeats": sum(t.repeats for t in tallies),
        "repeat_errors": [e for t in tallies for e in t.repeat_errors][:20],
        "missing": missing[:20],
        "missing_count": len(missing),
        "on_server": counted[0],
        "stored_twice": counted[1],
        "pulled_changes": sum(t.pulled for t in tallies),
        "errors": [e for t in [*tallies, admin_tally] for e in t.errors][:20],
        "error_count": sum(len(t.errors) for t in [*tallies, admin_tally]),
        "requests": requests,
        "requests_per_s": round(requests / wall, 1),
        "memories_per_s": round(len(acked) / wall, 1),
        **{
            f"{kind}_ms": {
                "n": len(values),
                "p50": round(percentile(values, 50) * 1000, 1) if values else None,
                "p95": round(percentile(values, 95) * 1000, 1) if values else None,
            }
            for kind, values in lat.items()
        },
    }


def problems(result: dict[str, Any]) -> list[str]:
    """What the checks found wrong (empty: nothing lost, nothing doubled)."""
    found = []
    if result["distinct_server_ids"] != result["acknowledged"]:
        found.append("two acknowledged pushes share a server id")
    if result["missing_count"]:
        found.append(f"{result['missing_count']} acknowledged pushes not on the server")
    if result["repeat_errors"]:
        found.append(f"repeated pushes not answered duplicate: {result['repeat_errors'][:3]}")
    if result["stored_twice"]:
        found.append(f"{result['stored_twice']} memories stored twice")
    if result["on_server"] != result["acknowledged"]:
        found.append(
            f"{result['on_server']} load memories on the server, "
            f"{result['acknowledged']} acknowledged"
        )
    return found


@contextmanager
def team_server(
    hosts: int, env: dict[str, str] | None = None, cluster: str | None = None
) -> Iterator[tuple[Server, str, list[str], str]]:
    """A PostgreSQL database (in `cluster`, else KEN_TEST_PG's, else a cluster of its
    own), `ken serve` on it, HOSTS member tokens and an admin one."""
    import pgcluster

    folder = Path(
        tempfile.mkdtemp(
            prefix="ken-team-load-", dir="/dev/shm" if os.access("/dev/shm", os.W_OK) else None
        )
    )
    cluster = cluster or os.environ.get("KEN_TEST_PG")
    own = cluster is None
    pg_folder = folder / "pg"
    if cluster is None:
        progress("starting a PostgreSQL cluster", "team")
        pg_folder = pgcluster.scratch_folder()
        cluster = pgcluster.start(pg_folder)
    try:
        with module_database(cluster) as db:
            server = None
            try:
                create = ("serve", "token", "create", "--db", db, "--workspace", WORKSPACE)
                tokens = [ken(*create, "--name", f"host-{i:02d}", env=env) for i in range(hosts)]
                admin = ken(*create, "--role", "admin", env=env)
                ken("serve", "repos", "add", "--db", db, WORKSPACE, REPO, env=env)
                server = start_server(db, env)
                yield server, db, tokens, admin
            finally:
                if server is not None:
                    server.stop()
    finally:
        if own:
            pgcluster.stop(pg_folder)
            shutil.rmtree(pg_folder, ignore_errors=True)
        shutil.rmtree(folder, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--batch", type=int, default=5)
    args = parser.parse_args(argv)
    import pgcluster

    if not os.environ.get("KEN_TEST_PG") and pgcluster.server_bin() is None:
        progress("skipped: PostgreSQL is not installed here (no initdb)", "team")
        return 0
    load = os.getloadavg()[0]
    home = Path(tempfile.mkdtemp(prefix="ken-team-load-home-"))
    from common import env_for

    env = env_for(home)
    try:
        with team_server(args.hosts, env) as (server, db, tokens, admin):
            progress(f"{args.hosts} hosts for {args.seconds:.0f} s against {server.url}", "team")
            result = run_load(server.url, db, tokens, admin, args.seconds, args.batch)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    result["date"] = time.strftime("%Y-%m-%d")
    result["load_before"] = round(load, 1)
    result["problems"] = problems(result)
    Path(__file__).with_name("team_results.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 1 if result["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
