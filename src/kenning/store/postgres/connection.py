"""Connections to PostgreSQL: a pool, one schema, and a transaction per call.

Every connection of a store's pool sets its `search_path` to the store's schema when it
is made, so the SQL everywhere else names its tables plainly and one database can hold
many stores (the team server keeps one workspace per schema). The schema name is checked
against a strict pattern before it goes anywhere near a statement; every value is a
parameter.

Each call is its own transaction: a write takes a connection from the pool, runs, and
commits (or rolls back on an error) when it gives the connection back. `together()`
holds one connection for the calls made inside it, in this thread, so they commit as
one: nested calls see it (a thread-local) and join it instead of taking another.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg.rows import DictRow, dict_row
from psycopg_pool import ConnectionPool, PoolTimeout

from kenning.errors import InvalidInput, KenningError, StoreBusy, StoreError

Conn = psycopg.Connection[DictRow]
SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
DEFAULT_SCHEMA = "kenning"
POOL_MAX = 4
CONNECT_SECONDS = 10.0


def split_url(url: str, schema: str | None) -> tuple[str, str]:
    """(the libpq connection string without kenning's own `schema` parameter, the
    schema): `schema` given to open_store wins over the URL's."""
    parts = urlsplit(url)
    params = parse_qsl(parts.query, keep_blank_values=True)
    in_url = [v for k, v in params if k == "schema"]
    kept = [(k, v) for k, v in params if k != "schema"]
    chosen = schema or (in_url[-1] if in_url else DEFAULT_SCHEMA)
    if not SCHEMA_NAME.match(chosen):
        raise InvalidInput(
            f"schema {chosen!r} is not a plain name: use lower-case letters, digits and _ "
            "(at most 63, not starting with a digit)"
        )
    return urlunsplit(parts._replace(query=urlencode(kept))), chosen


def shown_url(conninfo: str, schema: str) -> str:
    """The connection string as messages may show it: no password."""
    parts = urlsplit(conninfo)
    netloc = parts.netloc
    if "@" in netloc:
        who, where = netloc.rsplit("@", 1)
        netloc = f"{who.split(':', 1)[0]}@{where}"
    params = [(k, v) for k, v in parse_qsl(parts.query) if k != "password"]
    params.append(("schema", schema))
    return urlunsplit(parts._replace(netloc=netloc, query=urlencode(params, safe="/")))


def friendly(exc: psycopg.Error, where: str) -> KenningError:
    """A psycopg error as kenning's, saying what to do next."""
    if isinstance(exc, psycopg.errors.SerializationFailure | psycopg.errors.DeadlockDetected):
        return StoreBusy(f"the store {where} was busy with another writer; try again")
    if isinstance(exc, psycopg.errors.InsufficientPrivilege):
        return StoreError(f"the store {where} refused: {exc}; the role needs rights on its schema")
    if isinstance(exc, psycopg.DataError):
        return InvalidInput(f"the store {where} cannot hold that value: {exc}")
    if isinstance(exc, psycopg.OperationalError):
        return StoreError(f"cannot reach the store {where}: {exc}; check that the server runs")
    return StoreError(f"store error in {where}: {exc}")


