"""A maintenance plan's writes, all or nothing, and its receipt.

`apply` runs in one `BEGIN IMMEDIATE` transaction: it looks for a receipt under the
plan's digest first (a replay returns it and writes nothing), refuses a plan id already
applied with other contents, re-checks every expected revision and status against the
rows as they are now (another process may have changed them since the preview), makes
every write, and stores the receipt. Any conflict or error rolls the whole transaction
back, so the receipt exists exactly when the writes do: after a crash, `receipt` tells
which. The flow is kenning.store.plan_apply's; this module gives it SQLite's SQL.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import replace

from kenning.store import plan_apply
from kenning.store import sqlite_columns as columns
from kenning.store.base import PlannedChange, PlanReceipt, ReceiptStep
from kenning.store.plan_apply import PlanBackend
from kenning.store.sqlite_items import Items


def receipt(store: Items, digest: str) -> PlanReceipt | None:
    rows = store.conn.execute(
        "SELECT receipt FROM plan_receipts WHERE digest = ?", (digest,)
    ).fetchall()
    return PlanReceipt.from_dict(json.loads(rows[0][0])) if rows else None


def receipts_for(store: Items, plan_id: str) -> list[PlanReceipt]:
    rows = store.conn.execute(
        "SELECT receipt FROM plan_receipts WHERE plan_id = ? ORDER BY applied_at", (plan_id,)
    ).fetchall()
    return [PlanReceipt.from_dict(json.loads(r[0])) for r in rows]


def _backend(store: Items, conn: sqlite3.Connection) -> PlanBackend:
    def receipt_of(digest: str) -> PlanReceipt | None:
        row = conn.execute(
            "SELECT receipt FROM plan_receipts WHERE digest = ?", (digest,)
        ).fetchone()
        return PlanReceipt.from_dict(json.loads(row[0])) if row is not None else None

    def applied_digest(plan_id: str) -> str | None:
        row = conn.execute(
            "SELECT digest FROM plan_receipts WHERE plan_id = ?", (plan_id,)
        ).fetchone()
        return None if row is None else str(row[0])

    def current(ids: list[str]) -> dict[str, tuple[str, str]]:
        found = {}
        for item_id in ids:
            row = conn.execute(
                "SELECT revision, status FROM items WHERE id = ?", (item_id,)
            ).fetchone()
            if row is not None:
                found[item_id] = (row[0], row[1])
        return found

    def insert(change: PlannedChange) -> None:
        assert change.new is not None
        store._insert_all(conn, [change.new], change.change)

    def update(change: PlannedChange) -> None:
        row = conn.execute(
            f"SELECT {columns.SELECT} FROM items WHERE id = ?", (change.item_id,)
        ).fetchone()
        old = columns.row_to_item(row)
        store._overwrite(conn, old, replace(old, **dict(change.fields)), change.change)

    def store_receipt(stored: PlanReceipt) -> None:
        conn.execute(
            "INSERT INTO plan_receipts (digest, plan_id, owner, applied_at, receipt) "
            "VALUES (?, ?, ?, ?, ?)",
            (
                stored.digest,
                stored.plan_id,
                stored.owner,
                stored.applied_at,
                json.dumps(stored.to_dict(), sort_keys=True),
            ),
        )

    return PlanBackend(receipt_of, applied_digest, current, insert, update, store_receipt)


def apply(
    store: Items,
    digest: str,
    plan_id: str,
    owner: str,
    changes: Sequence[PlannedChange],
    steps: Sequence[ReceiptStep],
) -> tuple[PlanReceipt, bool]:
    """Apply `changes` and store the receipt (`steps` and when): (receipt, False); or,
    when this digest was applied before, (its receipt, True) with nothing written."""
    with store._write() as conn:
        return plan_apply.apply(_backend(store, conn), digest, plan_id, owner, changes, steps)
