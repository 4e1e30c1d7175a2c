"""A maintenance plan's writes and its receipt in one PostgreSQL transaction.

The flow is kenning.store.plan_apply's, the same as SQLite's: a receipt under the plan's
digest means it was applied, and it is returned with nothing written; a plan id applied
with other contents is refused; every expected revision and status is checked against
the rows as they are now, read `FOR UPDATE` so no other writer moves them before this
commits; then every write, and the receipt. An advisory lock on the plan id makes two
servers applying the same plan take turns, so the second finds the first's receipt.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from psycopg.types.json import Jsonb

from kenning.store import plan_apply
from kenning.store.base import PlannedChange, PlanReceipt, ReceiptStep
from kenning.store.plan_apply import PlanBackend
from kenning.store.postgres.connection import Conn
from kenning.store.postgres.items import COLUMNS, insert_all, overwrite, row_to_item


def _backend(conn: Conn) -> PlanBackend:
    def receipt_of(digest: str) -> PlanReceipt | None:
        row = conn.execute(
            "SELECT receipt FROM plan_receipts WHERE digest = %s", (digest,)
        ).fetchone()
        return None if row is None else PlanReceipt.from_dict(row["receipt"])

    def applied_digest(plan_id: str) -> str | None:
        row = conn.execute(
            "SELECT digest FROM plan_receipts WHERE plan_id = %s", (plan_id,)
        ).fetchone()
        return None if row is None else str(row["digest"])

    def current(ids: list[str]) -> dict[str, tuple[str, str]]:
        rows = conn.execute(
            "SELECT id, revision, status FROM items WHERE id = ANY(%s) ORDER BY id FOR UPDATE",
            (ids,),
        ).fetchall()
        return {r["id"]: (r["revision"], r["status"]) for r in rows}

    def insert(change: PlannedChange) -> None:
        assert change.new is not None
        insert_all(conn, [change.new], change.change)

    def update(change: PlannedChange) -> None:
        row = conn.execute(
            f"SELECT {COLUMNS} FROM items WHERE id = %s", (change.item_id,)
        ).fetchone()
        assert row is not None  # locked by `current`
        overwrite(conn, replace(row_to_item(row), **dict(change.fields)), change.change)

    def store_receipt(stored: PlanReceipt) -> None:
        conn.execute(
            "INSERT INTO plan_receipts (digest, plan_id, owner, applied_at, receipt) "
            "VALUES (%s, %s, %s, %s, %s)",
            (
                stored.digest,
                stored.plan_id,
                stored.owner,
                stored.applied_at,
                Jsonb(stored.to_dict()),
            ),
        )

    return PlanBackend(receipt_of, applied_digest, current, insert, update, store_receipt)


def apply(
    conn: Conn,
    lock: Any,
    digest: str,
    plan_id: str,
    owner: str,
    changes: Sequence[PlannedChange],
    steps: Sequence[ReceiptStep],
) -> tuple[PlanReceipt, bool]:
    """Apply `changes` and store the receipt (`steps` and when): (receipt, False); or,
    when this digest was applied before, (its receipt, True) with nothing written.
    `conn` is in the call's transaction; `lock(conn, key)` takes an advisory lock."""
    lock(conn, f"plan:{plan_id}")
    return plan_apply.apply(_backend(conn), digest, plan_id, owner, changes, steps)
