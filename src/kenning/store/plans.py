"""A maintenance plan's writes, all or nothing, and its receipt.

`apply` runs in one `BEGIN IMMEDIATE` transaction: it looks for a receipt under the
plan's digest first (a replay returns it and writes nothing), refuses a plan id already
applied with other contents, re-checks every expected revision and status against the
rows as they are now (another process may have changed them since the preview), makes
every write, and stores the receipt. Any conflict or error rolls the whole transaction
back, so the receipt exists exactly when the writes do: after a crash, `receipt` tells
which.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import replace

from kenning.errors import InvalidInput, PlanConflict
from kenning.ids import short_id
from kenning.store import sqlite_columns as columns
from kenning.store.base import Conflict, PlannedChange, PlanReceipt, ReceiptStep, now_iso
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


def _conflicts(conn: sqlite3.Connection, changes: Sequence[PlannedChange]) -> list[Conflict]:
    found = []
    for change in changes:
        if change.new is not None:
            continue
        row = conn.execute(
            "SELECT revision, status FROM items WHERE id = ?", (change.item_id,)
        ).fetchone()
        short = short_id(change.item_id)
        if row is None:
            found.append(
                Conflict(change.index, change.item_id, "target_missing", f"item {short} is gone")
            )
        elif row[0] != change.expected_revision:
            found.append(
                Conflict(
                    change.index,
                    change.item_id,
                    "revision_changed",
                    f"item {short} is at revision {row[0]}, the plan expects "
                    f"{change.expected_revision}",
                )
            )
        elif change.statuses and row[1] not in change.statuses:
            found.append(
                Conflict(
                    change.index,
                    change.item_id,
                    "already_retired",
                    f"item {short} is {row[1]} already",
                )
            )
    return found


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
        done = conn.execute(
            "SELECT receipt FROM plan_receipts WHERE digest = ?", (digest,)
        ).fetchone()
        if done is not None:
            return PlanReceipt.from_dict(json.loads(done[0])), True
        other = conn.execute(
            "SELECT digest FROM plan_receipts WHERE plan_id = ?", (plan_id,)
        ).fetchone()
        if other is not None:
            raise InvalidInput(
                f"plan '{plan_id}' was applied already with other contents ({other[0][:19]}); "
                "give a changed plan a new id"
            )
        conflicts = _conflicts(conn, changes)
        if conflicts:
            first = conflicts[0]
            raise PlanConflict(
                list(conflicts), f"operations[{first.index}] {first.code}: {first.detail}"
            )
        for change in changes:
            if change.new is not None:
                store._insert_all(conn, [change.new], change.change)
                continue
            row = conn.execute(
                f"SELECT {columns.SELECT} FROM items WHERE id = ?", (change.item_id,)
            ).fetchone()
            old = columns.row_to_item(row)
            store._overwrite(conn, old, replace(old, **dict(change.fields)), change.change)
        stored = PlanReceipt(digest, plan_id, owner, now_iso(), tuple(steps))
        conn.execute(
            "INSERT INTO plan_receipts (digest, plan_id, owner, applied_at, receipt) "
            "VALUES (?, ?, ?, ?, ?)",
            (
                digest,
                plan_id,
                owner,
                stored.applied_at,
                json.dumps(stored.to_dict(), sort_keys=True),
            ),
        )
        return stored, False
