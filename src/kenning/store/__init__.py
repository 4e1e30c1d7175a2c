"""Storage: the only package with SQL. `open_store` gives the configured backend: the
SQLite file, or for a `postgresql://` URL the PostgreSQL store (kenning.store.postgres),
whose package and psycopg are imported only then."""

from __future__ import annotations

import os
from typing import overload

from kenning.config import db_path
from kenning.store.base import (
    UNSET,
    ItemQuery,
    LessonState,
    PlanReceipt,
    Project,
    ReceiptStep,
    ReceiptWrite,
    SessionDelivery,
    SessionQuery,
    SessionUpdate,
    Signal,
    Store,
    Term,
    Version,
    Words,
    now_iso,
)
from kenning.store.migrations import report_to as report_migrations_to
from kenning.store.sqlite import SQLiteStore
from kenning.store.sqlite_core import held_by, processes_using

__all__ = [
    "UNSET",
    "ItemQuery",
    "LessonState",
    "PlanReceipt",
    "Project",
    "ReceiptStep",
    "ReceiptWrite",
    "SQLiteStore",
    "SessionDelivery",
    "SessionQuery",
    "SessionUpdate",
    "Signal",
    "Store",
    "Term",
    "Version",
    "Words",
    "held_by",
    "is_postgres_url",
    "now_iso",
    "open_store",
    "processes_using",
    "report_migrations_to",
]
POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(where: str | os.PathLike[str] | None) -> bool:
    return isinstance(where, str) and where.startswith(POSTGRES_SCHEMES)


@overload
def open_store(
    path: str | os.PathLike[str] | None = None,
    *,
    create: bool = True,
    busy_seconds: float | None = None,
) -> SQLiteStore: ...
@overload
def open_store(path: str, *, schema: str | None, create: bool = True) -> Store: ...
def open_store(
    path: str | os.PathLike[str] | None = None,
    *,
    create: bool = True,
    busy_seconds: float | None = None,
    schema: str | None = None,
) -> Store:
    """Open (and create or migrate) the store at `path`, else at `ken path`; a hook
    gives `busy_seconds`, the most it may wait for another process's lock.

    A `postgresql://` URL opens the PostgreSQL store in `schema` (or the URL's `schema`
    parameter; `kenning` when neither names one), creating the schema and its tables
    when they are missing; pass `schema` (None for the URL's) to be typed `Store`."""
    if is_postgres_url(path):
        from kenning.store.postgres import PostgresStore

        assert isinstance(path, str)
        return PostgresStore(path, schema=schema, create=create)
    if busy_seconds is None:
        return SQLiteStore(path or db_path(), create=create)
    return SQLiteStore(path or db_path(), create=create, busy_seconds=busy_seconds)