class Connection:
    """The pool and the transactions of a PostgreSQL store (the base of PostgresStore)."""

    path: str

    def __init__(
        self,
        url: str,
        *,
        schema: str | None = None,
        create: bool = True,
        pool_size: int = POOL_MAX,
    ) -> None:
        self.conninfo, self.schema = split_url(url, schema)
        self.path = shown_url(self.conninfo, self.schema)
        self._local = threading.local()
        self._own_pids: set[int] = set()
        options = f"-c search_path={self.schema}"  # a checked name: see SCHEMA_NAME
        self._connect_kwargs: dict[str, Any] = {"options": options, "application_name": "kenning"}
        self.pool: ConnectionPool[Conn] = ConnectionPool(
            self.conninfo,
            min_size=1,
            max_size=max(1, pool_size),
            kwargs={**self._connect_kwargs, "row_factory": dict_row},
            configure=self._configure,
            # A connection the server dropped (a restart) is found out and replaced as it
            # is taken, not handed to a call that would fail on it.
            check=ConnectionPool.check_connection,
            open=False,
            timeout=30.0,
            name=f"kenning-{self.schema}",
        )
        try:
            self._migrate(create)
            self.pool.open(wait=True, timeout=CONNECT_SECONDS)
        except PoolTimeout:
            self.pool.close()
            raise StoreError(
                f"cannot reach the store {self.path} within {CONNECT_SECONDS:.0f} s; "
                "check the URL and that the server runs"
            ) from None
        except psycopg.Error as exc:
            self.pool.close()
            raise friendly(exc, self.path) from None
        except BaseException:
            self.pool.close()
            raise

    def _configure(self, conn: Conn) -> None:
        self._own_pids.add(conn.info.backend_pid)

    def _migrate(self, create: bool) -> None:
        from kenning.store.postgres import migrations

        with psycopg.connect(
            self.conninfo,
            autocommit=True,
            connect_timeout=int(CONNECT_SECONDS),
            **self._connect_kwargs,
        ) as conn:
            migrations.apply(conn, self.schema, create=create)

    def close(self) -> None:
        self.pool.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _write(self) -> Iterator[Conn]:
        """A connection in a transaction that commits when the block ends well (or the
        outer `together()` one, which then commits with the rest)."""
        held: Conn | None = getattr(self._local, "conn", None)
        if held is not None:
            yield held
            return
        try:
            with self.pool.connection() as conn:
                yield conn
        except PoolTimeout:
            raise StoreBusy(
                f"no connection to the store {self.path} came free; try again"
            ) from None
        except psycopg.Error as exc:
            raise friendly(exc, self.path) from None

    @contextmanager
    def together(self, key: str = "") -> Iterator[None]:
        """The writes made inside (in this thread) happen as one transaction: all of
        them or, on an error, none, and no other connection sees any before all. With a
        `key`, transactions that name the same key run one after another (an advisory
        lock held to the end), so a check read inside and the write it decides are not
        split by another's: SQLite's one writer, for what needs it."""
        held: Conn | None = getattr(self._local, "conn", None)
        if held is not None:
            if key:
                self._lock(held, key)
            yield
            return
        with self._write() as conn:
            self._local.conn = conn
            try:
                if key:
                    self._lock(conn, key)
                yield
            finally:
                self._local.conn = None

    def _read(self, query: Any, params: Sequence[Any] | dict[str, Any] = ()) -> list[DictRow]:
        with self._write() as conn:
            return conn.execute(query, params).fetchall()

    def _one(self, query: Any, params: Sequence[Any] | dict[str, Any] = ()) -> DictRow | None:
        rows = self._read(query, params)
        return rows[0] if rows else None

    @staticmethod
    def _lock(conn: Conn, key: str) -> None:
        """Serialize the transactions that take the same `key` until they end."""
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (key,))

    # --- what SQLite asks of the local machine, as PostgreSQL has it ----------------

    @contextmanager
    def unspooled(self) -> Iterator[None]:
        """A no-op: this store never keeps a write for later (SQLite's spool is for a
        hook that finds its file locked; a server's writes wait or fail)."""
        yield

    def spooling(self) -> bool:
        """Always False: see `unspooled`."""
        return False

    def wipe_pending(self) -> bool:
        """Always False: no wipe waits on a reader here. PostgreSQL keeps a deleted row's
        old version until VACUUM reclaims it (autovacuum does so on its own), and its
        WAL until a checkpoint; both are the server operator's, not a client's."""
        return False

    def data_version(self) -> int:
        """A number that grows when anyone commits a change to items, versions, uses,
        sessions or deliveries (a sequence statement triggers advance, so a rolled-back
        write may move it too, and this store's own writes do): how a long-lived reader
        sees that it should read again."""
        row = self._one("SELECT last_value, is_called FROM change_counter")
        return int(row["last_value"]) if row and row["is_called"] else 0

    def readers(self) -> list[str]:
        """The other sessions connected to this database (from pg_stat_activity), as
        `PID (application)`, leaving out this store's own pool."""
        rows = self._read(
            "SELECT pid, coalesce(nullif(application_name, ''), usename, 'client') AS app "
            "FROM pg_stat_activity WHERE datname = current_database() "
            "AND backend_type = 'client backend' AND NOT (pid = ANY(%s)) ORDER BY pid",
            (sorted(self._own_pids),),
        )
        return [f"{r['pid']} ({r['app']})" for r in rows]

    def integrity_check(self) -> str:
        """'ok', or what is wrong: a sanity check in SQL (PostgreSQL checks its own pages;
        amcheck is an extension a managed database may lack). It looks for versions of
        no item, items whose current version is missing, and word counts that fell to
        nothing or below."""
        row = self._one(
            "SELECT "
            "(SELECT count(*) FROM revisions r WHERE NOT EXISTS "
            " (SELECT 1 FROM items i WHERE i.id = r.item_id)) AS orphans, "
            "(SELECT count(*) FROM items i WHERE NOT EXISTS "
            " (SELECT 1 FROM revisions r WHERE r.id = i.revision)) AS unversioned, "
            "(SELECT count(*) FROM terms WHERE docs <= 0) "
            " + (SELECT count(*) FROM words WHERE docs <= 0) AS bad_counts"
        )
        assert row is not None
        wrong = [
            f"{row[key]} {what}"
            for key, what in (
                ("orphans", "versions of no item"),
                ("unversioned", "items without their current version"),
                ("bad_counts", "word counts at zero or below"),
            )
            if row[key]
        ]
        return "; ".join(wrong) or "ok"
