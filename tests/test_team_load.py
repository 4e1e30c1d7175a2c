"""A short version of bench/team_load.py: 5 hosts pushing and pulling for 5 s against one
`ken serve` on the test PostgreSQL, an admin approving meanwhile. Nothing acknowledged
is lost, nothing is stored twice, every repeated push is answered `duplicate`."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import pytest

from helpers import load_module

BENCH = Path(__file__).resolve().parent.parent / "bench"


def load_bench() -> ModuleType:
    sys.path.insert(0, str(BENCH))
    return load_module(BENCH / "team_load.py", "team_load")


@pytest.mark.postgres
@pytest.mark.timing
def test_five_hosts_for_five_seconds_lose_nothing_and_store_nothing_twice(
    pg_cluster: str,
) -> None:
    bench = load_bench()
    with bench.team_server(5, cluster=pg_cluster) as (server, db, tokens, admin):
        result = bench.run_load(server.url, db, tokens, admin, seconds=5.0, batch=5)
    assert bench.problems(result) == []
    assert result["error_count"] == 0, result["errors"]
    assert result["acknowledged"] >= 50 and result["repeats"] >= 10
    assert result["on_server"] == result["acknowledged"]
    assert result["pulled_changes"] > 0  # approved memory reached the hosts' pulls
    assert result["push_ms"]["p95"] is not None
