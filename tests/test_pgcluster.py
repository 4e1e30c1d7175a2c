"""The throwaway PostgreSQL cluster the team tests stand on (tests/pgcluster.py)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.postgres


def test_each_test_gets_an_empty_database_of_its_own(pg_dsn: str) -> None:
    import psycopg

    with psycopg.connect(pg_dsn) as conn:
        conn.execute("CREATE TABLE t (x int)")
        conn.execute("INSERT INTO t VALUES (1)")
        assert conn.execute("SELECT count(*) FROM t").fetchone() == (1,)
        version = conn.execute("SHOW server_version_num").fetchone()
    assert version is not None and int(version[0]) >= 130000


def test_the_database_of_one_test_is_not_seen_by_another(pg_dsn: str) -> None:
    import psycopg

    with psycopg.connect(pg_dsn) as conn:
        row = conn.execute("SELECT count(*) FROM pg_tables WHERE tablename = 't'").fetchone()
    assert row == (0,)
