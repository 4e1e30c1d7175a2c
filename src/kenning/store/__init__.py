"""Storage: the only package with SQL. `open_store` gives the configured backend."""

from __future__ import annotations

import os

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
    Words,
    now_iso,
)
from kenning.store.sqlite import SQLiteStore

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
    "Words",
    "now_iso",
    "open_store",
]


def open_store(
    path: str | os.PathLike[str] | None = None,
    *,
    create: bool = True,
    busy_seconds: float | None = None,
) -> SQLiteStore:
    """Open (and create or migrate) the store at `path`, else at `ken path`; a hook
    gives `busy_seconds`, the most it may wait for another process's lock."""
    if busy_seconds is None:
        return SQLiteStore(path or db_path(), create=create)
    return SQLiteStore(path or db_path(), create=create, busy_seconds=busy_seconds)
